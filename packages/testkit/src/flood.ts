// What a flood of WebSocket clients against a server needs: the `ws` package's client (loaded at
// run time, untyped) and the server process's resident memory.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The part of a `ws` WebSocket client the floods use. */
export interface WsClient {
  on(ev: 'open', cb: () => void): void;
  on(ev: 'message', cb: (data: Buffer) => void): void;
  on(ev: 'error', cb: (err: Error) => void): void;
  on(ev: 'close', cb: () => void): void;
  send(data: string): void;
  close(): void;
}

/** The `ws` package's WebSocket client class. */
export const WsCtor = createRequire(import.meta.url)('ws') as new (url: string) => WsClient;

/** Resident memory of process `pid` in MiB (from /proc; NaN where not readable). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}
