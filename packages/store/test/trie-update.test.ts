// trie-update.ts (replication's batched, synchronous trie update) against @ethereumjs/mpt: random
// tries of hashed 32-byte keys (as the state and storage tries) and of 2-byte keys with tiny
// values (long shared paths, nodes embedded in their parents), then
// random batches of writes, overwrites and deletions (down to the empty trie and back). After each
// batch the root equals the library's after the same puts and dels, every key reads back through
// trieGetSync, every node the walk needs was either there before or handed to `put`, and the
// values the update reports as each key's before the batch are what trieGetSync read there.
import { createMPT } from '@ethereumjs/mpt';
import { KECCAK256_RLP } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { RLP } from '@ethereumjs/rlp';
import { MissingTrieNodeError, encodeNested, trieGetSync, updateTrie } from '../src/trie/trie-update.js';
import type { Nested } from '../src/trie/trie-update.js';
import { bytes, hex, rng } from './random.js';

async function run(seed: number, hashed: boolean, rounds: number): Promise<number> {
  const r = rng(seed);
  const mpt = await createMPT();
  const nodes = new Map<string, Uint8Array>();
  const get = (h: Uint8Array) => nodes.get(hex(h));
  const put = (h: Uint8Array, e: Uint8Array) => {
    expect(hex(keccak256(e))).toBe(hex(h)); // content-addressed
    nodes.set(hex(h), e);
  };
  const live = new Map<string, Uint8Array>();
  let root = KECCAK256_RLP;
  let checked = 0;
  let olds = 0;
  const key = () => (hashed ? keccak256(Uint8Array.of(r(256), r(256))) : Uint8Array.of(r(4), r(256)));
  for (let round = 0; round < rounds; round++) {
    const changes = new Map<string, [Uint8Array, Uint8Array | undefined]>();
    const n = 1 + r(40);
    for (let i = 0; i < n; i++) {
      const existing = [...live.keys()];
      const del = existing.length > 0 && r(3) === 0;
      const k = del ? Buffer.from(existing[r(existing.length)] as string, 'hex') : key();
      const v = del ? undefined : bytes(r, r(4) === 0 ? 1 + r(3) : 1 + r(40));
      changes.set(hex(k), [Uint8Array.from(k), v]);
    }
    // Sometimes delete everything: down to the empty trie.
    if (round % 17 === 16) for (const k of live.keys()) changes.set(k, [Buffer.from(k, 'hex'), undefined]);
    for (const [k, [kb, v]] of changes) {
      if (v === undefined) {
        await mpt.del(kb);
        live.delete(k);
      } else {
        await mpt.put(kb, v);
        live.set(k, v);
      }
    }
    // Each change's value before the update, as a walk of the old root reads it.
    const list = [...changes.values()];
    // Sometimes a key twice: the later of the two writes wins (an earlier one of another value,
    // or a deletion, is overwritten), and both report the key's value before the batch.
    if (round % 5 === 0 && list.length > 0) {
      const [k] = list[r(list.length)] as [Uint8Array, Uint8Array | undefined];
      list.unshift([k, r(2) === 0 ? undefined : bytes(r, 1 + r(40))]);
    }
    const expected = list.map(([k]) => trieGetSync(root, k, get));
    const before: (Uint8Array | undefined)[] = [];
    root = updateTrie(root, list, get, put, undefined, before);
    expect(hex(root)).toBe(hex(mpt.root()));
    expect(before.length).toBe(list.length);
    const shown = (v: Uint8Array | undefined) => (v === undefined ? 'absent' : hex(v));
    expect(before.map(shown)).toEqual(expected.map(shown));
    olds += expected.filter((v) => v !== undefined).length;
    for (const [k, v] of live) {
      expect(hex(trieGetSync(root, Buffer.from(k, 'hex'), get) ?? new Uint8Array(0))).toBe(hex(v));
      checked++;
    }
  }
  // Overwrites and deletions met values that were there.
  expect(olds).toBeGreaterThan(rounds);
  return checked;
}

test('hashed 32-byte keys: roots equal @ethereumjs/mpt after every batch of writes and deletions', async () => {
  for (const seed of [1, 2]) expect(await run(seed, true, 25)).toBeGreaterThan(300);
});

test('2-byte keys and tiny values: shared paths and nodes embedded in their parents', async () => {
  for (const seed of [11, 12]) expect(await run(seed, false, 25)).toBeGreaterThan(300);
});

test('keys of mixed lengths are refused (a branch value is not a state trie shape)', () => {
  expect(() =>
    updateTrie(
      KECCAK256_RLP,
      [
        [Uint8Array.of(1), Uint8Array.of(1)],
        [Uint8Array.of(1, 2), Uint8Array.of(2)],
      ],
      () => undefined,
      () => {},
    ),
  ).toThrow(/keys of one length only/);
});

test('a node the store lacks is an error naming it, not a wrong root', () => {
  const nodes = new Map<string, Uint8Array>();
  const root = updateTrie(
    KECCAK256_RLP,
    [
      [keccak256(Uint8Array.of(1)), Uint8Array.of(0x83, 1, 2, 3)],
      [keccak256(Uint8Array.of(2)), Uint8Array.of(0x83, 4, 5, 6)],
    ],
    (h) => nodes.get(hex(h)),
    (h, e) => nodes.set(hex(h), e),
  );
  expect(() =>
    updateTrie(
      root,
      [[keccak256(Uint8Array.of(3)), Uint8Array.of(7)]],
      () => undefined,
      () => {},
    ),
  ).toThrow(MissingTrieNodeError);
});

test("the node encoder writes @ethereumjs/rlp's bytes: every length class, nested lists, 2,000 random nodes", () => {
  const r = rng(61);
  const item = (): Uint8Array => {
    const n = r(5) === 0 ? ([0, 1, 55, 56, 57][r(5)] as number) : r(40);
    const b = bytes(r, n);
    if (n === 1 && r(2) === 0) b[0] = r(0x80); // a single byte under 0x80 is its own encoding
    return b;
  };
  const nested = (depth: number): Nested =>
    depth > 0 && r(4) === 0 ? Array.from({ length: r(6) }, () => nested(depth - 1)) : item();
  const cases: Nested[] = [
    [],
    [new Uint8Array(0)],
    Uint8Array.of(0x7f),
    Uint8Array.of(0x80),
    Array.from({ length: 17 }, () => new Uint8Array(0)),
    Array.from({ length: 60 }, () => Uint8Array.of(1)),
  ];
  // Byte strings and lists whose length takes one, two and three bytes to state.
  for (const n of [255, 256, 257, 65_535, 65_536, 70_000]) {
    const b = new Uint8Array(n).fill(0xab);
    cases.push(b, [b], [Uint8Array.of(1), [b]]);
  }
  for (let i = 0; i < 2_000; i++) cases.push(Array.from({ length: r(2) === 0 ? 17 : 2 }, () => nested(2)));
  for (const c of cases) expect(hex(encodeNested(c))).toBe(hex(RLP.encode(c as never)));
});
