// trie-read.ts (the read path's in-place RLP trie walk) and hash-cache.ts's caches against @ethereumjs/mpt:
// random tries built by the library (short keys that are prefixes of others, so branch values;
// tiny values, so nodes embedded in their parents; hashed 32-byte keys, as the state and storage
// tries), every lookup's value equal to the library's get(), every proof equal node for node to
// the library's createMerkleProof (less the embedded nodes it lists and geth does not) and
// verified by verifyMerkleProof. The walk reads nodes only from the union of the library's
// proofs (no access to the library's database).
import { createMerkleProof, createMPT, verifyMerkleProof } from '@ethereumjs/mpt';
import type { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { HashCache, PairCache, cacheKeyOf } from '../src/hash-cache.js';
import { keccak256 as wasmKeccak } from '../src/keccak.js';
import { createAccount, createAccountFromRLP } from '@ethereumjs/util';
import { MissingTrieNodeError } from '@chainnode/core';
import { accountFields, rlpString, trieGet } from '../src/trie/trie-read.js';
import type { NodeSource } from '../src/trie/trie-read.js';
import { bytes, hex, rng } from './random.js';

interface Case {
  trie: MerklePatriciaTrie;
  present: Uint8Array[];
  absent: Uint8Array[];
}

async function build(seed: number, hashed: boolean, count: number): Promise<Case> {
  const r = rng(seed);
  const trie = await createMPT(hashed ? { useKeyHashing: true } : {});
  const present: Uint8Array[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    // Unhashed: 1-4 byte keys over a small alphabet, so keys share prefixes and some are
    // prefixes of others (a value in a branch); hashed: 20-byte keys (addresses).
    const key = hashed ? bytes(r, 20) : Uint8Array.from({ length: 1 + r(4) }, () => r(6) * 17);
    if (seen.has(hex(key))) continue;
    seen.add(hex(key));
    // Values of 1-40 bytes: the short ones make nodes under 32 bytes (embedded in the parent).
    await trie.put(key, bytes(r, 1 + r(40)));
    present.push(key);
  }
  const absent: Uint8Array[] = [];
  while (absent.length < count / 2) {
    const key = hashed ? bytes(r, 20) : Uint8Array.from({ length: 1 + r(5) }, () => r(7) * 17);
    if (!seen.has(hex(key))) absent.push(key);
  }
  return { trie, present, absent };
}

/** The library's proofs of every key: their nodes by hash are the walk's whole node source. */
async function librarySource(c: Case): Promise<{ source: NodeSource; proofs: Map<string, Uint8Array[]> }> {
  const nodes = new Map<string, Uint8Array>();
  const proofs = new Map<string, Uint8Array[]>();
  for (const key of [...c.present, ...c.absent]) {
    const proof = await createMerkleProof(c.trie, key);
    proofs.set(hex(key), proof);
    for (const n of proof) nodes.set(hex(keccak256(n)), n);
  }
  return { source: (h) => nodes.get(hex(h)), proofs };
}

describe('trieGet against @ethereumjs/mpt', () => {
  for (const [label, hashed, seeds, count] of [
    ['short keys: branch values, embedded nodes', false, [1, 2, 3, 4, 5, 6], 120],
    ['hashed keys, as the state and storage tries', true, [7, 8, 9], 400],
  ] as const) {
    test(label, async () => {
      let embedded = 0;
      let branchValues = 0;
      let checked = 0;
      for (const seed of seeds) {
        const c = await build(seed, hashed, count);
        const { source, proofs } = await librarySource(c);
        const root = c.trie.root();
        for (const key of [...c.present, ...c.absent]) {
          const path = hashed ? keccak256(key) : key;
          const proof: Uint8Array[] = [];
          const got = trieGet(source, root, path, proof);
          const want = await c.trie.get(key);
          // Each matcher only for a difference: four per key cost more than the walks.
          const [gotHex, wantHex] = [got === null ? null : hex(got), want === null ? null : hex(want)];
          if (gotHex !== wantHex) expect(gotHex).toBe(wantHex);
          // geth's Prove lists the nodes read by hash (an embedded node is inside its parent's
          // bytes); the library lists embedded nodes too: the same list without those.
          const library = (proofs.get(hex(key)) as Uint8Array[]).filter((n, i) => i === 0 || n.length >= 32);
          if (proof.map(hex).join() !== library.map(hex).join()) expect(proof.map(hex)).toEqual(library.map(hex));
          const verified = await verifyMerkleProof(key, proof, { root, useKeyHashing: hashed });
          const verifiedHex = verified === null ? null : hex(verified);
          if (verifiedHex !== wantHex) expect(verifiedHex).toBe(wantHex);
          // The same walk without a proof list gives the same value.
          const plain = trieGet(source, root, path);
          const plainHex = plain === null ? null : hex(plain);
          if (plainHex !== gotHex) expect(plainHex).toBe(gotHex);
          checked++;
          if (!hashed && c.present.some((k) => k.length > key.length && hex(k).startsWith(hex(key))) && want !== null)
            branchValues++;
        }
        // Nodes shorter than 32 bytes sit inside their parents: count the proofs' nodes that
        // carry one (a child or an extension's next node that is a list, not a hash).
        for (const p of proofs.values())
          for (const n of p) {
            const items = RLP.decode(n) as (Uint8Array | unknown[])[];
            const children = items.length === 17 ? items.slice(0, 16) : [items[1]];
            if (children.some((x) => Array.isArray(x))) embedded++;
          }
      }
      expect(checked).toBeGreaterThan(seeds.length * count);
      if (!hashed) {
        expect(branchValues).toBeGreaterThan(0);
        expect(embedded).toBeGreaterThan(0);
      }
    });
  }

  test('a missing node or a malformed node throws', async () => {
    const c = await build(11, true, 50);
    const { source } = await librarySource(c);
    const root = c.trie.root();
    const key = keccak256(c.present[0] as Uint8Array);
    expect(() => trieGet(() => undefined, root, key)).toThrow(MissingTrieNodeError);
    expect(() => trieGet(() => undefined, root, key)).toThrow(`missing trie node 0x${hex(root)}`);
    const rootNode = source(root) as Uint8Array;
    const truncated: NodeSource = (h) => (hex(h) === hex(root) ? rootNode.subarray(0, rootNode.length - 5) : source(h));
    expect(() => trieGet(truncated, root, key)).toThrow('rlp: truncated item');
    const notList: NodeSource = (h) => (hex(h) === hex(root) ? Uint8Array.of(0x83, 1, 2, 3) : source(h));
    expect(() => trieGet(notList, root, key)).toThrow('trie: node is not a list');
  });
});

/** Two different keys (of `len` bytes) filed under one integer, found by search (30 bits: ~2^15 tries). */
function collision(len: number, pairWith?: Uint8Array): [Uint8Array, Uint8Array] {
  const seen = new Map<number, Uint8Array>();
  const r = rng(7);
  for (;;) {
    const k = bytes(r, len);
    const id = cacheKeyOf(k, pairWith);
    const other = seen.get(id);
    if (other !== undefined && hex(other) !== hex(k)) return [other, k];
    seen.set(id, k);
  }
}

describe('hash-cache.ts', () => {
  test('keys filed under one integer never answer for each other (HashCache)', () => {
    const [a, b] = collision(32);
    const cache = new HashCache<Uint8Array>(8);
    cache.set(a, Uint8Array.of(0xaa));
    expect(cache.get(a)).toEqual(Uint8Array.of(0xaa));
    expect(cache.get(b)).toBeUndefined();
    cache.set(b, Uint8Array.of(0xbb));
    expect(cache.get(b)).toEqual(Uint8Array.of(0xbb));
    expect(cache.get(a)).toBeUndefined(); // replaced: a miss, never b's node
    const numbers = new HashCache<bigint | null>(8);
    numbers.set(a, null);
    expect(numbers.get(a)).toBeNull(); // null is a value (a hit), undefined a miss
    numbers.delete(b); // another key under the same integer: a's entry stays
    expect(numbers.get(a)).toBeNull();
    numbers.delete(a);
    expect(numbers.get(a)).toBeUndefined();
  });

  test('PairCache: both keys must match; a colliding pair is a miss, never the other value', () => {
    const root = keccak256(Uint8Array.of(1));
    const [s1, s2] = collision(32, root);
    const cache = new PairCache<string>(8);
    cache.set(root, s1, 'one');
    expect(cache.get(root, s1)).toBe('one');
    expect(cache.get(root, s2)).toBeUndefined();
    expect(cache.get(keccak256(Uint8Array.of(2)), s1)).toBeUndefined();
    // Small slot words (leading zero bytes) and a key that is a view of a larger buffer.
    const word = new Uint8Array(40).subarray(8);
    word[31] = 5;
    cache.set(root, word, 'five');
    word[31] = 6; // the cache copied the key
    const five = new Uint8Array(32);
    five[31] = 5;
    expect(cache.get(root, five)).toBe('five');
  });

  test('holds at most its capacity and keeps recently used entries', () => {
    const cache = new HashCache<Uint8Array>(64);
    const h = (i: number): Uint8Array => keccak256(Uint8Array.of(i & 0xff, i >> 8));
    for (let i = 0; i < 1000; i++) {
      cache.set(h(i), Uint8Array.of(i & 0xff));
      expect(cache.get(h(i))?.[0]).toBe(i & 0xff);
    }
    let held = 0;
    for (let i = 0; i < 1000; i++) if (cache.get(h(i)) !== undefined) held++;
    expect(held).toBeLessThanOrEqual(64);
    expect(held).toBeGreaterThan(0);
  });

  test('with weights, holds about its budget whatever the count, and re-setting a key does not count it twice', () => {
    const cache = new HashCache<number>(1024, 1000);
    const h = (i: number): Uint8Array => keccak256(Uint8Array.of(i & 0xff, i >> 8));
    const weight = (i: number): number => (i % 7 === 0 ? 300 : 10);
    for (let i = 0; i < 500; i++) cache.set(h(i), i, weight(i));
    let held = 0;
    let count = 0;
    for (let i = 0; i < 500; i++)
      if (cache.get(h(i)) !== undefined) {
        held += weight(i);
        count++;
      }
    // Two generations of at most half the budget each, plus the one entry that crossed each half.
    expect(held).toBeLessThanOrEqual(1000 + 2 * 300);
    expect(held).toBeGreaterThan(0);
    expect(count).toBeLessThan(500);
    // The most recent entry is always held; one key set again and again stays one entry's weight.
    expect(cache.get(h(499))).toBe(499);
    // Budget 100: a generation turns old once it holds 50. Key 1 set 50 times weighs 10, not 500:
    // keys 2-5 fill the young generation to 50, key 6 turns it old, key 7 joins key 6, and key 1
    // is still held (counted 50 times, it would have been dropped by key 7's turn).
    const again = new HashCache<number>(1024, 100);
    for (let i = 0; i < 50; i++) again.set(h(1), i, 10);
    for (let k = 2; k <= 7; k++) again.set(h(k), k, 10);
    expect(again.get(h(1))).toBe(49);
    expect(again.get(h(7))).toBe(7);
  });
});

test('the read path Keccak (hash-wasm) equals ethereum-cryptography on random inputs', () => {
  const r = rng(99);
  for (let i = 0; i < 500; i++) {
    const b = bytes(r, r(300));
    expect(hex(wasmKeccak(b))).toBe(hex(keccak256(b)));
  }
});

describe('accountFields and rlpString (in-place decoders of trie values)', () => {
  test('accounts as @ethereumjs/util encodes and decodes them, including zero and 32-byte fields', () => {
    const r = rng(21);
    const amounts = [0n, 1n, 255n, 256n, 2n ** 48n - 1n, 2n ** 48n, 10n ** 18n, 2n ** 256n - 1n];
    for (let i = 0; i < 300; i++) {
      const nonce = i < amounts.length ? (amounts[i] as bigint) : BigInt(r(1_000_000));
      const balance = amounts[i % amounts.length] as bigint;
      const account = createAccount({ nonce, balance, storageRoot: bytes(r, 32), codeHash: bytes(r, 32) });
      const raw = account.serialize();
      const mine = accountFields(raw);
      const theirs = createAccountFromRLP(raw);
      expect(mine.nonce).toBe(theirs.nonce);
      expect(mine.balance).toBe(theirs.balance);
      expect(hex(mine.storageRoot)).toBe(hex(theirs.storageRoot));
      expect(hex(mine.codeHash)).toBe(hex(theirs.codeHash));
    }
  });

  test('malformed accounts throw (extra items too, as geth decodes accounts; @ethereumjs/util ignores them)', () => {
    const root = new Uint8Array(32);
    for (const bad of [
      RLP.encode([1, 2, root]), // 3 items
      RLP.encode([1, 2, root, root, 5]), // 5 items
      RLP.encode([1, 2, root.subarray(1), root]), // 31-byte storage root
      RLP.encode([1, [2], root, root]), // a list as balance
      RLP.encode(root), // not a list
      RLP.encode([1, 2, root, root]).subarray(0, 40), // truncated
    ]) {
      expect(() => accountFields(bad)).toThrow(/^(account|rlp): /);
    }
  });

  test('rlpString: the payload of one byte string, else an error', () => {
    for (const v of [Uint8Array.of(1), Uint8Array.of(0x80), bytes(rng(4), 32), new Uint8Array(0)]) {
      expect(hex(rlpString(RLP.encode(v)))).toBe(hex(v));
    }
    expect(() => rlpString(RLP.encode([Uint8Array.of(1)]))).toThrow('rlp: not one byte string');
    expect(() => rlpString(Uint8Array.of(0x82, 1))).toThrow('rlp: truncated item');
  });
});
