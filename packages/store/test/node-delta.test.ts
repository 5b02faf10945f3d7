// Branch nodes kept as deltas against the node at the same path in the parent's trie
// (node-delta.ts): the codec on random branches, and every row of an imported datadir rebuilt and
// checked against its key (keccak of the rebuilt node), independently of the walks that use them.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { datadirCopy, seededRandom } from '@chainnode/testkit';
import { openDb } from '../src/db.js';
import { MetaKey, Prefix, tables } from '../src/schema/index.js';
import { convertDatadir } from '../src/upkeep/index.js';
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

/** Every TrieNodes row rebuilt and checked against its key; counts and bytes. */
async function checkRows(dir: string): Promise<{ whole: number; deltas: number; stored: number; rebuilt: number }> {
  const db = await openDb(dir, { create: false });
  try {
    const get = (h: Uint8Array) => db.getSync(Uint8Array.of(Prefix.TrieNodes, ...h));
    const out = { whole: 0, deltas: 0, stored: 0, rebuilt: 0 };
    for await (const [k, v] of db.iterator(NODES)) {
      if (k.length !== 33) continue; // code rows: 'c' ++ codeHash
      const node = nodeBytes(v, get);
      expect(hex(keccak256(node))).toBe(hex(k.subarray(1)));
      expect(rowDepth(v)).toBeLessThanOrEqual(MAX_CHAIN);
      if (isDelta(v)) out.deltas++;
      else out.whole++;
      out.stored += v.length;
      out.rebuilt += node.length;
    }
    return out;
  } finally {
    await db.close();
  }
}

const NODES = { gt: Uint8Array.of(Prefix.TrieNodes), lt: Uint8Array.of(Prefix.TrieNodes + 1) };

test('an imported datadir (the execution-apis chain): every row rebuilds to the node its key names; with every node whole (an earlier release), db convert rewrites them as deltas, resumably', async () => {
  const c = await datadirCopy('execution-apis');
  try {
    const imported = await checkRows(c.dir);
    expect(imported.deltas).toBeGreaterThan(0);
    expect(imported.stored).toBeLessThan(imported.rebuilt);
    // The layout of an earlier release: every node whole, no Meta.trieDeltas.
    const db = await openDb(c.dir, { create: false });
    try {
      const get = (h: Uint8Array) => db.getSync(Uint8Array.of(Prefix.TrieNodes, ...h));
      const whole: [Uint8Array, Uint8Array][] = [];
      for await (const [k, v] of db.iterator(NODES))
        if (k.length === 33 && isDelta(v)) whole.push([k, nodeBytes(v, get)]);
      const batch = db.batch();
      for (const [k, v] of whole) batch.put(k, v);
      batch.del(tables.meta.key(MetaKey.TrieDeltas));
      await batch.write();
    } finally {
      await db.close();
    }
    const before = await checkRows(c.dir);
    expect(before.deltas).toBe(0);
    const r = await convertDatadir(c.dir);
    expect(r.trieDeltas.rows).toBeGreaterThan(0);
    const after = await checkRows(c.dir);
    expect(after.deltas).toBe(r.trieDeltas.rows);
    expect(after.stored).toBe(before.stored - r.trieDeltas.bytesBefore + r.trieDeltas.bytesAfter);
    expect(after.stored).toBeLessThan(before.stored);
    expect((await convertDatadir(c.dir)).trieDeltas.rows).toBe(0);
  } finally {
    await c.cleanup();
  }
}, 300_000);
