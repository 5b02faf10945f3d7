// The read path's Keccak-256 (hash-wasm over a scratch copy of the input) against
// ethereum-cryptography's, at every input width the scratch handles and past it.
import { keccak256 as reference } from 'ethereum-cryptography/keccak.js';
import { AddressHashes, keccak256 } from '../src/keccak.js';
import { bytes, hex, rng } from './random.js';

describe('keccak256 (read path)', () => {
  it('matches ethereum-cryptography at every length 0-300, as small heap arrays and as views', () => {
    const r = rng(7);
    for (let n = 0; n <= 300; n++) {
      const input = bytes(r, n);
      const before = hex(input);
      const big = new Uint8Array(n + 16);
      big.set(input, 9);
      expect(hex(keccak256(input))).toBe(hex(reference(input)));
      expect(hex(keccak256(big.subarray(9, 9 + n)))).toBe(hex(reference(input)));
      expect(hex(input)).toBe(before); // the input is only read
    }
  });

  it('hands out a fresh array per call (a later call does not change an earlier digest)', () => {
    const a = keccak256(new Uint8Array(32).fill(1));
    const saved = hex(a);
    const b = keccak256(new Uint8Array(20).fill(2));
    expect(hex(a)).toBe(saved);
    expect(a.buffer).not.toBe(b.buffer);
    expect(hex(b)).toBe(hex(reference(new Uint8Array(20).fill(2))));
  });
});

describe('AddressHashes', () => {
  it('gives keccak256 of every address, hit or miss, in a table small enough to collide all the time', () => {
    const r = rng(11);
    const table = new AddressHashes(8); // 8 slots for 200 addresses: most lookups evict another
    const addrs = Array.from({ length: 200 }, () => bytes(r, 20));
    addrs.push(new Uint8Array(20), Uint8Array.from(addrs[0] as Uint8Array).fill(0, 4, 16)); // same hash bytes as addrs[0]
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < addrs.length; i++) {
        const a = addrs[(i * 7 + round) % addrs.length] as Uint8Array;
        const got = table.of(a);
        expect(hex(got)).toBe(hex(reference(a)));
        got.fill(0); // the caller owns what it gets: the table's copy stays right
        expect(hex(table.of(a))).toBe(hex(reference(a)));
      }
    }
    expect(hex(table.of(new Uint8Array(32).fill(5)))).toBe(hex(reference(new Uint8Array(32).fill(5)))); // not an address: hashed
  });
});
