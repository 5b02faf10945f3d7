// Seeded random input for the store's tests: the same tries, nodes and keys on every run.
import { mulberry32 } from '@chainnode/testkit';

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** A small seeded PRNG (mulberry32): rng(seed)(n) is an integer in [0, n). */
export function rng(seed: number): (n: number) => number {
  const next = mulberry32(seed);
  return (n) => (next() % n) >>> 0;
}

/** `len` random bytes from `r`. */
export const bytes = (r: (n: number) => number, len: number): Uint8Array =>
  Uint8Array.from({ length: len }, () => r(256));
