// What `node-cli keys` prints for a key, the key list and a key's usage (without --json): one line
// per key, tables of fixed-width columns. Never a key: only its public id and first characters.
import type { KeyUsage, KeyView } from '@chainnode/accounts';

/** One line naming a key: id, name, prefix, plan, status and its own limits. */
export function describe(v: KeyView): string {
  const lim = [
    v.limits.creditsPerDay !== null ? `${v.limits.creditsPerDay} credits/day` : '',
    v.limits.creditsPerSecond !== null ? `${v.limits.creditsPerSecond} credits/s` : '',
  ].filter((s) => s !== '');
  return `key ${v.id} "${v.name}" (${v.prefix !== null ? `${v.prefix}…, ` : ''}${v.plan}, ${v.status}${lim.length > 0 ? `, ${lim.join(', ')}` : ''})`;
}

/** `keys list`: a header and one row per key. */
export function keyTable(rows: readonly KeyView[]): string {
  const head = [
    'ID'.padEnd(12),
    'KEY'.padEnd(8),
    'PLAN'.padEnd(9),
    'STATUS'.padEnd(7),
    'CREATED'.padEnd(17),
    'LAST USED'.padEnd(17),
    'NAME',
  ].join(' ');
  const lines = rows.map((r) =>
    [
      r.id.padEnd(12),
      (r.prefix !== null ? `${r.prefix}…` : '-').padEnd(8),
      r.plan.padEnd(9),
      r.status.padEnd(7),
      r.createdAt.slice(0, 16).replace('T', ' ').padEnd(17),
      (r.lastUsed?.slice(0, 16).replace('T', ' ') ?? 'never').padEnd(17),
      r.name,
    ].join(' '),
  );
  return [head, ...lines].join('\n');
}

/** `keys usage --json`: the key, today's balance (and its split by network) and the usage tables. */
export function usageJson(v: KeyView, u: KeyUsage): Record<string, unknown> {
  return {
    id: v.id,
    name: v.name,
    plan: v.plan,
    label: v.name,
    revoked: v.status === 'revoked',
    dailyCredits: u.balance.dailyCredits,
    creditsPerSecond: v.limits.creditsPerSecond ?? v.planCreditsPerSecond,
    used: u.balance.used,
    remaining: u.balance.remaining,
    resetsAt: u.balance.resetsAt,
    // One balance across networks (serve --network): the key's networks and today's split.
    networks: v.networks,
    byNetwork: u.balance.byNetwork,
    days: u.days,
    methods: u.methods,
    minutes: u.minutes,
  };
}

/** `keys usage`: today's balance, its split by network, and a table of the methods of 30 days. */
export function usageText(v: KeyView, u: KeyUsage): string {
  const lines = [
    `key ${v.id} "${v.name}" (${v.plan}${v.status === 'revoked' ? ', revoked' : ''}): ${u.balance.used} of ${u.balance.dailyCredits} credits used today, ${u.balance.remaining} left; resets at ${u.balance.resetsAt}`,
  ];
  const split = Object.entries(u.balance.byNetwork).filter(([n]) => n !== '');
  if (split.length > 0)
    lines.push(
      `today by network: ${split.map(([n, c]) => `${n} ${c}`).join(', ')}${(u.balance.byNetwork[''] ?? 0) > 0 ? `, (no network) ${u.balance.byNetwork['']}` : ''}`,
    );
  if (u.methods.length > 0) {
    lines.push(
      `${'METHOD (30 days)'.padEnd(36)} ${'CALLS'.padStart(9)} ${'CREDITS'.padStart(12)} ${'4XX'.padStart(6)} ${'5XX'.padStart(6)} ${'RPC ERR'.padStart(8)}`,
    );
    for (const m of u.methods)
      lines.push(
        `${m.method.padEnd(36)} ${String(m.calls).padStart(9)} ${String(m.credits).padStart(12)} ${String(m.e4xx).padStart(6)} ${String(m.e5xx).padStart(6)} ${String(m.erpc).padStart(8)}`,
      );
  }
  return lines.join('\n');
}
