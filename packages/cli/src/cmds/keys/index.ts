// `node-cli keys …`: every action of the dashboard, through the same key-management module
// (KeyManager of @chainnode/accounts) over the ledger's key store: embedded (<datadir>/keys.json,
// hashed) or, with `--ledger redis://host:port[/db]`, the shared Redis ledger. Works with or
// without a running server: servers pick changes up within a second. A key or secret is printed
// once, by the command that creates it (create, rotate, secret create).
import type { Command } from 'commander';
import type { KeyManager, OpenLedger } from '@chainnode/accounts';
import { PLAN_NAMES } from '@chainnode/accounts/settings';
import { loadConfig, parseLedgerUrl } from '@chainnode/runtime/configuration';
import { CliError } from '../../cli-error.js';
import { describe, keyTable, usageJson, usageText } from './text.js';

interface Common {
  datadir: string;
  config?: string;
  ledger?: string;
  json?: boolean;
}

/** Runs a key action with the ledger the options name (closed afterwards); refusals become one line. */
async function run<T>(opts: Common, f: (km: KeyManager) => Promise<T>): Promise<T> {
  const config = loadConfig(opts.datadir, opts.config);
  const url = parseLedgerUrl(opts.ledger);
  // Loaded when a key command runs, not with the command table (every command registers its options).
  const { KeyActionError, KeyFileError, LedgerUnavailableError, openLedger } = await import('@chainnode/accounts');
  let l: OpenLedger;
  try {
    l = await openLedger({ ...(url !== undefined ? { url } : {}), datadir: opts.datadir });
  } catch (err) {
    if (err instanceof LedgerUnavailableError) throw new CliError(err.message);
    throw err;
  }
  try {
    return await f(l.manager(config));
  } catch (err) {
    if (err instanceof KeyActionError || err instanceof KeyFileError || err instanceof LedgerUnavailableError)
      throw new CliError(err.message);
    throw err;
  } finally {
    await l.close();
  }
}

function credits(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value)) throw new CliError(`${flag}: expected a non-negative integer, got "${value}"`);
  return Number(value);
}

function csv(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function out(opts: Common, json: unknown, text: string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(json)}\n` : `${text}\n`);
}

/** The options every key command takes: where the keys are, and --json. */
function common(c: Command): Command {
  return c
    .option('--datadir <dir>', 'datadir of the server', './data')
    .option('--config <file>', 'server config with the plans; default <datadir>/server.json if present')
    .option('--ledger <url>', 'shared ledger redis://host:port[/db] (default: the embedded ledger in the datadir)')
    .option('--json', 'print JSON');
}

/** `keys create`: the new key on stdout, once. */
function registerCreate(cmd: Command): void {
  common(cmd.command('create'))
    .description('create a key; prints it once (only its sha256 and its first 6 characters are stored)')
    .requiredOption('--plan <plan>', `plan: ${PLAN_NAMES.join(', ')}`)
    .option('--name <name>', 'name to recognise the key by')
    .option('--label <label>', 'older spelling of --name')
    .option('--networks <list>', 'comma-separated networks the key may use (default: all)')
    .option('--daily-credits <n>', "operator: override the plan's daily credits for this key (402 beyond)")
    .option(
      '--credits-per-second <n>',
      "operator: override the plan's credits per second for this key (0: none; 429 -33200 beyond)",
    )
    .option('--limit-per-day <n>', "the key's own daily limit below the plan's (429, event -33400)")
    .option('--limit-per-second <n>', "the key's own credits-per-second limit below the plan's (429, event -33300)")
    .action(
      async (
        opts: Common & {
          plan: string;
          name?: string;
          label?: string;
          networks?: string;
          dailyCredits?: string;
          creditsPerSecond?: string;
          limitPerDay?: string;
          limitPerSecond?: string;
        },
      ) => {
        const cpd = credits('--limit-per-day', opts.limitPerDay);
        const cps = credits('--limit-per-second', opts.limitPerSecond);
        const override = credits('--credits-per-second', opts.creditsPerSecond);
        const { key, view } = await run(opts, (km) =>
          km.create({
            name: opts.name ?? opts.label ?? `key created ${new Date().toISOString().slice(0, 10)}`,
            plan: opts.plan,
            networks: opts.networks !== undefined ? csv(opts.networks) : undefined,
            dailyCredits: credits('--daily-credits', opts.dailyCredits),
            creditsPerSecond: override,
            limits:
              cpd !== undefined || cps !== undefined
                ? {
                    ...(cpd !== undefined ? { creditsPerDay: cpd } : {}),
                    ...(cps !== undefined ? { creditsPerSecond: cps } : {}),
                  }
                : undefined,
          }),
        );
        if (opts.json) {
          process.stdout.write(
            `${JSON.stringify({ key, id: view.id, name: view.name, prefix: view.prefix, plan: view.plan, dailyCredits: view.planDailyCredits, creditsPerSecond: view.planCreditsPerSecond, label: view.name, createdAt: view.createdAt, networks: view.networks, limits: view.limits })}\n`,
          );
        } else {
          process.stdout.write(`${key}\n`);
          process.stderr.write(
            `keys: created ${describe(view)}, ${view.planDailyCredits} credits/day. It is shown only this once: copy it now.\n`,
          );
        }
      },
    );
}

/** `keys list`: what is stored, never a key. */
function registerList(cmd: Command): void {
  common(cmd.command('list'))
    .description('list keys (name, key prefix, plan, created, last used, status; never the keys)')
    .action(async (opts: Common) => {
      const rows = await run(opts, (km) => km.list());
      if (opts.json) return out(opts, rows, '');
      if (rows.length === 0)
        return out(opts, [], 'no keys (create one: node-cli keys create --plan core --name my-app)');
      process.stdout.write(`${keyTable(rows)}\n`);
    });
}

/** `keys show`, `revoke`, `rename`, `rotate` (a new value, printed once). */
function registerChanges(cmd: Command): void {
  common(cmd.command('show <key>'))
    .description('settings of a key (the key itself or its id)')
    .action(async (keyOrId: string, opts: Common) => {
      const v = await run(opts, (km) => km.get(keyOrId));
      out(
        opts,
        v,
        `${describe(v)}\n${JSON.stringify({ networks: v.networks, allowlists: v.allowlists, secret: v.secret }, null, 2)}`,
      );
    });

  common(cmd.command('revoke <key>'))
    .description('revoke a key (the key itself or its id); a running server refuses it within a second')
    .action(async (keyOrId: string, opts: Common) => {
      const v = await run(opts, (km) => km.revoke(keyOrId));
      out(opts, { id: v.id, revokedAt: v.revokedAt }, `keys: revoked ${v.id}`);
    });

  common(cmd.command('rename <key> <name>'))
    .description('rename a key')
    .action(async (keyOrId: string, name: string, opts: Common) => {
      const v = await run(opts, (km) => km.rename(keyOrId, name));
      out(opts, v, `keys: renamed ${v.id} to "${v.name}"`);
    });

  common(cmd.command('rotate <key>'))
    .description('give a key a new value (same id, settings and daily balance); prints the new value once')
    .action(async (keyOrId: string, opts: Common) => {
      const { key, view } = await run(opts, (km) => km.rotate(keyOrId));
      if (opts.json) process.stdout.write(`${JSON.stringify({ key, id: view.id, prefix: view.prefix })}\n`);
      else {
        process.stdout.write(`${key}\n`);
        process.stderr.write(
          `keys: rotated ${view.id}; the old value stops working within a second. The new one is shown only this once.\n`,
        );
      }
    });
}

/** `keys limits`, `networks`, `allowlist`: a key's own limits and restrictions. */
function registerSettings(cmd: Command): void {
  common(cmd.command('limits <key>'))
    .description("per-key limits below the plan's (0: none)")
    .option('--per-day <n>', 'credits per UTC day (429, event -33400)')
    .option('--per-second <n>', 'credits per second (429, event -33300)')
    .action(async (keyOrId: string, opts: Common & { perDay?: string; perSecond?: string }) => {
      const limits: { creditsPerDay?: number; creditsPerSecond?: number } = {};
      const cpd = credits('--per-day', opts.perDay);
      const cps = credits('--per-second', opts.perSecond);
      if (cpd !== undefined) limits.creditsPerDay = cpd;
      if (cps !== undefined) limits.creditsPerSecond = cps;
      const v = await run(opts, (km) => km.update(keyOrId, { limits }));
      out(opts, v, `keys: ${describe(v)}`);
    });

  common(cmd.command('networks <key> <list>'))
    .description('networks the key may use: comma-separated names, or "all"')
    .action(async (keyOrId: string, list: string, opts: Common) => {
      const v = await run(opts, (km) => km.update(keyOrId, { networks: list === 'all' ? null : csv(list) }));
      out(opts, v, `keys: ${v.id} may use ${v.networks === null ? 'every network' : v.networks.join(', ')}`);
    });

  common(cmd.command('allowlist <key>'))
    .description(
      'set allowlists (each option replaces that type; "" clears it); types are AND-ed, entries OR-ed, at most 30 each',
    )
    .option(
      '--addresses <list>',
      'contract addresses (eth_call/eth_estimateGas to, eth_getBalance, eth_getCode, eth_getTransactionCount, eth_getStorageAt, eth_getProof, eth_getLogs address)',
    )
    .option('--origins <list>', 'origins, e.g. https://*.example.com')
    .option('--user-agents <list>', 'User-Agent substrings')
    .option('--methods <list>', 'JSON-RPC methods')
    .option('--clear', 'remove every allowlist')
    .action(
      async (
        keyOrId: string,
        opts: Common & { addresses?: string; origins?: string; userAgents?: string; methods?: string; clear?: boolean },
      ) => {
        const v = await run(opts, async (km) => {
          const cur = (await km.get(keyOrId)).allowlists;
          const lists = opts.clear
            ? {}
            : {
                addresses: opts.addresses !== undefined ? csv(opts.addresses) : cur.addresses,
                origins: opts.origins !== undefined ? csv(opts.origins) : cur.origins,
                userAgents: opts.userAgents !== undefined ? csv(opts.userAgents) : cur.userAgents,
                methods: opts.methods !== undefined ? csv(opts.methods) : cur.methods,
              };
          return km.update(keyOrId, { allowlists: lists });
        });
        out(opts, v.allowlists, `keys: allowlists of ${v.id}: ${JSON.stringify(v.allowlists)}`);
      },
    );
}

/** `keys secret create|delete|require|optional`: the key's API secret. */
function registerSecret(cmd: Command): void {
  const secret = cmd.command('secret').description("the key's API secret (HTTP basic auth password, empty user name)");
  common(secret.command('create <key>'))
    .description('create (or replace) the secret; prints it once')
    .action(async (keyOrId: string, opts: Common) => {
      const r = await run(opts, (km) => km.createSecret(keyOrId));
      if (opts.json) process.stdout.write(`${JSON.stringify({ secret: r.secret, id: r.view.id })}\n`);
      else {
        process.stdout.write(`${r.secret}\n`);
        process.stderr.write(
          `keys: secret set for ${r.view.id}; shown only this once. Send it as: curl --user :<SECRET> …\n`,
        );
      }
    });
  common(secret.command('delete <key>'))
    .description('remove the secret (and the requirement)')
    .action(async (keyOrId: string, opts: Common) => {
      const v = await run(opts, (km) => km.deleteSecret(keyOrId));
      out(opts, v.secret, `keys: secret of ${v.id} removed`);
    });
  common(secret.command('require <key>'))
    .description('refuse every request without the secret (401)')
    .action(async (keyOrId: string, opts: Common) => {
      const v = await run(opts, (km) => km.update(keyOrId, { secretRequired: true }));
      out(opts, v.secret, `keys: ${v.id} now requires its secret`);
    });
  common(secret.command('optional <key>'))
    .description('accept requests without the secret again (a wrong secret is still refused)')
    .action(async (keyOrId: string, opts: Common) => {
      const v = await run(opts, (km) => km.update(keyOrId, { secretRequired: false }));
      out(opts, v.secret, `keys: ${v.id} no longer requires its secret`);
    });
}

/** `keys usage`: a key's balance and usage. */
function registerUsage(cmd: Command): void {
  common(cmd.command('usage <key>'))
    .description("a key's balance today and its usage per UTC day and method (last 30 days) and per minute (last 15)")
    .action(async (keyOrId: string, opts: Common) => {
      const [v, u] = await run(opts, async (km) => [await km.get(keyOrId), await km.usage(keyOrId)] as const);
      if (opts.json) return out(opts, usageJson(v, u), '');
      process.stdout.write(`${usageText(v, u)}\n`);
    });
}

export function register(program: Command): void {
  const cmd = program
    .command('keys')
    .description('manage API keys (stored hashed in <datadir>/keys.json); the same actions as the dashboard');
  registerCreate(cmd);
  registerList(cmd);
  registerChanges(cmd);
  registerSettings(cmd);
  registerSecret(cmd);
  registerUsage(cmd);
}
