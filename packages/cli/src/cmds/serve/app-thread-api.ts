// Messages between `serve --threads` (run.ts) and its app threads (app-thread.ts).
import type { MessagePort } from 'node:worker_threads';
import type { ThreadLedgerLink } from '@chainnode/server';
import type { ServeOptions } from './options.js';

export interface AppThreadData {
  opts: ServeOptions;
  index: number;
  /** How many app threads serve the port. */
  threads: number;
  /** The main thread's ledger engine (keys, credits, usage record), over MessagePorts. */
  link: ThreadLedgerLink;
  /** Per followed network ('' for the one network of --datadir): the events of its ingest thread, which the main thread owns. */
  followFeeds: [string, MessagePort][];
}

export interface AppThreadListening {
  type: 'listening';
  port: number;
  metricsPort: number | undefined;
}

export type AppThreadMessage = AppThreadListening | { type: 'drained' } | { type: 'stopped' };

/** Main thread -> app thread: `drain` (stop accepting, finish in-flight requests), then `release` (close the store). */
export type AppThreadCommand = { type: 'drain' } | { type: 'release' };
