// Settling a datadir so its size on disk is what it holds: LevelDB compacted over the whole key
// space (overwritten and deleted rows dropped, every level merged down) and the sealed log
// segment files cut to their recorded length. Rows are untouched: the datadir digests the same.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatadirEmptyError, openDb } from '../db.js';
import { sizeOnDisk } from '../disk.js';
import { trimSegmentFiles } from '../logs/index.js';
import type { SegmentTrim } from '../logs/index.js';
import { Prefix } from '../schema/index.js';
import type { NativeDb } from './sizing.js';

export interface CompactResult {
  /** Bytes of every file below the datadir before and after. */
  bytesBefore: number;
  bytesAfter: number;
  segments: SegmentTrim;
}

/**
 * Above every key whose first byte is below 0xff: every table's (schema.ts prefixes are far below)
 * and any row left behind under another prefix, live or deleted (a deleted row past the last live
 * key still takes disk until compacted).
 */
const KEY_SPACE_END = new Uint8Array(256).fill(0xff);

/** The whole key space in slices, one per table in key order: [start, end], ends inclusive. */
function slices(): { table: string; start: Uint8Array; end: Uint8Array }[] {
  const order = (Object.entries(Prefix) as [string, number][]).sort((a, b) => a[1] - b[1]);
  return order.map(([table, prefix], i) => {
    const next = order[i + 1];
    return {
      table,
      start: i === 0 ? new Uint8Array(0) : Uint8Array.of(prefix),
      end: next === undefined ? KEY_SPACE_END : Uint8Array.of(next[1]),
    };
  });
}

/**
 * Compacts the datadir in place. It must not be open anywhere (DatadirInUseError otherwise);
 * `onProgress` hears each step (a table's key range, the segment files) before it runs.
 */
export async function compactDatadir(
  datadir: string,
  opts: { onProgress?: (step: string, index: number, count: number) => void } = {},
): Promise<CompactResult> {
  if (!existsSync(join(datadir, 'chain'))) throw new DatadirEmptyError(datadir);
  const bytesBefore = await sizeOnDisk(datadir);
  const db = (await openDb(datadir, { create: false })) as NativeDb;
  let segments: SegmentTrim;
  try {
    const steps = slices();
    const count = steps.length + 1;
    opts.onProgress?.('log segment files', 0, count);
    segments = await trimSegmentFiles(db, datadir);
    for (const [i, s] of steps.entries()) {
      opts.onProgress?.(s.table, i + 1, count);
      await db.compactRange(s.start, s.end);
    }
  } finally {
    await db.close();
  }
  return { bytesBefore, bytesAfter: await sizeOnDisk(datadir), segments };
}
