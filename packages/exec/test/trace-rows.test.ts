// A block's recorded rows are cut TRACE_ROW_TXS transactions each: a transaction's bytes are found
// in the row holding it, in the rows joined, and in the one row a block an earlier release wrote;
// a row leaves out the transactions it does not hold, and rows of another block are not read.
import { TRACE_ROW_TXS } from '@chainnode/core';
import { encodeBlockFrames, joinRows, txFramesAt } from '../src/trace/record/codec.js';

const BLOCK = new Uint8Array(32).fill(7);
const OTHER = new Uint8Array(32).fill(8);
/** Transaction i's bytes: i + 1 bytes of i. */
const txs = Array.from({ length: 2 * TRACE_ROW_TXS + 3 }, (_, i) => new Uint8Array(i + 1).fill(i));
const read = (row: Uint8Array, hash: Uint8Array, i: number) => {
  const r = txFramesAt(row, hash, i);
  return r === undefined ? undefined : [...r.buf];
};

describe('recorded trace rows', () => {
  const rows = encodeBlockFrames(BLOCK, txs);

  it('cuts a block into rows of TRACE_ROW_TXS transactions, each read alone', () => {
    expect(rows).toHaveLength(3);
    for (const [i, tx] of txs.entries()) {
      const own = rows[Math.floor(i / TRACE_ROW_TXS)] as Uint8Array;
      expect(read(own, BLOCK, i)).toEqual([...tx]);
      for (const other of rows) if (other !== own) expect(read(other, BLOCK, i)).toBeUndefined();
    }
  });

  it('reads the rows joined as one', () => {
    const whole = joinRows(rows);
    for (const [i, tx] of txs.entries()) expect(read(whole, BLOCK, i)).toEqual([...tx]);
    expect(read(whole, BLOCK, txs.length)).toBeUndefined();
    expect(read(whole, OTHER, 0)).toBeUndefined();
    // A row of another block joined behind is not read.
    const mixed = joinRows([rows[0] as Uint8Array, ...encodeBlockFrames(OTHER, txs).slice(1)]);
    expect(read(mixed, BLOCK, 3)).toEqual([...(txs[3] as Uint8Array)]);
    expect(read(mixed, BLOCK, TRACE_ROW_TXS)).toBeUndefined();
  });

  it('writes one row holding none for a block without transactions', () => {
    const none = encodeBlockFrames(BLOCK, []);
    expect(none).toHaveLength(1);
    expect(read(none[0] as Uint8Array, BLOCK, 0)).toBeUndefined();
  });

  it("reads an earlier release's one row a block", () => {
    // hash, version 1, 3 transactions of lengths 1, 2, 0, their bytes
    const v1 = Uint8Array.from([...BLOCK, 1, 3, 1, 2, 0, 0xaa, 0xbb, 0xcc]);
    expect(read(v1, BLOCK, 0)).toEqual([0xaa]);
    expect(read(v1, BLOCK, 1)).toEqual([0xbb, 0xcc]);
    expect(read(v1, BLOCK, 2)).toEqual([]);
    expect(read(v1, BLOCK, 3)).toBeUndefined();
  });
});
