// A batched, synchronous Merkle-Patricia trie update: the new root of a trie after a set of key
// writes and deletions, visiting each node on the changed paths once. Nodes are read through
// `get` (synchronous: the trie db's overlay, then LevelDB's getSync) and every new node is handed
// to `put`; nothing else of the trie is touched. Keys are the trie's keys as given (already
// hashed for the state and storage tries), all of one length: no key is a prefix of another, so
// no branch holds a value (the state and storage tries' shape; a batch of keys of mixed lengths
// is refused). Used by replication to apply a block's state changes
// without one @ethereumjs/mpt walk per key; the tests compare its roots with @ethereumjs/mpt's.
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP } from '@ethereumjs/util';
import { keccak256 } from '../keccak.js';
import { encodeNested } from '@chainnode/core';
import type { Nested } from '@chainnode/core';

export { encodeNested };
export type { Nested };

/** A node's bytes by its hash; undefined when the store does not hold it. */
export type SyncNodeGet = (hash: Uint8Array) => Uint8Array | undefined;
/**
 * A node by its hash, RLP-decoded, when the source holds it decoded already (else undefined, and
 * its bytes are read and decoded). The update never changes what it is given.
 */
export type SyncDecodedGet = (hash: Uint8Array) => Nested | undefined;
/** Receives every node the update creates, by hash: its RLP and the list it encodes. */
export type NodePut = (hash: Uint8Array, encoded: Uint8Array, decoded: Nested) => void;
type Node =
  | { kind: 'leaf'; path: number[]; value: Uint8Array }
  | { kind: 'ext'; path: number[]; child: Nested }
  | { kind: 'branch'; children: Nested[]; value: Uint8Array };

interface Change {
  nibbles: number[];
  /** undefined: delete. */
  value: Uint8Array | undefined;
  /** The change's place in the caller's list (its slot in `before`). */
  index: number;
}

const EMPTY: Uint8Array = new Uint8Array(0);

/** A trie node the store lacks (a partial trie, or a corrupt store). */
export class MissingTrieNodeError extends Error {
  constructor(readonly hash: Uint8Array) {
    super(`trie node ${Buffer.from(hash).toString('hex')} is missing`);
    this.name = 'MissingTrieNodeError';
  }
}

/** A key's nibbles, high half first. */
export function nibblesOf(b: Uint8Array): number[] {
  const out: number[] = new Array(b.length * 2);
  for (let i = 0; i < b.length; i++) {
    out[2 * i] = (b[i] as number) >> 4;
    out[2 * i + 1] = (b[i] as number) & 15;
  }
  return out;
}

/** Compact (hex-prefix) encoding of a nibble path. */
export function hexPrefix(path: number[], leaf: boolean): Uint8Array {
  const odd = path.length % 2;
  const out = new Uint8Array(Math.floor(path.length / 2) + 1);
  out[0] = ((leaf ? 2 : 0) + odd) << 4;
  let i = 0;
  if (odd === 1) out[0] |= path[i++] as number;
  for (let j = 1; i < path.length; j++, i += 2) out[j] = ((path[i] as number) << 4) | (path[i + 1] as number);
  return out;
}

function fromHexPrefix(b: Uint8Array): { path: number[]; leaf: boolean } {
  const flag = (b[0] as number) >> 4;
  const odd = flag & 1;
  const path: number[] = new Array(2 * (b.length - 1) + odd);
  let j = 0;
  if (odd === 1) path[j++] = (b[0] as number) & 15;
  for (let i = 1; i < b.length; i++) {
    path[j++] = (b[i] as number) >> 4;
    path[j++] = (b[i] as number) & 15;
  }
  return { path, leaf: flag >= 2 };
}

/** Whether `a` from `ia` on and `b` from `ib` on are the same nibbles to their (equal) ends. */
function sameFrom(a: readonly number[], ia: number, b: readonly number[], ib: number): boolean {
  if (a.length - ia !== b.length - ib) return false;
  for (; ia < a.length; ia++, ib++) if (a[ia] !== b[ib]) return false;
  return true;
}

class Updater {
  constructor(
    private readonly get: SyncNodeGet,
    private readonly put: NodePut,
    private readonly decoded?: SyncDecodedGet,
    /** When given: each change's value in the trie before the update, by its index (a view). */
    private readonly before?: (Uint8Array | undefined)[],
  ) {}

  /** A reference (hash, embedded node, or empty) as a node; undefined for empty. */
  resolve(ref: Nested): Node | undefined {
    let raw: Nested;
    if (ref instanceof Uint8Array) {
      if (ref.length === 0) return undefined;
      if (ref.length !== 32) throw new Error('trie reference is neither a hash nor a node');
      const held = this.decoded?.(ref);
      if (held !== undefined) raw = held;
      else {
        const bytes = this.get(ref);
        if (bytes === undefined) throw new MissingTrieNodeError(ref);
        raw = RLP.decode(bytes) as Nested;
      }
    } else raw = ref;
    if (!Array.isArray(raw)) throw new Error('trie node is not a list');
    if (raw.length === 17) return { kind: 'branch', children: raw.slice(0, 16), value: raw[16] as Uint8Array };
    if (raw.length !== 2) throw new Error(`trie node has ${raw.length} items`);
    const { path, leaf } = fromHexPrefix(raw[0] as Uint8Array);
    return leaf ? { kind: 'leaf', path, value: raw[1] as Uint8Array } : { kind: 'ext', path, child: raw[1] as Nested };
  }

  raw(n: Node): Nested {
    switch (n.kind) {
      case 'leaf':
        return [hexPrefix(n.path, true), n.value];
      case 'ext':
        return [hexPrefix(n.path, false), n.child];
      case 'branch':
        return [...n.children, n.value];
    }
  }

  /** How a parent holds `n`: embedded under 32 bytes, else by hash (and the node is put). */
  ref(n: Node): Nested {
    const raw = this.raw(n);
    const enc = encodeNested(raw);
    if (enc.length < 32) return raw;
    const h = keccak256(enc);
    this.put(h, enc, raw);
    return h;
  }

  /** The trie of `entries` (all values present), from scratch. */
  build(entries: { nibbles: number[]; value: Uint8Array }[], depth: number): Node | undefined {
    if (entries.length === 0) return undefined;
    if (entries.length === 1) {
      const e = entries[0] as { nibbles: number[]; value: Uint8Array };
      return { kind: 'leaf', path: e.nibbles.slice(depth), value: e.value };
    }
    const first = (entries[0] as { nibbles: number[] }).nibbles;
    const common = sharedNibbles(entries, depth);
    if (common > 0) {
      const child = this.build(entries, depth + common) as Node;
      return { kind: 'ext', path: first.slice(depth, depth + common), child: this.ref(child) };
    }
    const children: Nested[] = Array.from({ length: 16 }, () => EMPTY);
    let value = EMPTY;
    const groups: { nibbles: number[]; value: Uint8Array }[][] = Array.from({ length: 16 }, () => []);
    for (const e of entries) {
      if (e.nibbles.length === depth) value = e.value;
      else (groups[e.nibbles[depth] as number] as { nibbles: number[]; value: Uint8Array }[]).push(e);
    }
    groups.forEach((g, i) => {
      const c = this.build(g, depth + 1);
      if (c !== undefined) children[i] = this.ref(c);
    });
    return { kind: 'branch', children, value };
  }

  /** `n` (at key depth `depth`) after `changes` (all under its position, sorted). */
  update(n: Node | undefined, changes: Change[], depth: number): Node | undefined {
    if (changes.length === 0) return n;
    if (n === undefined || n.kind === 'leaf') {
      // Rebuild this small subtree from its one entry and the changes. Every change ends its
      // descent here (the one at the leaf's key had the leaf's value); the changes share the
      // first `depth` nibbles and are sorted, so a key written twice is two neighbours, the later
      // one winning. build() needs its entries unique, not ordered.
      const path = n?.path;
      const leafValue = n?.value;
      const entries: { nibbles: number[]; value: Uint8Array }[] = [];
      let leafWritten = false;
      for (let i = 0; i < changes.length; i++) {
        const c = changes[i] as Change;
        if (path !== undefined && sameFrom(c.nibbles, depth, path, 0)) {
          leafWritten = true;
          if (this.before !== undefined) this.before[c.index] = leafValue;
        }
        const next = changes[i + 1];
        if (next !== undefined && sameFrom(c.nibbles, depth, next.nibbles, depth)) continue;
        if (c.value !== undefined) entries.push({ nibbles: c.nibbles, value: c.value });
      }
      if (path !== undefined && leafValue !== undefined && !leafWritten)
        entries.push({ nibbles: (changes[0] as Change).nibbles.slice(0, depth).concat(path), value: leafValue });
      return this.build(entries, depth);
    }
    if (n.kind === 'ext') {
      const p = n.path;
      const under = changes.every((c) => p.every((x, i) => c.nibbles[depth + i] === x));
      if (under) {
        const child = this.update(this.resolve(n.child), changes, depth + p.length);
        return this.joinPrefix(p, child);
      }
      // Split the extension into a branch at its first nibble and update that.
      const children: Nested[] = Array.from({ length: 16 }, () => EMPTY);
      const rest = p.slice(1);
      children[p[0] as number] = rest.length > 0 ? this.ref({ kind: 'ext', path: rest, child: n.child }) : n.child;
      return this.update({ kind: 'branch', children, value: EMPTY }, changes, depth);
    }
    // Branch. The changes are sorted: those under one child are a run of neighbours (a key
    // ending here, which the state and storage tries never have, sorts first).
    const children = n.children.slice();
    let value = n.value;
    let i = 0;
    while (i < changes.length && (changes[i] as Change).nibbles.length === depth) {
      value = (changes[i] as Change).value ?? EMPTY;
      i++;
    }
    while (i < changes.length) {
      const nib = (changes[i] as Change).nibbles[depth] as number;
      let end = i + 1;
      while (end < changes.length && (changes[end] as Change).nibbles[depth] === nib) end++;
      const child = this.update(this.resolve(children[nib] as Nested), changes.slice(i, end), depth + 1);
      children[nib] = child === undefined ? EMPTY : this.ref(child);
      i = end;
    }
    let live = 0;
    let only = -1;
    for (let c = 0; c < 16; c++) {
      const ref = children[c] as Nested;
      if (Array.isArray(ref) || (ref as Uint8Array).length > 0) {
        live++;
        only = c;
      }
    }
    if (live === 0) return value.length > 0 ? { kind: 'leaf', path: [], value } : undefined;
    if (live === 1 && value.length === 0) return this.joinPrefix([only], this.resolve(children[only] as Nested));
    return { kind: 'branch', children, value };
  }

  /** `child` below the path `prefix`: merged into a leaf or extension where it is one. */
  joinPrefix(prefix: number[], child: Node | undefined): Node | undefined {
    if (child === undefined) return undefined;
    if (child.kind === 'leaf') return { kind: 'leaf', path: [...prefix, ...child.path], value: child.value };
    if (child.kind === 'ext') return { kind: 'ext', path: [...prefix, ...child.path], child: child.child };
    return { kind: 'ext', path: prefix, child: this.ref(child) };
  }
}

/**
 * The root of the trie at `root` after `changes` (key -> new value, or undefined to delete).
 * New nodes go to `put`; the root node is always stored by hash. With `before`, each change's
 * value in the trie at `root` lands at its index in the list (undefined: absent), read on the way
 * down instead of by a walk per key (views of the nodes read: copy what is kept).
 */
export function updateTrie(
  root: Uint8Array,
  changes: Iterable<[Uint8Array, Uint8Array | undefined]>,
  get: SyncNodeGet,
  put: NodePut,
  decoded?: SyncDecodedGet,
  before?: (Uint8Array | undefined)[],
): Uint8Array {
  const list: Change[] = [];
  for (const [k, v] of changes)
    list.push({ nibbles: nibblesOf(k), value: v !== undefined && v.length > 0 ? v : undefined, index: list.length });
  if (before !== undefined) {
    before.length = 0;
    for (let i = 0; i < list.length; i++) before.push(undefined);
  }
  if (list.length === 0) return root;
  const width = (list[0] as Change).nibbles.length;
  if (list.some((c) => c.nibbles.length !== width)) throw new RangeError('updateTrie: keys of one length only');
  list.sort((a, b) => {
    const n = Math.min(a.nibbles.length, b.nibbles.length);
    for (let i = 0; i < n; i++)
      if (a.nibbles[i] !== b.nibbles[i]) return (a.nibbles[i] as number) - (b.nibbles[i] as number);
    return a.nibbles.length - b.nibbles.length;
  });
  const u = new Updater(get, put, decoded, before);
  const start =
    root.length === 32 && !Buffer.from(root).equals(Buffer.from(KECCAK256_RLP)) ? u.resolve(root) : undefined;
  const next = u.update(start, list, 0);
  if (next === undefined) return KECCAK256_RLP;
  const raw = u.raw(next);
  const enc = encodeNested(raw);
  const h = keccak256(enc);
  put(h, enc, raw);
  return h;
}

/** Reads the value at `key` (undefined when absent), synchronously. */
export function trieGetSync(
  root: Uint8Array,
  key: Uint8Array,
  get: SyncNodeGet,
  decoded?: SyncDecodedGet,
): Uint8Array | undefined {
  if (Buffer.from(root).equals(Buffer.from(KECCAK256_RLP))) return undefined;
  const u = new Updater(get, () => {}, decoded);
  const nib = nibblesOf(key);
  let n = u.resolve(root);
  let d = 0;
  for (;;) {
    if (n === undefined) return undefined;
    if (n.kind === 'leaf') {
      const rest = nib.slice(d);
      const path = n.path;
      return rest.length === path.length && rest.every((x, i) => x === path[i]) ? n.value : undefined;
    }
    if (n.kind === 'ext') {
      const p = n.path;
      if (!p.every((x, i) => nib[d + i] === x)) return undefined;
      d += p.length;
      n = u.resolve(n.child);
      continue;
    }
    if (d === nib.length) return n.value.length > 0 ? n.value : undefined;
    n = u.resolve(n.children[nib[d] as number] as Nested);
    d++;
  }
}

/** How many nibbles from `depth` on every entry's path shares with the first's (entries not empty). */
export function sharedNibbles(entries: readonly { nibbles: readonly number[] }[], depth: number): number {
  const first = (entries[0] as { nibbles: readonly number[] }).nibbles;
  let common = 0;
  for (;;) {
    const d = depth + common;
    if (d >= first.length) return common;
    const n = first[d];
    if (!entries.every((e) => e.nibbles.length > d && e.nibbles[d] === n)) return common;
    common++;
  }
}
