// The state history's index rows (history/change-index.ts) for keys that change more often than
// their StateLatest row lists: a few keys changed in random groups of blocks, some groups rewound
// (a reorg: the removed changes taken out again, the new branch's changes staged in the same
// group), then point reads at every block answer what the greatest remaining change at or below
// it holds, brute force over the changes the test kept itself, or leave the read to the seek; and
// a datadir-wide fill writes the rows the groups wrote.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb } from '../src/db.js';
import type { Db } from '../src/db.js';
import { decodeIndexRow } from '../src/history/change-index.js';
import { LATEST_CHANGES, LatestRows, fillLatest } from '../src/history/latest.js';
import { pointRowAtCanonical } from '../src/history/read.js';
import { Prefix, tables } from '../src/schema/index.js';
import { bytes, hex, rng } from './random.js';

const alloc = (n: number): Uint8Array => new Uint8Array(n);
const hashOf = (n: number): Uint8Array => {
  const h = new Uint8Array(32);
  new DataView(h.buffer).setUint32(28, n);
  return h;
};

/** All index rows of the datadir, as text (key -> decoded row). */
async function indexRows(db: Db): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const [k, v] of db.iterator({
    gte: Uint8Array.of(Prefix.HistoryIndex),
    lt: Uint8Array.of(Prefix.HistoryIndex + 1),
  })) {
    const range = new DataView(k.buffer, k.byteOffset, k.byteLength).getUint32(k.length - 4);
    out.set(hex(k), JSON.stringify(decodeIndexRow(range, v)));
  }
  return out;
}

describe('state history index rows', () => {
  let dir: string;
  let db: Db;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'store-history-index-'));
    db = await openDb(dir, { create: true });
  });
  afterEach(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('point reads below the listed changes equal a brute-force scan, across rewinds; the fill writes the same rows', async () => {
    const r = rng(77);
    // Keys: a hot account (changes in most blocks), a slot changed every few blocks, one changed
    // in bursts with long gaps (rows several ranges apart), one that stays under the list's length.
    const keys = [
      { table: tables.accountHistory, path: bytes(r, 32), every: 1 },
      { table: tables.storageHistory, path: bytes(r, 64), every: 6 },
      { table: tables.storageHistory, path: bytes(r, 64), every: 0 },
      { table: tables.accountHistory, path: bytes(r, 32), every: 200 },
    ];
    const changes = keys.map(() => new Map<number, Uint8Array>());
    const head = 4000;
    const pending = new Map<string, Uint8Array | null>();
    let number = 0;
    let rewinds = 0;
    const changesAt = (n: number): boolean[] =>
      keys.map((k) => (k.every === 0 ? n % 1000 < 40 && r(3) === 0 : r(k.every) === 0));
    while (number < head) {
      const batch = db.batch();
      // A rewind of up to 300 blocks in one group in ten, then the new branch's blocks.
      if (number > 600 && r(10) === 0) {
        const ancestor = number - 1 - r(300);
        const latest = new LatestRows(alloc);
        keys.forEach((k, i) => {
          const kept = changes[i] as Map<number, Uint8Array>;
          for (const n of [...kept.keys()].filter((n) => n > ancestor).sort((a, b) => a - b)) {
            const key = k.table.key({ path: k.path, number: BigInt(n) });
            batch.del(key);
            latest.note(key, new Uint8Array(0));
            kept.delete(n);
          }
        });
        await latest.restore(db, batch, BigInt(ancestor), pending);
        number = ancestor;
        rewinds++;
      }
      const latest = new LatestRows(alloc);
      const blocks = 1 + r(40);
      for (let b = 0; b < blocks && number < head; b++) {
        number++;
        batch.put(tables.canonical.key(BigInt(number)), hashOf(number));
        changesAt(number).forEach((changed, i) => {
          if (!changed) return;
          const k = keys[i] as (typeof keys)[number];
          const value = r(10) === 0 ? new Uint8Array(0) : bytes(r, 1 + r(8));
          const key = k.table.key({ path: k.path, number: BigInt(number) });
          batch.put(key, value);
          latest.note(key, value);
          (changes[i] as Map<number, Uint8Array>).set(number, value);
        });
      }
      latest.stage(batch, db, pending);
      pending.clear();
      await batch.write();
    }
    expect(rewinds).toBeGreaterThan(2);
    for (const [i] of keys.entries()) expect((changes[i] as Map<number, Uint8Array>).size).toBeGreaterThan(12);
    expect((changes[0] as Map<number, Uint8Array>).size).toBeGreaterThan(LATEST_CHANGES * 20);

    const check = () => {
      let answered = 0;
      let belowList = 0;
      const wrong: string[] = [];
      const sorted = changes.map((m) => [...m.entries()].sort((a, b) => a[0] - b[0]));
      // Per key, how many of its changes are at or below n (n ascending).
      const upTo = keys.map(() => 0);
      for (let n = 0; n <= head; n += 1) {
        for (const [i, k] of keys.entries()) {
          const kept = sorted[i] as [number, Uint8Array][];
          while ((upTo[i] as number) < kept.length && (kept[upTo[i] as number] as [number, Uint8Array])[0] <= n)
            upTo[i] = (upTo[i] as number) + 1;
          const below = { length: upTo[i] as number };
          const at = kept[below.length - 1];
          const want = at === undefined || at[1].length === 0 ? null : hex(at[1]);
          const got = pointRowAtCanonical(db, { number: BigInt(n), hash: hashOf(n) }, k.table, k.path);
          if (got === undefined) continue;
          answered++;
          // Below the listed changes, and not at a change of the key's own block (the row at the
          // block's number, which the reads try before seeking): the index's.
          if (kept.length - below.length > LATEST_CHANGES && at?.[0] !== n) belowList++;
          if ((got === null ? null : hex(got)) !== want)
            wrong.push(`key ${i} at ${n}: ${got && hex(got)}, want ${want}`);
        }
      }
      expect(wrong.slice(0, 5)).toEqual([]);
      return { answered, belowList };
    };
    const written = check();
    // Nearly every read is a point read; the ones below the list went through the index.
    expect(written.answered).toBeGreaterThan((head + 1) * keys.length * 0.95);
    expect(written.belowList).toBeGreaterThan(head / 2);

    // Without the index rows those reads are the seek's again (answered: undefined), never wrong.
    const rows = await indexRows(db);
    expect(rows.size).toBeGreaterThan(head / 256);
    // Every row belongs to a key with more changes than its StateLatest row lists.
    const indexed = new Set(
      keys.filter((_, i) => (changes[i] as Map<number, Uint8Array>).size > LATEST_CHANGES).map((k) => hex(k.path)),
    );
    for (const k of rows.keys()) expect(indexed.has(k.slice(2, k.length - 8))).toBe(true);
    await db.clear({ gte: Uint8Array.of(Prefix.HistoryIndex), lt: Uint8Array.of(Prefix.HistoryIndex + 1) });
    const without = check();
    expect(without.belowList).toBe(0);

    // `db convert`'s fill: the rows the groups and rewinds left, byte for byte.
    await fillLatest(db);
    expect(await indexRows(db)).toEqual(rows);
    expect(check().belowList).toBe(written.belowList);
  });
});
