// RLP written in one allocation: the length of an item computed first, then every byte written
// once where it belongs. @ethereumjs/rlp's encode makes a buffer per item and concatenates them at
// every level of nesting (a receipt's log data copied three times over, a small array per length
// prefix); these give the same bytes (the tests compare them with RLP.encode).

/** Bytes of the length prefix of a string (base 0x80) or list (base 0xc0) of `len` payload bytes. */
export function rlpHeaderLength(len: number): number {
  if (len < 56) return 1;
  let n = 0;
  for (let x = len; x > 0; x = Math.floor(x / 256)) n++;
  return 1 + n;
}

export function writeRlpHeader(out: Uint8Array, at: number, base: number, len: number): number {
  if (len < 56) {
    out[at] = base + len;
    return at + 1;
  }
  const n = rlpHeaderLength(len) - 1;
  out[at] = base + 55 + n;
  for (let i = n, x = len; i > 0; i--, x = Math.floor(x / 256)) out[at + i] = x % 256;
  return at + 1 + n;
}

export function rlpBytesLength(b: Uint8Array): number {
  if (b.length === 1 && (b[0] as number) < 0x80) return 1;
  return rlpHeaderLength(b.length) + b.length;
}

/** Writes the RLP string item of `b` at `at`; returns the end. */
export function writeRlpBytes(out: Uint8Array, at: number, b: Uint8Array): number {
  if (b.length === 1 && (b[0] as number) < 0x80) {
    out[at] = b[0] as number;
    return at + 1;
  }
  const p = writeRlpHeader(out, at, 0x80, b.length);
  out.set(b, p);
  return p + b.length;
}

/** An RLP item as RLP decodes it (a trie node, a child reference): bytes, or a list of such. */
export type Nested = Uint8Array | Nested[];

function nestedLength(v: Nested): number {
  if (v instanceof Uint8Array) return rlpBytesLength(v);
  const payload = listPayload(v);
  return rlpHeaderLength(payload) + payload;
}

function listPayload(v: Nested[]): number {
  let payload = 0;
  for (const x of v) payload += nestedLength(x);
  return payload;
}

function writeNested(out: Uint8Array, at: number, v: Nested): number {
  if (v instanceof Uint8Array) return writeRlpBytes(out, at, v);
  at = writeRlpHeader(out, at, 0xc0, listPayload(v));
  for (const x of v) at = writeNested(out, at, x);
  return at;
}

/**
 * RLP of a trie node (byte strings and embedded lists), as @ethereumjs/rlp's encode gives it,
 * in one allocation: the generic encoder concatenated a buffer per item, the most of a trie
 * update's encoding time.
 */
export function encodeNested(v: Nested): Uint8Array {
  if (v instanceof Uint8Array) {
    const out = new Uint8Array(rlpBytesLength(v));
    writeRlpBytes(out, 0, v);
    return out;
  }
  const payload = listPayload(v);
  const out = new Uint8Array(rlpHeaderLength(payload) + payload);
  let at = writeRlpHeader(out, 0, 0xc0, payload);
  for (const x of v) at = writeNested(out, at, x);
  return out;
}

/** encodeNested of `v` after one leading byte (an EIP-2718 typed envelope: the type, then the RLP). */
export function encodeTyped(type: number, v: Nested[]): Uint8Array {
  const payload = listPayload(v);
  const out = new Uint8Array(1 + rlpHeaderLength(payload) + payload);
  out[0] = type;
  let at = writeRlpHeader(out, 1, 0xc0, payload);
  for (const x of v) at = writeNested(out, at, x);
  return out;
}

/** A non-negative integer as RLP encodes it: minimal big-endian bytes, none for zero. */
export function uintBytes(v: bigint): Uint8Array {
  if (v < 0n) throw new RangeError('RLP: a negative integer');
  if (v === 0n) return new Uint8Array(0);
  if (v <= 0xffff_ffffn) {
    let n = Number(v);
    const len = n > 0xffffff ? 4 : n > 0xffff ? 3 : n > 0xff ? 2 : 1;
    const out = new Uint8Array(len);
    for (let i = len - 1; i >= 0; i--, n = Math.floor(n / 256)) out[i] = n & 0xff;
    return out;
  }
  const hex = v.toString(16);
  return Uint8Array.from(Buffer.from(hex.length % 2 === 1 ? `0${hex}` : hex, 'hex'));
}
