// eth_getProof answer in geth's AccountResult field order.
import { toData, toQuantity } from '@chainnode/core';
import type { AccountProofRecord, Bytes, Hex } from '@chainnode/core';

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
