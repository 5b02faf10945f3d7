// The read path hands out views of its trie-node cache (trieGet's values, the walks' nodes): what
// the store keeps or returns must be copies. Here the cache is the smallest there is (4 KiB: it
// wraps every few nodes), every answer is kept while hundreds more walks overwrite the cache,
// and only then verified: proofs with @ethereumjs/mpt against the state roots, storage values and
// the cached accounts (a second storageAt round reads them) against the proofs.
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes, setLengthLeft } from '@ethereumjs/util';
import { bytesToBigInt } from '@chainnode/core';
import type { AccountProofRecord } from '@chainnode/core';
import { datadirCopy, sharedChainsDir } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { hex } from './random.js';
import { expectAccountProof } from './account-proof.js';

const chains = sharedChainsDir();
const d = chains === undefined ? describe.skip : describe;

d('a store whose trie-node cache wraps all the time (4 KiB)', () => {
  let store: LevelChainStore;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const copy = await datadirCopy('execution-apis');
    cleanup = copy.cleanup;
    store = await LevelChainStore.open(copy.dir, { nodeCacheBytes: 4096 });
  });
  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  test('kept proofs, storage values and cached accounts stay right after the cache came round', async () => {
    const roots: Uint8Array[] = [];
    const addrs = new Map<string, Uint8Array>();
    for (const n of [5n, 20n, 35n, 54n]) {
      const hash = await store.canonicalHash(n);
      const b = hash && (await store.block(hash));
      if (!b) throw new Error(`block ${n} missing`);
      roots.push(b.header.stateRoot);
      for (const t of b.transactions) for (const a of [t.from, t.to]) if (a) addrs.set(hex(a), a);
    }
    const slots = [0n, 1n, 2n, 3n].map((i) => setLengthLeft(bigIntToUnpaddedBytes(i), 32));
    const kept: { root: Uint8Array; addr: Uint8Array; p: AccountProofRecord; stored: Uint8Array[] }[] = [];
    for (const root of roots) {
      for (const addr of [...addrs.values()].slice(0, 25)) {
        const p = await store.proof(root, addr, slots);
        const stored = [];
        for (const s of slots) stored.push(await store.storageAt(root, addr, s));
        kept.push({ root, addr, p, stored });
      }
    }
    let withStorage = 0;
    for (const { root, addr, p, stored } of kept) {
      await expectAccountProof(root, addr, p);
      for (const [i, sp] of p.storageProof.entries()) {
        expect(bytesToBigInt(stored[i] as Uint8Array)).toBe(sp.value);
        // A second round: the account comes from the store's account cache, kept since the first.
        expect(hex(await store.storageAt(root, addr, sp.key))).toBe(hex(stored[i] as Uint8Array));
        if (sp.proof.length === 0) continue;
        withStorage++;
        const v = await verifyMerkleProof(sp.key, sp.proof, { root: p.storageHash, useKeyHashing: true });
        expect(v === null ? 0n : bytesToBigInt(RLP.decode(v) as Uint8Array)).toBe(sp.value);
      }
    }
    expect(withStorage).toBeGreaterThan(0);
  });
});
