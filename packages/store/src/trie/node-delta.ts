// Branch nodes stored as deltas. A block rewrites the branch nodes along every path it
// changes, and a branch node is 16 child references of which the block changed one or two: stored
// whole, each version repeats ~500 bytes. A TrieNodes row may instead hold a delta against the node
// at the same path in the parent block's trie (its base):
//
//   0x00 ++ depth(1) ++ baseHash(32) ++ changed(2, big-endian bitmask: bit i = child i)
//        ++ the RLP of each changed child reference, in child order
//
// A node's RLP is a list, so its first byte is at least 0xc0: a row starting 0x00 is a delta. The
// depth is the number of deltas between the row and a whole node (1: its base is whole); a version
// that would exceed MAX_CHAIN is stored whole, so a read takes at most MAX_CHAIN + 1 rows (the
// upper levels, which change every block, are the ones read most and sit in the node caches).
// Only branches without a value (every branch of the state and storage tries) are stored as deltas;
// leaves and extensions stay whole. A node stored already keeps its stored row (the writer
// re-puts it as it is), so the bases of a chain were all written before it: no cycle.
// Readers never see a delta: nodeBytes() rebuilds the node, byte for byte the RLP its hash names.
// bench/trie-delta measures the saving (about half of the archive trie on the mainnet-shaped chain).
import { RLP } from '@ethereumjs/rlp';
import { encodeNested } from '@chainnode/core';
import type { Nested } from './trie-update.js';

/** A TrieNodes row's bytes by node hash (whole or delta); undefined when the store lacks it. */
export type RawNodeGet = (hash: Uint8Array) => Uint8Array | undefined;

export const DELTA_MARK = 0x00;
/** Deltas between a row and its whole node, at most. */
export const MAX_CHAIN = 8;
const HEAD = 2 + 32 + 2;

/** True when a TrieNodes row (of a node key, not a code key) holds a delta. */
export function isDelta(row: Uint8Array): boolean {
  return row[0] === DELTA_MARK;
}

/** The base hash of a delta row (a view). */
export function deltaBase(row: Uint8Array): Uint8Array {
  return row.subarray(2, 34);
}

/** The chain depth of a row: 0 for a whole node. */
export function rowDepth(row: Uint8Array): number {
  return isDelta(row) ? (row[1] as number) : 0;
}

/** A corrupt or incomplete store: a delta's base is missing, or the chain is malformed. */
export class NodeDeltaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NodeDeltaError';
  }
}

/**
 * The node bytes (RLP) of row `row`: the row itself when it is whole, else the base rebuilt
 * (through `get`, recursively) with the delta's children put in.
 */
export function nodeBytes(row: Uint8Array, get: RawNodeGet): Uint8Array {
  if (!isDelta(row)) return row;
  const chain: Uint8Array[] = [row];
  let base: Uint8Array | undefined = row;
  while (isDelta(base)) {
    const hash = deltaBase(base);
    base = get(hash);
    if (base === undefined)
      throw new NodeDeltaError(`trie node delta: base ${Buffer.from(hash).toString('hex')} missing`);
    if (chain.length > MAX_CHAIN * 4) throw new NodeDeltaError('trie node delta: chain too long');
    if (isDelta(base)) chain.push(base);
  }
  const node = RLP.decode(base) as Nested[];
  if (!Array.isArray(node) || node.length !== 17) throw new NodeDeltaError('trie node delta: base is not a branch');
  for (let i = chain.length - 1; i >= 0; i--) applyDelta(node, chain[i] as Uint8Array);
  return encodeNested(node);
}

function applyDelta(node: Nested[], delta: Uint8Array): void {
  const changed = ((delta[34] as number) << 8) | (delta[35] as number);
  let rest: Uint8Array = delta.subarray(HEAD);
  for (let i = 0; i < 16; i++) {
    if ((changed & (1 << i)) === 0) continue;
    const { data, remainder } = RLP.decode(rest, true) as unknown as { data: Nested; remainder: Uint8Array };
    node[i] = data;
    rest = remainder;
  }
  if (rest.length !== 0) throw new NodeDeltaError('trie node delta: trailing bytes');
}

/**
 * The row to store for `node` (a branch, decoded; `encoded` its RLP) when the node at its path in
 * the parent's trie is `base` (decoded, whole), stored under `baseHash` as `baseRow`: a delta
 * when the base is a branch, both hold no value, the chain stays within MAX_CHAIN and the delta
 * is smaller; else `encoded`.
 */
export function deltaRow(
  node: Nested[],
  encoded: Uint8Array,
  base: Nested[],
  baseHash: Uint8Array,
  baseRow: Uint8Array,
): Uint8Array {
  if (node.length !== 17 || base.length !== 17) return encoded;
  if ((node[16] as Uint8Array).length !== 0 || (base[16] as Uint8Array).length !== 0) return encoded;
  const depth = rowDepth(baseRow) + 1;
  if (depth > MAX_CHAIN) return encoded;
  let changed = 0;
  const parts: Uint8Array[] = [];
  let size = HEAD;
  for (let i = 0; i < 16; i++) {
    if (sameChild(node[i] as Nested, base[i] as Nested)) continue;
    const a = encodeNested(node[i] as Nested);
    changed |= 1 << i;
    parts.push(a);
    size += a.length;
  }
  if (changed === 0 || size >= encoded.length) return encoded;
  const out = new Uint8Array(size);
  out[0] = DELTA_MARK;
  out[1] = depth;
  out.set(baseHash, 2);
  out[34] = changed >> 8;
  out[35] = changed & 0xff;
  let at = HEAD;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Two child references equal (a hash or empty: their bytes; an inline node: its RLP). */
export function sameChild(a: Nested | undefined, b: Nested | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a instanceof Uint8Array || b instanceof Uint8Array)
    return a instanceof Uint8Array && b instanceof Uint8Array && Buffer.compare(a, b) === 0;
  return Buffer.compare(encodeNested(a), encodeNested(b)) === 0;
}

/** The node stored under `hash` (a delta rebuilt); undefined when the store lacks it. */
export function storedNode(get: RawNodeGet, hash: Uint8Array): Uint8Array | undefined {
  const row = get(hash);
  return row === undefined ? undefined : nodeBytes(row, get);
}

/** The hashes of the rows `row` is built on, nearest first (none for a whole node). */
export function deltaChain(row: Uint8Array, get: RawNodeGet): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let r: Uint8Array | undefined = row; r !== undefined && isDelta(r); ) {
    const base = deltaBase(r);
    out.push(base);
    r = get(base);
  }
  return out;
}
