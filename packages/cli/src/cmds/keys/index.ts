// `node-cli keys create|list|revoke|usage`: manage API keys in <datadir>/keys.json (hashed) and
// read today's usage from <datadir>/usage/. Works with or without a running server: the server
// picks changes up within a second. The plaintext key is printed once, by `create`.
import type { Command } from 'commander';
import {
  KeyFileError,
  PLAN_NAMES,
  createKey,
  dailyLimit,
  findKey,
  isPlanName,
  nextUtcMidnight,
  networkNameProblem,
  readKeys,
  readUsageByNetwork,
  revokeKey,
  utcDay,
} from '@chainnode/server';
import type { KeyRecord, ServerConfig } from '@chainnode/server';
import { CliError } from '../../cli-error.js';
import { readConfig } from '../serve/run.js';

interface Common {
  datadir: string;
  config?: string;
  json?: boolean;
}

function keys(datadir: string): KeyRecord[] {
  try {
    return readKeys(datadir);
  } catch (err) {
    if (err instanceof KeyFileError) throw new CliError(err.message);
    throw err;
  }
}

function usageOf(datadir: string, config: ServerConfig, rec: KeyRecord): {
  id: string;
  plan: string;
  label: string | null;
  revoked: boolean;
  dailyCredits: number;
  used: number;
  remaining: number;
  resetsAt: string;
  networks: string[] | null;
  byNetwork: Record<string, number>;
} {
  const now = Date.now();
  // One balance across networks; byNetwork splits it ("" holds charges of a server without networks).
  const byNetwork = Object.fromEntries(readUsageByNetwork(datadir, utcDay(now)).get(rec.hash) ?? new Map<string, number>());
  const used = Object.values(byNetwork).reduce((a, b) => a + b, 0);
  const daily = dailyLimit(config, rec);
  return {
    id: rec.id,
    plan: rec.plan,
    label: rec.label ?? null,
    revoked: rec.revokedAt !== undefined,
    dailyCredits: daily,
    used,
    remaining: Math.max(0, daily - used),
    resetsAt: nextUtcMidnight(now).toISOString(),
    networks: rec.networks ?? null,
    byNetwork,
  };
}

function lookup(datadir: string, keyOrId: string): KeyRecord {
  const rec = findKey(keys(datadir), keyOrId);
  if (!rec) throw new CliError('no such key in the datadir (give the key, or its id from `keys list`)');
  return rec;
}

function parseNetworks(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((n) => n.trim()).filter((n) => n !== '');
  if (names.length === 0) throw new CliError('--networks: expected a comma-separated list of network names');
  for (const n of names) {
    const problem = networkNameProblem(n);
    if (problem !== undefined) throw new CliError(`--networks: ${problem}`);
  }
  return names;
}

function parseCredits(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new CliError(`--daily-credits: expected a non-negative integer, got "${value}"`);
  return Number(value);
}

export function register(program: Command): void {
  const cmd = program.command('keys').description('manage API keys (stored hashed in <datadir>/keys.json)');
  const common = (c: Command): Command =>
    c
      .option('--datadir <dir>', 'datadir of the server', './data')
      .option('--config <file>', 'server config with the plans; default <datadir>/server.json if present');

  common(cmd.command('create'))
    .description('create a key; prints it once (only its sha256 is stored)')
    .requiredOption('--plan <plan>', `plan: ${PLAN_NAMES.join(', ')}`)
    .option('--daily-credits <n>', "override the plan's daily credit balance for this key")
    .option('--label <label>', 'free text to recognise the key by')
    .option('--networks <names>', 'limit the key to these networks (comma-separated names); default: every network')
    .option('--json', 'print a JSON object')
    .action((opts: Common & { plan: string; dailyCredits?: string; label?: string; networks?: string }) => {
      if (!isPlanName(opts.plan)) throw new CliError(`--plan: expected one of ${PLAN_NAMES.join(', ')}, got "${opts.plan}"`);
      const config = readConfig(opts.datadir, opts.config);
      const dailyCredits = parseCredits(opts.dailyCredits);
      const networks = parseNetworks(opts.networks);
      const { key, record } = createKey(opts.datadir, {
        ...(networks !== undefined ? { networks } : {}),
        plan: opts.plan,
        ...(dailyCredits !== undefined ? { dailyCredits } : {}),
        ...(opts.label !== undefined ? { label: opts.label } : {}),
      });
      const daily = dailyLimit(config, record);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ key, id: record.id, plan: record.plan, dailyCredits: daily, label: record.label ?? null, networks: record.networks ?? null, createdAt: record.createdAt })}\n`);
      } else {
        process.stdout.write(`${key}\n`);
        process.stderr.write(`keys: created key ${record.id} on plan ${record.plan} (${daily} credits/day). It is shown only this once.\n`);
      }
    });

  common(cmd.command('list'))
    .description('list keys (ids, never the keys) with plan, balance and usage today')
    .option('--json', 'print a JSON array')
    .action((opts: Common) => {
      const config = readConfig(opts.datadir, opts.config);
      const rows = keys(opts.datadir).map((k) => ({ ...usageOf(opts.datadir, config, k), createdAt: k.createdAt, revokedAt: k.revokedAt ?? null }));
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(rows)}\n`);
        return;
      }
      if (rows.length === 0) {
        process.stdout.write('no keys (create one: node-cli keys create --plan core)\n');
        return;
      }
      process.stdout.write(`${['ID'.padEnd(12), 'PLAN'.padEnd(9), 'STATUS'.padEnd(7), 'USED/DAILY'.padEnd(24), 'CREATED'.padEnd(24), 'LABEL'].join(' ')}\n`);
      for (const r of rows) {
        process.stdout.write(
          `${[r.id.padEnd(12), r.plan.padEnd(9), (r.revoked ? 'revoked' : 'active').padEnd(7), `${r.used}/${r.dailyCredits}`.padEnd(24), r.createdAt.padEnd(24), r.label ?? ''].join(' ')}\n`,
        );
      }
    });

  common(cmd.command('revoke <key>'))
    .description('revoke a key (the key itself or its id); a running server refuses it within a second')
    .option('--json', 'print a JSON object')
    .action((keyOrId: string, opts: Common) => {
      lookup(opts.datadir, keyOrId);
      const rec = revokeKey(opts.datadir, keyOrId) as KeyRecord;
      if (opts.json) process.stdout.write(`${JSON.stringify({ id: rec.id, revokedAt: rec.revokedAt })}\n`);
      else process.stdout.write(`keys: revoked ${rec.id}\n`);
    });

  common(cmd.command('usage <key>'))
    .description("today's credit usage of a key (the key itself or its id)")
    .option('--json', 'print a JSON object')
    .action((keyOrId: string, opts: Common) => {
      const config = readConfig(opts.datadir, opts.config);
      const u = usageOf(opts.datadir, config, lookup(opts.datadir, keyOrId));
      if (opts.json) process.stdout.write(`${JSON.stringify(u)}\n`);
      else {
        process.stdout.write(
          `key ${u.id} (${u.plan}${u.revoked ? ', revoked' : ''}): ${u.used} of ${u.dailyCredits} credits used today, ${u.remaining} left; resets at ${u.resetsAt}\n`,
        );
      }
    });
}
