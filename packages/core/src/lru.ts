// A bounded cache without the trap of a Map used as a queue: evicting with
// `map.delete(map.keys().next().value)` leaves a deleted slot at the front of V8's ordered hash
// table for each eviction, and every later keys().next() walks over all of them until the table
// is rebuilt: at 16,384 entries about 8 µs an eviction against 0.25 µs for a generation's swap
// (a node-cache of the trie db spent 4% of a replica's thread there).

/**
 * A bounded cache that keeps recently used entries (a two-generation approximation of LRU): a
 * hit in the young generation is a single Map lookup; a hit in the old one promotes the entry;
 * when the young generation fills, it becomes the old one and the previous old one is dropped.
 * At most `capacity` entries are held.
 */
export class Lru<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private readonly half: number;
  constructor(capacity: number) {
    this.half = Math.max(1, Math.floor(capacity / 2));
  }

  get(key: K): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o !== undefined) this.set(key, o);
    return o;
  }

  set(key: K, value: V): void {
    if (!this.young.has(key) && this.young.size >= this.half) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }

  delete(key: K): void {
    this.young.delete(key);
    this.old.delete(key);
  }

  clear(): void {
    this.young.clear();
    this.old.clear();
  }
}

/**
 * Lru bounded by weight (the bytes an entry holds, as `weigh` estimates them, the same each time
 * for a value): two generations of at most half of `budget` each, so it holds between half the
 * budget and all of it once full. A value weighing more than half the budget is not kept.
 */
export class WeightedLru<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private youngWeight = 0;
  private oldWeight = 0;

  constructor(
    readonly budget: number,
    private readonly weigh: (value: V) => number,
  ) {}

  get(key: K): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o === undefined) return undefined;
    this.old.delete(key);
    this.oldWeight -= this.weigh(o);
    this.put(key, o);
    return o;
  }

  /** Keeps `value` under `key` (replacing what was there), unless it weighs more than half the budget. */
  set(key: K, value: V): void {
    if (this.weigh(value) > this.budget / 2) return;
    this.delete(key);
    this.put(key, value);
  }

  delete(key: K): void {
    const y = this.young.get(key);
    if (y !== undefined) {
      this.young.delete(key);
      this.youngWeight -= this.weigh(y);
    }
    const o = this.old.get(key);
    if (o !== undefined) {
      this.old.delete(key);
      this.oldWeight -= this.weigh(o);
    }
  }

  get size(): { entries: number; weight: number } {
    return { entries: this.young.size + this.old.size, weight: this.youngWeight + this.oldWeight };
  }

  private put(key: K, value: V): void {
    const w = this.weigh(value);
    if (this.youngWeight + w > this.budget / 2 && this.young.size > 0) {
      this.old = this.young;
      this.oldWeight = this.youngWeight;
      this.young = new Map();
      this.youngWeight = 0;
    }
    this.young.set(key, value);
    this.youngWeight += w;
  }
}
