// Bounded caches keyed by byte strings (hashes, addresses, storage words), for the read path.
// Keyed by a small integer mixed from a few bytes of each key, not by a string built from the
// bytes: a lookup allocates nothing and hashes no string (a latin1 key string per lookup, and the
// Map hashing it, were a tenth of the server's time on random storage reads). The full key is
// kept with each entry and compared on every hit, so two keys that share the integer are never
// confused (the later one replaces the earlier: a collision costs a miss, never a wrong value).
//
// Eviction is the two-generation approximation of LRU of lru.ts: at most `capacity` entries, and
// at most about `budget` of their weight when set() is given weights (values of very unequal size).
import { bytesEqual } from '@chainnode/core';

/** FNV-1a over the first and the last 4 bytes of `b`, continuing from `h`. */
function mix(h: number, b: Uint8Array): number {
  const n = b.length;
  for (let i = 0; i < 4 && i < n; i++) h = Math.imul(h ^ (b[i] as number), 0x01000193);
  for (let i = Math.max(4, n - 4); i < n; i++) h = Math.imul(h ^ (b[i] as number), 0x01000193);
  return Math.imul(h ^ n, 0x01000193);
}

/** 30 bits (a V8 small integer on every platform). */
const small = (h: number): number => h >>> 2;

/** The integer a key (or a pair) is filed under: exported for the tests, which look for collisions. */
export function cacheKeyOf(a: Uint8Array, b?: Uint8Array): number {
  const h = mix(0x811c9dc5, a);
  return small(b === undefined ? h : mix(h, b));
}

interface Entry<V> {
  a: Uint8Array;
  b: Uint8Array | undefined;
  v: V;
  /** What the entry counts against `budget` (1 when the cache counts entries only). */
  w: number;
}

class Generations<V> {
  private young = new Map<number, Entry<V>>();
  private old = new Map<number, Entry<V>>();
  private youngWeight = 0;
  private readonly half: number;
  private readonly halfBudget: number;

  /**
   * @param capacity At most this many entries.
   * @param budget At most about this much weight (the weights set() is given: estimated bytes),
   *   whatever the count: each generation holds at most half of it, plus the one entry that crossed.
   */
  constructor(
    readonly capacity: number,
    readonly budget = Number.POSITIVE_INFINITY,
  ) {
    this.half = Math.max(1, Math.floor(capacity / 2));
    this.halfBudget = budget / 2;
  }

  protected find(k: number, a: Uint8Array, b: Uint8Array | undefined): V | undefined {
    const y = this.young.get(k);
    if (y !== undefined && bytesEqual(y.a, a) && (b === undefined || (y.b !== undefined && bytesEqual(y.b, b))))
      return y.v;
    const o = this.old.get(k);
    if (o === undefined || !bytesEqual(o.a, a) || (b !== undefined && (o.b === undefined || !bytesEqual(o.b, b))))
      return undefined;
    this.put(k, o);
    return o.v;
  }

  /** Keys are copied: callers may pass views of larger buffers. */
  protected store(k: number, a: Uint8Array, b: Uint8Array | undefined, v: V, w = 1): void {
    this.put(k, { a: a.slice(), b: b?.slice(), v, w });
  }

  protected drop(k: number, a: Uint8Array): void {
    const y = this.young.get(k);
    if (y !== undefined && bytesEqual(y.a, a)) {
      this.young.delete(k);
      this.youngWeight -= y.w;
    }
    const o = this.old.get(k);
    if (o !== undefined && bytesEqual(o.a, a)) this.old.delete(k);
  }

  private put(k: number, e: Entry<V>): void {
    const before = this.young.get(k);
    if (before !== undefined) this.youngWeight -= before.w;
    else if (this.young.size >= this.half || this.youngWeight >= this.halfBudget) {
      this.old = this.young;
      this.young = new Map();
      this.youngWeight = 0;
    }
    this.young.set(k, e);
    this.youngWeight += e.w;
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
    this.youngWeight = 0;
  }
}

/** Values by one byte key (a hash). `undefined` is a miss; any other value (null too) is a hit. */
export class HashCache<V> extends Generations<V> {
  get(key: Uint8Array): V | undefined {
    return this.find(cacheKeyOf(key), key, undefined);
  }

  /** `weight`: what the value counts against the cache's budget (see the constructor). */
  set(key: Uint8Array, value: V, weight = 1): void {
    this.store(cacheKeyOf(key), key, undefined, value, weight);
  }

  delete(key: Uint8Array): void {
    this.drop(cacheKeyOf(key), key);
  }
}

/** Values by two byte keys (a state root and an address, a storage root and a slot). */
export class PairCache<V> extends Generations<V> {
  get(a: Uint8Array, b: Uint8Array): V | undefined {
    return this.find(cacheKeyOf(a, b), a, b);
  }

  set(a: Uint8Array, b: Uint8Array, value: V): void {
    this.store(cacheKeyOf(a, b), a, b, value);
  }
}
