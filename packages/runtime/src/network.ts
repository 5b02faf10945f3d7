// One network of `serve`: opens its datadir (its own store and caches), starts its own log
// workers, builds its rpc service and hands the server a NetworkRuntime (server/src/router.ts),
// which the server routes requests to by Host. Nothing here is shared between networks except the
// process: a network whose store fails answers its own calls with errors, the others carry on.
//
// With `follow=<URL>` the network also has its own ingest thread following that upstream
// (@chainnode/ingest's FollowRuntime, as `serve --follow`): its commits reach only its own store and ChainEvents
// (with --threads N: the store and ChainEvents of this network in every app thread).
import { existsSync } from 'node:fs';
import type { MessagePort } from 'node:worker_threads';
import { FAULT_ENV, IMPLICIT_NETWORK, NetworkRuntime, applyFaultInjection, datadirDisk } from '@chainnode/server';
import type {
  FilterLimits,
  LaunchedOffloadPool,
  FilterStateStore,
  OffloadPoolOptions,
  RpcConfig,
  RpcServiceOptions,
  TxForwarder,
} from '@chainnode/rpc';
import { FilterRegistry, MemoryFilterStore, OffloadPool, createRpcService } from '@chainnode/rpc';
import { DatadirEmptyError, DatadirInUseError, LevelChainStore, openChainStore } from '@chainnode/store';
import { UpstreamRpcError, createUpstreamClient } from '@chainnode/core';
import type { ChainStore, UpstreamClient } from '@chainnode/core';
import { RuntimeError } from './config.js';
import { filterLimitsOf } from './settings/file.js';
import type { ServerConfig } from './settings/file.js';
import type { OffloadWorkerData } from './offload-worker.js';
import type { FollowRuntime, JoinedUpstreams } from '@chainnode/ingest';
import type { FollowSettings, IngestWorkerData } from '@chainnode/ingest';

/** `shared`: offload worker threads of this process will open the datadir too. */
export async function openStore(datadir: string, shared = false): Promise<ChainStore> {
  if (!existsSync(datadir))
    throw new RuntimeError(
      `datadir ${datadir} does not exist (import a chain first: node-cli sync --from <dir> --datadir ${datadir})`,
    );
  try {
    return await openChainStore(datadir, { shared });
  } catch (err) {
    if (err instanceof DatadirInUseError) throw new RuntimeError(`${err.message} (is a server already running on it?)`);
    if (err instanceof DatadirEmptyError) throw new RuntimeError(err.message);
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
  /** The log of one component of this network (null: the one network of `datadir`). */
  log: (component: string, network: string | null) => (line: string) => void;
  /** Follow this upstream while serving (own ingest thread into the network's datadir). */
  follow?: FollowSettings;
  /**
   * With `follow`: the events of the ingest thread another thread owns (serve --threads: the main
   * thread runs one ingest per followed datadir and forwards its events to every app thread).
   * Without it this thread starts and owns the ingest thread itself.
   */
  followFeed?: MessagePort;
  /** Other threads of this process open the datadir too (serve --threads). */
  shared?: boolean;
  /** Where this network's filters live (Redis, shared by replicas); absent: this process's memory. */
  filterState?: (limits: FilterLimits) => FilterStateStore;
  /**
   * A failure after the network was opened that the server cannot serve through: its offload
   * workers, started without waiting, could not open the datadir (a RuntimeError naming it).
   */
  onFailure?: (err: RuntimeError) => void;
}

/** What an offload worker of a followed datadir needs of its follow settings (its upstream layers). */
function followedBy(f: FollowSettings): NonNullable<OffloadWorkerData['follow']> {
  return { url: f.url, ...(f.historyUpstream !== undefined ? { historyUpstream: f.historyUpstream } : {}) };
}

/** What the ingest worker of a followed datadir is started with. */
export function ingestWorkerData(datadir: string, f: FollowSettings): IngestWorkerData {
  return { ...f, datadir };
}

/** Opens a network's store, its offload workers and rpc service; on failure nothing stays open. */
export async function openNetwork(o: OpenNetworkOptions): Promise<NetworkRuntime> {
  const label = o.implicit ? '' : `network ${o.name}: `;
  const part = (component: string): ((line: string) => void) => {
    const to = o.log(component, o.implicit ? null : o.name);
    return (line) => to(`${label}${line}`);
  };
  const log = part('serve');
  const followLog = part('follow');
  // A following network's offload workers get the follower's commits from the pool (after this
  // thread's store has applied them, on the channel its calls take) and its upstream layers.
  const workers = o.config.offloadWorkers;
  // The ingest (and the EVM it loads) only for a following network: a network serving its
  // datadir alone never loads it.
  const ingest = o.follow !== undefined ? await import('@chainnode/ingest') : undefined;
  let follow: FollowRuntime | undefined;
  let raw: ChainStore;
  try {
    if (o.follow !== undefined && ingest !== undefined) {
      const { FollowRuntime } = ingest;
      const f = o.follow;
      follow =
        o.followFeed !== undefined
          ? FollowRuntime.fromPort(o.followFeed, followLog)
          : FollowRuntime.own(ingestWorkerData(o.datadir, f), followLog);
      const store = await openFollowedStore(o.datadir, follow, o.implicit ? '--follow' : 'follow');
      follow.attach(store);
      raw = store;
    } else {
      raw = await openStore(o.datadir, workers > 0 || o.shared === true);
    }
  } catch (err) {
    throw err instanceof RuntimeError && !o.implicit ? new RuntimeError(`${label}${err.message}`) : err;
  }
  const network = o.implicit ? undefined : o.name;
  let store: ChainStore;
  try {
    store = applyFaultInjection(raw, process.env, network);
  } catch (err) {
    await follow?.stop();
    await raw.close();
    throw new RuntimeError((err as Error).message);
  }
  if (store !== raw) log(`fault injection active (${FAULT_ENV}=${process.env[FAULT_ENV]}): every store read fails`);
  // A followed datadir answers state it does not hold (a joined one holds none of its own), and
  // with a history upstream history below its first block, from upstreams, verified against its
  // own roots and headers (ingest's joined/).
  let joined: JoinedUpstreams | undefined;
  if (o.follow !== undefined && ingest !== undefined) {
    const first = raw;
    joined = ingest.withJoinedUpstreams(store, {
      followUrl: o.follow.url,
      ...(o.follow.historyUpstream !== undefined ? { historyUrl: o.follow.historyUpstream } : {}),
      firstBlock: () => first.info().firstBlock ?? 0n,
      log: followLog,
    });
    store = joined.store;
  }
  let logs: LaunchedOffloadPool | undefined;
  let runtime: NetworkRuntime | undefined;
  if (workers > 0) {
    try {
      logs = startOffloadWorkers(
        {
          datadir: o.datadir,
          rpcConfig: o.rpcConfig,
          ...(network !== undefined ? { network } : {}),
          ...(o.follow !== undefined ? { follow: followedBy(o.follow) } : {}),
        },
        o.config,
        part('logs'),
        {
          onShed: () => {
            if (runtime !== undefined) runtime.metrics.offloadShed++;
          },
          onAnswered: () => {
            if (runtime !== undefined) runtime.metrics.offloaded++;
          },
        },
      );
    } catch (err) {
      await follow?.stop();
      await raw.close();
      throw new RuntimeError(`${label}cannot start the offload workers: ${(err as Error).message}`);
    }
    logs.started.catch((err: unknown) =>
      o.onFailure?.(new RuntimeError(`${label}cannot start the offload workers: ${(err as Error).message}`)),
    );
  }
  const pool = logs;
  if (pool !== undefined) follow?.subscribe((commit) => pool.applyCommit(commit));
  const options: RpcServiceOptions = logs !== undefined ? { offload: logs } : {};
  // eth_sendRawTransaction goes to the upstream this network follows (checked first, never pooled).
  if (o.follow !== undefined) options.forward = upstreamForwarder(o.follow.url);
  const limits = filterLimitsOf(o.config);
  const filters = new FilterRegistry({ state: o.filterState?.(limits) ?? new MemoryFilterStore(limits) });
  options.filters = filters;
  // The upstream's pending transactions (a WebSocket upstream) go where forwarded ones go.
  follow?.onPending((hashes) => void filters.notePending(hashes));
  const service = createRpcService(store, o.rpcConfig, options);
  runtime = new NetworkRuntime({
    name: o.implicit ? IMPLICIT_NETWORK : o.name,
    store,
    service,
    implicit: o.implicit === true,
    ...(follow !== undefined
      ? {
          chainEvents: follow,
          ingestStatus: () => ({
            ...(follow as FollowRuntime).status(),
            ...joined?.status(),
          }),
        }
      : {}),
    stop: async () => {
      await follow?.stop();
      await logs?.close();
    },
    closeStore: () => raw.close(),
    disk: () => datadirDisk(o.datadir),
  });
  return runtime;
}

/**
 * The offload workers of one network: `offloadWorkers` threads answering the offloaded methods
 * (eth_getLogs, eth_call and the others marked `offload` in rpc's method table) from their own shared handle on the network's datadir, at most `offloadQueueLimit` calls queued or running. Each
 * worker keeps its log reads to 2 of libuv's thread pool (the store's limit), a pool the whole
 * process shares (default 4 threads, UV_THREADPOOL_SIZE): with more workers than leave 2 threads
 * to the main thread's reads, block reads could queue behind log reads again, so that is reported.
 * Not waited for: the server listens while they load (offloaded calls queue meanwhile); one
 * that cannot start fails the server through `started`.
 */
function startOffloadWorkers(
  workerData: OffloadWorkerData,
  config: ServerConfig,
  log: (line: string) => void,
  counts: Pick<OffloadPoolOptions, 'onShed' | 'onAnswered'>,
): LaunchedOffloadPool {
  const pool = OffloadPool.launch({
    ...counts,
    script: new URL('./offload-worker.js', import.meta.url),
    workerData,
    size: config.offloadWorkers,
    queueLimit: config.offloadQueueLimit,
    timeoutMs: workerData.rpcConfig.logs.timeoutMs,
    log,
  });
  log(
    `offloaded calls run in ${config.offloadWorkers} worker thread${config.offloadWorkers === 1 ? '' : 's'} (at most ${config.offloadQueueLimit} calls queued or running)`,
  );
  return pool;
}

/**
 * Warns when the offload workers of all networks and app threads (--threads: each app thread has its
 * own) may hold more of libuv's pool, which the whole process shares, than it has.
 */
export function checkThreadPool(
  config: ServerConfig,
  networks: number,
  appThreads: number,
  log: (line: string) => void,
): void {
  const threads = Number(process.env['UV_THREADPOOL_SIZE']) || 4;
  const workers = config.offloadWorkers * networks * appThreads;
  if (workers > 0 && 2 * workers + 2 > threads) {
    const of = `${networks > 1 ? ` x ${networks} networks` : ''}${appThreads > 1 ? ` x ${appThreads} app threads` : ''}`;
    log(
      `offloadWorkers ${config.offloadWorkers}${of}: log reads may hold ${2 * workers} of the ${threads} libuv threads; set UV_THREADPOOL_SIZE to at least ${2 * workers + 2}`,
    );
  }
}

/**
 * The serving store of a following network, opened shared with its ingest thread: at once if the
 * datadir already holds a chain, else once the ingest has written its genesis.
 */
async function openFollowedStore(datadir: string, follow: FollowRuntime, what: string): Promise<LevelChainStore> {
  const open = async (): Promise<LevelChainStore> => {
    try {
      return await LevelChainStore.open(datadir, { shared: true });
    } catch (err) {
      if (err instanceof DatadirInUseError)
        throw new RuntimeError(`${err.message} (is a server or a sync already running on it?)`);
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
    throw new RuntimeError(`${what}: ${(err as Error).message}`);
  }
  return open();
}

/**
 * Sends signed transactions to a followed upstream: one client, opened on the first transaction.
 * The upstream's refusals come back as {code, message} (the rpc method relays them, bounded).
 */
function upstreamForwarder(url: string): TxForwarder {
  let client: UpstreamClient | undefined;
  return async (raw) => {
    client ??= createUpstreamClient(url, { timeoutMs: 10_000, maxReplyBytes: 64 * 1024 });
    try {
      return await client.call('eth_sendRawTransaction', [raw]);
    } catch (err) {
      if (err instanceof UpstreamRpcError) throw Object.assign(new Error(err.message), { code: err.code });
      throw err;
    }
  };
}
