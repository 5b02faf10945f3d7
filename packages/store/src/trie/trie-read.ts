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
//
// The walk reads the RLP in place: it does not decode a node into arrays (a branch is 17 items
// and the walk needs one of them), it skips items by their headers and follows the one child
// reference the key's nibble selects. Every header is bounds-checked against the node's bytes;
// a node that is not well-formed RLP of one of the shapes above throws ("rlp: ..." for bad RLP,
// which the header and body scanners below share; "trie: ..." for a bad node shape).

import { MissingTrieNodeError, bytesToBigInt } from '@chainnode/core';

/** Node bytes by hash, or undefined when the store has no such node. */
export type NodeSource = (hash: Uint8Array) => Uint8Array | undefined;

// Scan state: the item the last header() call read. Module-level to keep the walk free of
// per-item allocations (the walk is synchronous and not re-entrant).
let itemStart = 0; // first byte of the item's payload
let itemEnd = 0; // one past its last byte
let itemList = false; // a list (else a byte string)

/** Reads the RLP header of the item at `pos` (which must end by `limit`) into itemStart/itemEnd/itemList. */
function header(b: Uint8Array, pos: number, limit: number): void {
  if (pos >= limit) throw new Error('rlp: truncated item');
  const h = b[pos] as number;
  if (h < 0x80) {
    itemStart = pos;
    itemEnd = pos + 1;
    itemList = false;
    return;
  }
  if (h < 0xb8) {
    itemStart = pos + 1;
    itemEnd = itemStart + h - 0x80;
    itemList = false;
  } else if (h < 0xc0) {
    itemStart = pos + 1 + (h - 0xb7);
    itemEnd = itemStart + lengthAt(b, pos + 1, h - 0xb7, limit);
    itemList = false;
  } else if (h < 0xf8) {
    itemStart = pos + 1;
    itemEnd = itemStart + h - 0xc0;
    itemList = true;
  } else {
    itemStart = pos + 1 + (h - 0xf7);
    itemEnd = itemStart + lengthAt(b, pos + 1, h - 0xf7, limit);
    itemList = true;
  }
  if (itemEnd > limit) throw new Error('rlp: truncated item');
}

/** A big-endian length of `n` bytes at `pos` (a node is far below 2^32 bytes). */
function lengthAt(b: Uint8Array, pos: number, n: number, limit: number): number {
  if (n > 4 || pos + n > limit) throw new Error('rlp: bad length');
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + (b[pos + i] as number);
  return len;
}

/**
 * The state root of a header from its RLP (the list's 4th item: parentHash, uncleHash, coinbase,
 * stateRoot), read in place with the walk's scanner instead of decoding the ~20 fields; a copy.
 * State reads need only this field. Throws on malformed RLP.
 */
export function headerStateRoot(rlp: Uint8Array): Uint8Array {
  header(rlp, 0, rlp.length);
  if (!itemList || itemEnd !== rlp.length) throw new Error('header: not one RLP list');
  const end = itemEnd;
  let p = itemStart;
  for (let i = 0; i < 3; i++) {
    header(rlp, p, end);
    p = itemEnd;
  }
  header(rlp, p, end);
  if (itemList || itemEnd - itemStart !== 32) throw new Error('header: stateRoot is not 32 bytes');
  return rlp.slice(itemStart, itemEnd);
}

/** An account as the state trie stores it: RLP [nonce, balance, storageRoot, codeHash]. */
export interface AccountFields {
  nonce: bigint;
  balance: bigint;
  storageRoot: Uint8Array;
  codeHash: Uint8Array;
}

/**
 * The fields of an account's RLP (a state-trie leaf value), read in place with the walk's
 * scanner: what @ethereumjs/util's createAccountFromRLP gives, with its checks (four byte
 * strings, 32-byte roots), without decoding into arrays or building an Account. The roots are
 * views of `rlp` (which trieGet gives as a view of its node: copy them to keep them). Throws on
 * anything else.
 */
export function accountFields(rlp: Uint8Array): AccountFields {
  const end = wholeList(rlp, 'account');
  const nonce = uintItem(rlp, itemStart, end, 'account: nonce');
  const balance = uintItem(rlp, itemEnd, end, 'account: balance');
  const storageRoot = hash32At(rlp, itemEnd, end, 'account: storageRoot');
  const codeHash = hash32At(rlp, itemEnd, end, 'account: codeHash');
  if (itemEnd !== end) throw new Error('account: more than 4 items');
  return { nonce, balance, storageRoot, codeHash };
}

/** Checks that `rlp` is one RLP list and returns its end; the scan state is left on it. */
function wholeList(rlp: Uint8Array, what: string): number {
  header(rlp, 0, rlp.length);
  if (!itemList || itemEnd !== rlp.length) throw new Error(`${what}: not one RLP list`);
  return itemEnd;
}

/** The unsigned integer item at `pos` (before `end`); the scan state is left on it. */
function uintItem(b: Uint8Array, pos: number, end: number, what: string): bigint {
  header(b, pos, end);
  if (itemList) throw new Error(`${what} is a list`);
  return uintAt(b, itemStart, itemEnd, what);
}

/** The 32-byte string item at `pos` (before `end`), as a view; the scan state is left on it. */
function hash32At(b: Uint8Array, pos: number, end: number, what: string): Uint8Array {
  header(b, pos, end);
  if (itemList || itemEnd - itemStart !== 32) throw new Error(`${what} must be 32 bytes`);
  return b.subarray(itemStart, itemEnd);
}

/** The payload of one RLP byte string (a storage-trie leaf value: the slot's word, RLP-encoded), in place. */
export function rlpString(rlp: Uint8Array): Uint8Array {
  header(rlp, 0, rlp.length);
  if (itemList || itemEnd !== rlp.length) throw new Error('rlp: not one byte string');
  return rlp.subarray(itemStart, itemEnd);
}

/** The header fields a transaction's answer shows of its block (headerTxFields). */
export interface HeaderTxFields {
  timestamp: bigint;
  baseFeePerGas?: bigint;
}

/** A big-endian unsigned integer item (at most 32 bytes) as a bigint. */
function uintAt(b: Uint8Array, start: number, end: number, what: string): bigint {
  if (end - start > 32) throw new Error(`${what} longer than 32 bytes`);
  return bytesToBigInt(b.subarray(start, end));
}

/**
 * The header fields a transaction's answer (and a log's, its timestamp: logs.ts) shows of its
 * block (timestamp: the 12th item; baseFeePerGas: the 16th, from London on), read in place from
 * the header's RLP like headerStateRoot. Throws on malformed RLP.
 */
export function headerTxFields(rlp: Uint8Array): HeaderTxFields {
  header(rlp, 0, rlp.length);
  if (!itemList || itemEnd !== rlp.length) throw new Error('header: not one RLP list');
  const end = itemEnd;
  let p = itemStart;
  let timestamp: bigint | undefined;
  for (let i = 0; i <= 15 && p < end; i++) {
    header(rlp, p, end);
    if (i === 11 || i === 15) {
      if (itemList) throw new Error(`header: item ${i} is a list`);
      const v = uintAt(rlp, itemStart, itemEnd, i === 11 ? 'header: timestamp' : 'header: baseFeePerGas');
      if (i === 15) return { timestamp: timestamp as bigint, baseFeePerGas: v };
      timestamp = v;
    }
    p = itemEnd;
  }
  if (timestamp === undefined) throw new Error('header: fewer than 12 items');
  return { timestamp };
}

/**
 * The `index`-th transaction's bytes (as the block carries them) from a Bodies row that holds its
 * transactions inline (an earlier release's, [size, [tx..], [uncle..], withdrawals?]: schema.ts
 * bodyCodec), read in place with the same scanner: a lookup of one transaction neither decodes nor
 * copies the others. Undefined past the last transaction, or when the row holds a count instead
 * (its transactions are BodyTxs rows: bodyRowTransaction); a copy otherwise. Throws on malformed RLP.
 */
export function bodyTransaction(rlp: Uint8Array, index: number): Uint8Array | undefined {
  if (!bodyHoldsTransactions(rlp)) return undefined;
  return nthString(rlp, itemStart, itemEnd, index, 'body');
}

/**
 * Whether a Bodies row holds its transactions inline (an earlier release's) rather than their
 * count; the scanner is left on that item (its span: itemStart, itemEnd).
 */
export function bodyHoldsTransactions(rlp: Uint8Array): boolean {
  header(rlp, 0, rlp.length);
  if (!itemList || itemEnd !== rlp.length) throw new Error('body: not one RLP list');
  const end = itemEnd;
  header(rlp, itemStart, end); // size
  header(rlp, itemEnd, end); // the transactions, or their count
  return itemList;
}

/**
 * Transaction `i` of a BodyTxs row (RLP [tx..]: schema.ts), read in place; undefined past the
 * row's last; a copy otherwise. Throws on malformed RLP.
 */
export function bodyRowTransaction(rlp: Uint8Array, i: number): Uint8Array | undefined {
  header(rlp, 0, rlp.length);
  if (!itemList || itemEnd !== rlp.length) throw new Error('body row: not one RLP list');
  return nthString(rlp, itemStart, itemEnd, i, 'body row');
}

/** The `index`-th byte string of the list items in [start, end), a copy; undefined past the last. */
function nthString(rlp: Uint8Array, start: number, end: number, index: number, what: string): Uint8Array | undefined {
  let p = start;
  for (let i = 0; i < index; i++) {
    if (p >= end) return undefined;
    header(rlp, p, end);
    p = itemEnd;
  }
  if (p >= end) return undefined;
  header(rlp, p, end);
  if (itemList) throw new Error(`${what}: a transaction is not a byte string`);
  return rlp.slice(itemStart, itemEnd);
}

/** What a hashes-only block answer shows of a stored body, besides its transaction hashes (bodyBlockFields). */
export interface BodyBlockFields {
  /** RLP length of the whole block. */
  size: number;
  /** The number of transactions. */
  txCount: number;
  /** The uncles list's RLP (a view; 0xc0: none). */
  uncles: Uint8Array;
  /** The withdrawals list's RLP (a view), absent before Shanghai. */
  withdrawals?: Uint8Array;
}

/**
 * The size, transaction count, uncles and withdrawals of a Bodies row's RLP ([size, txCount,
 * [uncle..], withdrawals?], or an earlier release's [size, [tx..], ...]: schema.ts bodyCodec),
 * read in place with the same scanner: inline transactions are counted by their headers, not
 * decoded or copied. Throws on malformed RLP.
 */
export function bodyBlockFields(rlp: Uint8Array): BodyBlockFields {
  const end = wholeList(rlp, 'body');
  const size = Number(uintItem(rlp, itemStart, end, 'body: size'));
  header(rlp, itemEnd, end);
  const txsEnd = itemEnd;
  let txCount = 0;
  if (!itemList) txCount = Number(uintAt(rlp, itemStart, itemEnd, 'body: transaction count'));
  else
    for (let p = itemStart; p < txsEnd; txCount++) {
      header(rlp, p, txsEnd);
      p = itemEnd;
    }
  const list = (at: number, what: string): Uint8Array => {
    header(rlp, at, end);
    if (!itemList) throw new Error(`body: the ${what} are not a list`);
    return rlp.subarray(at, itemEnd);
  };
  const uncles = list(txsEnd, 'uncles');
  const fields: BodyBlockFields = { size, txCount, uncles };
  if (itemEnd < end) fields.withdrawals = list(itemEnd, 'withdrawals');
  if (itemEnd !== end) throw new Error('body: more than 4 items');
  return fields;
}

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
 * root hash `root`, or null when absent. Throws MissingTrieNodeError (naming the node) when a
 * referenced node is missing (a store that joined its chain holds only proven paths; else a
 * damaged store), and an Error when a node is malformed. The value is a view of its node's bytes, valid as long as they are (a
 * slab's view: until the slab comes round, node-slab.ts): callers copy what they keep. A copy
 * here was a malloc'd array per walk (values over 64 bytes, an account's, are not kept in the
 * array object), on every warm eth_getProof.
 */
export function trieGet(
  nodes: NodeSource,
  root: Uint8Array,
  path: Uint8Array,
  proof?: Uint8Array[],
): Uint8Array | null {
  const key = nibbles(path);
  let at = 0;
  // The node being read: bytes b[pos, end) are its RLP (a whole stored node, or one embedded in it).
  let b = load(nodes, root, proof);
  let pos = 0;
  let end = b.length;
  for (;;) {
    header(b, pos, end);
    if (!itemList || itemEnd !== end) throw new Error('trie: node is not a list');
    const listEnd = itemEnd;
    // Item 0, item 1, then the rest: two items are a leaf or an extension, 17 a branch.
    const first = itemStart;
    header(b, first, listEnd);
    const s0 = itemStart;
    const e0 = itemEnd;
    const l0 = itemList;
    let p = itemEnd;
    header(b, p, listEnd);
    // The child to follow: its header's position, its payload [rs, re), whether it is a list.
    let rpos: number;
    let rs: number;
    let re: number;
    let rl: boolean;
    if (itemEnd !== listEnd) {
      // A branch: find child `nibble` (or the value, item 16) and check there are 17 items.
      const want = at === key.length ? 16 : (key[at] as number);
      // The chosen item: its header's position and its payload [cs, ce).
      let cpos = first;
      let cs = s0;
      let ce = e0;
      let cl = l0;
      let count = 2;
      if (want === 1) {
        cpos = p;
        cs = itemStart;
        ce = itemEnd;
        cl = itemList;
      }
      p = itemEnd;
      while (p < listEnd) {
        header(b, p, listEnd);
        if (count === want) {
          cs = itemStart;
          ce = itemEnd;
          cl = itemList;
          cpos = p;
        }
        count++;
        p = itemEnd;
      }
      if (count !== 17) throw new Error(`trie: node with ${count} items`);
      if (want === 16) {
        if (cl) throw new Error('trie: branch value is a list');
        return ce === cs ? null : b.subarray(cs, ce);
      }
      at++;
      rpos = cpos;
      rs = cs;
      re = ce;
      rl = cl;
    } else {
      // A leaf or an extension: [hex-prefix path, value | child].
      if (l0 || e0 === s0) throw new Error('trie: bad hex-prefix path');
      const vs = itemStart;
      const ve = itemEnd;
      const vl = itemList;
      const vpos = p;
      const flag = (b[s0] as number) >> 4;
      const leaf = flag >= 2;
      // The node's path nibbles: the low nibble of the first byte when odd, then every byte's two.
      let match = true;
      if (flag & 1) {
        if (key[at] !== ((b[s0] as number) & 0x0f)) match = false;
        at++;
      }
      for (let i = s0 + 1; match && i < e0; i++) {
        if (key[at] !== (b[i] as number) >> 4 || key[at + 1] !== ((b[i] as number) & 0x0f)) match = false;
        at += 2;
      }
      if (!match || at > key.length) return null;
      if (leaf) {
        if (vl) throw new Error('trie: leaf value is a list');
        return at === key.length ? b.subarray(vs, ve) : null;
      }
      rpos = vpos;
      rs = vs;
      re = ve;
      rl = vl;
    }
    // Follow the child (a branch's or an extension's): empty, a 32-byte hash, or an embedded
    // node (a list, read in place).
    if (rl) {
      pos = rpos;
      end = re;
      continue;
    }
    if (re === rs) return null;
    if (re - rs !== 32) throw new Error('trie: bad child reference');
    b = load(nodes, b.subarray(rs, re), proof);
    pos = 0;
    end = b.length;
  }
}

function load(nodes: NodeSource, hash: Uint8Array, proof: Uint8Array[] | undefined): Uint8Array {
  const raw = nodes(hash);
  if (raw === undefined) throw new MissingTrieNodeError(hash.slice());
  proof?.push(raw);
  return raw;
}
