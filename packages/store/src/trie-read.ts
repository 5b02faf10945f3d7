// A synchronous Merkle-Patricia lookup for the read path (eth_getStorageAt and the account of a
// state): walks from the root to the key's leaf reading each node by its hash with one
// synchronous LevelDB get (or from a node cache), with no trie object, no promises and no
// library checkpoint layer per call. The same walk collects EIP-1186 proofs: the RLP of every
// node it reads by hash, root first (what geth's Prove lists; embedded nodes are inside their
// parent's bytes).
//
// Node shapes (Yellow Paper, appendix D): a branch is a 17-item list (16 children, value); a
// leaf or an extension is a 2-item list [hex-prefix path, value | child]. A child is a 32-byte
// node hash, or the node itself embedded when its RLP is shorter than 32 bytes, or empty.
import { RLP } from '@ethereumjs/rlp';

type Node = Uint8Array | Node[];

/** Node bytes by hash, or undefined when the store has no such node. */
export type NodeSource = (hash: Uint8Array) => Uint8Array | undefined;

/** The nibbles of a key (its bytes split high, low). */
function nibbles(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length * 2);
  for (let i = 0; i < key.length; i++) {
    out[2 * i] = (key[i] as number) >> 4;
    out[2 * i + 1] = (key[i] as number) & 0x0f;
  }
  return out;
}

/**
 * The value stored under `path` (already hashed: keccak of the address or slot) in the trie with
 * root hash `root`, or null when absent. Throws when a referenced node is missing (a damaged
 * store) or malformed.
 */
export function trieGet(nodes: NodeSource, root: Uint8Array, path: Uint8Array, proof?: Uint8Array[]): Uint8Array | null {
  const key = nibbles(path);
  let at = 0;
  const source: NodeSource =
    proof === undefined
      ? nodes
      : (hash) => {
          const raw = nodes(hash);
          if (raw !== undefined) proof.push(raw);
          return raw;
        };
  let node: Node = load(source, root);
  for (;;) {
    if (!Array.isArray(node)) throw new Error('trie: node is not a list');
    if (node.length === 17) {
      if (at === key.length) {
        const v = node[16] as Uint8Array;
        return v.length === 0 ? null : v;
      }
      const child = node[key[at++] as number] as Node;
      const next = follow(source, child);
      if (next === null) return null;
      node = next;
      continue;
    }
    if (node.length !== 2) throw new Error(`trie: node with ${node.length} items`);
    const hp = node[0] as Uint8Array;
    if (!(hp instanceof Uint8Array) || hp.length === 0) throw new Error('trie: bad hex-prefix path');
    const flag = (hp[0] as number) >> 4;
    const leaf = flag >= 2;
    // The node's path nibbles: the low nibble of the first byte when odd, then every byte's two.
    let match = true;
    if (flag & 1) {
      if (key[at] !== ((hp[0] as number) & 0x0f)) match = false;
      at++;
    }
    for (let i = 1; match && i < hp.length; i++) {
      if (key[at] !== (hp[i] as number) >> 4 || key[at + 1] !== ((hp[i] as number) & 0x0f)) match = false;
      at += 2;
    }
    if (!match || at > key.length) return null;
    if (leaf) return at === key.length ? (node[1] as Uint8Array) : null;
    const next = follow(source, node[1] as Node);
    if (next === null) return null;
    node = next;
  }
}

function load(source: NodeSource, hash: Uint8Array): Node {
  const raw = source(hash);
  if (raw === undefined) throw new Error('trie: missing node');
  return RLP.decode(raw) as Node;
}

/** The node a child reference points to (hash, embedded node, or empty). */
function follow(source: NodeSource, ref: Node): Node | null {
  if (Array.isArray(ref)) return ref;
  if (ref.length === 0) return null;
  if (ref.length === 32) return load(source, ref);
  throw new Error('trie: bad child reference');
}
