// Byte codecs of keys and values: the Codec interface, writers that stage into a batch's
// buffer, and the fixed-width and varint encodings the tables' keys and values use.
import { bigIntToFixed, bytesToBigInt, concatBytes, readVarint, varintLength, writeVarint } from '@chainnode/core';

/** Byte encoding of one side (key part or value) of a table. */
export interface Codec<T> {
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T;
  /**
   * The same bytes as encode, written in place: the writer's path (Table.stage), which puts whole
   * groups of blocks and should not allocate intermediate arrays per row.
   */
  into?: ByteWriter<T>;
}

/** Writes a value's encoding into a given buffer. */
export interface ByteWriter<T> {
  size(value: T): number;
  /** Writes at `at`, returns the end (at + size(value)). */
  write(value: T, out: Uint8Array, at: number): number;
}

/** Memory for one put of a write batch (the batch copies the bytes at once). */
export type Alloc = (n: number) => Uint8Array;

/** A codec whose encode is its ByteWriter into a fresh array. */
export function writerCodec<T>(into: ByteWriter<T>, decode: (bytes: Uint8Array) => T): Codec<T> {
  return {
    encode: (v) => {
      const out = new Uint8Array(into.size(v));
      into.write(v, out, 0);
      return out;
    },
    decode,
    into,
  };
}

/**
 * A recorded trace row's key (TxFrames, TxStateDiffs): the block number, then the row's position
 * among the block's (2 bytes, big-endian); without `row`, the one row a block an earlier release
 * wrote.
 */
export interface TraceRowKey {
  number: bigint;
  row?: number;
}

export const traceRowKeyCodec: Codec<TraceRowKey> = writerCodec<TraceRowKey>(
  {
    size: (k) => (k.row === undefined ? 8 : 10),
    write: (k, out, at) => {
      const end = writeU64(k.number, out, at);
      if (k.row === undefined) return end;
      if (!Number.isInteger(k.row) || k.row < 0 || k.row > 0xffff) throw new RangeError(`trace row ${k.row}`);
      out[end] = k.row >>> 8;
      out[end + 1] = k.row & 0xff;
      return end + 2;
    },
  },
  (b) => {
    if (b.length !== 8 && b.length !== 10)
      throw new RangeError(`trace row key: expected 8 or 10 bytes, got ${b.length}`);
    const number = bytesToBigInt(b.subarray(0, 8));
    return b.length === 8 ? { number } : { number, row: ((b[8] as number) << 8) | (b[9] as number) };
  },
);

export const rawCodec: Codec<Uint8Array> = {
  encode: (v) => v,
  decode: (b) => b,
  into: {
    size: (v) => v.length,
    write: (v, out, at) => {
      out.set(v, at);
      return at + v.length;
    },
  },
};

/** Writes a non-negative safe integer as 8 big-endian bytes at `at`. */
export function putU64(out: Uint8Array, at: number, n: number): void {
  const hi = Math.floor(n / 0x1_0000_0000);
  const lo = n >>> 0;
  out[at] = hi >>> 24;
  out[at + 1] = (hi >>> 16) & 0xff;
  out[at + 2] = (hi >>> 8) & 0xff;
  out[at + 3] = hi & 0xff;
  out[at + 4] = lo >>> 24;
  out[at + 5] = (lo >>> 16) & 0xff;
  out[at + 6] = (lo >>> 8) & 0xff;
  out[at + 7] = lo & 0xff;
}

/** The 8 big-endian bytes at `at` as a number (putU64's; exact below 2^53). */
export function readU64(b: Uint8Array, at: number): number {
  return readU32(b, at) * 0x1_0000_0000 + readU32(b, at + 4);
}

/** Writes a uint64 (0 <= v < 2^64) as 8 big-endian bytes at `at`. */
function writeU64(v: bigint, out: Uint8Array, at: number): number {
  if (v >= 0n && v <= 0x1f_ffff_ffff_ffffn) putU64(out, at, Number(v));
  else out.set(bigIntToFixed(v, 8), at); // throws RangeError outside uint64
  return at + 8;
}

/** uint64 big-endian, fixed 8 bytes. */
export const u64Codec: Codec<bigint> = writerCodec({ size: () => 8, write: writeU64 }, (b) => {
  if (b.length !== 8) throw new RangeError(`u64: expected 8 bytes, got ${b.length}`);
  return bytesToBigInt(b);
});

function writeU32(n: number, out: Uint8Array, at: number): number {
  out[at] = n >>> 24;
  out[at + 1] = (n >>> 16) & 0xff;
  out[at + 2] = (n >>> 8) & 0xff;
  out[at + 3] = n & 0xff;
  return at + 4;
}

/** The big-endian uint32 at `at`. */
export function readU32(b: Uint8Array, at: number): number {
  return (
    (((b[at] as number) << 24) |
      ((b[at + 1] as number) << 16) |
      ((b[at + 2] as number) << 8) |
      (b[at + 3] as number)) >>>
    0
  );
}

export function fixedBytesCodec(width: number, what: string): Codec<Uint8Array> {
  const check = (v: Uint8Array): Uint8Array => {
    if (v.length !== width) throw new RangeError(`${what}: expected ${width} bytes, got ${v.length}`);
    return v;
  };
  return {
    encode: check,
    decode: check,
    into: {
      size: () => width,
      write: (v, out, at) => {
        out.set(check(v), at);
        return at + width;
      },
    },
  };
}

export const hashCodec = fixedBytesCodec(32, 'hash');

/** Bytes of a transaction hash that key its TxLookupShort row (schema.ts). */
export const TX_KEY_BYTES = 16;

/**
 * A TxLookupShort key: the first TX_KEY_BYTES of a transaction's 32-byte hash (the location it
 * finds is checked against the whole hash at read). Decodes to those bytes.
 */
export const txHashKeyCodec: Codec<Uint8Array> = {
  encode: (v) => hashCodec.encode(v).subarray(0, TX_KEY_BYTES),
  decode: fixedBytesCodec(TX_KEY_BYTES, 'tx hash key').decode,
  into: {
    size: () => TX_KEY_BYTES,
    write: (v, out, at) => {
      out.set(hashCodec.encode(v).subarray(0, TX_KEY_BYTES), at);
      return at + TX_KEY_BYTES;
    },
  },
};

/** An address's rows of one block: address(20) ++ number(8) (AddressLogsJson keys). */
export interface AddressNumber {
  address: Uint8Array;
  number: bigint;
}

export const addressNumberCodec: Codec<AddressNumber> = writerCodec(
  {
    size: () => 28,
    write: (v, out, at) => {
      if (v.address.length !== 20) throw new RangeError(`address: expected 20 bytes, got ${v.address.length}`);
      out.set(v.address, at);
      return writeU64(v.number, out, at + 20);
    },
  },
  (b) => {
    if (b.length !== 28) throw new RangeError(`address ++ number: expected 28 bytes, got ${b.length}`);
    return { address: b.subarray(0, 20), number: bytesToBigInt(b.subarray(20)) };
  },
);

/** A state history key: hashed address (++ hashed slot), then the block number (AccountHistory, StorageHistory). */
export interface HistoryKey {
  /** keccak(address), or keccak(address) ++ keccak(slot): 32 bytes per hash. */
  path: Uint8Array;
  number: bigint;
}

/** HistoryKey with `hashes` 32-byte hashes before the number. */
export function historyKeyCodec(hashes: number): Codec<HistoryKey> {
  const width = 32 * hashes;
  return writerCodec(
    {
      size: () => width + 8,
      write: (v, out, at) => {
        if (v.path.length !== width) throw new RangeError(`history key: expected ${width} bytes, got ${v.path.length}`);
        out.set(v.path, at);
        return writeU64(v.number, out, at + width);
      },
    },
    (b) => {
      if (b.length !== width + 8) throw new RangeError(`history key: expected ${width + 8} bytes, got ${b.length}`);
      return { path: b.subarray(0, width), number: bytesToBigInt(b.subarray(width)) };
    },
  );
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Bytes of the minimal big-endian form of a non-negative integer (0 for zero). */
function uintLength(v: bigint | number): number {
  if (v < 0) throw new RangeError('negative value');
  if (typeof v === 'bigint' && v <= MAX_SAFE) v = Number(v); // number arithmetic is much cheaper
  let len = 0;
  if (typeof v === 'number' && Number.isSafeInteger(v)) for (let x = v; x > 0; x = Math.floor(x / 256)) len++;
  else for (let x = BigInt(v); x > 0n; x >>= 8n) len++;
  return len;
}

/** Writes the minimal big-endian form of `v` (uintLength(v) bytes) at `at`. */
function writeUint(v: bigint | number, out: Uint8Array, at: number): number {
  if (typeof v === 'bigint' && v <= MAX_SAFE) v = Number(v);
  const len = uintLength(v);
  if (typeof v === 'number' && Number.isSafeInteger(v))
    for (let i = len - 1, x = v; i >= 0; i--, x = Math.floor(x / 256)) out[at + i] = x % 256;
  else for (let i = len - 1, x = BigInt(v); i >= 0; i--, x >>= 8n) out[at + i] = Number(x & 0xffn);
  return at + len;
}

/** Minimal big-endian unsigned integer (empty for zero), as RLP would carry it. */
export const bigUintCodec: Codec<bigint> = writerCodec<bigint>({ size: uintLength, write: writeUint }, (b) =>
  bytesToBigInt(b),
);

export interface TxLocation {
  number: bigint;
  index: number;
}

/** Records of a u64 field `big` then a u32 field `small`, big-endian: 12 bytes. */
function u64u32Codec<B extends string, S extends string>(
  what: string,
  big: B,
  small: S,
): Codec<Record<B, bigint> & Record<S, number>> {
  type T = Record<B, bigint> & Record<S, number>;
  return writerCodec<T>(
    { size: () => 12, write: (v, out, at) => writeU32(v[small], out, writeU64(v[big], out, at)) },
    (b) => {
      if (b.length !== 12) throw new RangeError(`${what}: expected 12 bytes, got ${b.length}`);
      return { [big]: bytesToBigInt(b.subarray(0, 8)), [small]: readU32(b, 8) } as T;
    },
  );
}

// The varint of the rows below (core's): re-exported for the store's other modules.
export { readVarint, varintLength, writeVarint };

/** The fixed form of a TxLookup value (number(8) ++ txIndex(4)): rows written before the compact one. */
const txLocationFixed = u64u32Codec<'number', 'index'>('tx location', 'number', 'index');
const TX_LOCATION_FIXED = 12;

/** The compact form's length, or TX_LOCATION_FIXED when the fixed form is written instead. */
function txLocationSize(v: TxLocation): number {
  if (v.number < 0n || v.number > 0x1f_ffff_ffff_ffffn || v.index < 0 || v.index > 0xffff_ffff)
    return TX_LOCATION_FIXED;
  const n = varintLength(Number(v.number)) + varintLength(v.index);
  return Math.min(n, TX_LOCATION_FIXED);
}

/**
 * A TxLookup value (the table above): varint(number) ++ varint(txIndex), unsigned LEB128, 2-7
 * bytes for any real chain; a value of 12 bytes is the fixed form (number(8) ++ txIndex(4)),
 * which rows written before the compact one hold and which the writer falls back to when the
 * compact one would not be shorter.
 */
export const txLocationCodec: Codec<TxLocation> = writerCodec<TxLocation>(
  {
    size: txLocationSize,
    write: (v, out, at) => {
      if (txLocationSize(v) === TX_LOCATION_FIXED) return txLocationFixed.into?.write(v, out, at) as number;
      return writeVarint(v.index, out, writeVarint(Number(v.number), out, at));
    },
  },
  (b) => {
    if (b.length === TX_LOCATION_FIXED) return txLocationFixed.decode(b);
    const n = readVarint(b, 0, 'tx location');
    const i = readVarint(b, n.end, 'tx location');
    const number = BigInt(n.value);
    const index = i.value;
    const at = i.end;
    if (at !== b.length) throw new RangeError(`tx location: ${b.length - at} bytes past its two varints`);
    return { number, index };
  },
);

export interface BlockLogRange {
  firstLogId: bigint;
  count: number;
}

export const blockLogRangeCodec: Codec<BlockLogRange> = u64u32Codec('block log range', 'firstLogId', 'count');

export interface HeadPointer {
  number: bigint;
  hash: Uint8Array;
}

export const headCodec: Codec<HeadPointer> = {
  encode: (v) => concatBytes(u64Codec.encode(v.number), hashCodec.encode(v.hash)),
  decode: (b) => {
    if (b.length !== 40) throw new RangeError(`head: expected 40 bytes, got ${b.length}`);
    return { number: bytesToBigInt(b.subarray(0, 8)), hash: b.slice(8) };
  },
};

/** Concatenation of fixed-width items (senders: 20, tx hashes: 32). */
export function fixedListCodec(width: number): Codec<Uint8Array[]> {
  const item = fixedBytesCodec(width, 'list item').into as ByteWriter<Uint8Array>;
  return writerCodec(
    {
      size: (v) => v.length * width,
      write: (v, out, at) => {
        for (const x of v) at = item.write(x, out, at);
        return at;
      },
    },
    (b) => {
      if (b.length % width !== 0) throw new RangeError(`list: length ${b.length} is not a multiple of ${width}`);
      const out: Uint8Array[] = [];
      for (let i = 0; i < b.length; i += width) out.push(b.subarray(i, i + width));
      return out;
    },
  );
}
