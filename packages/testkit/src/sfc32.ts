// sfc32, a small, fast, deterministic generator with 128 bits of state: the one PRNG behind the
// fixture generator (scripts/src/prng.ts, seeded from a string) and the benchmarks' chains and
// request mixes (bench/src/synth.ts, seeded from a number). Same state, same sequence, always.
export class Sfc32 {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** The state's four words, then 16 rounds discarded to mix them. */
  constructor(a: number, b: number, c: number, d: number) {
    this.a = a | 0;
    this.b = b | 0;
    this.c = c | 0;
    this.d = d | 0;
    for (let i = 0; i < 16; i++) this.u32();
  }

  /** Uniform in [0, 2^32). */
  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 0x1_0000_0000;
  }
}
