// eth_getProof answer in geth's AccountResult field order.
import { toData, toQuantity } from '@chainnode/core';
import type { AccountProofRecord, Bytes, Hex, StorageProofRecord } from '@chainnode/core';

export interface JsonStorageProof {
  key: Hex;
  value: Hex;
  proof: Hex[];
}

export interface JsonAccountProof {
  address: Hex;
  accountProof: Hex[];
  balance: Hex;
  codeHash: Hex;
  nonce: Hex;
  storageHash: Hex;
  storageProof: JsonStorageProof[];
}

/**
 * geth echoes a storage key given as exactly 32 bytes as data and any shorter key as a
 * quantity ("0x0", "0x1a"); `keyInputLengths[i]` is the byte length the caller sent.
 */
export function formatStorageKey(slot: Bytes, inputLength: number): Hex {
  if (inputLength === 32) return toData(slot);
  let n = 0n;
  for (const b of slot) n = (n << 8n) | BigInt(b);
  return toQuantity(n);
}

export function formatProof(p: AccountProofRecord, keyInputLengths: number[]): JsonAccountProof {
  return {
    address: toData(p.address),
    accountProof: p.accountProof.map(toData),
    balance: toQuantity(p.balance),
    codeHash: toData(p.codeHash),
    nonce: toQuantity(p.nonce),
    storageHash: toData(p.storageHash),
    storageProof: p.storageProof.map((s, i) => ({
      key: formatStorageKey(s.key, keyInputLengths[i] ?? 32),
      value: toQuantity(s.value),
      proof: s.proof.map(toData),
    })),
  };
}

/** "0x…" lowercase hex through Buffer's native encoder (toData's is a per-byte JS loop). */
function hexData(b: Uint8Array): string {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}

/**
 * The quoted hex text of the upper trie nodes of proofs (the first CACHED_LEVELS of each list) as
 * ASCII bytes, by node object: the store hands out the same node object for as long as its node
 * cache holds it, and the upper nodes of a state (its root, the first levels below it, most of
 * them unchanged over many blocks) are in most proofs of that state and its neighbours. The
 * nodes below are written straight into the answer and not kept: near the leaves a node is in
 * few proofs (one account's), so keeping their text would only evict the shared ones. Bounded:
 * at most NODE_TEXT_ENTRIES texts of ~1 KB each (two generations, as the store's Lru; ~9 MB at
 * 532-byte branch nodes), per app thread.
 */
const NODE_TEXT_ENTRIES = 8192;
const CACHED_LEVELS = 3;
let nodeTextYoung = new Map<Uint8Array, Uint8Array>();
let nodeTextOld = new Map<Uint8Array, Uint8Array>();

function nodeText(node: Uint8Array): Uint8Array {
  let t = nodeTextYoung.get(node);
  if (t !== undefined) return t;
  t = nodeTextOld.get(node);
  if (t === undefined) {
    // Buffer's native hex encoder (a JS loop over the bytes measured ~1.6x slower here).
    const q = Buffer.allocUnsafe(node.length * 2 + 4);
    q.write('"0x', 0, 'latin1');
    q.write(Buffer.from(node.buffer, node.byteOffset, node.byteLength).toString('hex'), 3, 'latin1');
    q[q.length - 1] = 0x22; // "
    t = q;
  }
  if (nodeTextYoung.size >= NODE_TEXT_ENTRIES / 2) {
    nodeTextOld = nodeTextYoung;
    nodeTextYoung = new Map();
  }
  nodeTextYoung.set(node, t);
  return t;
}

/**
 * The eth_getProof answer as JSON text in ASCII bytes, written directly: exactly
 * JSON.stringify(formatProof(p, keyInputLengths)) (every member is a hex string: nothing to
 * escape), without building the object tree or a string per answer, and without hex-encoding
 * an upper node again while a recent proof's text of it is kept (nodeText).
 */
export function proofJson(p: AccountProofRecord, keyInputLengths: number[]): Uint8Array {
  // The pieces in order: ASCII strings (the small members) and node texts.
  const pieces: (string | Uint8Array)[] = [];
  const list = (nodes: Uint8Array[]): void => {
    for (let i = 0; i < nodes.length; i++) {
      if (i > 0) pieces.push(',');
      const node = nodes[i] as Uint8Array;
      if (i < CACHED_LEVELS) pieces.push(nodeText(node));
      else pieces.push('"0x', Buffer.from(node.buffer, node.byteOffset, node.byteLength).toString('hex'), '"');
    }
  };
  pieces.push(`{"address":"${hexData(p.address)}","accountProof":[`);
  list(p.accountProof);
  pieces.push(`],"balance":"${toQuantity(p.balance)}","codeHash":"${hexData(p.codeHash)}","nonce":"${toQuantity(p.nonce)}","storageHash":"${hexData(p.storageHash)}","storageProof":[`);
  for (let i = 0; i < p.storageProof.length; i++) {
    const sp = p.storageProof[i] as StorageProofRecord;
    const inputLength = keyInputLengths[i] ?? 32;
    pieces.push(`${i === 0 ? '' : ','}{"key":"${inputLength === 32 ? hexData(sp.key) : formatStorageKey(sp.key, inputLength)}","value":"${toQuantity(sp.value)}","proof":[`);
    list(sp.proof);
    pieces.push(']}');
  }
  pieces.push(']}');
  let size = 0;
  for (const x of pieces) size += x.length; // ASCII: one byte per char
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const x of pieces) {
    if (typeof x === 'string') at += out.write(x, at, 'latin1');
    else {
      out.set(x, at);
      at += x.length;
    }
  }
  return out;
}
