// The latest change of every state history key (schema.ts, StateLatest): the number and value of
// its greatest AccountHistory / StorageHistory row, so a read at or above that number is one point
// read instead of a reverse seek (an asynchronous LevelDB iterator). Written beside the rows in the
// block's batch (one per key per group: the group's last change), set back by a rewind to the
// change at or below its ancestor, and filled for a datadir written before the table existed by
// `db convert` (fillLatest).
import type { Db } from '../db.js';
import { MetaKey, Prefix, tables } from '../schema/index.js';
import type { Alloc } from '../schema/index.js';
import type { HistoryBatch } from './write.js';

/** Bytes of a history key's number (its last 8 bytes). */
const NUMBER = 8;

/** The StateLatest key of the history key `historyKey` (prefix ++ path ++ number(8)), from `alloc`. */
function latestKey(historyKey: Uint8Array, alloc: Alloc): Uint8Array {
  const key = alloc(historyKey.length - NUMBER);
  key[0] = Prefix.StateLatest;
  key.set(historyKey.subarray(1, historyKey.length - NUMBER), 1);
  return key;
}

/** The StateLatest value of the history row `historyKey` -> `value`: its number(8) ++ value, from `alloc`. */
function latestValue(historyKey: Uint8Array, value: Uint8Array, alloc: Alloc): Uint8Array {
  const out = alloc(NUMBER + value.length);
  out.set(historyKey.subarray(historyKey.length - NUMBER), 0);
  out.set(value, NUMBER);
  return out;
}

const text = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');

/**
 * The keys a group of blocks changed (put) or a rewind removed rows of (del), each once: the
 * StateLatest rows to write at the group's flush.
 */
export class LatestRows {
  private readonly rows = new Map<string, { key: Uint8Array; value: Uint8Array }>();
  constructor(private readonly alloc: Alloc) {}

  /** The history row `historyKey` -> `value` was staged (blocks in ascending order: the last note wins). */
  note(historyKey: Uint8Array, value: Uint8Array): void {
    const key = latestKey(historyKey, this.alloc);
    this.rows.set(text(key), { key, value: latestValue(historyKey, value, this.alloc) });
  }

  get size(): number {
    return this.rows.size;
  }

  /** Stages the noted keys' latest rows (after a group's puts). */
  stage(batch: HistoryBatch): void {
    for (const { key, value } of this.rows.values()) batch.put(key, value);
    this.rows.clear();
  }

  /**
   * Stages, for every noted key (a rewind to `ancestor` deletes its rows above it), its row at or
   * below `ancestor` as read from `db` (not yet changed by the batch), or the deletion of its
   * latest row when it has none.
   */
  async restore(db: Db, batch: HistoryBatch, ancestor: bigint): Promise<void> {
    for (const { key } of this.rows.values()) {
      const path = key.subarray(1);
      const table = path.length === 32 ? tables.accountHistory : tables.storageHistory;
      const it = db.iterator({
        gte: table.key({ path, number: 0n }),
        lte: table.key({ path, number: ancestor }),
        reverse: true,
        limit: 1,
      });
      try {
        const row = await it.next();
        if (row === undefined) batch.del(key);
        else
          batch.put(
            key,
            latestValue(row[0], row[1], (n) => new Uint8Array(n)),
          );
      } finally {
        await it.close();
      }
    }
    this.rows.clear();
  }
}

/** Rows per batch of fillLatest. */
const FILL_BATCH = 20_000;

/**
 * Writes the StateLatest row of every history key from the AccountHistory and StorageHistory rows
 * (one forward scan of each), then Meta.stateLatest. Idempotent: an interrupted fill runs again.
 * Returns the rows written.
 */
export async function fillLatest(db: Db): Promise<number> {
  let written = 0;
  for (const prefix of [Prefix.AccountHistory, Prefix.StorageHistory]) {
    let batch = db.batch();
    let pending = 0;
    let last: [Uint8Array, Uint8Array] | undefined;
    const flushRow = (): void => {
      if (last === undefined) return;
      const alloc = (n: number): Uint8Array => new Uint8Array(n);
      batch.put(latestKey(last[0], alloc), latestValue(last[0], last[1], alloc));
      pending++;
      written++;
    };
    for await (const [k, v] of db.iterator({ gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) })) {
      if (last !== undefined && !samePath(last[0], k)) {
        flushRow();
        if (pending >= FILL_BATCH) {
          await batch.write();
          batch = db.batch();
          pending = 0;
        }
      }
      last = [k, v];
    }
    flushRow();
    await batch.write();
  }
  const batch = db.batch();
  tables.meta.put(batch, MetaKey.StateLatest, new Uint8Array(0));
  await batch.write();
  return written;
}

/** Whether two history keys (same prefix) name the same path. */
function samePath(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = a.length - NUMBER - 1; i >= 1; i--) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether the datadir's StateLatest rows are complete (Meta.stateLatest). */
export async function hasLatest(db: Db): Promise<boolean> {
  return (await tables.meta.get(db, MetaKey.StateLatest)) !== undefined;
}
