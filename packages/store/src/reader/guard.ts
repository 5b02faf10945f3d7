// What every read of the store goes through: the database must be open, and a failure that is
// not already an RPC error, a store error or a missing trie node becomes StoreUnavailableError
// (rpc's error mapping answers it as such). And the cache key the reader's caches use.
import { MissingTrieNodeError, RpcError, StoreUnavailableError } from '@chainnode/core';
import type { Db } from '../db.js';

/**
 * Cache key of bytes: one latin1 char per byte (a plain copy, half the length of hex and cheaper
 * to build on the hot path). Keys joined from several parts use fixed-width parts, or prefix
 * variable-width parts with their length, so that no two inputs share a key.
 */
export const byteKey = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');

/** `fn` on an open database, its failures as StoreUnavailableError (but for the errors that already say what happened). */
export async function guarded<T>(db: Db, what: string, fn: () => Promise<T>): Promise<T> {
  if (db.status !== 'open') throw new StoreUnavailableError(`store unavailable: ${what}: database is ${db.status}`);
  try {
    return await fn();
  } catch (err) {
    if (err instanceof RpcError || err instanceof StoreUnavailableError || err instanceof MissingTrieNodeError)
      throw err;
    throw new StoreUnavailableError(`store unavailable: ${what} failed`, { cause: err });
  }
}

/** A cache hit as a promise without guarded()'s async wrapper; the open check still comes first. */
export function cachedHit<T>(db: Db, v: T | undefined): Promise<T> | undefined {
  return v !== undefined && db.status === 'open' ? Promise.resolve(v) : undefined;
}

/** guarded() for a synchronous read. */
export function openSyncGuarded<T>(db: Db, what: string, fn: () => T): T {
  if (db.status !== 'open') throw new StoreUnavailableError(`store unavailable: ${what}: database is ${db.status}`);
  try {
    return fn();
  } catch (err) {
    if (err instanceof MissingTrieNodeError) throw err;
    throw new StoreUnavailableError(`store unavailable: ${what} failed`, { cause: err });
  }
}
