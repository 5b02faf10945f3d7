// Entry of an offload worker thread of `node-cli serve` (see network.ts and the rpc package's
// offload.ts): opens the datadir the main thread holds (both with `shared: true`), applies the
// same fault injection as the main thread (NODE_FAULT_INJECT; the environment is inherited),
// and answers offloaded calls (eth_getLogs, eth_call, …) with rpc's handlers until the pool closes it; then closes the
// store. Failing to open the store throws, which fails the worker and so the server's start.
//
// A worker of a followed network applies the follower's commits the pool forwards (so its head
// and caches move as the serving thread's do) and has the serving thread's upstream layers
// (ingest's withJoinedUpstreams: state a joined datadir does not hold, proven from the upstream;
// history below its first block), counted in this worker only.
//
// The thread runs at a lower CPU priority than the main thread: on a machine with few cores a
// query that keeps this thread busy would otherwise still take CPU time from the thread that
// answers cheap calls (Linux keeps a nice value per thread; elsewhere this is skipped).
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { OffloadReply, RpcConfig } from '@chainnode/rpc';
import { serveOffloadedCalls } from '@chainnode/rpc';
import { applyFaultInjection } from '@chainnode/server/fault';
import { LevelChainStore } from '@chainnode/store';

/**
 * How much nicer than the main thread offload workers run: CPU share about 1:3 under contention
 * (kernel weights 335 vs 1024). Measured on 2 busy cores, 4 full-range getLogs against the
 * 250k-block bench chain: block-call p99 ~44 ms at +0, ~19 ms at +5, 17-25 ms at +10 with half
 * the getLogs throughput of +5.
 */
export const OFFLOAD_WORKER_NICE = 5;

export interface OffloadWorkerData {
  datadir: string;
  rpcConfig: RpcConfig;
  /** The network this worker serves (fault injection per network); absent for `serve --datadir D`. */
  network?: string;
  /** The network follows this upstream (and reads history below its first block from `historyUpstream`). */
  follow?: { url: string; historyUpstream?: string };
}

if (parentPort === null) throw new Error('offload-worker.js runs as a worker thread of node-cli serve');
const port = parentPort;
const { datadir, rpcConfig, network, follow } = workerData as OffloadWorkerData;
lowerThreadPriority(OFFLOAD_WORKER_NICE);
const raw = await LevelChainStore.open(datadir, { shared: true });
try {
  let store = applyFaultInjection(raw, process.env, network);
  // The ingest's code only for a following network's worker.
  if (follow !== undefined)
    store = (await import('@chainnode/ingest')).withJoinedUpstreams(store, {
      followUrl: follow.url,
      ...(follow.historyUpstream !== undefined ? { historyUrl: follow.historyUpstream } : {}),
      firstBlock: () => raw.info().firstBlock ?? 0n,
      log: (line) => port.postMessage({ type: 'log', line } satisfies OffloadReply),
    }).store;
  await serveOffloadedCalls(port, store, rpcConfig, (commit) => raw.applyCommit(commit));
} finally {
  await raw.close();
  port.close();
}

function lowerThreadPriority(by: number): void {
  try {
    // /proc/thread-self -> "<pid>/task/<tid>"; setpriority(PRIO_PROCESS, tid) affects that thread only.
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isSafeInteger(tid) || tid <= 0) return;
    setPriority(tid, Math.min(19, getPriority(tid) + by));
  } catch {
    // Not Linux, or not permitted: run at the normal priority.
  }
}
