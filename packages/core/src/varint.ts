// Unsigned LEB128, the varint of the store's rows (TxLookup values, posting lists, log blocks,
// latest-change rows) and of the recorded trace rows (trace-rows.ts and the trace module's codec).

/** Unsigned LEB128 length of `v` (0 <= v < 2^53). */
export function varintLength(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

/** Writes `v` (0 <= v < 2^53) as unsigned LEB128 at `at`, returns the end. */
export function writeVarint(v: number, out: Uint8Array, at: number): number {
  while (v >= 0x80) {
    out[at++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  out[at++] = v;
  return at;
}

/** The unsigned LEB128 at `at` of `b` (below 2^56) and where it ends; RangeError naming `what` when it runs past `b`. */
export function readVarint(b: Uint8Array, at: number, what: string): { value: number; end: number } {
  let value = 0;
  for (let scale = 1; ; scale *= 0x80) {
    if (at >= b.length || scale > 2 ** 49) throw new RangeError(`${what}: bad varint`);
    const byte = b[at++] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return { value, end: at };
  }
}
