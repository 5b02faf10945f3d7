// Opens the store, starts the log workers (eth_getLogs off the event loop, config logWorkers),
// builds the rpc service and runs the uWS server until SIGTERM/SIGINT, then shuts down in
// order: stop accepting, let in-flight requests finish, stop the log workers (each closes its
// store), close the store.
// With `--threads N` (N > 1) this thread owns the ledger (and the dashboard) and N app threads
// (app-thread.ts) each run the rest on the same port; see serveThreads.
// Shared by `serve` and `start`. Nothing printed here contains an API key unless the caller
// passes one for the banner (`start` prints its development key on purpose).
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { KeyManager, hasAdminToken, startDashboard } from '@chainnode/dashboard';
import type { RunningDashboard } from '@chainnode/dashboard';
import { ConfigError, FAULT_ENV, LedgerUnavailableError, ThreadLedgerHost, applyFaultInjection, checkLedgerUrl, linkPorts, loadConfig, openLedger, startServer } from '@chainnode/server';
import type { CreditLedger, KeyStore, LedgerFailureMode, OpenLedger, RunningServer, ServerConfig, UsageRecord } from '@chainnode/server';
import type { RpcConfig } from '@chainnode/rpc';
import { OffloadPool, createRpcService, resolveConfig } from '@chainnode/rpc';
import { DatadirEmptyError, DatadirInUseError, LevelChainStore, openChainStore } from '@chainnode/store';
import type { ChainStore } from '@chainnode/core';
import { CliError } from '../../cli-error.js';
import type { LogWorkerData } from './log-worker.js';
import { FollowRuntime } from './follow-runtime.js';
import { redactUrl } from '@chainnode/ingest';
import { isUpstreamUrl, parseReorgDepth } from '../sync/index.js';
import type { AppThreadCommand, AppThreadData, AppThreadListening, AppThreadMessage } from './app-thread-api.js';

export interface ServeOptions {
  datadir: string;
  host: string;
  port: string;
  config?: string;
  failoverUrl?: string;
  metricsPort?: string;
  /** redis://host:port[/db]: keys and credits shared through Redis; default the embedded ledger. */
  ledger?: string;
  ledgerFailure?: string;
  dashboard?: boolean;
  adminHost?: string;
  adminPort?: string;
  adminTlsCert?: string;
  adminTlsKey?: string;
  /** serve --follow <URL>: follow a live upstream while serving. */
  follow?: string;
  genesis?: string;
  reorgDepth?: string;
  pollMs?: string;
  /** App threads on the port (default 1; `cores`: one per core). Not with `follow`. */
  threads?: string;
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

/** `shared`: log worker threads of this process will open the datadir too. */
export async function openStore(datadir: string, shared = false): Promise<ChainStore> {
  if (!existsSync(datadir)) throw new CliError(`datadir ${datadir} does not exist (import a chain first: node-cli sync --from <dir> --datadir ${datadir})`);
  try {
    return await openChainStore(datadir, { shared });
  } catch (err) {
    if (err instanceof DatadirInUseError) throw new CliError(`${err.message} (is a server already running on it?)`);
    if (err instanceof DatadirEmptyError) throw new CliError(err.message);
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

/**
 * Opens the store (following an upstream with `opts.follow`), starts the log workers and the uWS
 * server on `opts` with the ledger `ledgerOf()` returns (asked for once the store is open: the
 * embedded engine creates files in the datadir, which must not appear before the store's checks);
 * nothing is printed to stdout.
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
  let follow: FollowRuntime | undefined;
  let raw: ChainStore;
  if (opts.follow !== undefined) {
    if (extras.shared === true) throw new CliError('--follow: not with --threads > 1');
    if (!isUpstreamUrl(opts.follow)) throw new CliError('--follow: expected an http(s):// or ws(s):// JSON-RPC URL');
    const reorgDepth = parseReorgDepth(opts.reorgDepth);
    const pollMs = opts.pollMs === undefined ? 1000 : Number(opts.pollMs);
    if (!Number.isInteger(pollMs) || pollMs < 10) throw new CliError(`--poll-ms: expected an integer >= 10, got "${opts.pollMs}"`);
    if (config.logWorkers > 0) {
      // Each log worker keeps its own store caches, which the commits do not reach.
      log('--follow: eth_getLogs runs on the serving thread (logWorkers is ignored while following)');
      config.logWorkers = 0;
    }
    follow = new FollowRuntime({ url: opts.follow, datadir: opts.datadir, ...(opts.genesis !== undefined ? { genesisPath: opts.genesis } : {}), reorgDepth, pollMs }, log);
    const store = await openFollowedStore(opts.datadir, follow);
    follow.attach(store);
    raw = store;
  } else {
    if (opts.genesis !== undefined) throw new CliError('--genesis: only with --follow <URL>');
    raw = await openStore(opts.datadir, config.logWorkers > 0 || extras.shared === true);
  }
  let store: ChainStore;
  try {
    store = applyFaultInjection(raw);
  } catch (err) {
    await follow?.stop();
    await raw.close();
    throw new CliError((err as Error).message);
  }
  if (store !== raw) quiet(`fault injection active (${FAULT_ENV}=${process.env[FAULT_ENV]}): every store read fails`);
  const rpcConfig = resolveConfig({
    maxBatchSize: config.maxBatchSize,
    maxBatchResponseBytes: config.maxBatchResponseBytes,
    maxConcurrentBatches: config.maxConcurrentBatches,
  });
  let logs: OffloadPool | undefined;
  if (config.logWorkers > 0) {
    try {
      logs = await startLogWorkers(opts.datadir, rpcConfig, config, notes ? log : () => {});
    } catch (err) {
      await follow?.stop();
      await raw.close();
      throw new CliError(`cannot start the log workers: ${(err as Error).message}`);
    }
  }
  const service = createRpcService(store, rpcConfig, logs !== undefined ? { offload: logs } : {});
  let srv: RunningServer;
  try {
    const ledger = ledgerOf();
    srv = await startServer({
      service,
      store,
      datadir: opts.datadir,
      config,
      host: opts.host,
      port,
      log,
      ledger: { keys: ledger.keys, credits: ledger.credits },
      usage: ledger.usage,
      ...(failoverUrl !== undefined ? { failoverUrl } : {}),
      ...(metricsPort !== undefined ? { metricsPort } : {}),
      ...(follow !== undefined ? { chainEvents: follow, ingestStatus: () => follow.status() } : {}),
    });
  } catch (err) {
    await follow?.stop();
    await logs?.close();
    await raw.close();
    throw new CliError((err as Error).message);
  }
  const release = async (): Promise<void> => {
    await follow?.stop();
    await logs?.close();
    await raw.close();
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
  if (threads > 1 && opts.follow !== undefined) {
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

/**
 * The log workers: `logWorkers` threads answering eth_getLogs from their own shared handle on
 * the datadir, at most `logQueueLimit` calls queued or running. Each worker keeps its log reads
 * to 2 of libuv's thread pool (the store's limit), a pool the whole process shares (default 4
 * threads, UV_THREADPOOL_SIZE): with more workers than leave 2 threads to the main thread's
 * reads, block reads could queue behind log reads again, so that is reported.
 */
async function startLogWorkers(datadir: string, rpcConfig: RpcConfig, config: ServerConfig, log: (line: string) => void): Promise<OffloadPool> {
  const threads = Number(process.env['UV_THREADPOOL_SIZE']) || 4;
  if (2 * config.logWorkers + 2 > threads) {
    log(`logWorkers ${config.logWorkers}: log reads may hold ${2 * config.logWorkers} of the ${threads} libuv threads; set UV_THREADPOOL_SIZE to at least ${2 * config.logWorkers + 2}`);
  }
  const workerData: LogWorkerData = { datadir, rpcConfig };
  const pool = await OffloadPool.start({
    script: new URL('./log-worker.js', import.meta.url),
    workerData,
    size: config.logWorkers,
    queueLimit: config.logQueueLimit,
    timeoutMs: rpcConfig.logs.timeoutMs,
    log,
  });
  log(`eth_getLogs runs in ${config.logWorkers} worker thread${config.logWorkers === 1 ? '' : 's'} (at most ${config.logQueueLimit} calls queued or running)`);
  return pool;
}

/**
 * The serving store of `serve --follow`, opened shared with the ingest thread: at once if the
 * datadir already holds a chain, else once the ingest has written its genesis.
 */
async function openFollowedStore(datadir: string, follow: FollowRuntime): Promise<LevelChainStore> {
  const open = async (): Promise<LevelChainStore> => {
    try {
      return await LevelChainStore.open(datadir, { shared: true });
    } catch (err) {
      if (err instanceof DatadirInUseError) throw new CliError(`${err.message} (is a server or a sync already running on it?)`);
      throw err;
    }
  };
  try {
    return await open();
  } catch (err) {
    if (!(err instanceof DatadirEmptyError)) {
      await follow.stop();
      throw err;
    }
  }
  try {
    await follow.ready;
  } catch (err) {
    await follow.stop();
    throw new CliError(`--follow: ${(err as Error).message}`);
  }
  return open();
}
