// The block-logs codec's dictionaries key addresses and topics by a 32-bit hash of their bytes and
// compare the values of one hash byte by byte: two addresses (and two topics) whose hashes collide
// keep their own ids, and a block of them decodes to the logs it was given.
import { BlockLogColumns, decodeBlockLogColumns, encodeBlockLogColumns, hashOf } from '../src/logs/block-logs-codec.js';
import { bytes, rng } from './random.js';

/** Two distinct values of `len` bytes with the same hashOf (a birthday search over counters in seeded bytes). */
function collision(len: number, seed: number): [Uint8Array, Uint8Array] {
  const base = bytes(rng(seed), len);
  const seen = new Map<number, number>();
  const at = (n: number): Uint8Array => {
    const v = base.slice();
    // Two words of the counter apart: varying one window of four bytes alone never collides (each
    // of FNV-1a's steps is a bijection of the hash).
    const d = new DataView(v.buffer);
    d.setUint32(0, n);
    d.setUint32(8, Math.imul(n, 0x9e3779b1) >>> 0);
    return v;
  };
  for (let n = 0; ; n++) {
    const h = hashOf(at(n));
    const other = seen.get(h);
    if (other !== undefined) return [at(other), at(n)];
    seen.set(h, n);
  }
}

describe('block logs codec', () => {
  test('values whose hashes collide keep their own dictionary entries', () => {
    const [a1, a2] = collision(20, 1);
    const [t1, t2] = collision(32, 2);
    expect(hashOf(a1)).toBe(hashOf(a2));
    expect(hashOf(t1)).toBe(hashOf(t2));
    const padded = new Uint8Array(32);
    padded.set(a1, 12); // a topic that is a padded address: twelve zero bytes first
    const logs = [
      { txIndex: 0, address: a1, topics: [t1, t2], data: Uint8Array.of(1) },
      { txIndex: 0, address: a2, topics: [t2, padded], data: new Uint8Array(0) },
      { txIndex: 3, address: a1, topics: [], data: Uint8Array.of(2, 3) },
      { txIndex: 3, address: a2, topics: [t1, t1, t2, padded], data: new Uint8Array(300).fill(7) },
    ];
    const decoded = decodeBlockLogColumns(encodeBlockLogColumns(logs), 5n);
    expect(decoded.length).toBe(logs.length);
    logs.forEach((want, i) => {
      const got = decoded[i] as (typeof decoded)[number];
      expect([
        i,
        got.txIndex,
        Buffer.from(got.address),
        got.topics.map((t) => Buffer.from(t)),
        Buffer.from(got.data),
      ]).toEqual([
        i,
        want.txIndex,
        Buffer.from(want.address),
        want.topics.map((t) => Buffer.from(t)),
        Buffer.from(want.data),
      ]);
    });
  });

  test('a block of many values: ids, tx gaps and data lengths past one varint byte, read log by log', () => {
    const next = rng(9);
    const addresses = Array.from({ length: 300 }, () => bytes(next, 20));
    const topics = Array.from({ length: 600 }, () => bytes(next, 32));
    let tx = 0;
    const logs = Array.from({ length: 1_500 }, () => {
      tx += next(4) === 0 ? next(400) : 0;
      return {
        txIndex: tx,
        address: addresses[next(addresses.length)] as Uint8Array,
        topics: Array.from({ length: next(5) }, () => topics[next(topics.length)] as Uint8Array),
        data: bytes(next, next(3) === 0 ? next(700) : next(64)),
      };
    });
    const encoded = encodeBlockLogColumns(logs);
    const view = new BlockLogColumns(encoded, 7n);
    expect(view.count).toBe(logs.length);
    const wrong: number[] = [];
    // Out of order, as a query's ids into a cached block may come.
    for (const i of Array.from({ length: logs.length }, (_, i) => (i * 7) % logs.length)) {
      const got = view.log(i);
      const want = logs[i] as (typeof logs)[number];
      const same =
        got.txIndex === want.txIndex &&
        got.logIndex === i &&
        got.blockNumber === 7n &&
        Buffer.from(got.address).equals(want.address) &&
        got.topics.length === want.topics.length &&
        got.topics.every((t, j) => Buffer.from(t).equals(want.topics[j] as Uint8Array)) &&
        Buffer.from(got.data).equals(want.data);
      if (!same) wrong.push(i);
    }
    expect(wrong).toEqual([]);
    expect(view.txLogs(tx).map((l) => l.logIndex)).toEqual(logs.flatMap((l, i) => (l.txIndex === tx ? [i] : [])));
    // More topics than four a log (the codec takes up to 255): the ids' array grows, keeping the
    // ids before.
    const wide = [2, 12].map((n, k) => ({
      txIndex: k,
      address: addresses[k] as Uint8Array,
      topics: topics.slice(20 * k, 20 * k + n),
      data: new Uint8Array(0),
    }));
    const wideView = new BlockLogColumns(encodeBlockLogColumns(wide), 8n);
    expect(wide.map((_, i) => wideView.log(i).topics.map((t) => Buffer.from(t).toString('hex')))).toEqual(
      wide.map((l) => l.topics.map((t) => Buffer.from(t).toString('hex'))),
    );
    // A value cut short anywhere is refused, never read past its end.
    for (const cut of [1, 2, 30, encoded.length >> 1, encoded.length - 1])
      expect(() => new BlockLogColumns(encoded.subarray(0, cut), 7n)).toThrow(RangeError);
  });
});
