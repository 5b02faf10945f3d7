// The wire hex encoders against an independent one (a per-byte table written here), at every
// length across the switch to the native encoder and for views that start inside their buffer.
import { keccak256, toData } from '../src/index.js';

const DIGITS = '0123456789abcdef';
function reference(bytes: Uint8Array): string {
  let s = '0x';
  for (const b of bytes) s += (DIGITS[b >> 4] as string) + (DIGITS[b & 15] as string);
  return s;
}

/** Deterministic bytes: keccak chained from a seed. */
function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let h = keccak256(Uint8Array.of(seed));
  for (let i = 0; i < n; i += 32) {
    out.set(h.subarray(0, Math.min(32, n - i)), i);
    h = keccak256(h);
  }
  return out;
}

test('toData equals a per-byte encoding at every length 0-300, for whole arrays and views inside a buffer', () => {
  for (let n = 0; n <= 300; n++) {
    const whole = bytes(n, n & 255);
    expect(toData(whole)).toBe(reference(whole));
    const backing = bytes(n + 13, (n + 1) & 255);
    const view = backing.subarray(7, 7 + n);
    expect(toData(view)).toBe(reference(view));
  }
});

test('a 256 KB payload (a large log) encodes to its 512 KB of digits', () => {
  const big = bytes(1 << 18, 9).subarray(3);
  const hex = toData(big);
  expect(hex.length).toBe(2 + 2 * big.length);
  expect(hex).toBe(reference(big));
});
