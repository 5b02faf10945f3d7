// Opens each network (its store, log workers and rpc service: network.ts), runs the uWS server
// until SIGTERM/SIGINT, then shuts down in order: stop accepting, let in-flight requests finish,
// stop each network's log workers (each closes its store), close the stores.
// Without --network (or config networks) the one chain of --datadir is served on every Host,
// exactly as before networks existed (and `--follow <URL>` follows it live). A network given as
// `--network <name>=<datadir>,follow=<URL>` follows its own upstream with its own ingest thread.
// Shared by `serve` and `start`. Nothing printed here contains an API key unless the caller
// passes one for the banner (`start` prints its development key on purpose).
import { readFileSync } from 'node:fs';
import { KeyManager, hasAdminToken, startDashboard } from '@chainnode/dashboard';
import type { RunningDashboard } from '@chainnode/dashboard';
import { ConfigError, LedgerUnavailableError, checkLedgerUrl, loadConfig, openLedger, startServer } from '@chainnode/server';
import type { LedgerFailureMode, NetworkRuntime, OpenLedger, RunningServer, ServerConfig } from '@chainnode/server';
import { resolveConfig } from '@chainnode/rpc';
import { redactUrl } from '@chainnode/ingest';
import { isUpstreamUrl, parseReorgDepth } from '../sync/index.js';
import { CliError } from '../../cli-error.js';
import { checkThreadPool, openNetwork, resolveNetworks } from './network.js';
import type { FollowOptions } from './network.js';

export { openStore } from './network.js';

export interface ServeOptions {
  datadir: string;
  host: string;
  port: string;
  config?: string;
  failoverUrl?: string;
  metricsPort?: string;
  /** `--network <name>=<datadir>[,follow=<URL>]`, repeatable. */
  network?: string[];
  /** `--default-network <name>`: the network answering bare hosts. */
  defaultNetwork?: string;
  /** serve --follow <URL>: follow a live upstream while serving (the --datadir chain). */
  /** redis://host:port[/db]: keys and credits shared through Redis; default the embedded ledger. */
  ledger?: string;
  ledgerFailure?: string;
  dashboard?: boolean;
  adminHost?: string;
  adminPort?: string;
  adminTlsCert?: string;
  adminTlsKey?: string;
  follow?: string;
  genesis?: string;
  reorgDepth?: string;
  pollMs?: string;
}

/** The admin port to use, or undefined when the dashboard is off (default port 8546). */
function dashboardPort(opts: ServeOptions): number | undefined {
  if (opts.adminPort !== undefined) return parsePort('--admin-port', opts.adminPort);
  return opts.dashboard === true ? 8546 : undefined;
}

function readTls(opts: ServeOptions): { cert: string; key: string } | undefined {
  if (opts.adminTlsCert === undefined && opts.adminTlsKey === undefined) return undefined;
  if (opts.adminTlsCert === undefined || opts.adminTlsKey === undefined) throw new CliError('--admin-tls-cert and --admin-tls-key go together');
  try {
    return { cert: readFileSync(opts.adminTlsCert, 'utf8'), key: readFileSync(opts.adminTlsKey, 'utf8') };
  } catch (err) {
    throw new CliError(`cannot read the admin TLS files: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** `--ledger`: undefined (embedded) or a checked redis:// URL. */
export function parseLedgerUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    return checkLedgerUrl(value);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
}

export function parseLedgerFailure(value: string | undefined): LedgerFailureMode {
  if (value === undefined || value === 'open') return 'open';
  if (value === 'closed') return 'closed';
  throw new CliError(`--ledger-failure: expected open or closed, got "${value}"`);
}

export function parsePort(name: string, value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new CliError(`${name}: expected a port number 0-65535, got "${value}"`);
  return Number(value);
}

export function parseFailoverUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new CliError('--failover-url: expected an http(s) URL of a JSON-RPC endpoint');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new CliError('--failover-url: expected an http:// or https:// URL');
  return value;
}

export function readConfig(datadir: string, file: string | undefined): ServerConfig {
  try {
    return loadConfig(datadir, file);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

/**
 * Serves until a signal; `banner` receives the bound address once listening; `onLedger` runs once
 * the ledger is open, before the server starts (`start` makes its development key there).
 */
export async function serve(
  opts: ServeOptions,
  banner?: (srv: RunningServer, host: string) => void,
  onLedger?: (l: OpenLedger) => Promise<void>,
): Promise<void> {
  const port = parsePort('--port', opts.port);
  const metricsPort = opts.metricsPort === undefined ? undefined : parsePort('--metrics-port', opts.metricsPort);
  const failoverUrl = parseFailoverUrl(opts.failoverUrl);
  const adminPort = dashboardPort(opts);
  const adminTls = adminPort !== undefined ? readTls(opts) : undefined;
  const ledgerUrl = parseLedgerUrl(opts.ledger);
  const failure = parseLedgerFailure(opts.ledgerFailure);
  const config = readConfig(opts.datadir, opts.config);
  const specs = resolveNetworks(opts.network, config);
  if (specs.length > 0 && opts.follow !== undefined) throw new CliError('--follow: with networks, give each network its own: --network <name>=<datadir>,follow=<URL>');
  if (opts.follow !== undefined && !isUpstreamUrl(opts.follow)) throw new CliError('--follow: expected an http(s):// or ws(s):// JSON-RPC URL');
  if (opts.genesis !== undefined && opts.follow === undefined) throw new CliError('--genesis: only with --follow <URL>');
  const reorgDepth = parseReorgDepth(opts.reorgDepth);
  const pollMs = opts.pollMs === undefined ? 1000 : Number(opts.pollMs);
  if (!Number.isInteger(pollMs) || pollMs < 10) throw new CliError(`--poll-ms: expected an integer >= 10, got "${opts.pollMs}"`);
  const followOf = (url: string | undefined, genesisPath?: string): FollowOptions | undefined =>
    url === undefined ? undefined : { url, reorgDepth, pollMs, ...(genesisPath !== undefined ? { genesisPath } : {}) };
  const defaultNetwork = opts.defaultNetwork ?? (specs.length > 0 ? config.defaultNetwork : undefined);
  if (defaultNetwork !== undefined) {
    if (specs.length === 0) throw new CliError('--default-network needs --network (or networks in the config)');
    if (!specs.some((n) => n.name === defaultNetwork)) throw new CliError(`--default-network ${defaultNetwork}: not among the networks (${specs.map((n) => n.name).join(', ')})`);
  }
  const log = (line: string): void => {
    process.stderr.write(`serve: ${line}\n`);
  };
  let ledger: OpenLedger;
  try {
    ledger = await openLedger({
      ...(ledgerUrl !== undefined ? { url: ledgerUrl } : {}),
      datadir: opts.datadir,
      failure,
      commandTimeoutMs: config.ledgerCommandTimeoutMs,
      journalMax: config.ledgerJournalMax,
      log,
    });
    await onLedger?.(ledger);
  } catch (err) {
    if (err instanceof LedgerUnavailableError) throw new CliError(err.message);
    throw err;
  }
  const rpcConfig = resolveConfig({
    maxBatchSize: config.maxBatchSize,
    maxBatchResponseBytes: config.maxBatchResponseBytes,
    maxConcurrentBatches: config.maxConcurrentBatches,
  });
  checkThreadPool(config, specs.length === 0 ? (opts.follow === undefined ? 1 : 0) : specs.filter((n) => n.follow === undefined).length, log);
  // One after the other: each opens a LevelDB and starts worker threads; a failure closes the rest.
  const networks: NetworkRuntime[] = [];
  const closeAll = async (): Promise<void> => {
    await Promise.allSettled(networks.map((n) => n.close()));
  };
  try {
    if (specs.length === 0) {
      const follow = followOf(opts.follow, opts.genesis);
      networks.push(await openNetwork({ name: '', datadir: opts.datadir, implicit: true, config, rpcConfig, log, ...(follow !== undefined ? { follow } : {}) }));
    }
    for (const n of specs) {
      const follow = followOf(n.follow);
      networks.push(await openNetwork({ name: n.name, datadir: n.datadir, config, rpcConfig, log, ...(follow !== undefined ? { follow } : {}) }));
    }
  } catch (err) {
    await closeAll();
    await ledger.close();
    throw err;
  }
  let srv: RunningServer;
  try {
    srv = await startServer({
      networks,
      ...(defaultNetwork !== undefined ? { defaultNetwork } : {}),
      datadir: opts.datadir,
      config,
      host: opts.host,
      port,
      log,
      ledger: { keys: ledger.keys, credits: ledger.ledger() },
      usage: ledger.usageRecord(),
      ...(failoverUrl !== undefined ? { failoverUrl } : {}),
      ...(metricsPort !== undefined ? { metricsPort } : {}),
    });
  } catch (err) {
    await closeAll();
    await ledger.close();
    throw new CliError((err as Error).message);
  }
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  let dash: RunningDashboard | undefined;
  if (adminPort !== undefined) {
    const keys = new KeyManager({ keys: ledger.keys, config, usage: srv.usage, balance: (hash) => ledger.usage(hash) });
    try {
      dash = await startDashboard({
        datadir: opts.datadir,
        keys,
        host: opts.adminHost ?? '127.0.0.1',
        port: adminPort,
        rpcUrl: `http://${hostForUrl}:${srv.port}`,
        log,
        ...(adminTls !== undefined ? { tls: adminTls } : {}),
      });
    } catch (err) {
      await srv.close();
      await srv.router.close();
      await ledger.close();
      throw new CliError(`cannot start the dashboard: ${(err as Error).message}`);
    }
  }
  process.stdout.write(`serve: ledger    ${ledger.engine === 'redis' ? `redis (shared; when unreachable: fail-${failure})` : `embedded (${opts.datadir})`}\n`);
  process.stdout.write(`serve: listening on ${hostForUrl}:${srv.port}\n`);
  process.stdout.write(`serve: HTTP      POST http://${hostForUrl}:${srv.port}/v3/<API_KEY>\n`);
  process.stdout.write(`serve: WebSocket      ws://${hostForUrl}:${srv.port}/ws/v3/<API_KEY>\n`);
  process.stdout.write(`serve: health    GET  http://${hostForUrl}:${srv.port}/health\n`);
  if (srv.metricsPort !== undefined) process.stdout.write(`serve: metrics   GET  http://${config.metricsHost}:${srv.metricsPort}/metrics\n`);
  if (failoverUrl !== undefined) process.stdout.write('serve: failover partner configured for eth_getBlockByHash (growth, custom plans)\n');
  if (dash !== undefined) {
    process.stdout.write(`serve: dashboard ${dash.url}\n`);
    if (!hasAdminToken(opts.datadir)) process.stderr.write(`serve: no admin token yet: create one with node-cli admin token create --datadir ${opts.datadir}\n`);
  }
  if (opts.follow !== undefined) process.stdout.write(`serve: following ${redactUrl(opts.follow)} (reorg depth ${reorgDepth})\n`);
  if (specs.length > 0) {
    // *.localhost names the loopback in browsers and curl; elsewhere use DNS names whose first label is the network.
    const shown = opts.host === '127.0.0.1' || opts.host === '::1' || opts.host === 'localhost' ? 'localhost' : hostForUrl;
    for (const n of specs) {
      const dflt = `${n.name === defaultNetwork ? ' (default: also bare hosts)' : ''}${n.follow !== undefined ? ` following ${redactUrl(n.follow)}` : ''}`;
      process.stdout.write(`serve: network ${n.name.padEnd(10)} http://${n.name}.${shown}:${srv.port}/v3/<API_KEY>  ws://${n.name}.${shown}:${srv.port}/ws/v3/<API_KEY>  ${n.datadir}${dflt}\n`);
    }
    process.stdout.write(`serve: keys and usage (one account across networks) in ${opts.datadir}\n`);
  }
  banner?.(srv, hostForUrl);

  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        process.stderr.write(`serve: ${signal} again, exiting now\n`);
        process.exit(1);
      }
      stopping = true;
      process.stderr.write(`serve: ${signal}: finishing in-flight requests, then closing the store\n`);
      srv
        .close()
        .then(() => dash?.close())
        .then(() => srv.router.close())
        .then(() => ledger.close())
        .then(
          () => {
            process.stderr.write('serve: stopped cleanly\n');
            resolve();
          },
          (err: unknown) => {
            process.stderr.write(`serve: error while stopping: ${(err as Error).message}\n`);
            process.exitCode = 1;
            resolve();
          },
        );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
  // Idle keep-alive clients must not keep us alive past a clean stop.
  process.exit(process.exitCode ?? 0);
}
