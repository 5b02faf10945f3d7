// The root of the trie rlp(index) -> item that transactions, receipts and withdrawals are
// committed to, built in memory in one pass (sorted keys, recursive split): no database, no
// awaits, each node hashed once. The same root @ethereumjs/mpt gives (the tests compare them).
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP } from '@ethereumjs/util';
import { encodeNested } from '@chainnode/core';
import type { Nested } from '@chainnode/core';
import { hexPrefix, keccak256, nibblesOf, sharedNibbles } from '@chainnode/store';

interface Entry {
  nibbles: number[];
  value: Uint8Array;
}

/** A child as its parent holds it: embedded when its encoding is under 32 bytes, else its hash. */
function ref(node: Nested): Nested {
  const enc = encodeNested(node);
  return enc.length < 32 ? node : keccak256(enc);
}

function build(entries: Entry[], depth: number): Nested {
  if (entries.length === 1) {
    const e = entries[0] as Entry;
    return [hexPrefix(e.nibbles.slice(depth), true), e.value];
  }
  // Longest common prefix below `depth`.
  const first = (entries[0] as Entry).nibbles;
  const common = sharedNibbles(entries, depth);
  if (common > 0) return [hexPrefix(first.slice(depth, depth + common), false), ref(build(entries, depth + common))];
  const branch: Nested[] = Array.from({ length: 17 }, () => new Uint8Array(0));
  const groups: Entry[][] = Array.from({ length: 16 }, () => []);
  for (const e of entries) {
    if (e.nibbles.length === depth) branch[16] = e.value;
    else (groups[e.nibbles[depth] as number] as Entry[]).push(e);
  }
  groups.forEach((g, i) => {
    if (g.length > 0) branch[i] = ref(build(g, depth + 1));
  });
  return branch;
}

export function orderedTrieRoot(items: readonly Uint8Array[]): Uint8Array {
  if (items.length === 0) return KECCAK256_RLP;
  const entries = items.map((value, i) => ({ nibbles: nibblesOf(RLP.encode(i)), value }));
  return keccak256(encodeNested(build(entries, 0)));
}
