// One block's logs as one value: columnar, with the block's addresses and topics each written
// once (a dictionary per block) and the data blobs concatenated, then compressed as a whole.
// At mainnet's shape a block's ~250 logs name a few dozen addresses and topics again and again
// (Transfer's signature, the tokens, the pools), so the dictionaries alone halve the RLP rows, and
// a general compressor over the columns takes most of what is left (bench/logs-once measures it).
//
// Layout (before compression):
//   varint count
//   varint addresses, addresses x 20 bytes          (first-use order)
//   varint topics, topics x 32 bytes                 (first-use order)
//   count x [varint txIndex gap (from the log before; the first from 0) ++ varint address ++
//            byte topicCount ++ topicCount x varint topic ++ varint dataLength]
//   the logs' data, concatenated in log order
// Compressed: one byte naming the codec (LogBlockCodec), then its bytes.
import { brotliCompressSync, brotliDecompressSync, constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { varintLength, writeVarint } from '../schema/index.js';
import type { StoredLog } from '../schema/rlp.js';

/** The compression of a block-logs value (its first byte). */
export const LogBlockCodec = { None: 0, Deflate: 1, Brotli: 2 } as const;
export type LogBlockCodecId = (typeof LogBlockCodec)[keyof typeof LogBlockCodec];

const WHAT = 'block logs';

/**
 * A 32-bit hash of a value's bytes (FNV-1a): addresses and topics share long runs (a topic that is
 * a padded address starts with twelve zero bytes; generated addresses differ in their last bytes),
 * so every byte counts.
 */
export function hashOf(v: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < v.length; i++) h = Math.imul(h ^ (v[i] as number), 0x01000193);
  return h;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A block's dictionary of values (addresses or topics): each value's id, in first-use order, found
 * by a hash of its bytes (a number key: no string per value) and compared byte by byte with the
 * values of that hash (a chain through `next`, no array per value).
 */
class Dictionary {
  readonly list: Uint8Array[] = [];
  private readonly first = new Map<number, number>();
  private readonly next: number[] = [];

  idOf(v: Uint8Array): number {
    const h = hashOf(v);
    const head = this.first.get(h);
    for (let id = head ?? -1; id !== -1; id = this.next[id] as number)
      if (sameBytes(this.list[id] as Uint8Array, v)) return id;
    const id = this.list.length;
    this.list.push(v);
    this.next.push(head ?? -1);
    this.first.set(h, id);
    return id;
  }
}

/** The logs' columnar bytes, uncompressed (see the layout above). */
export function encodeBlockLogColumns(
  logs: readonly Pick<StoredLog, 'txIndex' | 'address' | 'topics' | 'data'>[],
): Uint8Array {
  const addresses = new Dictionary();
  const topics = new Dictionary();
  // Each log's address id, and its topics' ids one after another (flat: no object per log).
  const addressIds = new Int32Array(logs.length);
  const topicIds: number[] = [];
  let size = varintLength(logs.length);
  let dataBytes = 0;
  let prevTx = 0;
  for (let i = 0; i < logs.length; i++) {
    const l = logs[i] as (typeof logs)[number];
    const a = addresses.idOf(l.address);
    addressIds[i] = a;
    if (l.topics.length > 255) throw new RangeError(`${WHAT}: ${l.topics.length} topics`);
    for (const t of l.topics) {
      const id = topics.idOf(t);
      topicIds.push(id);
      size += varintLength(id);
    }
    if (l.txIndex < prevTx) throw new RangeError(`${WHAT}: tx index ${l.txIndex} after ${prevTx}`);
    size += varintLength(l.txIndex - prevTx) + varintLength(a) + 1 + varintLength(l.data.length);
    dataBytes += l.data.length;
    prevTx = l.txIndex;
  }
  const addressList = addresses.list;
  const topicList = topics.list;
  size += varintLength(addressList.length) + 20 * addressList.length;
  size += varintLength(topicList.length) + 32 * topicList.length + dataBytes;
  const out = new Uint8Array(size);
  let at = writeVarint(logs.length, out, 0);
  at = writeVarint(addressList.length, out, at);
  for (const a of addressList) {
    if (a.length !== 20) throw new RangeError(`${WHAT}: address of ${a.length} bytes`);
    out.set(a, at);
    at += 20;
  }
  at = writeVarint(topicList.length, out, at);
  for (const t of topicList) {
    if (t.length !== 32) throw new RangeError(`${WHAT}: topic of ${t.length} bytes`);
    out.set(t, at);
    at += 32;
  }
  prevTx = 0;
  let k = 0;
  for (let i = 0; i < logs.length; i++) {
    const l = logs[i] as (typeof logs)[number];
    at = writeVarint(l.txIndex - prevTx, out, at);
    prevTx = l.txIndex;
    at = writeVarint(addressIds[i] as number, out, at);
    out[at++] = l.topics.length;
    for (let j = 0; j < l.topics.length; j++) at = writeVarint(topicIds[k++] as number, out, at);
    at = writeVarint(l.data.length, out, at);
  }
  for (const l of logs) {
    out.set(l.data, at);
    at += l.data.length;
  }
  return out;
}

/** The logs of block `blockNumber` from their columnar bytes (views into `b`, no copies). */
export function decodeBlockLogColumns(b: Uint8Array, blockNumber: bigint): StoredLog[] {
  const view = new BlockLogColumns(b, blockNumber);
  const logs: StoredLog[] = new Array(view.count);
  for (let i = 0; i < view.count; i++) logs[i] = view.log(i);
  return logs;
}

/**
 * A block's columnar bytes, indexed once (a few typed arrays, no object per log), each log built
 * on demand: a query that wants a few logs of a block builds only those, not the block's
 * hundreds (their addresses, topics and data are views into `b`, no copies).
 */
export class BlockLogColumns {
  readonly count: number;
  /** The bytes the logs' views point into (what a cache holds). */
  readonly bytes: Uint8Array;
  private readonly addressAt: number;
  private readonly topicAt: number;
  private readonly addresses: (Uint8Array | undefined)[];
  private readonly topics: (Uint8Array | undefined)[];
  /**
   * Per log, in one array (one allocation a block): its tx index at [i], its address id at
   * [count + i], the end of its data at [2 count + i] (log i's data is bytes [end of log i - 1, or
   * the data's start, end of log i)), and where its topic ids start at [3 count + i] (log i's
   * topic ids are topicIds[start of i .. start of i + 1); [4 count] is their end).
   */
  private readonly index: Int32Array;
  private readonly topicIds: Int32Array;
  private readonly dataAt: number;

  constructor(
    b: Uint8Array,
    readonly blockNumber: bigint,
  ) {
    this.bytes = b;
    let at = 0;
    // Unsigned LEB128 at `at` (the values here stay far below 2^49); the loop below reads
    // one-byte values (almost all of them) inline.
    const varint = (): number => {
      let value = 0;
      for (let scale = 1; ; scale *= 0x80) {
        if (at >= b.length || scale > 2 ** 49) throw new RangeError(`${WHAT}: bad varint`);
        const byte = b[at++] as number;
        value += (byte & 0x7f) * scale;
        if (byte < 0x80) return value;
      }
    };
    const count = varint();
    this.count = count;
    const addressCount = varint();
    this.addresses = new Array(addressCount);
    this.addressAt = at;
    at += 20 * addressCount;
    if (at > b.length) throw new RangeError(`${WHAT}: truncated dictionaries`);
    const topicCount = varint();
    this.topics = new Array(topicCount);
    this.topicAt = at;
    at += 32 * topicCount;
    if (at > b.length) throw new RangeError(`${WHAT}: truncated dictionaries`);
    const index = new Int32Array(4 * count + 1);
    let ids = new Int32Array(4 * count);
    let idCount = 0;
    let tx = 0;
    let dataBytes = 0;
    for (let i = 0; i < count; i++) {
      let v = b[at] as number;
      if (v < 0x80) at++;
      else v = varint();
      tx += v;
      index[i] = tx;
      v = b[at] as number;
      if (v < 0x80) at++;
      else v = varint();
      if (v >= addressCount) throw new RangeError(`${WHAT}: address not in the dictionary`);
      index[count + i] = v;
      if (at >= b.length) throw new RangeError(`${WHAT}: truncated log ${i}`);
      const n = b[at++] as number;
      index[3 * count + i] = idCount;
      if (idCount + n > ids.length) {
        const more = new Int32Array(2 * (idCount + n));
        more.set(ids);
        ids = more;
      }
      for (let j = 0; j < n; j++) {
        v = b[at] as number;
        if (v < 0x80) at++;
        else v = varint();
        if (v >= topicCount) throw new RangeError(`${WHAT}: topic not in the dictionary`);
        ids[idCount++] = v;
      }
      v = b[at] as number;
      if (v < 0x80) at++;
      else v = varint();
      dataBytes += v;
      index[2 * count + i] = dataBytes;
    }
    index[4 * count] = idCount;
    this.index = index;
    this.topicIds = ids;
    this.dataAt = at;
    if (at + dataBytes > b.length) throw new RangeError(`${WHAT}: data runs past the value`);
    if (at + dataBytes !== b.length) throw new RangeError(`${WHAT}: ${b.length - at - dataBytes} bytes after the data`);
  }

  /** The logs of transaction `txIndex`, in order (only those built). */
  txLogs(txIndex: number): StoredLog[] {
    const out: StoredLog[] = [];
    for (let i = 0; i < this.count; i++) {
      const tx = this.index[i] as number;
      if (tx === txIndex) out.push(this.log(i));
      else if (tx > txIndex) break;
    }
    return out;
  }

  /** Log `i` of the block (its position in the block: its log index). */
  log(i: number): StoredLog {
    if (i < 0 || i >= this.count) throw new RangeError(`${WHAT}: no log ${i} of ${this.count}`);
    const b = this.bytes;
    const { index, count } = this;
    const a = index[count + i] as number;
    let address = this.addresses[a];
    if (address === undefined) {
      const at = this.addressAt + 20 * a;
      this.addresses[a] = address = b.subarray(at, at + 20);
    }
    const from = index[3 * count + i] as number;
    const topics: Uint8Array[] = new Array((index[3 * count + i + 1] as number) - from);
    for (let j = 0; j < topics.length; j++) {
      const t = this.topicIds[from + j] as number;
      let topic = this.topics[t];
      if (topic === undefined) {
        const at = this.topicAt + 32 * t;
        this.topics[t] = topic = b.subarray(at, at + 32);
      }
      topics[j] = topic;
    }
    const start = this.dataAt + (i === 0 ? 0 : (index[2 * count + i - 1] as number));
    const data = b.subarray(start, this.dataAt + (index[2 * count + i] as number));
    return { blockNumber: this.blockNumber, txIndex: index[i] as number, logIndex: i, address, topics, data };
  }
}

/** Compresses columnar bytes: the codec's byte, then its output. */
export function compressLogColumns(columns: Uint8Array, codec: LogBlockCodecId, level?: number): Uint8Array {
  let body: Uint8Array;
  if (codec === LogBlockCodec.None) body = columns;
  else if (codec === LogBlockCodec.Deflate) body = deflateRawSync(columns, { level: level ?? 6 });
  else
    body = brotliCompressSync(columns, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: level ?? 6,
        [constants.BROTLI_PARAM_SIZE_HINT]: columns.length,
      },
    });
  const out = new Uint8Array(1 + body.length);
  out[0] = codec;
  out.set(body, 1);
  return out;
}

/** The columnar bytes of a compressed value (compressLogColumns). */
export function decompressLogColumns(b: Uint8Array): Uint8Array {
  const body = b.subarray(1);
  switch (b[0]) {
    case LogBlockCodec.None:
      return body;
    case LogBlockCodec.Deflate:
      return inflateRawSync(body);
    case LogBlockCodec.Brotli:
      return brotliDecompressSync(body);
    default:
      throw new RangeError(`${WHAT}: unknown codec ${b[0]}`);
  }
}
