// Chunks of an answer's ASCII text that are written once, straight into the reply: bytes in
// memory (views of rows as read, separators) or a slice of a file (a sealed log segment, read
// into the reply at the moment it is written, so its bytes never exist anywhere else).
import { readSync } from 'node:fs';

/** `length` bytes of an open, immutable file from `position` on. */
export interface FileSlice {
  readonly fd: number;
  readonly position: number;
  readonly length: number;
}

export type AsciiChunk = Uint8Array | FileSlice;

/** Writes `c` into `out` at `at`; returns the end. Throws if a file slice reads short. */
export function writeChunk(c: AsciiChunk, out: Uint8Array, at: number): number {
  if (c instanceof Uint8Array) {
    out.set(c, at);
    return at + c.length;
  }
  let done = 0;
  while (done < c.length) {
    const n = readSync(c.fd, out, at + done, c.length - done, c.position + done);
    if (n === 0)
      throw new Error(`file slice: ${c.length - done} bytes missing at ${c.position + done} (file truncated)`);
    done += n;
  }
  return at + c.length;
}

/** The chunks concatenated into one fresh buffer. */
export function chunksToBytes(chunks: readonly AsciiChunk[]): Buffer {
  let length = 0;
  for (const c of chunks) length += c.length;
  const out = Buffer.allocUnsafe(length);
  let at = 0;
  for (const c of chunks) at = writeChunk(c, out, at);
  return out;
}
