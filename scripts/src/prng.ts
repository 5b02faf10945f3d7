// Seeded PRNG (sfc32): every random choice of the fixture generator comes from here, so the
// output depends only on the seed string.
import { keccak256 } from 'ethereum-cryptography/keccak.js';

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string) {
    const h = keccak256(new TextEncoder().encode(seed));
    const view = new DataView(h.buffer, h.byteOffset, h.byteLength);
    this.a = view.getUint32(0);
    this.b = view.getUint32(4);
    this.c = view.getUint32(8);
    this.d = view.getUint32(12);
    for (let i = 0; i < 16; i++) this.nextU32();
  }

  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
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
    for (let i = 0; i < n; i++) out[i] = this.nextU32() & 0xff;
    return out;
  }

  /** Uniform bigint in [0, 2^bits). */
  bigint(bits: number): bigint {
    let v = 0n;
    for (let i = 0; i < bits; i += 32) v = (v << 32n) | BigInt(this.nextU32());
    return v & ((1n << BigInt(bits)) - 1n);
  }
}
