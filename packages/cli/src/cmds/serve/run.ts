// Opens each network (its store, log workers and rpc service: network.ts), runs the uWS server
// until SIGTERM/SIGINT, then shuts down in order: stop accepting, let in-flight requests finish,
// stop each network's log workers and follower, close the stores.
// Without --network (or config networks) the one chain of --datadir is served on every Host,
// exactly as before networks existed (and `--follow <URL>` follows it live). A network given as
// `--network <name>=<datadir>,follow=<URL>` follows its own upstream with its own ingest thread.
// With `--threads N` (N > 1) this thread owns the ledger (and the dashboard) and N app threads
// (app-thread.ts) each run the rest on the same port; see serveThreads.
// Shared by `serve` and `start`. Nothing printed here contains an API key unless the caller
// passes one for the banner (`start` prints its development key on purpose).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { KeyManager, hasAdminToken, startDashboard } from '@chainnode/dashboard';
import type { RunningDashboard } from '@chainnode/dashboard';
import { ConfigError, LedgerUnavailableError, ThreadLedgerHost, checkLedgerUrl, linkPorts, loadConfig, openLedger, startServer } from '@chainnode/server';
import type { CreditLedger, KeyStore, LedgerFailureMode, NetworkConfig, NetworkRuntime, OpenLedger, RunningServer, ServerConfig, UsageRecord } from '@chainnode/server';
import { resolveConfig } from '@chainnode/rpc';
import { redactUrl } from '@chainnode/ingest';
import { CliError } from '../../cli-error.js';
import { isUpstreamUrl, parseReorgDepth } from '../sync/index.js';
import { checkThreadPool, openNetwork, resolveNetworks } from './network.js';
import type { FollowOptions } from './network.js';
import type { AppThreadCommand, AppThreadData, AppThreadListening, AppThreadMessage } from './app-thread-api.js';
import type { ServeOptions } from './options.js';

export { openStore } from './network.js';

export type { ServeOptions } from './options.js';

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

/** A started server with everything it holds (store, log workers, follower). */
export interface App {
  srv: RunningServer;
  /** Stop accepting, finish in-flight requests, stop the follower and log workers, close the store. */
  stop(): Promise<void>;
  /** The first half of stop(): stop accepting and finish in-flight requests. */
  drain(): Promise<void>;
  /** The second half: stop the follower and the log workers, close the store. */
  release(): Promise<void>;
}

/** Keys, credits and usage record a server uses (the caller keeps ownership and closes them). */
export interface AppLedger {
  keys: KeyStore;
  credits: CreditLedger;
  usage: UsageRecord;
}

export interface AppExtras {
  /** Other threads of this process open the datadir too (serve --threads). */
  shared?: boolean;
  /** Print the startup notes (fault injection, log workers, follower): one app thread of several does. */
  notes?: boolean;
}

const log = (line: string): void => {
  process.stderr.write(`serve: ${line}\n`);
};

/** The networks `opts` asks for, checked (`--network` flags replace the config's). */
function networkSpecs(opts: ServeOptions, config: ServerConfig): { specs: NetworkConfig[]; defaultNetwork: string | undefined } {
  const specs = resolveNetworks(opts.network, config);
  if (specs.length > 0 && opts.follow !== undefined) throw new CliError('--follow: with networks, give each network its own: --network <name>=<datadir>,follow=<URL>');
  if (opts.follow !== undefined && !isUpstreamUrl(opts.follow)) throw new CliError('--follow: expected an http(s):// or ws(s):// JSON-RPC URL');
  if (opts.genesis !== undefined && opts.follow === undefined) throw new CliError('--genesis: only with --follow <URL>');
  const defaultNetwork = opts.defaultNetwork ?? (specs.length > 0 ? config.defaultNetwork : undefined);
  if (defaultNetwork !== undefined) {
    if (specs.length === 0) throw new CliError('--default-network needs --network (or networks in the config)');
    if (!specs.some((n) => n.name === defaultNetwork)) throw new CliError(`--default-network ${defaultNetwork}: not among the networks (${specs.map((n) => n.name).join(', ')})`);
  }
  return { specs, defaultNetwork };
}

/**
 * Opens every network (each its store, log workers, rpc service and, with a follow URL, its
 * ingest thread) and starts the uWS server on `opts` with the ledger `ledgerOf()` returns (asked
 * for once the stores are open: the embedded engine creates files in the datadir, which must not
 * appear before the store's checks); nothing is printed to stdout.
 */
export async function startApp(opts: ServeOptions, ledgerOf: () => AppLedger, extras: AppExtras = {}): Promise<App> {
  const port = parsePort('--port', opts.port);
  const metricsPort = opts.metricsPort === undefined ? undefined : parsePort('--metrics-port', opts.metricsPort);
  const failoverUrl = parseFailoverUrl(opts.failoverUrl);
  const config = readConfig(opts.datadir, opts.config);
  const notes = extras.notes ?? true;
  const quiet = (line: string): void => {
    if (notes) log(line);
  };
  const { specs, defaultNetwork } = networkSpecs(opts, config);
  if (extras.shared === true && (opts.follow !== undefined || specs.some((n) => n.follow !== undefined))) {
    throw new CliError('--follow: not with --threads > 1');
  }
  const reorgDepth = parseReorgDepth(opts.reorgDepth);
  const pollMs = opts.pollMs === undefined ? 1000 : Number(opts.pollMs);
  if (!Number.isInteger(pollMs) || pollMs < 10) throw new CliError(`--poll-ms: expected an integer >= 10, got "${opts.pollMs}"`);
  const followOf = (url: string | undefined, genesisPath?: string): FollowOptions | undefined =>
    url === undefined ? undefined : { url, reorgDepth, pollMs, ...(genesisPath !== undefined ? { genesisPath } : {}) };
  const rpcConfig = resolveConfig({
    maxBatchSize: config.maxBatchSize,
    maxBatchResponseBytes: config.maxBatchResponseBytes,
    maxConcurrentBatches: config.maxConcurrentBatches,
  });
  if (notes) checkThreadPool(config, specs.length === 0 ? (opts.follow === undefined ? 1 : 0) : specs.filter((n) => n.follow === undefined).length, log);
  const shared = extras.shared === true;
  // One after the other: each opens a LevelDB and starts worker threads; a failure closes the rest.
  const networks: NetworkRuntime[] = [];
  const closeAll = async (): Promise<void> => {
    await Promise.allSettled(networks.map((n) => n.close()));
  };
  try {
    if (specs.length === 0) {
      const follow = followOf(opts.follow, opts.genesis);
      networks.push(await openNetwork({ name: '', datadir: opts.datadir, implicit: true, config, rpcConfig, log: quiet, shared, ...(follow !== undefined ? { follow } : {}) }));
    }
    for (const n of specs) {
      const follow = followOf(n.follow);
      networks.push(await openNetwork({ name: n.name, datadir: n.datadir, config, rpcConfig, log: quiet, shared, ...(follow !== undefined ? { follow } : {}) }));
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  let srv: RunningServer;
  try {
    const ledger = ledgerOf();
    srv = await startServer({
      networks,
      ...(defaultNetwork !== undefined ? { defaultNetwork } : {}),
      datadir: opts.datadir,
      config,
      host: opts.host,
      port,
      log,
      ledger: { keys: ledger.keys, credits: ledger.credits },
      usage: ledger.usage,
      ...(failoverUrl !== undefined ? { failoverUrl } : {}),
      ...(metricsPort !== undefined ? { metricsPort } : {}),
    });
  } catch (err) {
    await closeAll();
    throw new CliError((err as Error).message);
  }
  const release = async (): Promise<void> => {
    await srv.router.close();
  };
  return {
    srv,
    drain: () => srv.close(),
    release,
    stop: async () => {
      await srv.close();
      await release();
    },
  };
}

/**
 * --threads: a positive integer, or `cores` (availableParallelism()). Default 1 until the serve
 * suite has run green with several threads: on the heavily loaded machine it was built on, two
 * serve tests (the SIGTERM-with-getLogs-in-flight one, past its 10 s grace, and a 600 s timeout)
 * failed with 2 threads and with 1 alike, so nothing was learned from them either way.
 */
export function parseThreads(value: string | undefined): number {
  if (value === undefined) return 1;
  if (value === 'cores') return availableParallelism();
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 256) throw new CliError(`--threads: expected a number of threads 1-256, got "${value}"`);
  return Number(value);
}

/** The ledger of this process, opened once on this thread (the main thread with --threads). */
async function openServeLedger(opts: ServeOptions, config: ServerConfig, onLedger?: (l: OpenLedger) => Promise<void>): Promise<OpenLedger> {
  const ledgerUrl = parseLedgerUrl(opts.ledger);
  const failure = parseLedgerFailure(opts.ledgerFailure);
  let ledger: OpenLedger | undefined;
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
    return ledger;
  } catch (err) {
    await ledger?.close();
    if (err instanceof LedgerUnavailableError) throw new CliError(err.message);
    throw err;
  }
}

/** The dashboard on the admin listener, when asked for (on this thread, beside the ledger it reads). */
async function startAdmin(opts: ServeOptions, ledger: OpenLedger, config: ServerConfig, rpcPort: number): Promise<RunningDashboard | undefined> {
  const adminPort = dashboardPort(opts);
  if (adminPort === undefined) return undefined;
  const adminTls = readTls(opts);
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const keys = new KeyManager({ keys: ledger.keys, config, usage: ledger.usageRecord(), balance: (hash) => ledger.usage(hash) });
  try {
    return await startDashboard({
      datadir: opts.datadir,
      keys,
      host: opts.adminHost ?? '127.0.0.1',
      port: adminPort,
      rpcUrl: `http://${hostForUrl}:${rpcPort}`,
      log,
      ...(adminTls !== undefined ? { tls: adminTls } : {}),
    });
  } catch (err) {
    throw new CliError(`cannot start the dashboard: ${(err as Error).message}`);
  }
}

function printBanner(
  opts: ServeOptions,
  ledger: OpenLedger,
  srv: { port: number; metricsPort: number | undefined },
  dash: RunningDashboard | undefined,
  threads: number,
): string {
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const config = readConfig(opts.datadir, opts.config);
  const failure = parseLedgerFailure(opts.ledgerFailure);
  process.stdout.write(`serve: ledger    ${ledger.engine === 'redis' ? `redis (shared; when unreachable: fail-${failure})` : `embedded (${opts.datadir})`}\n`);
  process.stdout.write(`serve: listening on ${hostForUrl}:${srv.port}${threads > 1 ? ` (${threads} threads)` : ''}\n`);
  process.stdout.write(`serve: HTTP      POST http://${hostForUrl}:${srv.port}/v3/<API_KEY>\n`);
  process.stdout.write(`serve: WebSocket      ws://${hostForUrl}:${srv.port}/ws/v3/<API_KEY>\n`);
  process.stdout.write(`serve: health    GET  http://${hostForUrl}:${srv.port}/health\n`);
  if (srv.metricsPort !== undefined) {
    process.stdout.write(`serve: metrics   GET  http://${config.metricsHost}:${srv.metricsPort}/metrics${threads > 1 ? ' (thread 0 only)' : ''}\n`);
  }
  if (opts.failoverUrl !== undefined) process.stdout.write('serve: failover partner configured for eth_getBlockByHash (growth, custom plans)\n');
  if (dash !== undefined) {
    process.stdout.write(`serve: dashboard ${dash.url}\n`);
    if (!hasAdminToken(opts.datadir)) process.stderr.write(`serve: no admin token yet: create one with node-cli admin token create --datadir ${opts.datadir}\n`);
  }
  if (opts.follow !== undefined) process.stdout.write(`serve: following ${redactUrl(opts.follow)} (reorg depth ${parseReorgDepth(opts.reorgDepth)})\n`);
  const { specs, defaultNetwork } = networkSpecs(opts, config);
  if (specs.length > 0) {
    // *.localhost names the loopback in browsers and curl; elsewhere use DNS names whose first label is the network.
    const shown = opts.host === '127.0.0.1' || opts.host === '::1' || opts.host === 'localhost' ? 'localhost' : hostForUrl;
    for (const n of specs) {
      const dflt = `${n.name === defaultNetwork ? ' (default: also bare hosts)' : ''}${n.follow !== undefined ? ` following ${redactUrl(n.follow)}` : ''}`;
      process.stdout.write(`serve: network ${n.name.padEnd(10)} http://${n.name}.${shown}:${srv.port}/v3/<API_KEY>  ws://${n.name}.${shown}:${srv.port}/ws/v3/<API_KEY>  ${n.datadir}${dflt}\n`);
    }
    process.stdout.write(`serve: keys and usage (one account across networks) in ${opts.datadir}\n`);
  }
  return hostForUrl;
}

/** Runs `stop` on the first SIGTERM/SIGINT; a second one exits at once. */
function untilSignal(stop: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: string): void => {
      if (stopping) {
        process.stderr.write(`serve: ${signal} again, exiting now\n`);
        process.exit(1);
      }
      stopping = true;
      process.stderr.write(`serve: ${signal}: finishing in-flight requests, then closing the store\n`);
      stop().then(
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
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
  });
}

/**
 * Serves until a signal; `banner` receives the bound address once listening; `onLedger` runs once
 * the ledger is open, before the server starts (`start` makes its development key there).
 */
export async function serve(
  opts: ServeOptions,
  banner?: (srv: { port: number }, host: string) => void,
  onLedger?: (l: OpenLedger) => Promise<void>,
): Promise<void> {
  const threads = parseThreads(opts.threads);
  if (threads > 1 && (opts.follow !== undefined || (opts.network ?? []).some((n) => n.includes(',follow=')))) {
    // The follower's commits invalidate the caches of the one serving thread (applyCommit); the
    // other app threads' stores would not see them.
    throw new CliError('--threads > 1 cannot be combined with --follow (a follower serves from one thread)');
  }
  // Option errors before anything is opened.
  parsePort('--port', opts.port);
  if (opts.metricsPort !== undefined) parsePort('--metrics-port', opts.metricsPort);
  parseFailoverUrl(opts.failoverUrl);
  if (dashboardPort(opts) !== undefined) readTls(opts);
  parseLedgerUrl(opts.ledger);
  parseLedgerFailure(opts.ledgerFailure);
  const config = readConfig(opts.datadir, opts.config);
  networkSpecs(opts, config);
  const ledger = await openServeLedger(opts, config, onLedger);
  if (threads > 1) {
    await serveThreads(opts, threads, ledger, config, banner);
  } else {
    let app: App;
    try {
      app = await startApp(opts, () => ({ keys: ledger.keys, credits: ledger.ledger(), usage: ledger.usageRecord() }));
    } catch (err) {
      await ledger.close();
      throw err;
    }
    let dash: RunningDashboard | undefined;
    try {
      dash = await startAdmin(opts, ledger, config, app.srv.port);
    } catch (err) {
      await app.stop();
      await ledger.close();
      throw err;
    }
    const host = printBanner(opts, ledger, app.srv, dash, 1);
    banner?.(app.srv, host);
    await untilSignal(async () => {
      await app.drain();
      await dash?.close();
      await app.release();
      await ledger.close();
    });
  }
  // Idle keep-alive clients must not keep us alive past a clean stop.
  process.exit(process.exitCode ?? 0);
}

/** A free port on `host`, for --threads with --port 0. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * `--threads N`: N app threads (app-thread.ts), each a whole server (uWS app, its own shared
 * handle on the datadir, log workers, key registry) listening on the same port (uWS sets
 * SO_REUSEPORT on an explicit port: the kernel spreads connections over the threads). This thread
 * owns the ledger engine (embedded or Redis) and the dashboard; the app threads reach the ledger
 * through ledger-threads.ts (same interfaces), so credits stay exact across threads. Thread 0
 * starts first and alone serves metrics.
 */
async function serveThreads(
  opts: ServeOptions,
  threads: number,
  ledger: OpenLedger,
  config: ServerConfig,
  banner?: (srv: { port: number }, host: string) => void,
): Promise<void> {
  const host = new ThreadLedgerHost({ keys: ledger.keys, credits: ledger.ledger(), usage: ledger.usageRecord() });
  const workers: Worker[] = [];
  let failed: ((err: Error) => void) | undefined;
  const failure = new Promise<never>((_, reject) => (failed = reject));
  failure.catch(() => undefined);
  let stopping = false;
  const startThread = (index: number, port: string): Promise<AppThreadListening> => {
    const link = host.link();
    const data: AppThreadData = { opts: { ...opts, port, ...(index === 0 ? {} : { metricsPort: undefined }) }, index, link };
    const w = new Worker(new URL('./app-thread.js', import.meta.url), { workerData: data, transferList: linkPorts(link) });
    workers.push(w);
    return new Promise<AppThreadListening>((resolve, reject) => {
      w.on('message', (m: AppThreadMessage) => {
        if (m.type === 'listening') resolve(m);
      });
      w.on('error', (err) => {
        reject(err);
        failed?.(err);
      });
      w.on('exit', (code) => {
        const err = new Error(`app thread ${index} exited with code ${code}`);
        reject(err);
        if (!stopping) failed?.(err);
      });
    });
  };
  // Two phases: every thread drains (stops accepting, finishes in-flight requests) before any
  // closes its store: a thread closing its handle on the shared LevelDB while another thread's
  // reads were running crashed the process (SIGSEGV), as did terminating a thread that holds uWS
  // while another serves. So nothing is terminated either: the threads end with the process,
  // which serve exits right after.
  const phase = (command: AppThreadCommand['type'], reply: AppThreadMessage['type']): Promise<void[]> =>
    Promise.all(
      workers.map(async (w) => {
        const exited = new Promise<void>((r) => w.once('exit', () => r()));
        const done = new Promise<void>((r) =>
          w.on('message', (m: AppThreadMessage) => {
            if (m.type === reply) r();
          }),
        );
        w.postMessage({ type: command } satisfies AppThreadCommand);
        await Promise.race([done, exited]);
      }),
    );
  let dash: RunningDashboard | undefined;
  const stopAll = async (): Promise<void> => {
    stopping = true;
    await phase('drain', 'drained');
    await dash?.close();
    await phase('release', 'stopped');
    host.close();
    await ledger.close();
  };
  let first: AppThreadListening;
  try {
    // uWS sets SO_REUSEPORT only on an explicit port: with --port 0 one is picked here first.
    const port = parsePort('--port', opts.port) === 0 ? String(await freePort(opts.host)) : opts.port;
    first = await startThread(0, port);
    await Promise.all(Array.from({ length: threads - 1 }, (_, i) => startThread(i + 1, port)));
    dash = await startAdmin(opts, ledger, config, first.port);
  } catch (err) {
    await stopAll();
    throw err instanceof CliError ? err : new CliError((err as Error).message);
  }
  const hostForUrl = printBanner(opts, ledger, first, dash, threads);
  banner?.({ port: first.port }, hostForUrl);
  await Promise.race([
    untilSignal(stopAll),
    failure.catch(async (err: unknown) => {
      process.stderr.write(`serve: ${(err as Error).message}; stopping\n`);
      process.exitCode = 1;
      await stopAll();
    }),
  ]);
}
