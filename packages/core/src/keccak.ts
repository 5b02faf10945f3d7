// Keccak-256 for every package: the hashed trie keys of accounts and storage slots (one or more
// per eth_getStorageAt, eth_getProof and account read), block and transaction hashes, and the
// blooms and roots a replica recomputes. hash-wasm's WebAssembly Keccak, not the
// pure-JS one of ethereum-cryptography: on this 2-core machine under load the JS one took
// 10-30 µs for a 20-byte address and hash-wasm about 1 µs (docs/performance.md), and the
// JS one was 8-12% of a cold eth_getProof's CPU time. The bench already used hash-wasm for the
// same reason (bench/src/synth.ts). One hasher per thread, created once when the module loads;
// calls are synchronous, so it is never shared by two calls at once.
//
// The input is copied into a view of memory of our own before it is handed over: hash-wasm reads
// its argument's `.buffer`, and a small Uint8Array (V8 keeps up to 64 bytes in the heap object
// itself; addresses and slot words are such arrays) is given a malloc'd backing store the first
// time its `.buffer` is read. That externalisation, and freeing it after the next young
// collection, was most of the off-heap allocation of a warm eth_getProof (measured with perf).
import { createKeccak } from 'hash-wasm';

const hasher = await createKeccak(256);

/** Off-heap scratch the inputs are copied into, and a view of each common width (20, 32 bytes). */
const SCRATCH = new Uint8Array(new ArrayBuffer(256));
const VIEW_20 = SCRATCH.subarray(0, 20);
const VIEW_32 = SCRATCH.subarray(0, 32);

/** keccak256 of `data`, as a fresh 32-byte array. */
export function keccak256(data: Uint8Array): Uint8Array {
  const n = data.length;
  if (n > SCRATCH.length) return hasher.init().update(data).digest('binary');
  const view = n === 32 ? VIEW_32 : n === 20 ? VIEW_20 : SCRATCH.subarray(0, n);
  view.set(data);
  return hasher.init().update(view).digest('binary');
}
