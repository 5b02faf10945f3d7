// Opens the store, starts the log workers (eth_getLogs off the event loop, config logWorkers),
// builds the rpc service and runs the uWS server until SIGTERM/SIGINT, then shuts down in
// order: stop accepting, let in-flight requests finish, stop the log workers (each closes its
// store), close the store.
// Shared by `serve` and `start`. Nothing printed here contains an API key unless the caller
// passes one for the banner (`start` prints its development key on purpose).
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ConfigError, FAULT_ENV, SharedLedgerHost, applyFaultInjection, loadConfig, startServer } from '@chainnode/server';
import type { LedgerApi, RunningServer, ServerConfig } from '@chainnode/server';
import type { RpcConfig } from '@chainnode/rpc';
import { OffloadPool, createRpcService, resolveConfig } from '@chainnode/rpc';
import { DatadirEmptyError, DatadirInUseError, openChainStore } from '@chainnode/store';
import type { ChainStore } from '@chainnode/core';
import { CliError } from '../../cli-error.js';
import type { LogWorkerData } from './log-worker.js';
import type { AppThreadCommand, AppThreadData, AppThreadListening, AppThreadMessage } from './app-thread-api.js';

export interface ServeOptions {
  datadir: string;
  host: string;
  port: string;
  config?: string;
  failoverUrl?: string;
  metricsPort?: string;
  /** App threads on the port (default 1; `cores`: one per core). */
  threads?: string;
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

/** A started server with everything it holds (store, log workers). */
export interface App {
  srv: RunningServer;
  /** Stop accepting, finish in-flight requests, stop the log workers, close the store. */
  stop(): Promise<void>;
  /** The first half of stop(): stop accepting and finish in-flight requests. */
  drain(): Promise<void>;
  /** The second half: stop the log workers and close the store. */
  release(): Promise<void>;
}

export interface AppExtras {
  /** Other threads of this process open the datadir too (serve --threads). */
  shared?: boolean;
  /** The ledger of an app thread (serve --threads); default: the datadir's CreditLedger. */
  ledger?: LedgerApi;
  /** Print the startup notes (fault injection, log workers): one app thread of several does. */
  notes?: boolean;
}

/** Opens the store, starts the log workers and the uWS server on `opts`; nothing is printed to stdout. */
export async function startApp(opts: ServeOptions, extras: AppExtras = {}): Promise<App> {
  const port = parsePort('--port', opts.port);
  const metricsPort = opts.metricsPort === undefined ? undefined : parsePort('--metrics-port', opts.metricsPort);
  const failoverUrl = parseFailoverUrl(opts.failoverUrl);
  const config = readConfig(opts.datadir, opts.config);
  const notes = extras.notes ?? true;
  const raw = await openStore(opts.datadir, config.logWorkers > 0 || extras.shared === true);
  let store: ChainStore;
  try {
    store = applyFaultInjection(raw);
  } catch (err) {
    await raw.close();
    throw new CliError((err as Error).message);
  }
  if (store !== raw && notes) process.stderr.write(`serve: fault injection active (${FAULT_ENV}=${process.env[FAULT_ENV]}): every store read fails\n`);
  const log = (line: string): void => {
    process.stderr.write(`serve: ${line}\n`);
  };
  const rpcConfig = resolveConfig({ maxBatchSize: config.maxBatchSize });
  let logs: OffloadPool | undefined;
  if (config.logWorkers > 0) {
    try {
      logs = await startLogWorkers(opts.datadir, rpcConfig, config, notes ? log : () => {});
    } catch (err) {
      await raw.close();
      throw new CliError(`cannot start the log workers: ${(err as Error).message}`);
    }
  }
  const service = createRpcService(store, rpcConfig, logs !== undefined ? { offload: logs } : {});
  let srv: RunningServer;
  try {
    srv = await startServer({
      service,
      store,
      datadir: opts.datadir,
      config,
      host: opts.host,
      port,
      log,
      ...(failoverUrl !== undefined ? { failoverUrl } : {}),
      ...(metricsPort !== undefined ? { metricsPort } : {}),
      ...(extras.ledger !== undefined ? { ledger: extras.ledger } : {}),
    });
  } catch (err) {
    await logs?.close();
    await raw.close();
    throw new CliError((err as Error).message);
  }
  const release = async (): Promise<void> => {
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

function printBanner(opts: ServeOptions, port: number, metricsPort: number | undefined, threads: number): string {
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  process.stdout.write(`serve: listening on ${hostForUrl}:${port}${threads > 1 ? ` (${threads} threads)` : ''}\n`);
  process.stdout.write(`serve: HTTP      POST http://${hostForUrl}:${port}/v3/<API_KEY>\n`);
  process.stdout.write(`serve: WebSocket      ws://${hostForUrl}:${port}/ws/v3/<API_KEY>\n`);
  process.stdout.write(`serve: health    GET  http://${hostForUrl}:${port}/health\n`);
  if (metricsPort !== undefined) {
    const config = readConfig(opts.datadir, opts.config);
    process.stdout.write(`serve: metrics   GET  http://${config.metricsHost}:${metricsPort}/metrics${threads > 1 ? ' (thread 0 only)' : ''}\n`);
  }
  if (opts.failoverUrl !== undefined) process.stdout.write('serve: failover partner configured for eth_getBlockByHash (growth, custom plans)\n');
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

/** Serves until a signal; `banner` receives the bound address once listening. */
export async function serve(opts: ServeOptions, banner?: (srv: { port: number }, host: string) => void): Promise<void> {
  const threads = parseThreads(opts.threads);
  if (threads > 1) {
    await serveThreads(opts, threads, banner);
  } else {
    const app = await startApp(opts);
    const host = printBanner(opts, app.srv.port, app.srv.metricsPort, 1);
    banner?.(app.srv, host);
    await untilSignal(app.stop);
  }
  // Idle keep-alive clients must not keep us alive past a clean stop.
  process.exit(process.exitCode ?? 0);
}

/** A port free on `host` right now (bound and released). */
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
 * SO_REUSEPORT on an explicit port: the kernel spreads connections over the threads). Credits stay exact through one
 * ledger on this thread (ledger-threads.ts). Thread 0 starts first and alone serves metrics.
 */
async function serveThreads(opts: ServeOptions, threads: number, banner?: (srv: { port: number }, host: string) => void): Promise<void> {
  parsePort('--port', opts.port);
  readConfig(opts.datadir, opts.config); // a config error stops here with its message
  const host = new SharedLedgerHost(opts.datadir);
  const workers: Worker[] = [];
  let failed: ((err: Error) => void) | undefined;
  const failure = new Promise<never>((_, reject) => (failed = reject));
  failure.catch(() => undefined);
  const startThread = (index: number, port: string): Promise<AppThreadListening> => {
    const link = host.link();
    const data: AppThreadData = { opts: { ...opts, port, ...(index === 0 ? {} : { metricsPort: undefined }) }, index, link };
    const w = new Worker(new URL('./app-thread.js', import.meta.url), { workerData: data, transferList: [link.port] });
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
  let stopping = false;
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
  const stopAll = async (): Promise<void> => {
    stopping = true;
    await phase('drain', 'drained');
    await phase('release', 'stopped');
    host.close();
  };
  let first: AppThreadListening;
  try {
    // uWS sets SO_REUSEPORT only on an explicit port: with --port 0 one is picked here first.
    const port = parsePort('--port', opts.port) === 0 ? String(await freePort(opts.host)) : opts.port;
    first = await startThread(0, port);
    await Promise.all(Array.from({ length: threads - 1 }, (_, i) => startThread(i + 1, port)));
  } catch (err) {
    await stopAll();
    throw err instanceof CliError ? err : new CliError((err as Error).message);
  }
  const hostForUrl = printBanner(opts, first.port, first.metricsPort, threads);
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
