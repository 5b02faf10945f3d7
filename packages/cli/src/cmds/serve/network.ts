// One network of `serve`: opens its datadir (its own store and caches), starts its own log
// workers, builds its rpc service and hands the server a NetworkRuntime (server/src/network.ts),
// which the server routes requests to by Host. Nothing here is shared between networks except the
// process: a network whose store fails answers its own calls with errors, the others carry on.
//
// `--network <name>=<datadir>[,follow=<URL>]` is parsed here too.
import { existsSync } from 'node:fs';
import { ConfigError, FAULT_ENV, IMPLICIT_NETWORK, NetworkRuntime, applyFaultInjection, checkNetwork, checkNetworks } from '@chainnode/server';
import type { NetworkConfig, ServerConfig } from '@chainnode/server';
import type { RpcConfig } from '@chainnode/rpc';
import { OffloadPool, createRpcService } from '@chainnode/rpc';
import { DatadirEmptyError, DatadirInUseError, openChainStore } from '@chainnode/store';
import type { ChainStore } from '@chainnode/core';
import { CliError } from '../../cli-error.js';
import type { LogWorkerData } from './log-worker.js';

/**
 * Whether this build can follow a live upstream (`follow=<URL>`). The follow runtime is another
 * workstream's (`serve --follow`); until it is part of this build a network with `follow=` is
 * refused at start with FOLLOW_UNSUPPORTED rather than served as a frozen chain.
 */
export const FOLLOW_SUPPORTED = false;
export const FOLLOW_UNSUPPORTED = 'follow=<URL> is not supported in this build (no follow runtime); serve the network from its imported datadir without follow=';

/** Parses one `--network <name>=<datadir>[,follow=<URL>]`. */
export function parseNetworkSpec(spec: string): NetworkConfig {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new CliError(`--network ${spec}: expected <name>=<datadir>[,follow=<URL>]`);
  const name = spec.slice(0, eq);
  const rest = spec.slice(eq + 1);
  // The datadir is everything up to the first ",follow=" (a datadir may contain commas otherwise).
  const at = rest.indexOf(',follow=');
  const datadir = at < 0 ? rest : rest.slice(0, at);
  const follow = at < 0 ? undefined : rest.slice(at + ',follow='.length);
  try {
    return checkNetwork(`--network ${name}`, name, datadir, follow);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

/** The networks to serve: `--network` flags (they replace the config's), else the config's. */
export function resolveNetworks(flags: readonly string[] | undefined, config: ServerConfig): NetworkConfig[] {
  const list = flags !== undefined && flags.length > 0 ? flags.map(parseNetworkSpec) : config.networks;
  try {
    checkNetworks('--network', list);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
  for (const n of list) if (n.follow !== undefined && !FOLLOW_SUPPORTED) throw new CliError(`network ${n.name}: ${FOLLOW_UNSUPPORTED}`);
  return list;
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

export interface OpenNetworkOptions {
  name: string;
  datadir: string;
  /** The one network of `serve --datadir D` (every Host, unlabelled metrics, journal without network). */
  implicit?: boolean;
  config: ServerConfig;
  rpcConfig: RpcConfig;
  log: (line: string) => void;
}

/** Opens a network's store, its log workers and rpc service; on failure nothing stays open. */
export async function openNetwork(o: OpenNetworkOptions): Promise<NetworkRuntime> {
  const label = o.implicit ? '' : `network ${o.name}: `;
  const log = (line: string): void => o.log(`${label}${line}`);
  const raw = await openStore(o.datadir, o.config.logWorkers > 0).catch((err: unknown) => {
    throw err instanceof CliError && !o.implicit ? new CliError(`${label}${err.message}`) : err;
  });
  const network = o.implicit ? undefined : o.name;
  let store: ChainStore;
  try {
    store = applyFaultInjection(raw, process.env, network);
  } catch (err) {
    await raw.close();
    throw new CliError((err as Error).message);
  }
  if (store !== raw) log(`fault injection active (${FAULT_ENV}=${process.env[FAULT_ENV]}): every store read fails`);
  let logs: OffloadPool | undefined;
  if (o.config.logWorkers > 0) {
    try {
      logs = await startLogWorkers({ datadir: o.datadir, rpcConfig: o.rpcConfig, ...(network !== undefined ? { network } : {}) }, o.config, log);
    } catch (err) {
      await raw.close();
      throw new CliError(`${label}cannot start the log workers: ${(err as Error).message}`);
    }
  }
  const service = createRpcService(store, o.rpcConfig, logs !== undefined ? { offload: logs } : {});
  return new NetworkRuntime({
    name: o.implicit ? IMPLICIT_NETWORK : o.name,
    store,
    service,
    implicit: o.implicit === true,
    stop: async () => {
      await logs?.close();
    },
    closeStore: () => raw.close(),
  });
}

/**
 * The log workers of one network: `logWorkers` threads answering eth_getLogs from their own
 * shared handle on the network's datadir, at most `logQueueLimit` calls queued or running. Each
 * worker keeps its log reads to 2 of libuv's thread pool (the store's limit), a pool the whole
 * process shares (default 4 threads, UV_THREADPOOL_SIZE): with more workers than leave 2 threads
 * to the main thread's reads, block reads could queue behind log reads again, so that is reported.
 */
async function startLogWorkers(workerData: LogWorkerData, config: ServerConfig, log: (line: string) => void): Promise<OffloadPool> {
  const pool = await OffloadPool.start({
    script: new URL('./log-worker.js', import.meta.url),
    workerData,
    size: config.logWorkers,
    queueLimit: config.logQueueLimit,
    timeoutMs: workerData.rpcConfig.logs.timeoutMs,
    log,
  });
  log(`eth_getLogs runs in ${config.logWorkers} worker thread${config.logWorkers === 1 ? '' : 's'} (at most ${config.logQueueLimit} calls queued or running)`);
  return pool;
}

/** Warns when the log workers of all networks may hold more of libuv's pool than it has. */
export function checkThreadPool(config: ServerConfig, networks: number, log: (line: string) => void): void {
  const threads = Number(process.env['UV_THREADPOOL_SIZE']) || 4;
  const workers = config.logWorkers * networks;
  if (workers > 0 && 2 * workers + 2 > threads) {
    log(`logWorkers ${config.logWorkers}${networks > 1 ? ` x ${networks} networks` : ''}: log reads may hold ${2 * workers} of the ${threads} libuv threads; set UV_THREADPOOL_SIZE to at least ${2 * workers + 2}`);
  }
}
