// Row codecs of logs: the log row, the index's posting lists and keys, and the AddressLogsJson
// row (schema.ts lays out each table).
import { LogJsonWriter, bytesToBigInt, concatBytes } from '@chainnode/core';
import type { LogRecord } from '@chainnode/core';
import { decodeLog, encodeLogRow } from './rlp.js';
import type { StoredLog } from './rlp.js';
import { putU64, u64Codec } from './codec.js';
import type { Codec } from './codec.js';

export const logCodec: Codec<StoredLog> = { encode: (v) => encodeLogRow(v), decode: decodeLog };

/**
 * Strictly increasing log ids as unsigned LEB128 deltas (the first one relative to 0). Ids are
 * plain numbers: they stay below 2^53 (a log id per log ever emitted).
 */
export const postingCodec: Codec<number[]> = {
  encode: (ids) => {
    const out: number[] = [];
    let prev = -1;
    for (const id of ids) {
      if (!Number.isSafeInteger(id) || id <= prev)
        throw new RangeError('posting list: ids must be strictly increasing safe integers');
      let d = prev < 0 ? id : id - prev;
      prev = id;
      while (d >= 0x80) {
        out.push((d % 0x80) | 0x80);
        d = Math.floor(d / 0x80);
      }
      out.push(d);
    }
    return Uint8Array.from(out);
  },
  decode: (b) => decodePostings(b),
};

/** Decodes a posting chunk (see postingCodec) into numbers. */
export function decodePostings(b: Uint8Array): number[] {
  const ids: number[] = [];
  let prev = 0;
  let i = 0;
  const n = b.length;
  while (i < n) {
    let byte = b[i++] as number;
    let d = byte & 0x7f;
    let mul = 0x80;
    while (byte & 0x80) {
      if (i >= n) throw new RangeError('posting list: truncated varint');
      byte = b[i++] as number;
      d += (byte & 0x7f) * mul;
      mul *= 0x80;
    }
    prev += d;
    ids.push(prev);
  }
  return ids;
}

export interface LogIndexKey {
  kind: number;
  value: Uint8Array;
  /** Last log id of a full chunk, or OPEN_CHUNK. */
  lastLogId: bigint;
}

/**
 * Writes the LogIndex row key (table prefix included) of (kind, value) and a chunk's last id
 * (undefined: OPEN_CHUNK) into `out`, which must be logIndexKeyLength(value.length) bytes: the one
 * builder of these keys for the writer (from its arenas) and the reader (seek targets). `prefix`:
 * Prefix.LogIndex, or Prefix.Appearances for an Appearances row key (the same layout).
 */
export function writeLogIndexKey(
  out: Uint8Array,
  kind: number,
  value: Uint8Array,
  lastId: number | undefined,
  prefix: number,
): Uint8Array {
  out[0] = prefix;
  out[1] = kind;
  out.set(value, 2);
  if (lastId === undefined) out.fill(0xff, 2 + value.length);
  else putU64(out, 2 + value.length, lastId);
  return out;
}

export function logIndexKeyLength(valueLength: number): number {
  return 2 + valueLength + 8;
}

export const logIndexKeyCodec: Codec<LogIndexKey> = {
  encode: (k) => concatBytes(Uint8Array.of(k.kind), k.value, u64Codec.encode(k.lastLogId)),
  decode: (b) => ({
    kind: b[0] as number,
    value: b.subarray(1, b.length - 8),
    lastLogId: bytesToBigInt(b.subarray(b.length - 8)),
  }),
};

/**
 * The AddressLogsJson row of one address's logs in one block (see the table above), in memory from
 * `alloc`: each log's JSON written by `writer` (core's LogJsonWriter) straight into the row.
 */
export function encodeAddressLogsJson(
  logs: readonly LogRecord[],
  writer: LogJsonWriter = new LogJsonWriter(),
  alloc: (n: number) => Uint8Array = (n) => new Uint8Array(n),
): Uint8Array {
  let chars = logs.length === 0 ? 0 : logs.length - 1;
  for (const log of logs) chars += writer.byteLength(log);
  const head = 4 + 8 * logs.length;
  const out = alloc(head + chars);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setUint32(0, logs.length);
  let at = head;
  for (let i = 0; i < logs.length; i++) {
    const log = logs[i] as LogRecord;
    if (i > 0) out[at++] = 0x2c; // ','
    at = writer.writeInto(log, out, at);
    view.setUint32(4 + 8 * i, log.logIndex);
    view.setUint32(8 + 8 * i, at - head);
  }
  if (at !== out.length) throw new Error('AddressLogsJson: the row written is not its length');
  return out;
}

/** An AddressLogsJson row read back: texts sliced out on demand, never all decoded. */
export class AddressLogsJsonView {
  readonly count: number;
  private readonly view: DataView;
  private readonly head: number;

  constructor(private readonly raw: Uint8Array) {
    if (raw.length < 4) throw new RangeError('AddressLogsJson: truncated row');
    this.view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    this.count = this.view.getUint32(0);
    this.head = 4 + 8 * this.count;
    if (this.count === 0 || raw.length < this.head || this.head + this.end(this.count - 1) !== raw.length)
      throw new RangeError('AddressLogsJson: malformed row');
  }

  private end(i: number): number {
    return this.view.getUint32(8 + 8 * i);
  }

  /** The block-wide log index of entry `i`. */
  logIndex(i: number): number {
    return this.view.getUint32(4 + 8 * i);
  }

  /** The entry holding log `logIndex` of the block, or -1. */
  find(logIndex: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.logIndex(mid) < logIndex) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.count && this.logIndex(lo) === logIndex ? lo : -1;
  }

  /** The JSON of entry `i`, as the row's own bytes (a view of the row, not a copy). */
  textBytes(i: number): Uint8Array {
    if (i < 0 || i >= this.count) throw new RangeError(`AddressLogsJson: no entry ${i} of ${this.count}`);
    const start = i === 0 ? 0 : this.end(i - 1) + 1;
    return this.raw.subarray(this.head + start, this.head + this.end(i));
  }

  /** Every entry's JSON, joined by ',', as the row's own bytes (a view of the row, not a copy). */
  allBytes(): Uint8Array {
    return this.raw.subarray(this.head);
  }
}
