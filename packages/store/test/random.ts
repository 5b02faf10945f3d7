// Seeded random input for the store's tests: the same tries, nodes and keys on every run.
import { mulberry32 } from '@chainnode/testkit';

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** A small seeded PRNG (mulberry32): rng(seed)(n) is an integer in [0, n). */
export function rng(seed: number): (n: number) => number {
  const next = mulberry32(seed);
  return (n) => (next() % n) >>> 0;
}

/**
 * `len` random bytes from `r`, in draw order. A plain loop: Uint8Array.from with a mapping
 * function was most of the CPU of the searches for two keys filed under one integer.
 */
export function bytes(r: (n: number) => number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  for (let i = 0; i < len; i++) out[i] = r(256);
  return out;
}
