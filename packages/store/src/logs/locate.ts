// Where a log id's block is: the BlockLogs ranges (each block's first log id and count, the ids
// of consecutive blocks contiguous) searched by point reads.
import { tables } from '../schema/index.js';
import type { KvSyncRead } from '../schema/index.js';

/** A block and the log ids it holds, [first, end). */
export interface LocatedBlock {
  number: bigint;
  first: number;
  end: number;
}

/**
 * Blocks [lo, hi] and the log ids they hold, [firstLo, endHi): a block's log ids follow the block
 * before it's (BlockLogs), so the ids of blocks lo..hi are contiguous.
 */
export interface BlockBounds {
  lo: bigint;
  firstLo: number;
  hi: bigint;
  endHi: number;
}

/**
 * The block holding log `id` within `b` (its number, first log id and the end of its ids), by
 * BlockLogs point reads:
 * interpolation between the bounds' ids, every other probe halving instead so that a chain whose
 * blocks hold very different numbers of logs still takes O(log n) reads. A reverse seek of the
 * LogBlocks rows found it before: ~40 us of LevelDB seek and a thread-pool round trip per block,
 * which made a sparse query several times slower than its rows' reads. Undefined when `id` is
 * outside the bounds.
 */
export function blockOfSync(db: KvSyncRead, id: number, b: BlockBounds): LocatedBlock | undefined {
  let { lo, firstLo, hi, endHi } = b;
  if (id < firstLo || id >= endHi) return undefined;
  for (let probe = 0; ; probe++) {
    if (lo === hi) return { number: lo, first: firstLo, end: endHi };
    const span = hi - lo;
    let guess =
      probe % 2 === 0
        ? lo + BigInt(Math.floor(((id - firstLo) / (endHi - firstLo)) * Number(span + 1n)))
        : lo + (span + 1n) / 2n;
    if (guess > hi) guess = hi;
    if (guess <= lo) guess = lo + 1n;
    const r = tables.blockLogs.getSync(db, guess);
    if (r === undefined) throw new Error(`block log range missing for ${guess}`);
    const first = Number(r.firstLogId);
    if (id < first) {
      hi = guess - 1n;
      endHi = first;
    } else if (id >= first + r.count) {
      lo = guess + 1n;
      firstLo = first + r.count;
    } else return { number: guess, first, end: first + r.count };
  }
}
