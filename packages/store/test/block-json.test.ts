// Hashes-only block answers are written from the block's rows (reader.ts loadReadyJson); the
// import writes no BlockJson rows. A datadir of an earlier release that holds them (the whole
// form, 0x01 ++ the answer, or the older one without the tx hashes) is answered the same bytes
// (the rows are not read), and `db convert` deletes them. rpc's block-text test compares the
// answers with the formatter and with the rows an earlier release wrote, block by block.
// BlockTxHashes rows carry the block's extras (size, uncle hashes, withdrawals, total difficulty,
// header) so the answer is one read; rows of earlier releases (the hashes alone; extras without
// the header and total difficulty) are answered from the body and the header's and total
// difficulty's rows, the same bytes, and `db convert` rewrites them with the extras.
import { datadirCopy } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { openDb } from '../src/db.js';
import { RLP } from '@ethereumjs/rlp';
import { bytesEqual, keccak256 } from '@chainnode/core';
import {
  Prefix,
  blockExtras,
  decodeBlockExtras,
  readBodySync,
  splitBlockTxHashes,
  tables,
} from '../src/schema/index.js';
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

/**
 * Every log with its block's hash, timestamp and transaction hash, which getLogs takes from the
 * BlockTxHashes row's extras (or, for a row without the header, from the header's row): the whole
 * chain in one query through a fresh store, each block's context read once.
 */
async function logAnswers(dir: string): Promise<Map<string, string>> {
  const store = await LevelChainStore.open(dir);
  try {
    const out = new Map<string, string>();
    const head = (await store.head()).number;
    const all = await store.logs(
      { fromBlock: 0n, toBlock: head, addresses: [], topics: [] },
      { limit: 1_000_000, deadline: Date.now() + 60_000 },
    );
    if (all.kind !== 'ok') throw new Error("the fixture chain's logs over the cap");
    for (const l of all.logs)
      out.set(
        `${l.blockNumber}/${l.logIndex}`,
        `${latin1(l.blockHash)},${latin1(l.transactionHash)},${l.blockTimestamp}`,
      );
    expect(all.logs.length).toBeGreaterThan(1_000);
    return out;
  } finally {
    await store.close();
  }
}

/** The numbers of the BlockTxHashes rows of an earlier release (no extras, or extras without the header). */
async function hashesOnlyRows(dir: string): Promise<bigint[]> {
  const db = await openDb(dir, { create: false });
  try {
    const out: bigint[] = [];
    for await (const [n, raw] of tables.blockTxHashes.range(db)) {
      const value = tables.blockTxHashes.getRawSync(db, n) as Uint8Array;
      expect(splitBlockTxHashes(value).hashes.length).toBe(raw.hashes.length * 32);
      if (raw.extras === undefined || decodeBlockExtras(raw.extras).header === undefined) out.push(n);
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
    const freshLogs = await logAnswers(c.dir);
    // Rows as earlier releases wrote them: the whole form, and the older one (every third block);
    // BlockTxHashes of the hashes alone (n % 3 = 0), with the extras of the release before
    // (n % 3 = 1: no header, no total difficulty), as this release writes them (n % 3 = 2).
    db = await openDb(c.dir, { create: false });
    let rewritten = 0;
    // What the import wrote that is not this release's form, collected and asserted once: a
    // matcher per block walked each row's bytes one by one, and took 40% of this suite's CPU.
    const wrong: string[] = [];
    try {
      const batch = db.batch();
      for (let n = 0n; n < BigInt(fresh.size); n++) {
        const hash = tables.canonical.getSync(db, n) as Uint8Array;
        const row = tables.blockTxHashes.getSync(db, n) as { hashes: Uint8Array[]; extras: Uint8Array };
        const body = readBodySync(db, hash);
        if (body === undefined) throw new Error(`block ${n}: no body`);
        const header = tables.headers.getSync(db, hash) as Uint8Array;
        const td = tables.totalDifficulty.getSync(db, hash) as bigint;
        // What the import wrote is this release's form.
        const held = decodeBlockExtras(row.extras).header;
        const fields = Object.entries(held ?? {}).filter(([, v]) => v !== undefined);
        if (
          held === undefined ||
          fields.map(([k]) => k).join() !== 'rlp,totalDifficulty' ||
          !bytesEqual(held.rlp, header) ||
          held.totalDifficulty !== td
        )
          wrong.push(
            `block ${n}: the extras' header ${JSON.stringify(fields.map(([k, v]) => [k, v instanceof Uint8Array ? Buffer.from(v).toString('hex') : String(v)]))}`,
          );
        if (!bytesEqual(row.extras, blockExtras(body, header, td))) wrong.push(`block ${n}: extras`);
        const form = n % 3n;
        if (form !== 2n) rewritten++;
        const uncles = body.uncles.map((u) => keccak256(u));
        const earlier = RLP.encode(
          body.withdrawals === undefined ? [body.size, uncles] : [body.size, uncles, body.withdrawals],
        );
        const hashes = row.hashes;
        tables.blockTxHashes.put(
          batch,
          n,
          form === 0n ? { hashes } : { hashes, extras: form === 1n ? earlier : row.extras },
        );
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
    expect(wrong.slice(0, 20)).toEqual([]);
    expect(await answers(c.dir)).toEqual(fresh);
    expect(await logAnswers(c.dir)).toEqual(freshLogs);
    const r = await convertDatadir(c.dir);
    expect(r.blockJsonRows).toBe(fresh.size);
    expect(r.blockTxHashesRows).toBe(rewritten);
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
    expect(await logAnswers(c.dir)).toEqual(freshLogs);
  } finally {
    await c.cleanup();
  }
}, 120_000);
