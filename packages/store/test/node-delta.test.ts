// Branch nodes kept as deltas against the node at the same path in the parent's trie
// (node-delta.ts): the codec on random branches, and every row of an imported datadir rebuilt and
// checked against its key (keccak of the rebuilt node), independently of the walks that use them.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { datadirCopy, seededRandom } from '@chainnode/testkit';
import { openDb } from '../src/db.js';
import { Prefix } from '../src/schema/schema.js';
import { MAX_CHAIN, deltaRow, isDelta, nodeBytes, rowDepth } from '../src/trie/node-delta.js';

type Nested = Uint8Array | Nested[];
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function randomBytes(rand: () => number, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
}

/** A value-less branch: each child empty, a hash, or (rarely) an inline leaf. */
function randomBranch(rand: () => number): Nested[] {
  const node: Nested[] = [];
  for (let i = 0; i < 16; i++) {
    const r = rand();
    node.push(
      r < 0.3 ? new Uint8Array(0) : r < 0.95 ? randomBytes(rand, 32) : [Uint8Array.of(0x3a), randomBytes(rand, 4)],
    );
  }
  node.push(new Uint8Array(0));
  return node;
}

test('deltas rebuild the exact node through chains up to MAX_CHAIN; what cannot be a delta stays whole', () => {
  const rand = seededRandom(7);
  for (let trial = 0; trial < 50; trial++) {
    const rows = new Map<string, Uint8Array>();
    let node = randomBranch(rand);
    let encoded = RLP.encode(node);
    let hash = keccak256(encoded);
    rows.set(hex(hash), encoded);
    for (let version = 1; version <= MAX_CHAIN + 3; version++) {
      const next = node.slice();
      const changes = 1 + Math.floor(rand() * 3);
      for (let c = 0; c < changes; c++)
        next[Math.floor(rand() * 16)] = rand() < 0.2 ? new Uint8Array(0) : randomBytes(rand, 32);
      const nextEncoded = RLP.encode(next);
      const nextHash = keccak256(nextEncoded);
      const baseRow = rows.get(hex(hash)) as Uint8Array;
      const row = deltaRow(next, nextEncoded, node, hash, baseRow);
      if (isDelta(row)) {
        expect(rowDepth(row)).toBe(rowDepth(baseRow) + 1);
        expect(row.length).toBeLessThan(nextEncoded.length);
      } else {
        expect(row).toBe(nextEncoded);
      }
      expect(rowDepth(row)).toBeLessThanOrEqual(MAX_CHAIN);
      rows.set(hex(nextHash), row);
      const rebuilt = nodeBytes(row, (h) => rows.get(hex(h)));
      expect(hex(keccak256(rebuilt))).toBe(hex(nextHash));
      node = next;
      encoded = nextEncoded;
      hash = nextHash;
    }
  }
  // A branch with a value, a leaf against a branch, a base that is not a branch: whole.
  const rand2 = seededRandom(9);
  const a = randomBranch(rand2);
  const b = a.slice();
  b[3] = randomBytes(rand2, 32);
  const withValue = [...b.slice(0, 16), Uint8Array.of(1)];
  const baseRow = RLP.encode(a);
  const base = keccak256(baseRow);
  expect(deltaRow(withValue, RLP.encode(withValue), a, base, baseRow)).toEqual(RLP.encode(withValue));
  const leaf: Nested[] = [Uint8Array.of(0x20), randomBytes(rand2, 40)];
  expect(deltaRow(b, RLP.encode(b), leaf, base, RLP.encode(leaf))).toEqual(RLP.encode(b));
  expect(isDelta(deltaRow(b, RLP.encode(b), a, base, baseRow))).toBe(true);
  // A missing base is an error, never a wrong node.
  const delta = deltaRow(b, RLP.encode(b), a, base, baseRow);
  expect(() => nodeBytes(delta, () => undefined)).toThrow(/base .* missing/);
});

test('an imported datadir: every TrieNodes row rebuilds to the node its key names; most new branches are deltas', async () => {
  const c = await datadirCopy('fixtures');
  try {
    const db = await openDb(c.dir, { create: false });
    try {
      const range = { gt: Uint8Array.of(Prefix.TrieNodes), lt: Uint8Array.of(Prefix.TrieNodes + 1) };
      const get = (h: Uint8Array) => db.getSync(Uint8Array.of(Prefix.TrieNodes, ...h));
      let whole = 0;
      let deltas = 0;
      let stored = 0;
      let rebuiltBytes = 0;
      for await (const [k, v] of db.iterator(range)) {
        if (k.length !== 33) continue; // code rows: 'c' ++ codeHash
        const node = nodeBytes(v, get);
        expect(hex(keccak256(node))).toBe(hex(k.subarray(1)));
        expect(rowDepth(v)).toBeLessThanOrEqual(MAX_CHAIN);
        if (isDelta(v)) deltas++;
        else whole++;
        stored += v.length;
        rebuiltBytes += node.length;
      }
      expect(deltas).toBeGreaterThan(whole / 4);
      expect(stored).toBeLessThan(rebuiltBytes * 0.9);
    } finally {
      await db.close();
    }
  } finally {
    await c.cleanup();
  }
}, 300_000);
