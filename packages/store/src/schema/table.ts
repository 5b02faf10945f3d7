// Typed tables over a minimal key/value interface (abstract-level compatible): a prefix, a key
// codec and a value codec, with range scans clamped to the prefix.
import { concatBytes } from '@chainnode/core';
import type { Alloc, Codec } from './codec.js';

export interface KvRead {
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  getMany(keys: Uint8Array[]): Promise<(Uint8Array | undefined)[]>;
  iterator(opts: KvRange): AsyncIterable<[Uint8Array, Uint8Array]> & { close(): Promise<void> };
}

/** A key range and direction to iterate over (abstract-level's iterator options). */
export interface KvRange {
  gt?: Uint8Array;
  gte?: Uint8Array;
  lt?: Uint8Array;
  lte?: Uint8Array;
  reverse?: boolean;
  limit?: number;
}

/**
 * Synchronous point reads (classic-level 3's getSync): on the cold read path a LevelDB get from the
 * OS page cache takes a few microseconds, far less than a round trip through libuv's thread pool
 * and the promise machinery around it, and the answer needs no other turn of the event loop.
 */
export interface KvSyncRead {
  getSync(key: Uint8Array): Uint8Array | undefined;
}

export interface KvBatch {
  put(key: Uint8Array, value: Uint8Array): unknown;
}

export interface RangeOpts<K> {
  gte?: K;
  gt?: K;
  lte?: K;
  lt?: K;
  reverse?: boolean;
  limit?: number;
}

export class Table<K, V> {
  constructor(
    readonly prefix: number,
    readonly name: string,
    readonly keyCodec: Codec<K>,
    readonly valueCodec: Codec<V>,
  ) {}

  key(k: K): Uint8Array {
    return concatBytes(Uint8Array.of(this.prefix), this.keyCodec.encode(k));
  }

  async get(db: KvRead, k: K): Promise<V | undefined> {
    const v = await db.get(this.key(k));
    return v === undefined ? undefined : this.valueCodec.decode(v);
  }

  /** get without leaving the thread (see KvSyncRead). */
  getSync(db: KvSyncRead, k: K): V | undefined {
    const v = db.getSync(this.key(k));
    return v === undefined ? undefined : this.valueCodec.decode(v);
  }

  /** The stored bytes, not decoded: for a reader that takes one item of a row in place. */
  getRawSync(db: KvSyncRead, k: K): Uint8Array | undefined {
    return db.getSync(this.key(k));
  }

  async getMany(db: KvRead, ks: K[]): Promise<(V | undefined)[]> {
    if (ks.length === 0) return [];
    const vs = await db.getMany(ks.map((k) => this.key(k)));
    return vs.map((v) => (v === undefined ? undefined : this.valueCodec.decode(v)));
  }

  put(batch: KvBatch, k: K, v: V): void {
    batch.put(this.key(k), this.valueCodec.encode(v));
  }

  /** put with the key and value written into memory from `alloc` (same bytes; the writer's path). */
  stage(batch: KvBatch, k: K, v: V, alloc: Alloc): void {
    const ki = this.keyCodec.into;
    let key: Uint8Array;
    if (ki === undefined) key = this.key(k);
    else {
      key = alloc(1 + ki.size(k));
      key[0] = this.prefix;
      ki.write(k, key, 1);
    }
    const vi = this.valueCodec.into;
    let value: Uint8Array;
    if (vi === undefined) value = this.valueCodec.encode(v);
    else {
      value = alloc(vi.size(v));
      vi.write(v, value, 0);
    }
    batch.put(key, value);
  }

  /** Entries in key order (or reverse), never leaving this table's prefix. */
  async *range(db: KvRead, opts: RangeOpts<K> = {}): AsyncGenerator<[K, V]> {
    const lower =
      opts.gte !== undefined
        ? { gte: this.key(opts.gte) }
        : opts.gt !== undefined
          ? { gt: this.key(opts.gt) }
          : { gte: Uint8Array.of(this.prefix) };
    const upper =
      opts.lte !== undefined
        ? { lte: this.key(opts.lte) }
        : opts.lt !== undefined
          ? { lt: this.key(opts.lt) }
          : { lt: Uint8Array.of(this.prefix + 1) };
    const it = db.iterator({ ...lower, ...upper, reverse: opts.reverse ?? false, limit: opts.limit ?? -1 });
    try {
      for await (const [k, v] of it) {
        if (k[0] !== this.prefix) break;
        yield [this.keyCodec.decode(k.subarray(1)), this.valueCodec.decode(v)];
      }
    } finally {
      await it.close();
    }
  }
}
