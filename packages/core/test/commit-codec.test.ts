// A commit packed for the hop between threads reads back field for field: random commits (reorgs
// with removed blocks, logs with 0-4 topics and data of any length, numbers past 2^53), and a
// damaged buffer is refused rather than read short.
import { randomBytes } from 'node:crypto';
import { commitWithoutLogs, packCommit, unpackCommit } from '../src/index.js';
import type { ChainCommit, CommittedBlock, LogRecord } from '../src/index.js';

let seed = 7;
const rand = (n: number): number => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
const bytes = (n: number): Uint8Array => Uint8Array.from(randomBytes(n));
const big = (): bigint => BigInt(rand(2 ** 30)) * BigInt(rand(2 ** 30) + 1);

function block(number: bigint): CommittedBlock {
  const hash = bytes(32);
  const timestamp = big();
  const logs: LogRecord[] = Array.from({ length: rand(6) }, (_, i) => ({
    address: bytes(20),
    topics: Array.from({ length: rand(5) }, () => bytes(32)),
    data: bytes(rand(3) === 0 ? 0 : rand(300)),
    blockNumber: number,
    blockHash: hash,
    blockTimestamp: timestamp,
    transactionHash: bytes(32),
    transactionIndex: rand(500),
    logIndex: i,
  }));
  return { number, hash, logs };
}

function randomCommit(): ChainCommit {
  const base = big();
  const removed = Array.from({ length: rand(3) }, (_, i) => block(base + BigInt(i)));
  const added = Array.from({ length: 1 + rand(3) }, (_, i) => block(base + BigInt(i)));
  const last = added[added.length - 1] as CommittedBlock;
  return { removed, added, head: { number: last.number, hash: last.hash } };
}

/** Byte arrays as plain arrays, so toEqual compares contents whatever the views' buffers. */
const plain = (v: unknown): unknown =>
  v instanceof Uint8Array
    ? [...v]
    : Array.isArray(v)
      ? v.map(plain)
      : typeof v === 'object' && v !== null
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
        : v;

test('a packed commit reads back field for field (200 random commits)', () => {
  for (let i = 0; i < 200; i++) {
    const c = randomCommit();
    const packed = packCommit(c);
    expect(plain(unpackCommit(packed))).toEqual(plain(c));
    // Read from a view inside a larger buffer too (a port may hand over any view).
    const framed = new Uint8Array(packed.length + 7);
    framed.set(packed, 3);
    expect(plain(unpackCommit(framed.subarray(3, 3 + packed.length)))).toEqual(plain(c));
  }
});

test('a damaged buffer is refused: cut short, or with bytes left over', () => {
  const c = randomCommit();
  const first = c.added[0] as CommittedBlock;
  first.logs.push({
    address: bytes(20),
    topics: [bytes(32)],
    data: bytes(9),
    blockNumber: first.number,
    blockHash: first.hash,
    blockTimestamp: 5n,
    transactionHash: bytes(32),
    transactionIndex: 0,
    logIndex: first.logs.length,
  });
  const packed = packCommit(c);
  for (const cut of [1, 9, packed.length >> 1, packed.length - 1])
    expect(() => unpackCommit(packed.subarray(0, cut))).toThrow(RangeError);
  const longer = new Uint8Array(packed.length + 1);
  longer.set(packed);
  expect(() => unpackCommit(longer)).toThrow('bytes left over');
});

test('fields of the wrong width are refused when packing', () => {
  const c = randomCommit();
  const bad = { ...c, head: { number: 1n, hash: bytes(31) } };
  expect(() => packCommit(bad)).toThrow('the head hash is 31 bytes, not 32');
});

test('commitWithoutLogs keeps every block number and hash, and no log', () => {
  const c = randomCommit();
  const s = commitWithoutLogs(c);
  expect(plain(s.head)).toEqual(plain(c.head));
  for (const side of ['removed', 'added'] as const) {
    expect(s[side].map((b) => [b.number, [...b.hash]])).toEqual(c[side].map((b) => [b.number, [...b.hash]]));
    expect(s[side].every((b) => b.logs.length === 0)).toBe(true);
  }
});
