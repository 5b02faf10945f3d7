// node-slab.ts, the read path's trie-node cache: never a wrong node (a model of what was stored,
// checked after every operation of long random runs on slabs small enough to wrap many times),
// views that stay valid for the bytes the contract promises, hot nodes that survive churn, and
// the trie walk over a slab that wraps under it giving the library's proofs.
import { createMerkleProof, createMPT } from '@ethereumjs/mpt';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { copyNodes, NodeSlab } from '../src/trie/node-slab.js';
import { trieGet } from '../src/trie/trie-read.js';
import { bytes, hex, rng } from './random.js';

describe('NodeSlab', () => {
  test('random runs that wrap the slab hundreds of times: every hit is exactly the node stored under its key', () => {
    for (const [seed, size, keys, sameHome] of [
      [1, 4096, 300, false],
      [2, 8192, 2000, false],
      [3, 4096, 64, true], // every key on the same home slot: the probes overflow all the time
    ] as const) {
      const r = rng(seed);
      const slab = new NodeSlab(size, 64);
      const key = (i: number): Uint8Array => {
        const k = keccak256(Uint8Array.of(i & 0xff, i >> 8, seed));
        if (sameHome) k.set([1, 2, 3, 4]);
        return k;
      };
      const model = new Map<string, Uint8Array>();
      let hits = 0;
      for (let op = 0; op < 10_000; op++) {
        const i = r(keys);
        const k = key(i);
        if (r(3) === 0) {
          const node = bytes(r, 1 + r(600));
          const kept = slab.set(k, node);
          // Each matcher only for a difference: one per operation cost more than the slab.
          if (hex(kept) !== hex(node)) expect(hex(kept)).toBe(hex(node));
          model.set(hex(k), node.slice());
          node.fill(0); // the slab kept a copy
        } else {
          const got = slab.get(k);
          if (got !== undefined) {
            hits++;
            const want = hex(model.get(hex(k)) as Uint8Array);
            if (hex(got) !== want) expect(hex(got)).toBe(want);
          }
        }
      }
      expect(hits).toBeGreaterThan(50); // the runs exercise hits, not only misses
    }
  });

  test('a view stays valid for at least a quarter of the slab of later inserts', () => {
    const size = 16_384;
    const slab = new NodeSlab(size, 256);
    const r = rng(7);
    const k0 = keccak256(Uint8Array.of(0));
    const n0 = bytes(r, 500);
    slab.set(k0, n0);
    // Age it to the edge of the guard zone with other nodes, then take a view.
    let i = 1;
    let written = 500;
    while (written + 500 < size - size / 4) {
      slab.set(keccak256(Uint8Array.of(i & 0xff, i >> 8)), bytes(r, 500));
      written += 500;
      i++;
    }
    const view = slab.get(k0) as Uint8Array;
    expect(hex(view)).toBe(hex(n0));
    // A quarter of the slab more: the view's bytes are still n0's.
    for (let w = 0; w + 500 <= size / 4; w += 500, i++)
      slab.set(keccak256(Uint8Array.of(i & 0xff, i >> 8)), bytes(r, 500));
    expect(hex(view)).toBe(hex(n0));
  });

  test('a node asked for all along survives churn many times the slab size (refreshed, not evicted)', () => {
    // Index slots to spare (~40 nodes live at once): only the ring's turn could drop it.
    const slab = new NodeSlab(8192, 1024);
    const r = rng(11);
    const hot = keccak256(Uint8Array.of(0xff));
    const hotNode = bytes(r, 300);
    slab.set(hot, hotNode);
    for (let i = 0; i < 5000; i++) {
      slab.set(keccak256(Uint8Array.of(i & 0xff, i >> 8, 1)), bytes(r, 1 + r(400)));
      const held = i % 4 === 0 ? hex(slab.get(hot) as Uint8Array) : undefined;
      if (held !== undefined && held !== hex(hotNode)) expect(held).toBe(hex(hotNode));
    }
  });

  test('keys other than 32 bytes and nodes over a quarter of the slab are not kept', () => {
    const slab = new NodeSlab(4096, 16);
    const big = new Uint8Array(2000);
    expect(slab.set(keccak256(Uint8Array.of(1)), big)).toBe(big);
    expect(slab.get(keccak256(Uint8Array.of(1)))).toBeUndefined();
    expect(slab.set(new Uint8Array(20), Uint8Array.of(1))).toEqual(Uint8Array.of(1));
    expect(slab.get(new Uint8Array(20))).toBeUndefined();
    expect(() => new NodeSlab(100, 16)).toThrow(RangeError);
  });

  test('copyNodes: the same bytes in the same order, independent of the originals', () => {
    const a = Uint8Array.of(1, 2, 3);
    const b = new Uint8Array(0);
    const c = Uint8Array.of(9);
    const out = copyNodes([a, b, c]);
    expect(out.map(hex)).toEqual(['010203', '', '09']);
    a[0] = 7;
    expect(hex(out[0] as Uint8Array)).toBe('010203');
  });

  test('trie walks through a slab that wraps under them return the library proofs and values', async () => {
    const r = rng(5);
    const trie = await createMPT({ useKeyHashing: true });
    const keys: Uint8Array[] = [];
    for (let i = 0; i < 400; i++) {
      const k = bytes(r, 20);
      keys.push(k);
      await trie.put(k, bytes(r, 33 + r(40)));
    }
    // The nodes by hash, from the library's proofs (the walk sees nothing else).
    const stored = new Map<string, Uint8Array>();
    const expected: Uint8Array[][] = [];
    for (const k of keys) {
      const proof = await createMerkleProof(trie, k);
      expected.push(proof);
      for (const n of proof) stored.set(hex(keccak256(n)), n);
    }
    const slab = new NodeSlab(4096, 32); // a few nodes: every walk overwrites earlier ones
    const source = (hash: Uint8Array): Uint8Array | undefined => {
      const hit = slab.get(hash);
      if (hit !== undefined) return hit;
      const n = stored.get(hex(hash));
      return n === undefined ? undefined : slab.set(hash, n);
    };
    for (let round = 0; round < 3; round++) {
      for (const [i, k] of keys.entries()) {
        const proof: Uint8Array[] = [];
        const v = trieGet(source, trie.root(), keccak256(k), proof);
        expect(v === null ? null : hex(v)).toBe(hex((await trie.get(k)) as Uint8Array));
        expect(copyNodes(proof).map(hex)).toEqual((expected[i] as Uint8Array[]).map(hex));
      }
    }
  });
});
