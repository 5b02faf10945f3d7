// How a block's recorded trace rows (TxFrames, TxStateDiffs) are framed and cut: one row per
// TRACE_ROW_TXS transactions, in order, so that one transaction's trace reads the ~10 KB row
// holding it instead of its whole block's (160 KB at mainnet's shape). What a transaction's bytes
// hold is the trace module's (packages/exec trace/record); the framing is shared with the store,
// which keys the rows by block number and position (index / TRACE_ROW_TXS) and cuts the one row a
// block an earlier release wrote (db convert).
//
//   row := blockHash(32) 0x02 first(v) count(v) count x length(v) count x tx
//          (transactions first .. first + count - 1; the whole block's rows are their
//          concatenation; an earlier release wrote one row a block, blockHash(32) 0x01 count(v)
//          count x length(v) count x tx)
//
// (v): unsigned LEB128 (varint.ts).
import { readVarint, varintLength, writeVarint } from './varint.js';

export const TRACE_ROW_TXS = 16;

/** The version byte of a row (the one-row-a-block form an earlier release wrote was 1). */
export const TRACE_ROW_VERSION = 2;

/** The position of the row holding transaction `index` among its block's trace rows. */
export function traceRowOf(index: number): number {
  return Math.floor(index / TRACE_ROW_TXS);
}

/**
 * A block's rows: each of TRACE_ROW_TXS transactions' bytes, led by the block's hash and the
 * first transaction's position (one row holding none for a block without transactions).
 */
export function encodeTraceRows(blockHash: Uint8Array, txs: readonly Uint8Array[]): Uint8Array[] {
  const rows: Uint8Array[] = [];
  for (let first = 0; first === 0 || first < txs.length; first += TRACE_ROW_TXS) {
    const part = txs.slice(first, first + TRACE_ROW_TXS);
    let head = 1 + varintLength(first) + varintLength(part.length);
    for (const t of part) head += varintLength(t.length);
    const row = new Uint8Array(32 + head + part.reduce((n, t) => n + t.length, 0));
    row.set(blockHash.subarray(0, 32), 0);
    row[32] = TRACE_ROW_VERSION;
    let at = writeVarint(part.length, row, writeVarint(first, row, 33));
    for (const t of part) at = writeVarint(t.length, row, at);
    for (const t of part) {
      row.set(t, at);
      at += t.length;
    }
    rows.push(row);
  }
  return rows;
}

/** Each transaction's [start, end) in `bytes`, by position (a hole where they hold none). */
export type TraceRowSpans = ({ start: number; end: number } | undefined)[];

const same32 = (a: Uint8Array, at: number, b: Uint8Array): boolean => {
  for (let i = 0; i < 32; i++) if (a[at + i] !== b[i]) return false;
  return true;
};

/**
 * The spans of every transaction in a row or rows concatenated, led by the first row's hash; rows
 * led by another hash, or of an unknown version, end the reading.
 */
export function traceRowSpans(bytes: Uint8Array): TraceRowSpans {
  const out: TraceRowSpans = [];
  let at = 0;
  const uint = (): number => {
    const v = readVarint(bytes, at, 'trace row');
    at = v.end;
    return v.value;
  };
  while (at + 33 <= bytes.length && same32(bytes, at, bytes)) {
    at += 32;
    const version = bytes[at++] as number;
    if (version !== 1 && version !== TRACE_ROW_VERSION) break;
    const first = version === 1 ? 0 : uint();
    const count = uint();
    const lengths: number[] = [];
    for (let i = 0; i < count; i++) lengths.push(uint());
    for (const [i, n] of lengths.entries()) {
      if (at + n > bytes.length) throw new RangeError('trace row: truncated');
      out[first + i] = { start: at, end: at + n };
      at += n;
    }
  }
  return out;
}

/**
 * The one row a block an earlier release wrote (version 1), cut into rows of TRACE_ROW_TXS;
 * undefined when `row` is not of that form.
 */
export function cutTraceRow(row: Uint8Array): Uint8Array[] | undefined {
  if (row.length < 33 || row[32] !== 1) return undefined;
  const spans = traceRowSpans(row);
  const txs: Uint8Array[] = [];
  for (const s of spans) {
    if (s === undefined) return undefined;
    txs.push(row.subarray(s.start, s.end));
  }
  return encodeTraceRows(row.subarray(0, 32), txs);
}
