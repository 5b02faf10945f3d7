// The read path's Keccak-256 (hash-wasm over a scratch copy of the input) against
// ethereum-cryptography's, at every input width the scratch handles and past it.
import { keccak256 as reference } from 'ethereum-cryptography/keccak.js';
import { keccak256 } from '../src/keccak.js';
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

