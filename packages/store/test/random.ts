// Seeded random input for the store's tests: the same tries, nodes and keys on every run.

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** A small seeded PRNG (mulberry32): rng(seed)(n) is an integer in [0, n). */
export function rng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) % n) >>> 0;
  };
}

/** `len` random bytes from `r`. */
export const bytes = (r: (n: number) => number, len: number): Uint8Array =>
  Uint8Array.from({ length: len }, () => r(256));
