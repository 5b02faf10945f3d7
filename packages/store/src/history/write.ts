// The write side of the flat state history: a block's change set, derived from the state tries of
// its parent and of the block (state-diff.ts walks only the changed paths), staged as
// AccountHistory and StorageHistory rows (schema.ts) into the batch that writes the block; and the
// same rows deleted again when a reorg takes the block off the chain.
import { stateChanges } from '../state-diff.js';
import type { NodeSource } from '../trie-read.js';
import { Prefix, putU64 } from '../schema.js';
import type { Alloc } from '../schema.js';

/** Where the change set goes: puts, or deletes of the same keys (a rewind). */
export interface HistoryBatch {
  put(key: Uint8Array, value: Uint8Array): unknown;
  del(key: Uint8Array): unknown;
}

const TOMBSTONE = new Uint8Array(0);

/** A block's state transition: the trie roots before and after it. */
export interface StateStep {
  number: bigint;
  parentRoot: Uint8Array;
  root: Uint8Array;
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
 * `nodes` must reach both tries (the group's overlay, then the database).
 */
export async function stageStateStep(
  batch: HistoryBatch,
  nodes: NodeSource,
  step: StateStep,
  mode: 'put' | 'del',
  alloc: Alloc,
  stats?: HistoryStats,
): Promise<void> {
  const number = Number(step.number);
  const row = (key: Uint8Array, value: Uint8Array | null): void => {
    if (mode === 'del') batch.del(key);
    else batch.put(key, value ?? TOMBSTONE);
    if (stats !== undefined) stats.bytes += key.length + (value?.length ?? 0);
  };
  await stateChanges(nodes, step.parentRoot, step.root, {
    account(accountKey, after) {
      const key = alloc(1 + 32 + 8);
      key[0] = Prefix.AccountHistory;
      key.set(accountKey, 1);
      putU64(key, 33, number);
      row(key, after);
      if (stats !== undefined) stats.accounts++;
    },
    slot(accountKey, slotKey, after) {
      const key = alloc(1 + 64 + 8);
      key[0] = Prefix.StorageHistory;
      key.set(accountKey, 1);
      key.set(slotKey, 33);
      putU64(key, 65, number);
      row(key, after);
      if (stats !== undefined) stats.slots++;
    },
  });
}
