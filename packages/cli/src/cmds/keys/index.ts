// `node-cli keys create|list|revoke|usage`: manage API keys and read today's usage, in the
// embedded ledger (<datadir>/keys.json, hashed, and <datadir>/usage/) or, with
// `--ledger redis://host:port[/db]`, in the shared Redis ledger every replica reads. Works with or
// without a running server: servers pick changes up within a second. The plaintext key is
// printed once, by `create`.
import type { Command } from 'commander';
import { KeyFileError, LedgerUnavailableError, PLAN_NAMES, createKey, findKey, isPlanName, limitsOf, openLedger, revokeKey } from '@chainnode/server';
import type { KeyRecord, OpenLedger, ServerConfig } from '@chainnode/server';
import { CliError } from '../../cli-error.js';
import { parseLedgerUrl, readConfig } from '../serve/run.js';

interface Common {
  datadir: string;
  config?: string;
  ledger?: string;
  json?: boolean;
}

/** Runs `fn` with the ledger the options name, closing it afterwards; store errors become one line. */
async function withLedger<T>(opts: Common, fn: (l: OpenLedger) => Promise<T>): Promise<T> {
  const url = parseLedgerUrl(opts.ledger);
  let l: OpenLedger;
  try {
    l = await openLedger({ ...(url !== undefined ? { url } : {}), datadir: opts.datadir });
  } catch (err) {
    if (err instanceof LedgerUnavailableError) throw new CliError(err.message);
    throw err;
  }
  try {
    return await fn(l);
  } catch (err) {
    if (err instanceof KeyFileError || err instanceof LedgerUnavailableError) throw new CliError(err.message);
    throw err;
  } finally {
    await l.close();
  }
}

async function usageOf(l: OpenLedger, config: ServerConfig, rec: KeyRecord): Promise<{
  id: string;
  plan: string;
  label: string | null;
  revoked: boolean;
  dailyCredits: number;
  creditsPerSecond: number;
  used: number;
  remaining: number;
  resetsAt: string;
}> {
  const { used, resetsAt } = await l.usage(rec.hash);
  const limits = limitsOf(config, rec);
  return {
    id: rec.id,
    plan: rec.plan,
    label: rec.label ?? null,
    revoked: rec.revokedAt !== undefined,
    dailyCredits: limits.daily,
    creditsPerSecond: limits.perSecond,
    used,
    remaining: Math.max(0, limits.daily - used),
    resetsAt,
  };
}

async function lookup(l: OpenLedger, keyOrId: string): Promise<KeyRecord> {
  const rec = findKey(await l.keys.list(), keyOrId);
  if (!rec) throw new CliError('no such key in the ledger (give the key, or its id from `keys list`)');
  return rec;
}

function parseCount(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new CliError(`${flag}: expected a non-negative integer, got "${value}"`);
  return Number(value);
}

export function register(program: Command): void {
  const cmd = program.command('keys').description('manage API keys (stored hashed in <datadir>/keys.json, or in the Redis ledger with --ledger)');
  const common = (c: Command): Command =>
    c
      .option('--datadir <dir>', 'datadir of the server', './data')
      .option('--config <file>', 'server config with the plans; default <datadir>/server.json if present')
      .option('--ledger <url>', 'shared ledger redis://host:port[/db] (default: the embedded ledger in the datadir)');

  common(cmd.command('create'))
    .description('create a key; prints it once (only its sha256 is stored)')
    .requiredOption('--plan <plan>', `plan: ${PLAN_NAMES.join(', ')}`)
    .option('--daily-credits <n>', "override the plan's daily credits for this key")
    .option('--credits-per-second <n>', "override the plan's credits per second for this key (0: no limit)")
    .option('--label <label>', 'free text to recognise the key by')
    .option('--json', 'print a JSON object')
    .action(async (opts: Common & { plan: string; dailyCredits?: string; creditsPerSecond?: string; label?: string }) => {
      if (!isPlanName(opts.plan)) throw new CliError(`--plan: expected one of ${PLAN_NAMES.join(', ')}, got "${opts.plan}"`);
      const plan = opts.plan;
      const config = readConfig(opts.datadir, opts.config);
      const dailyCredits = parseCount('--daily-credits', opts.dailyCredits);
      const creditsPerSecond = parseCount('--credits-per-second', opts.creditsPerSecond);
      const { key, record } = await withLedger(opts, (l) =>
        createKey(l.keys, {
          plan,
          ...(dailyCredits !== undefined ? { dailyCredits } : {}),
          ...(creditsPerSecond !== undefined ? { creditsPerSecond } : {}),
          ...(opts.label !== undefined ? { label: opts.label } : {}),
        }),
      );
      const limits = limitsOf(config, record);
      if (opts.json) {
        process.stdout.write(
          `${JSON.stringify({ key, id: record.id, plan: record.plan, dailyCredits: limits.daily, creditsPerSecond: limits.perSecond, label: record.label ?? null, createdAt: record.createdAt })}\n`,
        );
      } else {
        process.stdout.write(`${key}\n`);
        process.stderr.write(
          `keys: created key ${record.id} on plan ${record.plan} (${limits.daily} credits/day, ${limits.perSecond === 0 ? 'no throughput limit' : `${limits.perSecond} credits/s`}). It is shown only this once.\n`,
        );
      }
    });

  common(cmd.command('list'))
    .description('list keys (ids, never the keys) with plan, limits and usage today')
    .option('--json', 'print a JSON array')
    .action(async (opts: Common) => {
      const config = readConfig(opts.datadir, opts.config);
      const rows = await withLedger(opts, async (l) => {
        const out = [];
        for (const k of await l.keys.list()) out.push({ ...(await usageOf(l, config, k)), createdAt: k.createdAt, revokedAt: k.revokedAt ?? null });
        return out;
      });
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(rows)}\n`);
        return;
      }
      if (rows.length === 0) {
        process.stdout.write('no keys (create one: node-cli keys create --plan core)\n');
        return;
      }
      process.stdout.write(`${['ID'.padEnd(12), 'PLAN'.padEnd(9), 'STATUS'.padEnd(7), 'USED/DAILY'.padEnd(24), 'CREDITS/S'.padEnd(9), 'CREATED'.padEnd(24), 'LABEL'].join(' ')}\n`);
      for (const r of rows) {
        process.stdout.write(
          `${[r.id.padEnd(12), r.plan.padEnd(9), (r.revoked ? 'revoked' : 'active').padEnd(7), `${r.used}/${r.dailyCredits}`.padEnd(24), String(r.creditsPerSecond || '-').padEnd(9), r.createdAt.padEnd(24), r.label ?? ''].join(' ')}\n`,
        );
      }
    });

  common(cmd.command('revoke <key>'))
    .description('revoke a key (the key itself or its id); running servers refuse it within a second')
    .option('--json', 'print a JSON object')
    .action(async (keyOrId: string, opts: Common) => {
      const rec = await withLedger(opts, async (l) => {
        await lookup(l, keyOrId);
        return (await revokeKey(l.keys, keyOrId)) as KeyRecord;
      });
      if (opts.json) process.stdout.write(`${JSON.stringify({ id: rec.id, revokedAt: rec.revokedAt })}\n`);
      else process.stdout.write(`keys: revoked ${rec.id}\n`);
    });

  common(cmd.command('usage <key>'))
    .description("today's credit usage of a key (the key itself or its id)")
    .option('--json', 'print a JSON object')
    .action(async (keyOrId: string, opts: Common) => {
      const config = readConfig(opts.datadir, opts.config);
      const u = await withLedger(opts, async (l) => usageOf(l, config, await lookup(l, keyOrId)));
      if (opts.json) process.stdout.write(`${JSON.stringify(u)}\n`);
      else {
        process.stdout.write(
          `key ${u.id} (${u.plan}${u.revoked ? ', revoked' : ''}): ${u.used} of ${u.dailyCredits} credits used today, ${u.remaining} left; resets at ${u.resetsAt}\n`,
        );
      }
    });
}
