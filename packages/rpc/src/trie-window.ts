// The state trie's window (a datadir created with `--state-trie window=<N>` keeps the tries of its
// last N blocks; a background pruner deletes older nodes, advancing Meta.trieFrom first): below
// the block the trie is complete from, what needs the trie itself (proofs, state diffs) is refused
// with PrunedTrieError, and an EVM reads the block's state from the flat state history instead.
import { MissingTrieNodeError, PrunedTrieError } from '@chainnode/core';
import type { HandlerContext } from './context.js';

/**
 * Whether block `number`'s trie may be pruned (below the window). Cached by the store (a commit
 * refreshes it); `fresh`: as the datadir says now.
 */
export function belowTrieWindow(ctx: HandlerContext, number: bigint, fresh = false): boolean {
  const w = ctx.store.stateTrie?.(fresh);
  return w !== undefined && w.mode === 'window' && number < w.trieFrom;
}

/**
 * Throws PrunedTrieError when block `number`'s trie is below the window: as the store last saw it
 * (a commit refreshes it), or `fresh` as the datadir says now. The cached view is enough before a
 * walk: nodes are content-addressed, so whatever a walk finds is the block's, and a node the
 * pruner deleted since shows as missing, which prunedOr turns into the same error (fresh).
 */
export function requireTrie(ctx: HandlerContext, number: bigint, fresh = false): void {
  const w = ctx.store.stateTrie?.(fresh);
  if (w !== undefined && w.mode === 'window' && number < w.trieFrom) throw new PrunedTrieError(number, w.blocks);
}

/**
 * What a walk of block `number`'s trie that failed with `err` reports: a node missing because the
 * pruner deleted it after the window moved past the block (trieFrom advances first) is
 * PrunedTrieError; anything else is itself.
 */
export function prunedOr(ctx: HandlerContext, number: bigint, err: unknown): unknown {
  if (!(err instanceof MissingTrieNodeError)) return err;
  try {
    requireTrie(ctx, number, true);
  } catch (pruned) {
    return pruned;
  }
  return err;
}
