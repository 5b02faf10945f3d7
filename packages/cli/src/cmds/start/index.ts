// `node-cli start` (what `npm start` runs): import the bundled fixtures into ./data when needed
// (the same import as `sync`, with its progress and summary; it resumes from the stored head, so a datadir that
// is already up to date costs one pass over chain.rlp), make sure a development key exists,
// and serve on 127.0.0.1:8545, printing the URLs with the key and a curl example.
//
// Development key: kept in plaintext in <datadir>/dev-api-key (mode 0600) so repeated starts
// reuse it; this is a local-development convenience only. Its hash is in keys.json like any
// other key, so `keys revoke` works on it (the next start then creates a fresh one).
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { sync } from '../sync/index.js';
import type { KeyManager } from '@chainnode/accounts';
import type { LogFormat } from '@chainnode/server';
import { CliError } from '../../cli-error.js';
import { runtimeConfigOf } from '@chainnode/runtime/configuration';
import { withConfigFile, withServeOptions } from '../serve/index.js';

interface StartOptions {
  datadir: string;
  from: string;
  host: string;
  port: string;
  config?: string;
  failoverUrl?: string;
  metricsPort?: string;
  ledger?: string;
  ledgerFailure?: string;
}

export const DEV_KEY_FILE = 'dev-api-key';

/**
 * Returns the development key, creating it (plan custom) when missing or revoked, through the key
 * manager every key action goes through (the dashboard's and `keys create`'s).
 */
export async function ensureDevKey(datadir: string, keys: KeyManager): Promise<{ key: string; created: boolean }> {
  const path = join(datadir, DEV_KEY_FILE);
  if (existsSync(path)) {
    const key = readFileSync(path, 'utf8').trim();
    if (/^[0-9a-f]{32}$/.test(key)) {
      // Loaded here, not with the command table: every other command runs without accounts.
      const { KeyActionError } = await import('@chainnode/accounts');
      const view = await keys.get(key).catch((err: unknown) => {
        if (err instanceof KeyActionError) return undefined; // no such key (any more)
        throw err;
      });
      if (view?.status === 'active') return { key, created: false };
    }
  }
  const { key } = await keys.create({ name: 'development key (npm start)', plan: 'custom' });
  writeFileSync(path, `${key}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return { key, created: true };
}

async function importFixtures(from: string, datadir: string, format: LogFormat): Promise<void> {
  if (!existsSync(join(from, 'genesis.json')) || !existsSync(join(from, 'chain.rlp'))) {
    throw new CliError(`${from} holds no genesis.json + chain.rlp (generate them: npm run fixtures)`);
  }
  await sync({ from, datadir }, format);
}

export function register(program: Command): void {
  withServeOptions(
    program
      .command('start')
      .description('import the bundled fixtures if needed, ensure a development key, and serve on 127.0.0.1:8545')
      .option('--from <dir>', 'chain export to import (genesis.json + chain.rlp)', './fixtures'),
  ).action(async (given: StartOptions, command: Command) => {
    const opts = withConfigFile(given, command);
    const config = runtimeConfigOf(opts);
    await importFixtures(opts.from, opts.datadir, config.log.format);
    const [{ runRuntime }, { announce, printBanner }] = await Promise.all([
      import('@chainnode/runtime'),
      import('../serve/banner.js'),
    ]);
    let key = '';
    let created = false;
    const code = await runRuntime(config, {
      onListening: (l) => {
        const host = printBanner(config, l);
        const http = `http://${host}:${l.port}/v3/${key}`;
        const ws = `ws://${host}:${l.port}/ws/v3/${key}`;
        const keyFile = join(opts.datadir, DEV_KEY_FILE);
        // In JSON the key stays in its file: the log scrubs key material from every line.
        announce(
          config,
          [
            '',
            `Development key ${created ? 'created' : 'reused'} (plan custom; kept in ${keyFile}, mode 0600):`,
            `  HTTP       ${http}`,
            `  WebSocket  ${ws}`,
            '',
            'Try:',
            `  curl -s -X POST -H 'content-type: application/json' \\`,
            `    --data '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}' \\`,
            `    ${http}`,
            '',
            'Ctrl-C stops the server (in-flight requests finish, the store closes cleanly).',
          ],
          `development key ${created ? 'created' : 'reused'}`,
          { plan: 'custom', keyFile },
        );
      },
      onLedger: async (l, server) => {
        ({ key, created } = await ensureDevKey(opts.datadir, l.manager(server)));
      },
    });
    process.exit(code);
  });
}
