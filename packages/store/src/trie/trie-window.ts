// The state trie's retention, a datadir setting: `archive` keeps every block's hash-keyed trie;
// `window=<N>` keeps the tries of the last N blocks and prunes older nodes in the background
// (state reads beyond the window come from the flat state history; proofs there are refused).
// Meta.stateTrie holds the setting (fixed at creation), Meta.trieFrom the lowest block whose trie
// is still complete.
import { MetaKey, tables } from '../schema/index.js';
import type { KvBatch, KvRead } from '../schema/index.js';
import { formatStateTrie, parseStateTrie } from './state-trie-mode.js';
import type { StateTrieMode } from './state-trie-mode.js';

/**
 * The datadir's setting; a datadir without one was written before it existed: archive. So is a
 * datadir without flat state history (Meta.stateHistory): its state reads walk the trie, which
 * must therefore be whole.
 */
export async function readStateTrie(db: KvRead): Promise<StateTrieMode> {
  if ((await tables.meta.get(db, MetaKey.StateHistory)) === undefined) return { kind: 'archive' };
  const v = await tables.meta.get(db, MetaKey.StateTrie);
  return v === undefined ? { kind: 'archive' } : parseStateTrie(Buffer.from(v).toString('utf8'));
}

export function putStateTrie(batch: KvBatch, m: StateTrieMode): void {
  tables.meta.put(batch, MetaKey.StateTrie, Buffer.from(formatStateTrie(m), 'utf8'));
}

/** The lowest block whose state trie is complete (0 when nothing was ever pruned). */
export async function readTrieFrom(db: KvRead): Promise<bigint> {
  return decodeTrieFrom(await tables.meta.get(db, MetaKey.TrieFrom));
}

/** Meta.trieFrom's value (absent: 0), for readers that fetch the row themselves (synchronously). */
export function decodeTrieFrom(v: Uint8Array | undefined): bigint {
  return v === undefined ? 0n : BigInt(Buffer.from(v).toString('utf8'));
}

/** The window start of the last pruning cycle that finished its sweep (undefined: none did). */
export async function readTriePruned(db: KvRead): Promise<bigint | undefined> {
  const v = await tables.meta.get(db, MetaKey.TriePruned);
  return v === undefined ? undefined : BigInt(Buffer.from(v).toString('utf8'));
}

export function putTriePruned(batch: KvBatch, from: bigint): void {
  tables.meta.put(batch, MetaKey.TriePruned, Buffer.from(from.toString(), 'utf8'));
}

/**
 * Whether a pruning cycle is due whatever the cadence: no cycle finished its sweep at the window
 * start last set (`trieFrom`), as when one was stopped midway or none ever ran.
 */
export function pruneUnfinished(trieFrom: bigint, pruned: bigint | undefined): boolean {
  return pruned === undefined || pruned < trieFrom;
}

export function putTrieFrom(batch: KvBatch, from: bigint): void {
  tables.meta.put(batch, MetaKey.TrieFrom, Buffer.from(from.toString(), 'utf8'));
}
