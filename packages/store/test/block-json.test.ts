// Hashes-only block answers are written from the block's rows (reader.ts loadReadyJson); the
// import writes no BlockJson rows. A datadir of an earlier release that holds them (the whole
// form, 0x01 ++ the answer, or the older one without the tx hashes) is answered the same bytes
// (the rows are not read), and `db convert` deletes them. rpc's block-text test compares the
// answers with the formatter and with the rows an earlier release wrote, block by block.
// BlockTxHashes rows carry the block's extras (size, uncle hashes, withdrawals) so the answer
// reads no body; a row of an earlier release (the hashes alone) is answered from the body, the
// same bytes, and `db convert` rewrites it with the extras.
import { datadirCopy } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { openDb } from '../src/db.js';
import { Prefix, blockExtras, splitBlockTxHashes, tables } from '../src/schema/schema.js';
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

/** The numbers of the BlockTxHashes rows that hold no extras (rows of an earlier release). */
async function hashesOnlyRows(dir: string): Promise<bigint[]> {
  const db = await openDb(dir, { create: false });
  try {
    const out: bigint[] = [];
    for await (const [n, raw] of tables.blockTxHashes.range(db)) {
      const value = tables.blockTxHashes.getRawSync(db, n) as Uint8Array;
      expect(splitBlockTxHashes(value).hashes.length).toBe(raw.hashes.length * 32);
      if (raw.extras === undefined) out.push(n);
    }
    return out;
  } finally {
    await db.close();
  }
}

test('no BlockJson rows at import; rows of an earlier release (BlockJson, BlockTxHashes of the hashes alone) change no answer and db convert deletes or rewrites them', async () => {
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
    // Rows as earlier releases wrote them: the whole form, and the older one (every third block);
    // BlockTxHashes of the hashes alone at even numbers, with the extras at odd ones.
    db = await openDb(c.dir, { create: false });
    let hashesOnly = 0;
    try {
      const batch = db.batch();
      for (let n = 0n; n < BigInt(fresh.size); n++) {
        const hash = tables.canonical.getSync(db, n) as Uint8Array;
        const hashes = (tables.blockTxHashes.getSync(db, n) as { hashes: Uint8Array[] }).hashes;
        const body = tables.bodies.getSync(db, hash);
        if (body === undefined) throw new Error(`block ${n}: no body`);
        const old = n % 2n === 0n;
        if (old) hashesOnly++;
        tables.blockTxHashes.put(batch, n, old ? { hashes } : { hashes, extras: blockExtras(body) });
      }
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
    expect(r.blockTxHashesRows).toBe(hashesOnly);
    const again = await convertDatadir(c.dir);
    expect([again.blockJsonRows, again.blockTxHashesRows]).toEqual([0, 0]);
    expect(await hashesOnlyRows(c.dir)).toEqual([]);
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
