// Where a history key's older changes are, for the keys that change more often than their
// StateLatest row lists (latest.ts): a read below the listed changes is a few point reads here
// instead of a reverse seek (an asynchronous LevelDB iterator, and a turn of the event loop).
//
// HistoryIndex rows (schema.ts) are per key and per range of RANGE blocks: the offsets, in the
// range, of the key's changes there, and the key's last change before the first of them. A read at
// block N: the row of N's range gives the greatest change <= N, or the one before the range; no row
// there, the nearest row below (at most SCAN_BACK ranges down) gives its last change, as a key is
// indexed from a range on with every later change. Anything else is answered by the seek.
//
// The writer indexes a key once its changes outnumber the ones StateLatest lists before its latest
// (all of them then, while the row still lists them all; later every change); a rewind takes the
// removed changes out again; `db convert` writes the rows of a datadir written without them
// (fillLatest).
import { Prefix, readVarint, varintLength, writeVarint } from '../schema/index.js';
import type { Alloc } from '../schema/index.js';
import type { HistoryBatch } from './batch.js';

/** Bits of a block number inside a range: a row covers 256 blocks, an offset is one byte. */
const RANGE_BITS = 8;
const RANGE = 1 << RANGE_BITS;

/** Ranges below a read's own that are asked for a row before the read falls back to the seek. */
export const SCAN_BACK = 4;

/** Row flag: the key's last change before the row's first offset is known (`before`). */
const BEFORE_KNOWN = 1;

/**
 * A HistoryIndex row decoded: the offsets of the key's changes in the range (ascending, all of its
 * changes from the first listed to the range's end), and, when `beforeKnown`, the key's last change
 * before the first of them (null: none, the key's first change is the first listed).
 */
export interface IndexRow {
  offsets: number[];
  beforeKnown: boolean;
  before: number | null;
}

/** The HistoryIndex key of `path` (keccak(address), or ++ keccak(slot)) and range `range`. */
export function indexKey(path: Uint8Array, range: number, alloc: Alloc): Uint8Array {
  const key = alloc(1 + path.length + 4);
  key[0] = Prefix.HistoryIndex;
  key.set(path, 1);
  new DataView(key.buffer, key.byteOffset, key.byteLength).setUint32(1 + path.length, range);
  return key;
}

export const rangeOf = (number: number): number => Math.floor(number / RANGE);

/** An IndexRow's bytes: flags(1) ++ varint(range start - before, 0: none; when known) ++ offsets(1 each). */
export function encodeIndexRow(range: number, row: IndexRow, alloc: Alloc): Uint8Array {
  const gap = !row.beforeKnown || row.before === null ? 0 : range * RANGE - row.before;
  const head = row.beforeKnown ? 1 + varintLength(gap) : 1;
  const out = alloc(head + row.offsets.length);
  out[0] = row.beforeKnown ? BEFORE_KNOWN : 0;
  if (row.beforeKnown) writeVarint(gap, out, 1);
  out.set(row.offsets, head);
  return out;
}

export function decodeIndexRow(range: number, raw: Uint8Array): IndexRow {
  const beforeKnown = ((raw[0] as number) & BEFORE_KNOWN) !== 0;
  let at = 1;
  let before: number | null = null;
  if (beforeKnown) {
    const gap = readVarint(raw, 1, 'history index row');
    at = gap.end;
    before = gap.value === 0 ? null : range * RANGE - gap.value;
  }
  return { offsets: Array.from(raw.subarray(at)), beforeKnown, before };
}

/** A row's or a pending staged row's bytes (null: deleted in the group) by key. */
export type RowSource = (key: Uint8Array) => Uint8Array | null | undefined;

/**
 * Stages the index rows of one key after a group of its changes: `known`, its changes as far as
 * they are known (ascending, contiguous up to its newest: StateLatest's list, its latest and the
 * group's), `whole` when that is every change the key has had, `fresh` the group's (ascending,
 * above every stored one). Rows are written for the ranges of the fresh changes, or of every known
 * one when the key is indexed for the first time (`whole`), each merged with the stored row.
 */
export function stageIndexRows(
  batch: HistoryBatch,
  read: RowSource,
  path: Uint8Array,
  known: readonly number[],
  whole: boolean,
  fresh: readonly number[],
  alloc: Alloc,
): void {
  const ranges = new Set<number>();
  for (const n of whole ? known : fresh) ranges.add(rangeOf(n));
  for (const range of ranges) {
    const start = range * RANGE;
    const offsets = new Set<number>();
    let before: number | null = null;
    let beforeKnown = whole;
    for (const n of known) {
      if (n < start) {
        before = n;
        beforeKnown = true;
      } else if (n < start + RANGE) offsets.add(n - start);
    }
    const key = indexKey(path, range, alloc);
    const stored = read(key);
    if (stored != null) {
      const row = decodeIndexRow(range, stored);
      for (const o of row.offsets) offsets.add(o);
      // The stored row's first offset may be below every known change in the range.
      if (!beforeKnown && row.beforeKnown) {
        beforeKnown = true;
        before = row.before;
      }
    }
    const sorted = [...offsets].sort((a, b) => a - b);
    const value = encodeIndexRow(range, { offsets: sorted, beforeKnown, before }, alloc);
    batch.put(key, value);
  }
}

/**
 * Stages, for a key a rewind to `ancestor` removed the changes `removed` of, its index rows
 * without them: each range's row keeps its offsets at or below the ancestor, or is deleted when
 * none is left.
 */
export function restoreIndexRows(
  batch: HistoryBatch,
  read: RowSource,
  pending: Map<string, Uint8Array | null>,
  path: Uint8Array,
  ancestor: number,
  removed: readonly number[],
  alloc: Alloc,
): void {
  const ranges = new Set<number>();
  for (const n of removed) if (n > ancestor) ranges.add(rangeOf(n));
  for (const range of ranges) {
    const key = indexKey(path, range, alloc);
    const stored = read(key);
    if (stored == null) continue;
    const row = decodeIndexRow(range, stored);
    const offsets = row.offsets.filter((o) => range * RANGE + o <= ancestor);
    if (offsets.length === 0) {
      batch.del(key);
      pending.set(pendingId(key), null);
    } else {
      const value = encodeIndexRow(range, { ...row, offsets }, alloc);
      batch.put(key, value);
      pending.set(pendingId(key), value);
    }
  }
}

/** Stages the deletion of `path`'s index rows in the ranges of `numbers` (a key no longer indexed). */
export function dropIndexRows(
  batch: HistoryBatch,
  pending: Map<string, Uint8Array | null>,
  path: Uint8Array,
  numbers: readonly number[],
  alloc: Alloc,
): void {
  for (const range of new Set(numbers.map(rangeOf))) {
    const key = indexKey(path, range, alloc);
    batch.del(key);
    pending.set(pendingId(key), null);
  }
}

/**
 * The number of the key `path`'s greatest change <= `number` from its index rows, read with
 * `get` (a snapshot's point reads): null when it has none (the key is absent there), undefined when
 * the rows do not say (not indexed there: the caller seeks).
 */
export function indexedChangeAtOrBelow(
  get: (key: Uint8Array) => Uint8Array | undefined,
  path: Uint8Array,
  number: number,
): number | null | undefined {
  const own = rangeOf(number);
  const alloc = (n: number): Uint8Array => new Uint8Array(n);
  for (let range = own; range >= 0 && range >= own - SCAN_BACK; range--) {
    const raw = get(indexKey(path, range, alloc));
    if (raw === undefined) continue;
    const row = decodeIndexRow(range, raw);
    const start = range * RANGE;
    // Below the read's range every listed change is below it: the last is the answer.
    for (let i = row.offsets.length - 1; i >= 0; i--) {
      const n = start + (row.offsets[i] as number);
      if (n <= number) return n;
    }
    return row.beforeKnown ? row.before : undefined;
  }
  return undefined;
}

/**
 * The index rows of one key for a datadir-wide fill (fillLatest), its changes fed in ascending
 * order: one row per range, each with the change before it, written only for a key with more
 * changes than `threshold` (the rows of ranges closed before that are held, at most `threshold`).
 * Linear in the key's changes; holds one range's offsets at a time.
 */
export class KeyIndexFill {
  private count = 0;
  private range = -1;
  private offsets: number[] = [];
  private before: number | null = null;
  private last: number | null = null;
  private held: [Uint8Array, Uint8Array][] = [];

  constructor(
    private readonly path: Uint8Array,
    private readonly threshold: number,
    private readonly alloc: Alloc,
  ) {}

  /** The key's next change `number`; returns the rows staged into `batch`. */
  add(batch: HistoryBatch, number: number): number {
    let rows = 0;
    const range = rangeOf(number);
    if (range !== this.range) {
      rows += this.close(batch);
      this.range = range;
      this.offsets = [];
      this.before = this.last;
    }
    this.offsets.push(number - range * RANGE);
    this.last = number;
    this.count++;
    if (this.count === this.threshold + 1) {
      for (const [key, value] of this.held) batch.put(key, value);
      rows += this.held.length;
      this.held = [];
    }
    return rows;
  }

  /** After the key's last change: stages its open range's row (when indexed); returns the rows staged. */
  end(batch: HistoryBatch): number {
    return this.close(batch);
  }

  private close(batch: HistoryBatch): number {
    if (this.range < 0) return 0;
    const key = indexKey(this.path, this.range, this.alloc);
    const value = encodeIndexRow(
      this.range,
      { offsets: this.offsets, beforeKnown: true, before: this.before },
      this.alloc,
    );
    this.range = -1;
    if (this.count > this.threshold) {
      batch.put(key, value);
      return 1;
    }
    this.held.push([key, value]);
    return 0;
  }
}

/** A key's id in a group's pending rows (latest.ts PendingLatest): its bytes as latin1. */
export const pendingId = (b: Uint8Array): string =>
  Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
