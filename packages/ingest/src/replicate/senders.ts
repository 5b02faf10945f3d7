// A signed transaction's sender from its canonical encoding alone: the signing hash of its type
// (legacy with or without an EIP-155 chain id; typed: type || rlp(fields without the signature)),
// then libsecp256k1's recovery. No transaction object is built: @ethereumjs/tx copies its Common
// for each transaction, which was most of replication's decoding time.
import { RLP } from '@ethereumjs/rlp';
import secp256k1 from 'secp256k1';
// core's keccak, not the store's re-export: the sender thread (sender-worker.ts) loads no store.
import { bytesToBigInt, encodeNested, encodeTyped, keccak256, uintBytes } from '@chainnode/core';
import type { Nested } from '@chainnode/core';

const SIGNED_TYPES = new Set([1, 2, 3, 4]);

function word(b: Uint8Array): Uint8Array {
  if (b.length > 32) throw new Error('signature value over 32 bytes');
  const out = new Uint8Array(32);
  out.set(b, 32 - b.length);
  return out;
}

/** What recovering a sender takes: the signing hash, r ++ s (64 bytes) and the recovery id. */
export interface SigningParts {
  msgHash: Uint8Array;
  sig: Uint8Array;
  recovery: number;
}

function parts(msgHash: Uint8Array, recovery: bigint, r: Uint8Array, s: Uint8Array): SigningParts {
  if (recovery !== 0n && recovery !== 1n) throw new Error(`invalid signature recovery id ${recovery}`);
  const sig = new Uint8Array(64);
  sig.set(word(r), 0);
  sig.set(word(s), 32);
  return { msgHash, sig, recovery: Number(recovery) };
}

/** The sender of `p`: libsecp256k1's recovery, the public key's keccak, its last 20 bytes. */
export function recoverSender(p: SigningParts): Uint8Array {
  const pub = secp256k1.ecdsaRecover(p.sig, p.recovery, p.msgHash, false);
  return keccak256(pub.subarray(1)).subarray(12);
}

/** The signing parts of a legacy transaction given as its RLP value list. */
export function legacySigning(fields: Uint8Array[]): SigningParts {
  if (fields.length !== 9) throw new Error(`legacy transaction has ${fields.length} fields, not 9`);
  const v = bytesToBigInt(fields[6] as Uint8Array);
  const r = fields[7] as Uint8Array;
  const s = fields[8] as Uint8Array;
  const unsigned = fields.slice(0, 6);
  if (v === 27n || v === 28n) return parts(keccak256(encodeNested(unsigned)), v - 27n, r, s);
  if (v < 35n) throw new Error(`legacy transaction v ${v} is neither 27/28 nor EIP-155`);
  const chainId = (v - 35n) / 2n;
  const msg = keccak256(encodeNested([...unsigned, uintBytes(chainId), new Uint8Array(0), new Uint8Array(0)]));
  return parts(msg, v - 35n - 2n * chainId, r, s);
}

/** The sender of a legacy transaction given as its RLP value list. */
export function legacySender(fields: Uint8Array[]): Uint8Array {
  return recoverSender(legacySigning(fields));
}

/** The signing parts of a typed transaction (types 1-4) given as its envelope bytes. */
export function typedSigning(bytes: Uint8Array): SigningParts {
  const type = bytes[0] as number;
  if (!SIGNED_TYPES.has(type)) throw new Error(`transaction type ${type} is not a signed type`);
  const fields = RLP.decode(bytes.subarray(1)) as Uint8Array[];
  if (!Array.isArray(fields) || fields.length < 4) throw new Error('typed transaction payload is not a list');
  const n = fields.length;
  const msg = encodeTyped(type, fields.slice(0, n - 3) as Nested[]);
  return parts(
    keccak256(msg),
    bytesToBigInt(fields[n - 3] as Uint8Array),
    fields[n - 2] as Uint8Array,
    fields[n - 1] as Uint8Array,
  );
}

/** The sender of a typed transaction (types 1-4) given as its envelope bytes. */
export function typedSender(bytes: Uint8Array): Uint8Array {
  return recoverSender(typedSigning(bytes));
}
