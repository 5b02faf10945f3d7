// Common's `customCrypto` hooks for the fixture generator: Keccak-256 through hash-wasm's
// WebAssembly and signing through libsecp256k1 (the `secp256k1` package), in place of the
// pure-JS ones of @ethereumjs/util. Both give the same bytes (RFC 6979 nonces, low s), so the
// chain is the same; the pure-JS signing and trie hashing were a third of the generator's CPU.
import type { CustomCrypto } from '@ethereumjs/common';
import { createKeccak } from 'hash-wasm';
import secp256k1 from 'secp256k1';

const hasher = await createKeccak(256);

function keccak256(data: Uint8Array): Uint8Array {
  return hasher.init().update(data).digest('binary');
}

/** The contract of noble's `secp256k1.sign` as @ethereumjs/tx calls it: format 'recovered', no extra entropy. */
function ecsign(msgHash: Uint8Array, privateKey: Uint8Array, opts?: { extraEntropy?: unknown; format?: string }) {
  if ((opts?.extraEntropy ?? false) !== false || opts?.format !== 'recovered')
    throw new Error(`native ecsign: unsupported options ${JSON.stringify(opts)}`);
  const { signature, recid } = secp256k1.ecdsaSign(msgHash, privateKey);
  const out = new Uint8Array(65);
  out[0] = recid;
  out.set(signature, 1);
  return out;
}

export const NATIVE_CRYPTO: CustomCrypto = { keccak256, ecsign: ecsign as NonNullable<CustomCrypto['ecsign']> };
