// The trie-node cache of the read path: nodes by hash, their bytes copied into one preallocated
// slab written as a ring, found through an open-addressed index in typed arrays.
//
// Why not a Map of Buffers (hash-cache.ts): random historical reads (eth_getProof, storage at
// random blocks) miss below the top levels of each trie, so the cache turns over all the time.
// With one JS object, one key copy and one Buffer per node, every node that survives a young
// collection is promoted and later collected as old garbage: on random slot proofs the garbage
// collector was 11-14% of a serving thread. Here a cached node is bytes in memory allocated once;
// the index holds no objects at all, and what a lookup hands out is a view (young garbage).
//
// A view stays valid until the ring comes round to its bytes again: at least `guard` bytes of
// later inserts (a hit in the last `guard` bytes before its turn is copied to the ring's head
// first, which also keeps nodes in use from aging out: a CLOCK-like approximation of LRU). One
// trie walk inserts at most 65 nodes of at most ~532 bytes on the state and storage tries (35 KB),
// far below the 4 MiB guard of the reader's 32 MiB slab, so the nodes of a walk stay valid
// until it ends; a caller that keeps them longer copies them (reader.ts does, per walk).
const KEY = 32; // trie nodes are keyed by their keccak hash
const PROBES = 4;

export class NodeSlab {
  private readonly slab: Uint8Array;
  private readonly size: number;
  /** Bytes written since the start (absolute positions; exact as a double far beyond any run). */
  private head = 0;
  private readonly mask: number;
  private readonly keys: Uint8Array;
  /** Absolute position of each slot's node; -1: empty. */
  private readonly pos: Float64Array;
  private readonly len: Int32Array;
  private readonly guard: number;

  /**
   * `bytes` of node bytes; `slots` index entries (rounded up to a power of two: about twice the
   * nodes `bytes` holds keeps probes short). Nodes larger than a quarter of `bytes` are not kept.
   */
  constructor(bytes: number, slots: number) {
    if (!Number.isInteger(bytes) || bytes < 4096) throw new RangeError('NodeSlab: at least 4096 bytes');
    this.size = bytes;
    this.slab = new Uint8Array(bytes);
    let n = 1;
    while (n < slots) n *= 2;
    this.mask = n - 1;
    this.keys = new Uint8Array(n * KEY);
    this.pos = new Float64Array(n).fill(-1);
    this.len = new Int32Array(n);
    this.guard = Math.min(4 << 20, bytes >> 2);
  }

  private home(key: Uint8Array): number {
    // Keys are keccak hashes: any four bytes are uniform.
    return (
      (((key[0] as number) << 24) | ((key[1] as number) << 16) | ((key[2] as number) << 8) | (key[3] as number)) &
      this.mask
    );
  }

  private keyAt(slot: number, key: Uint8Array): boolean {
    const at = slot * KEY;
    const keys = this.keys;
    for (let i = 0; i < KEY; i++) if (keys[at + i] !== key[i]) return false;
    return true;
  }

  /** The node under `key` (a view into the slab: see the file comment), or undefined. */
  get(key: Uint8Array): Uint8Array | undefined {
    if (key.length !== KEY) return undefined;
    const home = this.home(key);
    for (let i = 0; i < PROBES; i++) {
      const slot = (home + i) & this.mask;
      const p = this.pos[slot] as number;
      if (p < 0 || p + this.size < this.head || !this.keyAt(slot, key)) continue;
      const n = this.len[slot] as number;
      const at = p % this.size;
      // Its bytes are overwritten within `guard` more bytes: copy them to the head first.
      if (p + this.size - this.guard < this.head) return this.write(slot, this.slab.subarray(at, at + n));
      return this.slab.subarray(at, at + n);
    }
    return undefined;
  }

  /** Keeps a copy of `node` under `key`; returns the kept bytes (a view) or `node` when not kept. */
  set(key: Uint8Array, node: Uint8Array): Uint8Array {
    if (key.length !== KEY || node.length > this.size >> 2) return node;
    const home = this.home(key);
    // The slot: this key's, else an empty or overwritten one, else the oldest of the probes.
    let slot = home;
    let oldest = Infinity;
    for (let i = 0; i < PROBES; i++) {
      const s = (home + i) & this.mask;
      const p = this.pos[s] as number;
      if (p >= 0 && this.keyAt(s, key)) {
        slot = s;
        break;
      }
      const age = p < 0 || p + this.size < this.head ? -1 : p;
      if (age < oldest) {
        oldest = age;
        slot = s;
      }
    }
    this.keys.set(key, slot * KEY);
    return this.write(slot, node);
  }

  /** Copies `node` to the ring's head and files it under `slot`; returns the copy. */
  private write(slot: number, node: Uint8Array): Uint8Array {
    const n = node.length;
    let at = this.head % this.size;
    if (at + n > this.size) {
      this.head += this.size - at; // the tail is too short: wrap
      at = 0;
    }
    // `node` may be a view of the slab itself (a refresh): copyWithin-safe either way.
    if (node.buffer === this.slab.buffer)
      this.slab.copyWithin(at, node.byteOffset - this.slab.byteOffset, node.byteOffset - this.slab.byteOffset + n);
    else this.slab.set(node, at);
    this.pos[slot] = this.head;
    this.len[slot] = n;
    this.head += n;
    return this.slab.subarray(at, at + n);
  }
}

/** Memory copyNodes carves walks' copies from: a fresh 32 KiB block when one is used up. */
const POOL = 32 * 1024;
let pool = new ArrayBuffer(POOL);
let poolAt = 0;

/**
 * `nodes` copied into one new piece of memory, as views of it in the same order (for proofs kept
 * after a walk). A walk's nodes are ~1-3 KB: they are carved from a shared 32 KiB block (no
 * memory of their own to allocate and free per walk; a block is freed once no copy in it is
 * kept: the proof caches keep at most a few MB of blocks alive), larger ones get their own.
 */
export function copyNodes(nodes: Uint8Array[]): Uint8Array[] {
  let total = 0;
  for (const n of nodes) total += n.length;
  let buffer: ArrayBuffer;
  let at: number;
  if (total > POOL >> 2) {
    buffer = new ArrayBuffer(total);
    at = 0;
  } else {
    if (poolAt + total > POOL) {
      pool = new ArrayBuffer(POOL);
      poolAt = 0;
    }
    buffer = pool;
    at = poolAt;
    poolAt += total;
  }
  const views: Uint8Array[] = new Array<Uint8Array>(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i] as Uint8Array;
    const view = new Uint8Array(buffer, at, n.length);
    view.set(n);
    views[i] = view;
    at += n.length;
  }
  return views;
}
