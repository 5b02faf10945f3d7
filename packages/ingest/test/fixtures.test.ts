// The project's own fixture chain imports completely through `node-cli sync` (testkit prepares it
// once and caches it for every suite) and ends at the last block of chain.rlp, whose hash the
// test recomputes itself (keccak of the header RLP).
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import { readRlpBlocks } from '../src/index.js';

const dir = chainDir('fixtures');
const d = dir === undefined ? describe.skip : describe;
if (dir === undefined) console.log('skipped: fixtures/genesis.json + chain.rlp not generated yet (npm run fixtures)');

d('import of fixtures/', () => {
  test('reaches the last block of chain.rlp, every block linked to its parent', async () => {
    let count = 0;
    let last: Uint8Array | undefined;
    for await (const b of readRlpBlocks(join(dir as string, 'chain.rlp'))) {
      count++;
      last = b.bytes;
    }
    const header = (RLP.decode(last as Uint8Array) as Uint8Array[][])[0] as Uint8Array[];
    const expected = `0x${Buffer.from(keccak256(RLP.encode(header))).toString('hex')}`;
    const copy = await datadirCopy('fixtures');
    const store = await openChainStore(copy.dir);
    try {
      const head = await store.head();
      expect(head.number).toBe(BigInt(count));
      expect(`0x${Buffer.from(head.hash).toString('hex')}`).toBe(expected);
      let child = await store.header(head.hash);
      for (let n = head.number; n > 0n; n--) {
        const parent = await store.header(child!.parentHash);
        expect(parent?.number).toBe(n - 1n);
        child = parent;
      }
      expect(Buffer.from(child!.hash).equals(Buffer.from(store.info().genesisHash))).toBe(true);
    } finally {
      await store.close();
      await copy.cleanup();
    }
  });
});
