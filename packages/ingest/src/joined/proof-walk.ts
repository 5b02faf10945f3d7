// An EIP-1186 proof checked by the store's synchronous trie walk (trie-read.ts): no trie object
// per proof, no promises. The walk starts at the state (or storage) root and asks for each node by
// the hash its parent names; a node is taken only when its keccak is that hash, so whatever the
// walk reads is proven by the root alone, and a proof that does not lead there (a node missing,
// changed or malformed) throws. The proof's nodes are hashed in the order they come (root first,
// as geth and anvil list them), each at most once; nodes of recent proofs (the top of a state
// trie is in every proof of its block) are known by hash already and not hashed again.
import { trieGet } from '@chainnode/store';
import type { NodeSource } from '@chainnode/store';
import { Lru, bytesEqual, keccak256 } from '@chainnode/core';

const key = (hash: Uint8Array): string => Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength).toString('latin1');

/** Trie nodes already proven, by hash (content-addressed: never stale); the least recently used forgotten first. */
export class ProvenNodes {
  private readonly m: Lru<string, Uint8Array>;
  constructor(capacity = 8192) {
    this.m = new Lru(capacity);
  }
  get(hash: Uint8Array): Uint8Array | undefined {
    return this.m.get(key(hash));
  }
  /** `node` whose keccak is `hash` (the caller checked). */
  add(hash: Uint8Array, node: Uint8Array): void {
    const k = key(hash);
    if (this.m.get(k) === undefined) this.m.set(k, node);
  }
}

/**
 * The value under `path` (a hashed key) in the trie `root` as `proof` proves it: its bytes, or
 * null when the proof shows it absent. Pushes every node the walk read onto `walked` (the ones
 * worth keeping: a proof's extra nodes prove nothing). Throws when the proof does not lead from
 * `root` to an answer.
 */
export function provenValue(
  root: Uint8Array,
  path: Uint8Array,
  proof: Uint8Array[],
  known: ProvenNodes,
  walked: Uint8Array[],
): Uint8Array | null {
  const own = new Map<string, Uint8Array>();
  let next = 0;
  const source: NodeSource = (hash) => {
    const k = key(hash);
    const hit = own.get(k) ?? known.get(hash);
    if (hit !== undefined) {
      // The proof lists it here too: skip it rather than hash it later.
      if (next < proof.length && bytesEqual(proof[next] as Uint8Array, hit)) next++;
      return hit;
    }
    while (next < proof.length) {
      const node = proof[next++] as Uint8Array;
      const h = keccak256(node);
      own.set(key(h), node);
      known.add(h, node);
      if (bytesEqual(h, hash)) return node;
    }
    return undefined;
  };
  const v = trieGet(source, root, path, walked);
  return v === null ? null : v.slice();
}
