// Hashes-only block answers are written from the block's rows (reader.ts loadReadyJson); the
// import writes no BlockJson rows. A datadir of an earlier release that holds them (the whole
// form, 0x01 ++ the answer, or the older one without the tx hashes) is answered the same bytes
// (the rows are not read), and `db convert` deletes them. rpc's block-text test compares the
// answers with the formatter and with the rows an earlier release wrote, block by block.
import { datadirCopy } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { openDb } from '../src/db.js';
import { Prefix, tables } from '../src/schema/schema.js';
import { convertDatadir } from '../src/upkeep/index.js';

const latin1 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
const range = { gte: Uint8Array.of(Prefix.BlockJson), lt: Uint8Array.of(Prefix.BlockJson + 1) };

/** Every canonical block's hashes-only answer through the store, by hash. */
async function answers(dir: string): Promise<Map<string, string>> {
  const store = await LevelChainStore.open(dir);
  try {
    const out = new Map<string, string>();
    const head = (await store.head()).number;
    for (let n = 0n; n <= head; n++) {
      const hash = (await store.canonicalHash(n)) as Uint8Array;
      const ready = await store.readyBlockJson(hash);
      if (ready === undefined) throw new Error(`block ${n}: no answer`);
      out.set(latin1(hash), latin1(ready.ascii));
    }
    // Not canonical, not answered.
    expect(await store.readyBlockJson(new Uint8Array(32).fill(0xab))).toBeUndefined();
    return out;
  } finally {
    await store.close();
  }
}

test('no BlockJson rows at import; rows of an earlier release change no answer and db convert deletes them', async () => {
  const c = await datadirCopy('fixtures');
  try {
    let db = await openDb(c.dir, { create: false });
    try {
      expect(await db.keys({ ...range, limit: 1 }).all()).toEqual([]);
    } finally {
      await db.close();
    }
    const fresh = await answers(c.dir);
    expect(fresh.size).toBeGreaterThan(10);
    // Rows as earlier releases wrote them: the whole form, and the older one (every third block).
    db = await openDb(c.dir, { create: false });
    try {
      const batch = db.batch();
      let i = 0;
      for (const [hash, text] of fresh) {
        const key = tables.blockJson.key(Buffer.from(hash, 'latin1'));
        const older = i++ % 3 === 0;
        const row = older
          ? Buffer.from(text.replace(/"transactions":\[[^\]]*\]/, '"transactions":[]'), 'latin1')
          : Buffer.concat([Uint8Array.of(0x01), Buffer.from(text, 'latin1')]);
        batch.put(key, row);
      }
      await batch.write();
    } finally {
      await db.close();
    }
    expect(await answers(c.dir)).toEqual(fresh);
    const r = await convertDatadir(c.dir);
    expect(r.blockJsonRows).toBe(fresh.size);
    expect((await convertDatadir(c.dir)).blockJsonRows).toBe(0);
    db = await openDb(c.dir, { create: false });
    try {
      expect(await db.keys({ ...range, limit: 1 }).all()).toEqual([]);
    } finally {
      await db.close();
    }
    expect(await answers(c.dir)).toEqual(fresh);
  } finally {
    await c.cleanup();
  }
}, 120_000);
