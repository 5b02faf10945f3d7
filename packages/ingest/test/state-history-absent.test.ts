// A datadir without flat state history (written before its tables existed) opens, takes new
// blocks and is served as before: the writer adds no history rows to it (it could not be complete),
// the store says it has none, and state reads go through the trie. Simulated from the
// execution-apis chain's prepared store: cut back to block 20, the history rows and their meta
// key deleted, then the import resumed to the head.
import { LevelChainStore, Prefix, StoreWriter, digestDatadir } from '@chainnode/store';
import { availableChains, chainDir, datadirCopy } from '@chainnode/testkit';
import { importChain } from '../src/index.js';

const d = availableChains().includes('execution-apis') ? test : test.skip;

d('a datadir without state history takes blocks and is served through the trie', async () => {
  const copy = await datadirCopy('execution-apis');
  try {
    const w = await StoreWriter.open(copy.dir);
    try {
      await w.rewind(20n);
      await w.flush();
      const batch = w.db.batch();
      batch.del(Uint8Array.from([Prefix.Meta, ...Buffer.from('stateHistory')]));
      for await (const k of w.db.keys({ gte: Uint8Array.of(Prefix.AccountHistory), lt: Uint8Array.of(0x15) }))
        batch.del(k);
      await batch.write();
    } finally {
      await w.close();
    }
    const r = await importChain({ from: chainDir('execution-apis') as string, datadir: copy.dir });
    expect([r.startNumber, r.head.number]).toEqual([20n, 54n]);
    expect((await digestDatadir(copy.dir, [Prefix.AccountHistory, Prefix.StorageHistory])).entries).toBe(0);
    const store = await LevelChainStore.open(copy.dir);
    try {
      expect(await store.hasStateHistory()).toBe(false);
      const head = await store.block((await store.canonicalHash(54n)) as Uint8Array);
      const account = await store.account(head?.header.stateRoot as Uint8Array, head?.header.coinbase as Uint8Array);
      expect(account?.balance).toBeGreaterThan(0n);
    } finally {
      await store.close();
    }
  } finally {
    await copy.cleanup();
  }
});
