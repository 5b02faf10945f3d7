// Where a log id's block is: the BlockLogs ranges (each block's first log id and count, the ids
// of consecutive blocks contiguous) searched by point reads.
import { putU64, readU32, readU64, tables } from '../schema/index.js';
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
  if (id < b.firstLo || id >= b.endHi) return undefined;
  // Block numbers as numbers (a chain's stay far below 2^53), each probe's key written into one
  // buffer and its row read in place: a bigint, a key and a decoded object a probe cost as much
  // as the read.
  let lo = Number(b.lo);
  let hi = Number(b.hi);
  let { firstLo, endHi } = b;
  for (let probe = 0; ; probe++) {
    if (lo === hi) return { number: BigInt(lo), first: firstLo, end: endHi };
    const span = hi - lo;
    let guess =
      probe % 2 === 0
        ? lo + Math.floor(((id - firstLo) / (endHi - firstLo)) * (span + 1))
        : lo + Math.floor((span + 1) / 2);
    if (guess > hi) guess = hi;
    if (guess <= lo) guess = lo + 1;
    putU64(PROBE_KEY, 1, guess);
    const v = db.getSync(PROBE_KEY);
    if (v === undefined) throw new Error(`block log range missing for ${guess}`);
    if (v.length !== 12) throw new RangeError(`block log range: expected 12 bytes, got ${v.length}`);
    const first = readU64(v, 0);
    const end = first + readU32(v, 8);
    if (id < first) {
      hi = guess - 1;
      endHi = first;
    } else if (id >= end) {
      lo = guess + 1;
      firstLo = end;
    } else return { number: BigInt(guess), first, end };
  }
}

/** The BlockLogs key blockOfSync reads (one buffer: a sync read takes the key before it returns). */
const PROBE_KEY = tables.blockLogs.key(0n);
