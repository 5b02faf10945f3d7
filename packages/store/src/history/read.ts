// The read side of the flat state history: the account or slot at block N is the row of the
// greatest block number <= N under its hashed key (schema.ts, AccountHistory / StorageHistory),
// found by one reverse seek. The rows describe the canonical chain only: a read for a block a
// reorg has removed is refused (readAtCanonical), and its caller walks the block's state trie.
// Where the datadir keeps each key's latest change and the ones before it (StateLatest, latest.ts),
// most reads are point reads instead (pointRowAtCanonical): synchronous, a few µs each, where the seek is an
// asynchronous iterator on LevelDB's thread pool.
import { KECCAK256_RLP } from '@ethereumjs/util';
import { bytesEqual, withProperty } from '@chainnode/core';
import type { BlockRef } from '@chainnode/core';
import type { Db } from '../db.js';
import { keccak256 } from '../keccak.js';
import { MetaKey, Prefix, tables } from '../schema/index.js';
import type { HistoryKey, KvRange, KvRead, Table } from '../schema/index.js';
import { accountFields } from '../trie/index.js';
import { indexedChangeAtOrBelow } from './change-index.js';
import { LATEST_CHANGES, decodeLatest } from './latest.js';
import type { AccountFields } from '../trie/index.js';

/** The genesis state root when the datadir keeps state history (Meta.stateHistory), else undefined. */
export async function stateHistoryRoot(db: KvRead): Promise<Uint8Array | undefined> {
  return tables.meta.get(db, MetaKey.StateHistory);
}

/**
 * What a history read needs of the store (a LevelDB, or a snapshot of it: readAtCanonical): a range
 * iterator read one entry at a time. One next() of the raw iterator, not Table.range's async
 * generator around it: the generator's extra turns doubled a cold read's CPU (~230 µs against ~120
 * µs per read on the fixture chain, 2 cores at a load of 5).
 */
export interface HistoryRead {
  iterator(range: KvRange): { next(): Promise<[Uint8Array, Uint8Array] | undefined>; close(): Promise<void> };
}

/** The value of the row of the greatest number <= `number` under `path`; undefined: no row. */
async function latestAtOrBelow(
  db: HistoryRead,
  table: Table<HistoryKey, Uint8Array>,
  path: Uint8Array,
  number: bigint,
): Promise<Uint8Array | undefined> {
  const it = db.iterator({
    gte: table.key({ path, number: 0n }),
    lte: table.key({ path, number }),
    reverse: true,
    limit: 1,
  });
  try {
    return (await it.next())?.[1];
  } finally {
    await it.close();
  }
}

/** The account row (its trie leaf RLP) under keccak(address) `addressKey` after block `number`; null: absent. */
export async function accountRowAt(
  db: HistoryRead,
  number: bigint,
  addressKey: Uint8Array,
): Promise<Uint8Array | null> {
  const raw = await latestAtOrBelow(db, tables.accountHistory, addressKey, number);
  return raw === undefined || raw.length === 0 ? null : raw;
}

/** The slot value (minimal big-endian) under keccak(address) ++ keccak(slot) `path` after block `number`; null: zero. */
export async function slotRowAt(db: HistoryRead, number: bigint, path: Uint8Array): Promise<Uint8Array | null> {
  const raw = await latestAtOrBelow(db, tables.storageHistory, path, number);
  return raw === undefined || raw.length === 0 ? null : raw;
}

/**
 * Runs `read` on a snapshot of `db` in which `block` is the canonical block of its number, so the
 * history rows it reads are that block's chain (the writer puts a block's rows and its canonical
 * entry in one batch, and a rewind deletes both in one batch). Undefined when `block` is not
 * canonical in the snapshot (a reorg removed it since the caller resolved it).
 */
export async function readAtCanonical<T>(
  db: Db,
  block: BlockRef,
  read: (view: HistoryRead) => Promise<T>,
): Promise<T | undefined> {
  const snapshot = db.snapshot();
  try {
    const canonical = db.getSync(tables.canonical.key(block.number), { snapshot });
    if (canonical === undefined || !bytesEqual(canonical, block.hash)) return undefined;
    return await read({ iterator: (range) => db.iterator(withProperty(range, 'snapshot', snapshot)) });
  } finally {
    await snapshot.close();
  }
}

/**
 * The value of the history row of `table` under `path` at the canonical `block` (null: no row, or a
 * tombstone) by point reads, for a datadir whose StateLatest rows are complete: in a snapshot where
 * `block` is canonical, the key's latest row (none: the key never changed; its number <= the
 * block's: its value); else the row of the greatest change it lists <= the block's number (none
 * and the list complete: the key's first change is above the block); else the row of the change
 * its index rows name (change-index.ts); else the key's row at the block's own number. Undefined when none answers (the caller
 * seeks: readAtCanonical) or `block` is not canonical.
 */
export function pointRowAtCanonical(
  db: Db,
  block: BlockRef,
  table: Table<HistoryKey, Uint8Array>,
  path: Uint8Array,
): Uint8Array | null | undefined {
  const snapshot = db.snapshot();
  try {
    const get = (key: Uint8Array): Uint8Array | undefined => db.getSync(key, { snapshot });
    const canonical = get(tables.canonical.key(block.number));
    if (canonical === undefined || !bytesEqual(canonical, block.hash)) return undefined;
    return pointRowAt(get, block.number, table, path);
  } finally {
    snapshot.close().catch(() => undefined);
  }
}

/**
 * pointRowAtCanonical's reads, through `get` (a snapshot in which block `number` is canonical,
 * checked by the caller): the row of `path` at or below `number`; null: none, or a tombstone;
 * undefined: the point reads do not answer.
 */
export function pointRowAt(
  get: (key: Uint8Array) => Uint8Array | undefined,
  number: bigint,
  table: Table<HistoryKey, Uint8Array>,
  path: Uint8Array,
): Uint8Array | null | undefined {
  const latestKey = new Uint8Array(1 + path.length);
  latestKey[0] = Prefix.StateLatest;
  latestKey.set(path, 1);
  const raw = get(latestKey);
  if (raw === undefined) return null;
  const latest = decodeLatest(raw);
  if (latest.number <= number) return latest.value.length === 0 ? null : latest.value;
  let at: number | null | undefined = latest.changes.find((c) => c <= number);
  if (at === undefined && latest.changes.length < LATEST_CHANGES) return null;
  // Below the listed changes: the key's index rows (change-index.ts).
  if (at === undefined) at = indexedChangeAtOrBelow(get, path, Number(number));
  if (at === null) return null;
  const row = get(table.key({ path, number: at === undefined ? number : BigInt(at) }));
  return row === undefined ? undefined : row.length === 0 ? null : row;
}

/** pointRowAtCanonical of an account (keccak(address) `addressKey`): its fields, null when absent. */
export function pointAccountAtCanonical(
  db: Db,
  block: BlockRef,
  addressKey: Uint8Array,
): AccountFields | null | undefined {
  const raw = pointRowAtCanonical(db, block, tables.accountHistory, addressKey);
  return raw == null ? raw : copyFields(accountFields(raw));
}

/** pointRowAtCanonical of a slot (`addressKey`: keccak(address), when known): its 32-byte word (zero when unset). */
export function pointStorageAtCanonical(
  db: Db,
  block: BlockRef,
  address: Uint8Array,
  slot: Uint8Array,
  addressKey?: Uint8Array,
): Uint8Array | undefined {
  const raw = pointRowAtCanonical(db, block, tables.storageHistory, slotPath(address, slot, addressKey));
  return raw === undefined ? undefined : slotWord(raw);
}

function copyFields(a: AccountFields): AccountFields {
  return { nonce: a.nonce, balance: a.balance, storageRoot: a.storageRoot.slice(), codeHash: a.codeHash.slice() };
}

/** keccak(address) ++ keccak(slot): a slot's history path. */
function slotPath(address: Uint8Array, slot: Uint8Array, addressKey = keccak256(address)): Uint8Array {
  if (slot.length !== 32) throw new RangeError(`storage slot: expected 32 bytes, got ${slot.length}`);
  const path = new Uint8Array(64);
  path.set(addressKey, 0);
  path.set(keccak256(slot), 32);
  return path;
}

/** A slot row's value (null: zero) as its 32-byte word. */
function slotWord(raw: Uint8Array | null): Uint8Array {
  const word = new Uint8Array(32);
  if (raw === null) return word;
  if (raw.length > 32) throw new Error('state history: a slot value longer than 32 bytes');
  word.set(raw, 32 - raw.length);
  return word;
}

/** The account `address` after block `number` (null: absent), from the history. */
export async function accountAt(
  db: HistoryRead,
  number: bigint,
  address: Uint8Array,
  addressKey: Uint8Array = keccak256(address),
): Promise<AccountFields | null> {
  const raw = await accountRowAt(db, number, addressKey);
  return raw === null ? null : copyFields(accountFields(raw));
}

/** The storage word `slot` (32 bytes) of `address` after block `number`, 32 bytes (zero when unset), from the history. */
export async function storageAt(
  db: HistoryRead,
  number: bigint,
  address: Uint8Array,
  slot: Uint8Array,
): Promise<Uint8Array> {
  return slotWord(await slotRowAt(db, number, slotPath(address, slot)));
}

/** The empty trie's root: the parent state of genesis. */
export const EMPTY_STATE_ROOT: Uint8Array = KECCAK256_RLP;
