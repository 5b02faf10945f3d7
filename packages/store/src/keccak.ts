// Keccak-256 for the read path (the hashed trie keys of accounts and storage slots: one or more
// per eth_getStorageAt, eth_getProof and account read). hash-wasm's WebAssembly Keccak, not the
// pure-JS one of ethereum-cryptography: on this 2-core machine under load the JS one took
// 10-30 µs for a 20-byte address and hash-wasm about 1 µs (bench/RESULTS.md, issue 15), and the
// JS one was 8-12% of a cold eth_getProof's CPU time. The bench already used hash-wasm for the
// same reason (bench/src/synth.ts). One hasher per thread, created once when the module loads;
// calls are synchronous, so it is never shared by two calls at once.
import { createKeccak } from 'hash-wasm';

const hasher = await createKeccak(256);

/** keccak256 of `data`, as a fresh 32-byte array. */
export function keccak256(data: Uint8Array): Uint8Array {
  return hasher.init().update(data).digest('binary');
}
