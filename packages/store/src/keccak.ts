// Keccak-256 for the read path (the hashed trie keys of accounts and storage slots: one or more
// per eth_getStorageAt, eth_getProof and account read). hash-wasm's WebAssembly Keccak, not the
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
import { cacheKeyOf } from './hash-cache.js';

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

/**
 * keccak256 of accounts' addresses (the state trie's keys), remembered in a direct-mapped table
 * of typed arrays: a hit is a 20-byte compare and a 32-byte copy instead of a hash. Real traffic
 * reads a few hot contracts over and over (a token's balances, a pool's reserves); a slot read
 * or proof hashes its account's address every time. No objects are kept, so a table that turns
 * over (accounts at random) costs the collector nothing; a colliding address replaces the one
 * before it (a miss, never a wrong hash: the whole address is compared).
 */
export class AddressHashes {
  private readonly mask: number;
  private readonly keys: Uint8Array;
  private readonly hashes: Uint8Array;
  private readonly filled: Uint8Array;

  /** `slots` addresses (rounded up to a power of two): 53 bytes each. */
  constructor(slots: number) {
    let n = 1;
    while (n < slots) n *= 2;
    this.mask = n - 1;
    this.keys = new Uint8Array(n * 20);
    this.hashes = new Uint8Array(n * 32);
    this.filled = new Uint8Array(n);
  }

  /** keccak256(address), a fresh 32-byte array (any other length is hashed, not kept). */
  of(address: Uint8Array): Uint8Array {
    if (address.length !== 20) return keccak256(address);
    const slot = cacheKeyOf(address) & this.mask; // the caches' key mix (hash-cache.ts)
    const k = slot * 20;
    const keys = this.keys;
    if (this.filled[slot] === 1) {
      let same = true;
      for (let i = 0; i < 20; i++) {
        if (keys[k + i] !== address[i]) {
          same = false;
          break;
        }
      }
      if (same) return this.hashes.slice(slot * 32, slot * 32 + 32);
    }
    const hash = keccak256(address);
    keys.set(address, k);
    this.hashes.set(hash, slot * 32);
    this.filled[slot] = 1;
    return hash;
  }
}
