// The store's stateRoot(hash) (the header row's 4th RLP item read in place, trie-read.ts's
// headerStateRoot) against the fully decoded header, for every block of both real chains (15 to
// 21 header fields: pre-London to Prague); unknown hashes; malformed header RLP.
import { RLP } from '@ethereumjs/rlp';
import { bytesEqual } from '@chainnode/core';
import { availableChains, datadirCopy } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { headerStateRoot } from '../src/trie/trie-read.js';

const chains = availableChains();

test.each(chains)(
  "%s: stateRoot(hash) is the decoded header's, for every block",
  async (chain) => {
    const c = await datadirCopy(chain);
    const store = await LevelChainStore.open(c.dir);
    try {
      const head = (await store.head()).number;
      const fieldCounts = new Set<number>();
      for (let n = 0n; n <= head; n++) {
        const hash = (await store.canonicalHash(n)) as Uint8Array;
        const header = await store.header(hash);
        if (header === undefined) throw new Error(`block ${n}: no header`);
        const root = await store.stateRoot(hash);
        expect(root !== undefined && bytesEqual(root, header.stateRoot)).toBe(true);
        expect(await store.stateRoot(hash)).toBe(root); // cached: the same bytes object
        fieldCounts.add(
          15 +
            [
              header.baseFeePerGas,
              header.withdrawalsRoot,
              header.blobGasUsed,
              header.excessBlobGas,
              header.parentBeaconBlockRoot,
              header.requestsHash,
            ].filter((f) => f !== undefined).length,
        );
      }
      expect(fieldCounts.size).toBeGreaterThan(1); // the chains span header layouts
      expect(await store.stateRoot(new Uint8Array(32).fill(0xcd))).toBeUndefined();
    } finally {
      await store.close();
      await c.cleanup();
    }
  },
  180_000,
);

test('headerStateRoot: malformed headers throw', () => {
  const h32 = new Uint8Array(32).fill(7);
  const good = RLP.encode([h32, h32, new Uint8Array(20), h32, h32]);
  expect(bytesEqual(headerStateRoot(good), h32)).toBe(true);
  expect(() => headerStateRoot(good.subarray(0, good.length - 1))).toThrow('rlp: truncated item'); // truncated
  expect(() => headerStateRoot(RLP.encode([h32, h32, new Uint8Array(20)]))).toThrow('rlp: truncated item'); // too few items
  expect(() => headerStateRoot(RLP.encode([h32, h32, new Uint8Array(20), new Uint8Array(31)]))).toThrow(
    'header: stateRoot is not 32 bytes',
  ); // short root
  expect(() => headerStateRoot(RLP.encode([h32, h32, new Uint8Array(20), [h32]]))).toThrow(
    'header: stateRoot is not 32 bytes',
  ); // a list
  expect(() => headerStateRoot(RLP.encode(h32))).toThrow('header: not one RLP list'); // not a list
  expect(() => headerStateRoot(new Uint8Array([0xf9, 0xff]))).toThrow('rlp: bad length'); // length past the end
  expect(() => headerStateRoot(new Uint8Array(0))).toThrow('rlp: truncated item');
});
