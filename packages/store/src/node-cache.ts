// A bounded cache of trie nodes by their 32-byte hash, for the synchronous trie walks of the read
// path (trie-read.ts). Keyed by a small integer taken from the hash's first bytes, not by a
// string built from the hash: a lookup costs no allocation and no string hashing. The full
// hash is kept with each entry and compared on every hit, so two hashes that share the key are
// never confused (the later one simply replaces the earlier: a collision costs a miss, never a
// wrong node). Node hashes are content addresses, so a cached node is never stale.
//
// Eviction is the two-generation approximation of LRU of lru.ts: at most `capacity` entries.

interface Entry {
  hash: Uint8Array;
  raw: Uint8Array;
}

/** 30 bits of the hash (a V8 small integer on every platform). */
function keyOf(hash: Uint8Array): number {
  return (((hash[0] as number) << 22) | ((hash[1] as number) << 14) | ((hash[2] as number) << 6) | ((hash[3] as number) >> 2)) >>> 0;
}

function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class NodeCache {
  private young = new Map<number, Entry>();
  private old = new Map<number, Entry>();
  private readonly half: number;

  constructor(readonly capacity: number) {
    this.half = Math.max(1, Math.floor(capacity / 2));
  }

  get(hash: Uint8Array): Uint8Array | undefined {
    const k = keyOf(hash);
    const y = this.young.get(k);
    if (y !== undefined && sameHash(y.hash, hash)) return y.raw;
    const o = this.old.get(k);
    if (o === undefined || !sameHash(o.hash, hash)) return undefined;
    this.put(k, o);
    return o.raw;
  }

  /** Caches `raw` as the node of `hash` (the hash is copied: callers may pass a view). */
  set(hash: Uint8Array, raw: Uint8Array): void {
    this.put(keyOf(hash), { hash: hash.slice(), raw });
  }

  private put(k: number, e: Entry): void {
    if (!this.young.has(k) && this.young.size >= this.half) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(k, e);
  }
}
