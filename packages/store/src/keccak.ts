// keccak256 lives in core (core/src/keccak.ts); the store adds a table of hashed addresses.
import { keccak256 } from '@chainnode/core';
import { cacheKeyOf } from './hash-cache.js';

export { keccak256 };

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
