// Hex encoding used on the wire: quantities in minimal form ("0x0", "0x1a"), data as
// even-length lowercase hex. Parsing of untrusted input lives in the rpc params decoders;
// these helpers are for trusted, already-typed values.
import { bytesToHex as utilBytesToHex, hexToBytes as utilHexToBytes } from '@ethereumjs/util';

export type Hex = `0x${string}`;

/** Quantity: minimal hex, "0x0" for zero. */
export function toQuantity(value: bigint | number): Hex {
  return `0x${value.toString(16)}`;
}

/** Inputs longer than this are hex-encoded by Buffer's native encoder (see toData). */
const NATIVE_HEX_ABOVE = 64;

/**
 * Data: even-length lowercase hex of the bytes ("0x" for empty). Long data (a log's payload, a
 * raw receipt or block) goes through Buffer's native encoder: the JS encoder appends two
 * characters per byte, and for a 21 MB block of receipts (the execution-apis chain's block 2:
 * 56 logs of 190 KB) its millions of intermediate strings kept a server in garbage collection for
 * over ten seconds. Short data (hashes, addresses, words) stays with the JS encoder, which is
 * faster than making a Buffer view of a few bytes.
 */
export function toData(bytes: Uint8Array): Hex {
  if (bytes.length <= NATIVE_HEX_ABOVE) return utilBytesToHex(bytes) as Hex;
  return `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('hex')}`;
}

/** Trusted hex (our own fixtures, config files) to bytes. Throws on malformed input. */
export function fromHex(hex: string): Uint8Array {
  const body = hex.startsWith('0x') || hex.startsWith('0X') ? hex.slice(2) : hex;
  if (body.length % 2 !== 0) return utilHexToBytes(`0x0${body}`);
  return utilHexToBytes(`0x${body}`);
}

/** The value of each hex digit by character code; -1 for every other character. */
const NIBBLE: Int8Array = (() => {
  const t = new Int8Array(128).fill(-1);
  for (let i = 0; i < 10; i++) t[48 + i] = i;
  for (let i = 0; i < 6; i++) {
    t[65 + i] = 10 + i;
    t[97 + i] = 10 + i;
  }
  return t;
})();

/**
 * Untrusted hex digits (no 0x, an even count) to bytes; undefined when any character is not a
 * hex digit. A table lookup per digit: no substring and no parseInt per byte (those were a few
 * per cent of a storage read's CPU, for its 52 bytes of address and slot).
 */
export function hexDigitsToBytes(digits: string): Uint8Array | undefined {
  if (digits.length % 2 !== 0) throw new RangeError('hexDigitsToBytes: an odd number of digits');
  const out = new Uint8Array(digits.length / 2);
  return unhexInto(digits, 0, out) ? out : undefined;
}

/** The hex digits of `s` from `from` into all of `out`; false at the first character not a hex digit. */
function unhexInto(s: string, from: number, out: Uint8Array): boolean {
  for (let i = 0, j = from; i < out.length; i++, j += 2) {
    const hi = s.charCodeAt(j);
    const lo = s.charCodeAt(j + 1);
    const h = hi < 128 ? (NIBBLE[hi] as number) : -1;
    const l = lo < 128 ? (NIBBLE[lo] as number) : -1;
    if ((h | l) < 0) return false;
    out[i] = (h << 4) | l;
  }
  return true;
}

/** Data of at most this many bytes is decoded by wireBytes' own loop; longer by Buffer's native decoder. */
const NATIVE_UNHEX_ABOVE = 32;

/**
 * Untrusted wire data ("0x" and an even number of hex digits, either case) to bytes in one pass;
 * undefined for anything else (not a string, no prefix, an odd count, a character not a hex
 * digit). Long data (a raw transaction or receipt, a trie node of a primary's answer) is decoded
 * by Buffer's native decoder, which stops at the first pair that is not hex: fewer bytes than the
 * digits name is the invalid case. The bytes are their own memory (not a slab shared with other
 * small Buffers), so keeping them keeps nothing else alive.
 */
export function wireBytes(v: unknown): Uint8Array | undefined {
  if (typeof v !== 'string' || v.length % 2 !== 0 || v.charCodeAt(0) !== 48 || v.charCodeAt(1) !== 120)
    return undefined;
  const n = (v.length - 2) >> 1;
  if (n > NATIVE_UNHEX_ABOVE) {
    const out = Buffer.allocUnsafeSlow(n);
    if (out.write(v.substring(2), 'hex') !== n) return undefined;
    return new Uint8Array(out.buffer, out.byteOffset, n);
  }
  const out = new Uint8Array(n);
  return unhexInto(v, 2, out) ? out : undefined;
}

/**
 * A big-endian unsigned integer. Up to 6 bytes (nonces, slot words of small counters, block
 * numbers) through a double, exactly; longer through Buffer's native hex encoder. Both without
 * the per-byte string building of a JS hex encoder (the read path decodes one or more per call).
 */
export function bytesToBigInt(bytes: Uint8Array): bigint {
  const n = bytes.length;
  if (n <= 6) {
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 256 + (bytes[i] as number);
    return BigInt(v);
  }
  return BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, n).toString('hex')}`);
}

/** Big-endian bytes of a non-negative integer, padded to `width` bytes. */
export function bigIntToFixed(value: bigint, width: number): Uint8Array {
  if (value < 0n) throw new RangeError('negative value');
  const out = new Uint8Array(width);
  let v = value;
  for (let i = width - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  if (v !== 0n) throw new RangeError(`value does not fit in ${width} bytes`);
  return out;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Hex of a byte view without allocating a Buffer for it: Buffer's own hexSlice works on any
 * Uint8Array (a log answer hexes about seven values per log; Buffer views were a fifth of its
 * time, and their garbage more). Falls back to a view where hexSlice is missing.
 */
const hexSlice = (
  Buffer.prototype as unknown as { hexSlice?: (this: Uint8Array, start: number, end: number) => string }
).hexSlice;
export const hexOfBytes: (b: Uint8Array) => string =
  hexSlice !== undefined
    ? (b) => hexSlice.call(b, 0, b.length)
    : (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** The ASCII codes of the hex digits. */
export const HEX_DIGITS = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

/** Each byte's two hex digits as one 16-bit value (the first digit in the low byte). */
const HEX_PAIRS = Uint16Array.from(
  { length: 256 },
  (_, v) => (HEX_DIGITS[v >> 4] as number) | ((HEX_DIGITS[v & 15] as number) << 8),
);

/**
 * `bytes`' hex (no 0x) written at `at` of `out`; returns the end: the writers of answers as ASCII
 * bytes (a block's tx hashes, a log's values) use it instead of a string per value. A byte pair
 * per table read; long values (a log's data) into a Buffer through Buffer's native hex, faster
 * past ~100 bytes (~2 against ~3 ns a byte, measured on node 20).
 */
export function hexInto(bytes: Uint8Array, out: Uint8Array, at: number): number {
  if (bytes.length >= 128 && hexSlice !== undefined && Buffer.isBuffer(out))
    return at + out.write(hexSlice.call(bytes, 0, bytes.length), at, 'latin1');
  for (let i = 0; i < bytes.length; i++) {
    const p = HEX_PAIRS[bytes[i] as number] as number;
    out[at++] = p & 0xff;
    out[at++] = p >> 8;
  }
  return at;
}
