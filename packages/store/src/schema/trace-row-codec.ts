// The stored form of a recorded trace row (TxFrames, TxStateDiffs): the row core's trace-rows.ts
// frames (blockHash(32) 0x02 first count lengths txs), its part after the version byte compressed
// with brotli:
//
//   stored := blockHash(32) 0x03 brotli(first count lengths txs)
//
// The block's hash stays in the clear: a rewind, the reader's check that a row is the canonical
// block's, and `db convert` read it without decompressing. A row brotli does not shrink (a block
// without transactions, a few bytes of changes), and every row an earlier release wrote (0x01, or
// 0x02 uncompressed), is stored and read as it is. Measured on 2,000 rows of each table of the
// mainnet-shaped chain (10.3 KB and 6.0 KB a row raw): quality 5 shrinks call frames 4.65x and
// state changes 1.78x (LevelDB's snappy blocks: ~3.4x and ~1.6x) at ~0.25 ms a row to compress;
// quality 6 gains no more than 1%, quality 3 loses 8% of the frames' ratio.
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import { TRACE_ROW_VERSION } from '@chainnode/core';
import type { Codec } from './codec.js';

/** The version byte of a compressed row. */
export const TRACE_ROW_COMPRESSED = 3;

const QUALITY = 5;

/** What a row may grow to when decompressed: a bound against a corrupt row, far above any real one (~160 KB). */
const MAX_ROW_BYTES = 64 << 20;

/** Whether a stored row is compressed. */
export function traceRowCompressed(stored: Uint8Array): boolean {
  return stored.length > 33 && stored[32] === TRACE_ROW_COMPRESSED;
}

/** The stored form of a framed row (core encodeTraceRows): compressed when that makes it smaller. */
export function compressTraceRow(row: Uint8Array): Uint8Array {
  if (row.length <= 64 || row[32] !== TRACE_ROW_VERSION) return row;
  const packed = brotliCompressSync(row.subarray(33), {
    params: { [constants.BROTLI_PARAM_QUALITY]: QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: row.length - 33 },
  });
  if (33 + packed.length >= row.length) return row;
  const out = new Uint8Array(33 + packed.length);
  out.set(row.subarray(0, 32), 0);
  out[32] = TRACE_ROW_COMPRESSED;
  out.set(packed, 33);
  return out;
}

/** The framed row of a stored one (itself unless compressed). */
export function expandTraceRow(stored: Uint8Array): Uint8Array {
  if (!traceRowCompressed(stored)) return stored;
  const body = brotliDecompressSync(stored.subarray(33), { maxOutputLength: MAX_ROW_BYTES });
  const out = new Uint8Array(33 + body.length);
  out.set(stored.subarray(0, 32), 0);
  out[32] = TRACE_ROW_VERSION;
  out.set(body, 33);
  return out;
}

/** The codec of the TxFrames and TxStateDiffs tables' values. */
export const traceRowCodec: Codec<Uint8Array> = { encode: compressTraceRow, decode: expandTraceRow };
