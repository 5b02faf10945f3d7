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

/** Lowercase "0x…" hex of bytes through Buffer's native encoder (not a per-byte JS loop). */
function hexData(b: Uint8Array): string {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}

/**
 * The hex text of trie nodes, by node object: the store hands out the same node object for as
 * long as its node cache holds it, and the upper nodes of a state (the root, its first levels)
 * are in most proofs of that state. Bounded: at most NODE_HEX_ENTRIES texts of ~1 KB each (two
 * generations, see Lru in the store; ~9 MB at 532-byte branch nodes), per app thread.
 */
const NODE_HEX_ENTRIES = 8192;
let nodeHexYoung = new Map<Uint8Array, string>();
let nodeHexOld = new Map<Uint8Array, string>();

function nodeHex(node: Uint8Array): string {
  let h = nodeHexYoung.get(node);
  if (h !== undefined) return h;
  h = nodeHexOld.get(node) ?? hexData(node);
  if (nodeHexYoung.size >= NODE_HEX_ENTRIES / 2) {
    nodeHexOld = nodeHexYoung;
    nodeHexYoung = new Map();
  }
  nodeHexYoung.set(node, h);
  return h;
}

function nodeList(nodes: Uint8Array[]): string {
  if (nodes.length === 0) return '[]';
  let s = `["${nodeHex(nodes[0] as Uint8Array)}"`;
  for (let i = 1; i < nodes.length; i++) s += `,"${nodeHex(nodes[i] as Uint8Array)}"`;
  return `${s}]`;
}

/**
 * The eth_getProof answer written as JSON text directly: exactly JSON.stringify(formatProof(p,
 * keyInputLengths)) (every member is a hex string, so nothing needs escaping), without building
 * the object tree or hex-encoding a node again when a recent proof already carried it.
 */
export function proofText(p: AccountProofRecord, keyInputLengths: number[]): string {
  let s = `{"address":"${hexData(p.address)}","accountProof":${nodeList(p.accountProof)},"balance":"${toQuantity(p.balance)}","codeHash":"${hexData(p.codeHash)}","nonce":"${toQuantity(p.nonce)}","storageHash":"${hexData(p.storageHash)}","storageProof":[`;
  for (let i = 0; i < p.storageProof.length; i++) {
    const sp = p.storageProof[i] as StorageProofRecord;
    s += `${i === 0 ? '' : ','}{"key":"${formatStorageKey(sp.key, keyInputLengths[i] ?? 32)}","value":"${toQuantity(sp.value)}","proof":${nodeList(sp.proof)}}`;
  }
  return `${s}]}`;
}
