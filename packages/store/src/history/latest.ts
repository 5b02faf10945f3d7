// The latest change of every state history key (schema.ts, StateLatest): the number and value of
// its greatest AccountHistory / StorageHistory row and the numbers of its LATEST_CHANGES changes
// before it, so a read at or above the oldest of them is point reads instead of a reverse seek (an
// asynchronous LevelDB iterator). Written beside the rows in the
// block's batch (one per key per group: the group's changes before the stored row's), set back by a
// rewind to the changes at or below its ancestor, and filled for a datadir written before the table existed by
// `db convert` (fillLatest).
import type { Db } from '../db.js';
import { MetaKey, Prefix, readVarint, tables, varintLength, writeVarint } from '../schema/index.js';
import type { Alloc } from '../schema/index.js';
import type { HistoryBatch } from './batch.js';
import { KeyIndexFill, dropIndexRows, pendingId, restoreIndexRows, stageIndexRows } from './change-index.js';

/** Bytes of a history key's number (its last 8 bytes). */
const NUMBER = 8;

/**
 * The change numbers a StateLatest row keeps below its latest change: a read at a block between two
 * of the key's last LATEST_CHANGES + 1 changes is a point read of the history row of the change at
 * or below it. Measured on the mainnet-shaped chain's token balances read between two transfers
 * (bench/cold.ts): a list of 8 answers 58% of such reads, 16: 81%, 32: 93%, 64: 98%. A change
 * costs a byte in the row of a key changed every few blocks.
 */
export const LATEST_CHANGES = 32;

/** The StateLatest key of the history key `historyKey` (prefix ++ path ++ number(8)), from `alloc`. */
function latestKey(historyKey: Uint8Array, alloc: Alloc): Uint8Array {
  const key = alloc(historyKey.length - NUMBER);
  key[0] = Prefix.StateLatest;
  key.set(historyKey.subarray(1, historyKey.length - NUMBER), 1);
  return key;
}

/** The number of the history key `historyKey` (its last 8 bytes). */
function numberOf(historyKey: Uint8Array): number {
  return Number(new DataView(historyKey.buffer, historyKey.byteOffset).getBigUint64(historyKey.length - NUMBER));
}

/**
 * A StateLatest row decoded: the key's latest change `number`, its `value` (empty: a tombstone),
 * and the numbers of its earlier changes, newest first, at most LATEST_CHANGES: all of them when
 * fewer (so a block below the last one listed is below the key's first change).
 */
export interface LatestRow {
  number: number;
  changes: number[];
  value: Uint8Array;
}

/** A LatestRow's bytes: number(8) ++ count(1) ++ the changes as varint gaps (each from the previous, newest first) ++ value. */
export function encodeLatest(row: LatestRow, alloc: Alloc): Uint8Array {
  const gaps: number[] = [];
  let prev = row.number;
  let size = NUMBER + 1 + row.value.length;
  for (const c of row.changes) {
    gaps.push(prev - c);
    size += varintLength(prev - c);
    prev = c;
  }
  const out = alloc(size);
  new DataView(out.buffer, out.byteOffset, out.byteLength).setBigUint64(0, BigInt(row.number));
  out[NUMBER] = gaps.length;
  let at = NUMBER + 1;
  for (const g of gaps) at = writeVarint(g, out, at);
  out.set(row.value, at);
  return out;
}

/** The StateLatest row `raw` (encodeLatest) decoded; its value a view of `raw`. */
export function decodeLatest(raw: Uint8Array): LatestRow {
  const number = Number(new DataView(raw.buffer, raw.byteOffset, raw.byteLength).getBigUint64(0));
  const count = raw[NUMBER] as number;
  const changes: number[] = [];
  let at = NUMBER + 1;
  let prev = number;
  for (let i = 0; i < count; i++) {
    const gap = readVarint(raw, at, 'state latest row');
    at = gap.end;
    prev -= gap.value;
    changes.push(prev);
  }
  return { number, changes, value: raw.subarray(at) };
}

/** The row of a key whose changes are `numbers` (ascending, the last one's value `value`). */
function rowOf(numbers: number[], value: Uint8Array): LatestRow {
  const last = numbers.length - 1;
  const changes: number[] = [];
  for (let i = last - 1; i >= 0 && changes.length < LATEST_CHANGES; i--) changes.push(numbers[i] as number);
  return { number: numbers[last] as number, changes, value };
}

/**
 * StateLatest rows a rewind staged in a group not yet written (latin1 of the key -> the row, null:
 * deleted): what the group's later blocks build on instead of the stored row.
 */
export type PendingLatest = Map<string, Uint8Array | null>;

/**
 * The keys a group of blocks changed (put) or a rewind removed rows of (del), each once: the
 * StateLatest rows to write at the group's flush.
 */
export class LatestRows {
  private readonly rows = new Map<string, { key: Uint8Array; numbers: number[]; value: Uint8Array }>();
  constructor(private readonly alloc: Alloc) {}

  /** The history row `historyKey` -> `value` was staged (blocks in ascending order: the last note wins). */
  note(historyKey: Uint8Array, value: Uint8Array): void {
    const key = latestKey(historyKey, this.alloc);
    const id = pendingId(key);
    const row = this.rows.get(id);
    if (row === undefined) this.rows.set(id, { key, numbers: [numberOf(historyKey)], value });
    else {
      row.numbers.push(numberOf(historyKey));
      row.value = value;
    }
  }

  get size(): number {
    return this.rows.size;
  }

  /**
   * Stages the noted keys' latest rows (after a group's puts): the group's changes before the
   * key's stored row (`pending`'s, when a rewind in the group set it back, else `db`'s, which
   * holds every earlier group).
   */
  stage(batch: HistoryBatch, db: Db, pending: PendingLatest): void {
    // Rows a rewind in this group staged (rarely any) before the stored ones.
    const read = (key: Uint8Array): Uint8Array | null | undefined => {
      if (pending.size === 0) return db.getSync(key);
      const id = pendingId(key);
      return pending.has(id) ? pending.get(id) : db.getSync(key);
    };
    for (const [id, { key, numbers, value }] of this.rows) {
      const stored = pending.has(id) ? pending.get(id) : db.getSync(key);
      const fresh = numbers.slice();
      // Whether `numbers` becomes every change the key has had (StateLatest lists all when fewer).
      let whole = true;
      if (stored != null) {
        const before = decodeLatest(stored);
        numbers.unshift(...before.changes.slice(0, LATEST_CHANGES).reverse(), before.number);
        whole = before.changes.length < LATEST_CHANGES;
      }
      batch.put(key, encodeLatest(rowOf(numbers, value), this.alloc));
      // More changes than the row lists before its latest: the ones it drops are found through the
      // index. A key is indexed from the group its changes first outnumber the list, when the row
      // still lists all of them (`whole`), and every group after.
      if (numbers.length > LATEST_CHANGES)
        stageIndexRows(batch, read, key.subarray(1), numbers, whole, fresh, this.alloc);
    }
    this.rows.clear();
  }

  /**
   * Stages the noted keys' latest rows as the history's first changes: no stored row is read or
   * merged (a first change set written again after a crash writes the same rows, not a second
   * change at the same block).
   */
  stageFirst(batch: HistoryBatch): void {
    for (const { key, numbers, value } of this.rows.values())
      batch.put(key, encodeLatest(rowOf(numbers, value), this.alloc));
    this.rows.clear();
  }

  /**
   * Stages, for every noted key (a rewind to `ancestor` deletes its rows above it), its row as of
   * `ancestor` from its history rows at or below it in `db` (not yet changed by the batch), or the
   * deletion of its latest row when it has none; each also into `pending`.
   */
  async restore(db: Db, batch: HistoryBatch, ancestor: bigint, pending: PendingLatest): Promise<void> {
    const read = (key: Uint8Array): Uint8Array | null | undefined => {
      const id = pendingId(key);
      return pending.has(id) ? pending.get(id) : db.getSync(key);
    };
    for (const [id, { key, numbers: removed }] of this.rows) {
      const path = key.subarray(1);
      restoreIndexRows(batch, read, pending, path, Number(ancestor), removed, this.alloc);
      const table = path.length === 32 ? tables.accountHistory : tables.storageHistory;
      const rows = await db
        .iterator({
          gte: table.key({ path, number: 0n }),
          lte: table.key({ path, number: ancestor }),
          reverse: true,
          limit: LATEST_CHANGES + 1,
        })
        .all();
      const numbers = rows.map(([k]) => numberOf(k)).reverse();
      // No more changes left than the row lists: no index rows (as for a key never indexed).
      if (numbers.length <= LATEST_CHANGES) dropIndexRows(batch, pending, path, numbers, this.alloc);
      if (rows.length === 0) {
        batch.del(key);
        pending.set(id, null);
        continue;
      }
      const row = encodeLatest(rowOf(numbers, (rows[0] as [Uint8Array, Uint8Array])[1]), (n) => new Uint8Array(n));
      batch.put(key, row);
      pending.set(id, row);
    }
    this.rows.clear();
  }
}

/** Rows per batch of fillLatest. */
const FILL_BATCH = 20_000;

/**
 * Writes the StateLatest row of every history key from the AccountHistory and StorageHistory rows,
 * and the HistoryIndex rows of every key with more changes than the row lists
 * (one forward scan of each; the table cleared first, so no row of an earlier format or of a key
 * without history stays), then Meta.stateLatest (and drops the earlier format's flag).
 * Idempotent: an interrupted fill runs again. Returns the rows written.
 */
export async function fillLatest(db: Db): Promise<number> {
  await db.clear({ gte: Uint8Array.of(Prefix.StateLatest), lt: Uint8Array.of(Prefix.StateLatest + 1) });
  await db.clear({ gte: Uint8Array.of(Prefix.HistoryIndex), lt: Uint8Array.of(Prefix.HistoryIndex + 1) });
  let written = 0;
  const alloc = (n: number): Uint8Array => new Uint8Array(n);
  for (const prefix of [Prefix.AccountHistory, Prefix.StorageHistory]) {
    let batch = db.batch();
    let pending = 0;
    let last: [Uint8Array, Uint8Array] | undefined;
    // The key's last LATEST_CHANGES + 1 changes (its row lists them) and its index rows.
    let numbers: number[] = [];
    let index: KeyIndexFill | undefined;
    const flushRow = (): void => {
      if (last === undefined) return;
      batch.put(latestKey(last[0], alloc), encodeLatest(rowOf(numbers, last[1]), alloc));
      pending += 1 + (index?.end(batch) ?? 0);
      written++;
    };
    for await (const [k, v] of db.iterator({ gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) })) {
      if (last !== undefined && !samePath(last[0], k)) {
        flushRow();
        numbers = [];
        index = undefined;
        if (pending >= FILL_BATCH) {
          await batch.write();
          batch = db.batch();
          pending = 0;
        }
      }
      index ??= new KeyIndexFill(k.subarray(1, k.length - NUMBER), LATEST_CHANGES, alloc);
      const number = numberOf(k);
      numbers.push(number);
      if (numbers.length > LATEST_CHANGES + 1) numbers.shift();
      pending += index.add(batch, number);
      last = [k, v];
    }
    flushRow();
    await batch.write();
  }
  const batch = db.batch();
  tables.meta.put(batch, MetaKey.StateLatest, new Uint8Array(0));
  tables.meta.put(batch, MetaKey.HistoryIndex, new Uint8Array(0));
  batch.del(tables.meta.key(MetaKey.StateLatestUnlisted));
  await batch.write();
  return written;
}

/** Whether two history keys (same prefix) name the same path. */
function samePath(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = a.length - NUMBER - 1; i >= 1; i--) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether the datadir's StateLatest rows are complete and of this format (Meta.stateLatest). */
export async function hasLatest(db: Db): Promise<boolean> {
  return (await tables.meta.get(db, MetaKey.StateLatest)) !== undefined;
}

/**
 * Whether every key StateLatest does not list whole has its HistoryIndex rows from its first change
 * (Meta.historyIndex: written with genesis, or by `db convert`). Without, the writer indexes keys
 * from its first write on and reads fall back to the seek below that.
 */
export async function hasHistoryIndex(db: Db): Promise<boolean> {
  return (await tables.meta.get(db, MetaKey.HistoryIndex)) !== undefined;
}
