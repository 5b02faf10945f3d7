// The recorded trace rows' stored form (schema/trace-row-codec.ts): a framed row (core
// encodeTraceRows) comes back byte-equal from its stored form; rows brotli would not shrink, and
// rows of earlier releases (one a block, version 1; rows of 16 uncompressed, version 2), are
// stored and read as they are; the block's hash stays in the clear; a damaged row throws.
import { createHash } from 'node:crypto';
import { encodeTraceRows, traceRowSpans } from '@chainnode/core';
import { TRACE_ROW_COMPRESSED, compressTraceRow, expandTraceRow, traceRowCompressed } from '../src/schema/index.js';

const hash = Uint8Array.from({ length: 32 }, (_, i) => i + 1);

/** Transactions' bytes shaped like recorded frames: an address and a selector repeated, varying amounts. */
function txs(n: number, seed: number): Uint8Array[] {
  return Array.from({ length: n }, (_, i) => {
    const out = new Uint8Array(300 + ((i * 37 + seed) % 200));
    for (let j = 0; j < out.length; j++) out[j] = j % 64 < 20 ? 0xab : (j * 31 + i * 7 + seed) & 0xff;
    return out;
  });
}

test('a framed row comes back byte-equal, smaller, its hash in the clear', () => {
  const rows = encodeTraceRows(hash, txs(40, 3));
  expect(rows).toHaveLength(3);
  for (const row of rows) {
    const stored = compressTraceRow(row);
    expect(traceRowCompressed(stored)).toBe(true);
    expect(stored[32]).toBe(TRACE_ROW_COMPRESSED);
    expect(stored.length).toBeLessThan(row.length / 2);
    expect(Buffer.from(stored.subarray(0, 32)).equals(hash)).toBe(true);
    expect(Buffer.from(expandTraceRow(stored)).equals(row)).toBe(true);
  }
  // The block's rows, expanded and joined, give every transaction's span as the framed rows do.
  const joined = Buffer.concat(rows.map((r) => expandTraceRow(compressTraceRow(r))));
  expect(traceRowSpans(joined)).toEqual(traceRowSpans(Buffer.concat(rows)));
});

test('rows it would not shrink, and earlier releases rows, are kept as they are', () => {
  // A block without transactions: its one row is the hash and three bytes.
  const [empty] = encodeTraceRows(hash, []);
  expect(compressTraceRow(empty as Uint8Array)).toBe(empty);
  // Hash output does not compress.
  const noise = Buffer.concat(Array.from({ length: 13 }, (_, i) => createHash('sha256').update(String(i)).digest()));
  const [random] = encodeTraceRows(hash, [noise]);
  const stored = compressTraceRow(random as Uint8Array);
  expect(traceRowCompressed(stored)).toBe(false);
  expect(expandTraceRow(stored)).toBe(stored);
  // One row a block (version 1): never compressed, read as it is.
  const v1 = Uint8Array.from([...hash, 1, 1, 4, 1, 2, 3, 4]);
  expect(compressTraceRow(v1)).toBe(v1);
  expect(expandTraceRow(v1)).toBe(v1);
  // An uncompressed row of 16 (version 2) is read as it is.
  const [plain] = encodeTraceRows(hash, txs(16, 9));
  expect(expandTraceRow(plain as Uint8Array)).toBe(plain);
});

test('a damaged compressed row throws', () => {
  const [row] = encodeTraceRows(hash, txs(16, 5));
  const stored = compressTraceRow(row as Uint8Array);
  const cut = stored.subarray(0, stored.length - 10);
  expect(() => expandTraceRow(cut)).toThrow();
});
