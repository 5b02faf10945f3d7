// Messages between `serve --threads` (run.ts) and its app threads (app-thread.ts).
import type { SharedLedgerLink } from '@chainnode/server';
import type { ServeOptions } from './run.js';

export interface AppThreadData {
  opts: ServeOptions;
  index: number;
  link: SharedLedgerLink;
}

export interface AppThreadListening {
  type: 'listening';
  port: number;
  metricsPort: number | undefined;
}

export type AppThreadMessage = AppThreadListening | { type: 'stopped' };

/** Main thread -> app thread. */
export type AppThreadCommand = { type: 'stop' };
