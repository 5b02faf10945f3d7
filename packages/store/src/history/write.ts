// The write side of the flat state history: a block's change set, staged as AccountHistory and
// StorageHistory rows (schema.ts) into the batch that writes the block; and the same rows deleted
// again when a reorg takes the block off the chain. The change set comes from what the block's
// executor or replica pipeline wrote (StateWrites), or, where none is given (genesis, a rewind's
// undo), from the diff of the parent's and the block's state tries (state-diff.ts walks only the
// changed paths). Both give the same rows.
import { stateChanges, storageChanges } from '../trie/index.js';
import type { StateChangeSink, NodeSource } from '../trie/index.js';
import { Prefix, putU64, tables, varintLength, writeVarint } from '../schema/index.js';
import type { Alloc } from '../schema/index.js';
import type { HistoryBatch } from './batch.js';
import type { LatestRows } from './latest.js';

const TOMBSTONE = new Uint8Array(0);

/**
 * A block's change set as its writer knows it: only what differs from the parent state (a key
 * written back to the value it had is left out, as the diff leaves it out).
 *
 * An account deleted or re-created in the block (self-destruct, EIP-161's removal of a touched
 * empty account, a creation) loses every slot it had: such an account is listed in `storage`
 * with its storage roots before and after, and the stager lists every slot that differs between
 * the two tries (the old trie's leaves that are gone as tombstones), as the diff does; its
 * written slots are not listed in `slots`. Every other account's changed slots are in `slots`.
 */
export interface StateWrites {
  /** Changed accounts: hashed address, leaf RLP after the block (null: deleted). */
  accounts: [key: Uint8Array, after: Uint8Array | null][];
  /** Changed slots: hashed address, hashed slot, value after (minimal bytes; null: cleared). */
  slots: [account: Uint8Array, slot: Uint8Array, after: Uint8Array | null][];
  /** Accounts whose storage is diffed from trie to trie: hashed address, storage root before, after. */
  storage: [account: Uint8Array, from: Uint8Array, to: Uint8Array][];
}

/** A block's state transition: the trie roots before and after it, and its write set when known. */
export interface StateStep {
  number: bigint;
  parentRoot: Uint8Array;
  root: Uint8Array;
  writes?: StateWrites | undefined;
}

/** Bytes the change sets of a group staged: rows and key + value bytes (cost per block). */
export interface HistoryStats {
  accounts: number;
  slots: number;
  bytes: number;
}

/**
 * Stages the change set of `step` (mode 'put') or the deletion of its rows (mode 'del': the same
 * keys, from the same diff, as the block's trie nodes are content-addressed and still held).
 * `nodes` must reach both tries (the group's overlay, then the database). With `step.writes`,
 * the rows come from them (the trie is walked only for the storage of deleted or re-created
 * accounts); without, from the diff of the two state tries. `latest`: notes every key staged, for
 * its StateLatest row (latest.ts).
 */
export async function stageStateStep(
  batch: HistoryBatch,
  nodes: NodeSource,
  step: StateStep,
  mode: 'put' | 'del',
  alloc: Alloc,
  stats?: HistoryStats,
  latest?: LatestRows,
): Promise<void> {
  const number = Number(step.number);
  // The block's StateChanges row: how many rows its change set has (block-changes.ts).
  let accountRows = 0;
  let slotRows = 0;
  const row = (key: Uint8Array, value: Uint8Array | null): void => {
    if (mode === 'del') batch.del(key);
    else batch.put(key, value ?? TOMBSTONE);
    latest?.note(key, value ?? TOMBSTONE);
    if (stats !== undefined) stats.bytes += key.length + (value?.length ?? 0);
  };
  const sink: StateChangeSink = {
    account(accountKey, after) {
      const key = alloc(1 + 32 + 8);
      key[0] = Prefix.AccountHistory;
      key.set(accountKey, 1);
      putU64(key, 33, number);
      row(key, after);
      accountRows++;
      if (stats !== undefined) stats.accounts++;
    },
    slot(accountKey, slotKey, after) {
      const key = alloc(1 + 64 + 8);
      key[0] = Prefix.StorageHistory;
      key.set(accountKey, 1);
      key.set(slotKey, 33);
      putU64(key, 65, number);
      row(key, after);
      slotRows++;
      if (stats !== undefined) stats.slots++;
    },
  };
  const w = step.writes;
  if (w === undefined) await stateChanges(nodes, step.parentRoot, step.root, sink);
  else {
    for (const [key, after] of w.accounts) sink.account(key, after);
    for (const [account, slot, after] of w.slots) sink.slot(account, slot, after);
    for (const [account, from, to] of w.storage) await storageChanges(nodes, account, from, to, sink);
  }
  const countKey = tables.stateChanges.key(step.number);
  if (mode === 'del') batch.del(countKey);
  else batch.put(countKey, encodeStateChanges(accountRows, slotRows, alloc));
}

/** A StateChanges row: varint(accounts) ++ varint(slots). */
export function encodeStateChanges(accounts: number, slots: number, alloc: Alloc): Uint8Array {
  const out = alloc(varintLength(accounts) + varintLength(slots));
  writeVarint(slots, out, writeVarint(accounts, out, 0));
  return out;
}
