// Seeded PRNG: every random choice of the fixture generator comes from here, so the output
// depends only on the seed string. The generator is testkit's sfc32, its state the first 16
// bytes of the seed's keccak-256.
import { Sfc32 } from '@chainnode/testkit';
import { keccak256 } from 'ethereum-cryptography/keccak.js';

export class Prng extends Sfc32 {
  constructor(seed: string) {
    const h = keccak256(new TextEncoder().encode(seed));
    const view = new DataView(h.buffer, h.byteOffset, h.byteLength);
    super(view.getUint32(0), view.getUint32(4), view.getUint32(8), view.getUint32(12));
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    if (hi < lo) throw new RangeError(`int: empty range [${lo}, ${hi}]`);
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick: empty list');
    return items[this.int(0, items.length - 1)] as T;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }

  /** Uniform bigint in [0, 2^bits). */
  bigint(bits: number): bigint {
    let v = 0n;
    for (let i = 0; i < bits; i += 32) v = (v << 32n) | BigInt(this.u32());
    return v & ((1n << BigInt(bits)) - 1n);
  }
}
