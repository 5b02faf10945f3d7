// The trie window in the import path. A copy of the fixture chain's datadir, set to keep the
// state tries of its last 4 blocks, imports fixtures/fork (a reorg of ten blocks at 1590, then
// fifteen new blocks) in groups of 4: the flush that lands the branch's first group starts a
// pruning cycle in the background, which moves Meta.trieFrom to its window's start at once (the
// import's close stops it). A final cycle at the head (window 1602..1605) completes; importing
// the main chain again would reorg below it (the fork point's trie is pruned): refused as a reorg
// too deep, naming the window. Proofs inside the window verify with @ethereumjs/mpt.
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { LevelChainStore, StoreWriter, putStateTrie, readTrieFrom } from '@chainnode/store';
import type { PruneReport } from '@chainnode/store';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import { join } from 'node:path';
import { ReorgTooDeepError, importChain } from '../src/index.js';

const FORK_AT = 1590n;

test('a trie window prunes during the import and refuses a reorg below it', async () => {
  const fixtures = chainDir('fixtures') as string;
  const copy = await datadirCopy('fixtures');
  try {
    // The setting is fixed at creation; a copy of an archive datadir is set here by hand.
    const set = await StoreWriter.open(copy.dir);
    const batch = set.db.batch();
    putStateTrie(batch, { kind: 'window', blocks: 4 });
    await batch.write();
    await set.close();

    const lines: string[] = [];
    const r = await importChain({
      from: join(fixtures, 'fork'),
      datadir: copy.dir,
      groupBlocks: 4,
      log: (l) => lines.push(l),
    });
    expect([r.reorgs, r.head.number]).toEqual([1, 1605n]);
    const w = await StoreWriter.open(copy.dir);
    try {
      // The import's flushes started a cycle: its window's start is Meta.trieFrom from then on.
      expect(await readTrieFrom(w.db)).toBeGreaterThan(FORK_AT - 4n);
    } finally {
      await w.close();
    }
    const reports: PruneReport[] = [];
    const w2 = await StoreWriter.open(copy.dir, { prune: { onReport: (p) => reports.push(p) } });
    try {
      const done = (await w2.pruneTrie()) as PruneReport;
      expect([done.phase, done.from, done.head]).toEqual(['done', 1602n, 1605n]);
      expect(done.deleted).toBeGreaterThan(0);
    } finally {
      await w2.close();
    }
    const refused = importChain({ from: fixtures, datadir: copy.dir });
    await expect(refused).rejects.toThrow(ReorgTooDeepError);
    await expect(refused).rejects.toThrow(/window=4/);
    const store = await LevelChainStore.open(copy.dir);
    try {
      for (const n of [1602n, 1605n]) {
        const header = (await store.header((await store.canonicalHash(n)) as Uint8Array)) as {
          stateRoot: Uint8Array;
          coinbase: Uint8Array;
        };
        const p = await store.proof(header.stateRoot, header.coinbase, []);
        const leaf = await verifyMerkleProof(header.coinbase, p.accountProof, {
          root: header.stateRoot,
          useKeyHashing: true,
        });
        expect(leaf).not.toBeNull();
      }
    } finally {
      await store.close();
    }
  } finally {
    await copy.cleanup();
  }
});
