// The block-logs codec's dictionaries key addresses and topics by a 32-bit hash of their bytes and
// compare the values of one hash byte by byte: two addresses (and two topics) whose hashes collide
// keep their own ids, and a block of them decodes to the logs it was given.
import { decodeBlockLogColumns, encodeBlockLogColumns, hashOf } from '../src/logs/block-logs-codec.js';
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
});
