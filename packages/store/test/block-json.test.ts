// The BlockJson rows (schema.ts) of a real import: every block's row is the whole hashes-only
// answer (first byte 0x01, the tx hashes in it, in tx order, as BlockTxHashes has them), and a
// datadir whose rows are of the older form (the answer with "transactions":[], as builds before
// the whole form wrote them) is still answered with the same bytes, its hashes spliced in from
// BlockTxHashes. rpc's block-text test compares the answers with the formatter, block by block.
import { bytesEqual } from '@chainnode/core';
import { datadirCopy } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { openDb } from '../src/db.js';
import { tables } from '../src/schema/schema.js';

const latin1 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');

test('whole rows at import; rows of the older form answer the same bytes', async () => {
  const c = await datadirCopy('fixtures');
  try {
    // 1. What the import wrote, read raw.
    const whole = new Map<bigint, { hash: Uint8Array; text: string }>();
    let withTxs = 0;
    let db = await openDb(c.dir, { create: false });
    try {
      for await (const [n, hash] of tables.canonical.range(db, {})) {
        const raw = await db.get(tables.blockJson.key(hash));
        if (raw === undefined) throw new Error(`block ${n}: no BlockJson row`);
        expect(raw[0]).toBe(0x01);
        const text = latin1(raw.subarray(1));
        const txHashes = (await tables.blockTxHashes.get(db, n)) ?? [];
        // The hashes in the text are BlockTxHashes' hashes, in order.
        const list = /"transactions":\[([^\]]*)\]/.exec(text)?.[1];
        expect(list).toBe(txHashes.map((h) => `"0x${Buffer.from(h).toString('hex')}"`).join(','));
        if (txHashes.length > 0) withTxs++;
        whole.set(n, { hash, text });
      }
      expect(whole.size).toBeGreaterThan(10);
      expect(withTxs).toBeGreaterThan(5);
      // 2. Every row rewritten in the older form.
      const batch = db.batch();
      for (const { hash, text } of whole.values()) {
        const head = text.replace(/"transactions":\[[^\]]*\]/, '"transactions":[]');
        tables.blockJson.put(batch, hash, { whole: false, head: Buffer.from(head, 'latin1') });
      }
      await batch.write();
    } finally {
      await db.close();
    }
    db = await openDb(c.dir, { create: false });
    try {
      const some = [...whole.values()].find((b) => !b.text.includes('"transactions":[]'));
      if (some === undefined) throw new Error('no block with transactions');
      const raw = await db.get(tables.blockJson.key(some.hash));
      expect(raw?.[0]).toBe(0x7b); // '{': the older form is what is stored now
    } finally {
      await db.close();
    }
    // 3. Read through the store: the same bytes as the whole rows, for every block.
    const store = await LevelChainStore.open(c.dir);
    try {
      for (const [n, { hash, text }] of whole) {
        const ready = await store.readyBlockJson(hash);
        if (ready === undefined) throw new Error(`block ${n}: no ready answer from an older row`);
        expect(latin1(ready.ascii)).toBe(text);
        expect(bytesEqual((await store.canonicalHash(n)) as Uint8Array, hash)).toBe(true);
      }
      // Not canonical, not answered.
      expect(await store.readyBlockJson(new Uint8Array(32).fill(0xab))).toBeUndefined();
    } finally {
      await store.close();
    }
  } finally {
    await c.cleanup();
  }
}, 120_000);
