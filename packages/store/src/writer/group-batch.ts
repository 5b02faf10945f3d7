// The writer's group batch (the writes of one group of blocks, staged into a native LevelDB
// batch) and the slab its keys and values are allocated from.
import type { Db } from '../db.js';
import type { KvBatch } from '../schema/index.js';

/**
 * The writes of one group, staged straight into a native LevelDB write batch: each put is copied
 * out of JS at once (no op objects kept alive until the flush), and nothing reaches the database
 * before `write()`, which applies the whole batch atomically.
 */
export class GroupBatch implements KvBatch {
  private readonly batch: ReturnType<Db['batch']>;
  private readonly native: NativeBatchOps | undefined;
  bytes = 0;
  constructor(db: Db) {
    this.batch = db.batch();
    // Rows go straight to classic-level's implementation methods (abstract-level's _put/_del
    // contract): the public put checks the key and value and builds an op object per call, which
    // cost more than the native copy itself at millions of rows per import. Keys and values here
    // are always Uint8Arrays (the 'view' encoding passes them through unchanged).
    const b = this.batch as unknown as Partial<NativeBatchOps>;
    this.native = typeof b._put === 'function' && typeof b._del === 'function' ? (b as NativeBatchOps) : undefined;
  }
  put(key: Uint8Array, value: Uint8Array): void {
    if (this.native !== undefined) this.native._put(key, value);
    else this.batch.put(key, value);
    this.bytes += key.length + value.length;
  }
  del(key: Uint8Array): void {
    if (this.native !== undefined) this.native._del(key);
    else this.batch.del(key);
    this.bytes += key.length;
  }
  /**
   * The group's last put (the head pointer), through the public API: abstract-level writes a batch
   * only if it counted an operation on it.
   */
  putLast(key: Uint8Array, value: Uint8Array): void {
    this.batch.put(key, value);
    this.bytes += key.length + value.length;
  }
  write(): Promise<void> {
    return this.batch.write();
  }
  close(): Promise<void> {
    return this.batch.close();
  }
}

/** The implementation methods of a classic-level chained batch. */
export interface NativeBatchOps {
  _put(key: Uint8Array, value: Uint8Array): void;
  _del(key: Uint8Array): void;
}

/**
 * Bump allocation of key and value bytes for the write batch. The batch copies what it is given
 * at once, so these only have to live until then; allocating them from large blocks keeps them
 * off the JS heap (cheap to hand to native code) and spares the GC millions of tiny arrays.
 */
export class Slab {
  private block = new Uint8Array(0);
  private at = 0;
  alloc(n: number): Uint8Array {
    if (this.at + n > this.block.length) {
      this.block = new Uint8Array(Math.max(1 << 20, n));
      this.at = 0;
    }
    const out = this.block.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}
