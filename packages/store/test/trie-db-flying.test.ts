// A group of trie nodes handed to a batch (drainInto) stays readable from memory until the batch
// has landed (landed()): the writer's flushBehind returns before LevelDB has written it, and the
// next blocks' state update and execution read their parents' nodes meanwhile. After landed()
// LevelDB answers; a node whose batch was never written is then gone, which shows the reads in
// between were the memory's.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { openDb } from '../src/db.js';
import type { Db } from '../src/db.js';
import { TrieNodeDb } from '../src/trie/index.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** A leaf node of 40-byte value (over 32 bytes of RLP: stored by its hash). */
function leaf(seed: number): { hash: Uint8Array; bytes: Uint8Array } {
  const bytes = RLP.encode([Uint8Array.of(0x20, seed), new Uint8Array(40).fill(seed)]);
  return { hash: keccak256(bytes), bytes };
}

/** Puts collected, to be written to LevelDB later (or never). */
function collect(): { puts: [Uint8Array, Uint8Array][]; put(k: Uint8Array, v: Uint8Array): void } {
  const puts: [Uint8Array, Uint8Array][] = [];
  return { puts, put: (k, v) => puts.push([k.slice(), v.slice()]) };
}

let dir: string;
let db: Db;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'chainnode-trie-flying-'));
  db = await openDb(join(dir, 'db'), { create: true });
});
afterAll(async () => {
  await db.close();
  await rm(dir, { recursive: true, force: true });
});

test('a drained group is read from memory until its batch lands, from LevelDB after', async () => {
  const trie = new TrieNodeDb(db, true);
  const a = leaf(1);
  trie.putNodeSync(a.hash, a.bytes);
  trie.acceptBlock(); // the block verified: its nodes join the group
  const batch = collect();
  expect(trie.drainInto(batch)).toBe(1);
  expect(batch.puts.length).toBe(1);
  // Handed over, not written: LevelDB has nothing, the trie db still answers.
  expect(db.getSync(batch.puts[0]![0])).toBeUndefined();
  expect(hex(trie.getNodeSync(a.hash)!)).toBe(hex(a.bytes));
  expect(hex((await trie.get(hex(a.hash))) as Uint8Array)).toBe(hex(a.bytes));
  // A block staged meanwhile reads it as stored (keepReachable skips it, its parent's node).
  const b = leaf(2);
  trie.putNodeSync(b.hash, b.bytes);
  trie.acceptBlock();
  await db.batch(batch.puts.map(([key, value]) => ({ type: 'put' as const, key, value })));
  trie.landed();
  expect(hex(trie.getNodeSync(a.hash)!)).toBe(hex(a.bytes)); // now LevelDB's
  // The second group drained into a batch that is dropped: readable until landed(), then not.
  const dropped = collect();
  expect(trie.drainInto(dropped)).toBe(1);
  expect(hex(trie.getNodeSync(b.hash)!)).toBe(hex(b.bytes));
  trie.landed();
  expect(trie.getNodeSync(b.hash)).toBeUndefined();
  expect(await trie.get(hex(b.hash))).toBeUndefined();
});
