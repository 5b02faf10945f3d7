// Test-only accounts of the fixture chain. The private keys are derived from public strings:
// they protect nothing and must never hold value on a real network.
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { Address, isValidPrivate, privateToAddress, privateToPublic } from '@ethereumjs/util';

export const SENDER_COUNT = 60;

export interface Sender {
  readonly index: number;
  readonly privateKey: Uint8Array;
  /** Uncompressed, without the 0x04 prefix: what ecrecover returns for this sender's signatures. */
  readonly publicKey: Uint8Array;
  readonly address: Address;
  readonly hex: string;
}

function derive(label: string): Uint8Array {
  return keccak256(new TextEncoder().encode(label));
}

export function senderKey(index: number): Uint8Array {
  const key = derive(`chainnode-fixture-sender-${index}`);
  if (!isValidPrivate(key)) throw new Error(`derived key ${index} is not a valid secp256k1 key`);
  return key;
}

export function makeSenders(count = SENDER_COUNT): Sender[] {
  const out: Sender[] = [];
  for (let i = 0; i < count; i++) {
    const privateKey = senderKey(i);
    const address = new Address(privateToAddress(privateKey));
    out.push({ index: i, privateKey, publicKey: privateToPublic(privateKey), address, hex: address.toString() });
  }
  return out;
}

/** An address nobody holds a key for (miners, fresh recipients): last 20 bytes of keccak(label). */
export function labelAddress(label: string): Address {
  return new Address(derive(label).slice(12));
}
