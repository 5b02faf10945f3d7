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
