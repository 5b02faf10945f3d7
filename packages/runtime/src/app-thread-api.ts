// Messages between the runtime's main thread (runtime.ts) and its app threads (app-thread.ts).
import type { MessagePort } from 'node:worker_threads';
import type { LedgerView, PeerMetrics, ThreadMetrics } from '@chainnode/server';
import type { ThreadLedgerLink } from '@chainnode/accounts';
import type { RuntimeConfig } from './config.js';

export interface AppThreadData {
  /** The runtime's config, with this thread's port (and metrics only on thread 0). */
  config: RuntimeConfig;
  index: number;
  /** How many app threads serve the port. */
  threads: number;
  /** The main thread's ledger engine (keys, credits, usage record), over MessagePorts. */
  link: ThreadLedgerLink;
  /** Per followed network ('' for the one network of --datadir): the events of its ingest thread, which the main thread owns. */
  followFeeds: [string, MessagePort][];
  /** Without Redis: this thread's end of the filters every app thread shares (thread-filters.ts). */
  filters?: MessagePort;
}

export interface AppThreadListening {
  type: 'listening';
  port: number;
  metricsPort: number | undefined;
}

/**
 * App thread -> main thread: `listening`, `drained`, `stopped` (see AppThreadCommand); `metrics`
 * answers a `metrics` command with this thread's counts; `peer-metrics` (thread 0, which serves
 * /metrics) asks for every other thread's counts.
 */
export type AppThreadMessage =
  | AppThreadListening
  | { type: 'drained' }
  | { type: 'stopped' }
  | { type: 'metrics'; id: number; counts: ThreadMetrics; ledger: LedgerView | undefined }
  | { type: 'peer-metrics'; id: number };

/**
 * Main thread -> app thread: `drain` (stop accepting, finish in-flight requests), then `release`
 * (close the store); `metrics`: send your metrics counts; `peer-metrics`: the other threads' counts
 * thread 0 asked for, with the state of the ledger this thread owns.
 */
export type AppThreadCommand =
  | { type: 'drain' }
  | { type: 'release' }
  | { type: 'metrics'; id: number }
  | { type: 'peer-metrics'; id: number; threads: PeerMetrics[]; ledger: LedgerView | undefined };
