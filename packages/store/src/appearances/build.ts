// The address-appearance index of a datadir written before it existed (`db convert`): every
// block's appearances posted again from its rows (its transactions, senders and logs), as the
// import posts them, in batches that record how far they got (Meta.appearancesBuilt: the next
// block), so a crash resumes where it stopped; Meta.appearancesFrom (0: complete) last. The rows
// written since the index existed are dropped first and written again with the rest, so that each
// posting list is laid out exactly as an import lays it out.
import type { Db } from '../db.js';
import { readBlockLogs } from '../logs/index.js';
import { MetaKey, Prefix, readBodySync, tables, u64Codec } from '../schema/index.js';
import { GroupBatch } from '../writer/group-batch.js';
import { ValueTable } from '../writer/value-table.js';
import { appearancesFrom } from './query.js';
import { postAppearances } from './stage.js';

/** Blocks per batch. */
const BATCH_BLOCKS = 256;

/** Open posting chunks kept between batches. */
const CACHE_BYTES = 64 * 2 ** 20;

/** Builds the index of blocks [0, head] unless it is complete; the blocks posted now. */
export async function buildAppearances(db: Db, head: bigint, onProgress?: (line: string) => void): Promise<number> {
  if ((await appearancesFrom(db)) === 0n) return 0;
  const built = await tables.meta.get(db, MetaKey.AppearancesBuilt);
  let n = built === undefined ? 0n : u64Codec.decode(built);
  if (built === undefined) {
    await db.clear({ gte: Uint8Array.of(Prefix.Appearances), lt: Uint8Array.of(Prefix.Appearances + 1) });
    await db.put(tables.meta.key(MetaKey.AppearancesBuilt), u64Codec.encode(0n));
  }
  const values = new ValueTable(CACHE_BYTES, n === 0n, Prefix.Appearances);
  const alloc = (len: number): Uint8Array => new Uint8Array(len);
  let flush = 0;
  let blocks = 0;
  while (n <= head) {
    const ops = new GroupBatch(db);
    const last = n + BigInt(BATCH_BLOCKS) - 1n < head ? n + BigInt(BATCH_BLOCKS) - 1n : head;
    for (; n <= last; n++, blocks++) {
      const hash = await tables.canonical.get(db, n);
      const range = await tables.blockLogs.get(db, n);
      if (hash === undefined || range === undefined) throw new Error(`appearances: block ${n} rows missing`);
      const body = readBodySync(db, hash);
      const senders = tables.senders.getSync(db, hash);
      const logs: { address: Uint8Array }[][] = [];
      for (const l of await readBlockLogs(db, n, range)) (logs[l.txIndex] ??= []).push(l);
      postAppearances(values, { number: n, transactions: body?.transactions ?? [], senders: senders ?? [], logs });
    }
    await values.stage(db, ops, ++flush, alloc);
    // The progress row last, through putLast (a native batch is written only with one such put).
    if (last === head) {
      ops.del(tables.meta.key(MetaKey.AppearancesBuilt));
      ops.putLast(tables.meta.key(MetaKey.AppearancesFrom), u64Codec.encode(0n));
    } else ops.putLast(tables.meta.key(MetaKey.AppearancesBuilt), u64Codec.encode(last + 1n));
    await ops.write();
    onProgress?.(`address appearances: block ${last} of ${head}`);
  }
  return blocks;
}
