// Opens the store, starts the log workers (eth_getLogs off the event loop, config logWorkers),
// builds the rpc service and runs the uWS server until SIGTERM/SIGINT, then shuts down in
// order: stop accepting, let in-flight requests finish, stop the log workers (each closes its
// store), close the store.
// Shared by `serve` and `start`. Nothing printed here contains an API key unless the caller
// passes one for the banner (`start` prints its development key on purpose).
import { existsSync } from 'node:fs';
import { ConfigError, FAULT_ENV, applyFaultInjection, loadConfig, startServer } from '@chainnode/server';
import type { RunningServer, ServerConfig } from '@chainnode/server';
import type { RpcConfig } from '@chainnode/rpc';
import { OffloadPool, createRpcService, resolveConfig } from '@chainnode/rpc';
import { DatadirEmptyError, DatadirInUseError, LevelChainStore, openChainStore } from '@chainnode/store';
import type { ChainStore } from '@chainnode/core';
import { CliError } from '../../cli-error.js';
import type { LogWorkerData } from './log-worker.js';
import { FollowRuntime } from './follow-runtime.js';
import { redactUrl } from '@chainnode/ingest';
import { isUpstreamUrl, parseReorgDepth } from '../sync/index.js';

export interface ServeOptions {
  datadir: string;
  host: string;
  port: string;
  config?: string;
  failoverUrl?: string;
  metricsPort?: string;
  /** serve --follow <URL>: follow a live upstream while serving. */
  follow?: string;
  genesis?: string;
  reorgDepth?: string;
  pollMs?: string;
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

/** Serves until a signal; `banner` receives the bound address once listening. */
export async function serve(opts: ServeOptions, banner?: (srv: RunningServer, host: string) => void): Promise<void> {
  const port = parsePort('--port', opts.port);
  const metricsPort = opts.metricsPort === undefined ? undefined : parsePort('--metrics-port', opts.metricsPort);
  const failoverUrl = parseFailoverUrl(opts.failoverUrl);
  const config = readConfig(opts.datadir, opts.config);
  const log = (line: string): void => {
    process.stderr.write(`serve: ${line}\n`);
  };
  let follow: FollowRuntime | undefined;
  let raw: ChainStore;
  if (opts.follow !== undefined) {
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
    raw = await openStore(opts.datadir, config.logWorkers > 0);
  }
  let store: ChainStore;
  try {
    store = applyFaultInjection(raw);
  } catch (err) {
    await raw.close();
    throw new CliError((err as Error).message);
  }
  if (store !== raw) process.stderr.write(`serve: fault injection active (${FAULT_ENV}=${process.env[FAULT_ENV]}): every store read fails\n`);
  const rpcConfig = resolveConfig({ maxBatchSize: config.maxBatchSize });
  let logs: OffloadPool | undefined;
  if (config.logWorkers > 0) {
    try {
      logs = await startLogWorkers(opts.datadir, rpcConfig, config, log);
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
      ...(follow !== undefined ? { chainEvents: follow, ingestStatus: () => follow.status() } : {}),
    });
  } catch (err) {
    await follow?.stop();
    await logs?.close();
    await raw.close();
    throw new CliError((err as Error).message);
  }
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  process.stdout.write(`serve: listening on ${hostForUrl}:${srv.port}\n`);
  process.stdout.write(`serve: HTTP      POST http://${hostForUrl}:${srv.port}/v3/<API_KEY>\n`);
  process.stdout.write(`serve: WebSocket      ws://${hostForUrl}:${srv.port}/ws/v3/<API_KEY>\n`);
  process.stdout.write(`serve: health    GET  http://${hostForUrl}:${srv.port}/health\n`);
  if (srv.metricsPort !== undefined) process.stdout.write(`serve: metrics   GET  http://${config.metricsHost}:${srv.metricsPort}/metrics\n`);
  if (failoverUrl !== undefined) process.stdout.write('serve: failover partner configured for eth_getBlockByHash (growth, custom plans)\n');
  if (follow !== undefined) process.stdout.write(`serve: following ${redactUrl(opts.follow ?? '')} (reorg depth ${parseReorgDepth(opts.reorgDepth)})\n`);
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
        .then(() => follow?.stop())
        .then(() => logs?.close())
        .then(() => raw.close())
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
