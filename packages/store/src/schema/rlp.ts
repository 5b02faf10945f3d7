// The store's RLP written by hand: the log row's codec (the hottest codec of the store: one per log
// written, one per log returned; its bytes are exactly RLP.encode([...]), schema.test compares
// them), over core's one-allocation writers (rlp-write.ts: headers, byte strings, trie nodes).
// The hand writers are also exported for writers of synthetic blocks.
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt, rlpBytesLength, rlpHeaderLength, writeRlpBytes, writeRlpHeader } from '@chainnode/core';

/** A log row (Logs table, schema.ts): where it was emitted and what it holds. */
export interface StoredLog {
  blockNumber: bigint;
  txIndex: number;
  logIndex: number;
  address: Uint8Array;
  topics: Uint8Array[];
  data: Uint8Array;
}

// The log row is the hottest codec of the store (one per log written, one per log returned), so it
// is encoded and decoded by hand; the bytes are exactly RLP.encode([...]) (a test compares them).

/** Length of the RLP item of a non-negative safe integer (minimal big-endian string). */
export function rlpUintLength(n: number): number {
  if (n < 0x80) return 1; // 0 is the empty string 0x80; 1..127 are their own byte
  let len = 0;
  for (let x = n; x > 0; x = Math.floor(x / 256)) len++;
  return 1 + len;
}

export function writeRlpUint(out: Uint8Array, at: number, n: number): number {
  if (n === 0) {
    out[at] = 0x80;
    return at + 1;
  }
  if (n < 0x80) {
    out[at] = n;
    return at + 1;
  }
  const len = rlpUintLength(n) - 1;
  out[at] = 0x80 + len;
  for (let i = len, x = n; i > 0; i--, x = Math.floor(x / 256)) out[at + i] = x % 256;
  return at + 1 + len;
}

/** Log row bytes (RLP, see logCodec), in memory from `alloc` (default: a fresh array). */
export function encodeLogRow(v: StoredLog, alloc: (n: number) => Uint8Array = (n) => new Uint8Array(n)): Uint8Array {
  if (v.blockNumber < 0n || v.blockNumber > 0x1f_ffff_ffff_ffffn) {
    return RLP.encode([v.blockNumber, v.txIndex, v.logIndex, v.address, v.topics, v.data]);
  }
  const number = Number(v.blockNumber);
  let topics = 0;
  for (const t of v.topics) topics += rlpBytesLength(t);
  const payload =
    rlpUintLength(number) +
    rlpUintLength(v.txIndex) +
    rlpUintLength(v.logIndex) +
    rlpBytesLength(v.address) +
    rlpHeaderLength(topics) +
    topics +
    rlpBytesLength(v.data);
  const out = alloc(rlpHeaderLength(payload) + payload);
  let at = writeRlpHeader(out, 0, 0xc0, payload);
  at = writeRlpUint(out, at, number);
  at = writeRlpUint(out, at, v.txIndex);
  at = writeRlpUint(out, at, v.logIndex);
  at = writeRlpBytes(out, at, v.address);
  at = writeRlpHeader(out, at, 0xc0, topics);
  for (const t of v.topics) at = writeRlpBytes(out, at, t);
  writeRlpBytes(out, at, v.data);
  return out;
}

/** A cursor over RLP items of `b` (views, no copies); throws RangeError on malformed input. */
class RlpReader {
  at = 0;
  constructor(
    private readonly b: Uint8Array,
    private readonly end: number,
  ) {}

  /** Header of the next item: whether it is a list, and its payload [start, end). */
  private item(): { list: boolean; start: number; end: number } {
    const b = this.b;
    if (this.at >= this.end) throw new RangeError('log record: truncated RLP');
    const first = b[this.at] as number;
    let list = false;
    let start: number;
    let len: number;
    if (first < 0x80) {
      start = this.at;
      len = 1;
    } else if (first < 0xb8) {
      start = this.at + 1;
      len = first - 0x80;
    } else if (first < 0xc0) {
      const n = first - 0xb7;
      len = 0;
      for (let i = 1; i <= n; i++) len = len * 256 + (b[this.at + i] as number);
      start = this.at + 1 + n;
    } else if (first < 0xf8) {
      list = true;
      start = this.at + 1;
      len = first - 0xc0;
    } else {
      list = true;
      const n = first - 0xf7;
      len = 0;
      for (let i = 1; i <= n; i++) len = len * 256 + (b[this.at + i] as number);
      start = this.at + 1 + n;
    }
    if (start + len > this.end) throw new RangeError('log record: RLP item runs past its list');
    this.at = start + len;
    return { list, start, end: start + len };
  }

  bytes(): Uint8Array {
    const i = this.item();
    if (i.list) throw new RangeError('log record: expected a byte string, got a list');
    return this.b.subarray(i.start, i.end);
  }

  uint(): number {
    const i = this.item();
    if (i.list) throw new RangeError('log record: expected an integer, got a list');
    let n = 0;
    for (let p = i.start; p < i.end; p++) n = n * 256 + (this.b[p] as number);
    return n;
  }

  list(): RlpReader {
    const i = this.item();
    if (!i.list) throw new RangeError('log record: expected a list');
    const r = new RlpReader(this.b, i.end);
    r.at = i.start;
    return r;
  }

  done(): boolean {
    return this.at >= this.end;
  }
}

export function decodeLog(b: Uint8Array): StoredLog {
  const top = new RlpReader(b, b.length).list();
  const nb = top.bytes();
  let blockNumber: bigint;
  if (nb.length <= 6) {
    let n = 0;
    for (const x of nb) n = n * 256 + x;
    blockNumber = BigInt(n);
  } else blockNumber = bytesToBigInt(nb);
  const txIndex = top.uint();
  const logIndex = top.uint();
  const address = top.bytes();
  const t = top.list();
  const topics: Uint8Array[] = [];
  while (!t.done()) topics.push(t.bytes());
  const data = top.bytes();
  return { blockNumber, txIndex, logIndex, address, topics, data };
}

/** The end of the RLP item at `at` (rlpItem's `end`, without the object: for skipping items). */
export function rlpItemEnd(b: Uint8Array, at: number): number {
  const p = b[at] as number;
  if (p < 0x80) return at + 1;
  if (p <= 0xb7) return at + 1 + p - 0x80;
  if (p >= 0xc0 && p <= 0xf7) return at + 1 + p - 0xc0;
  const n = p < 0xc0 ? p - 0xb7 : p - 0xf7;
  let v = 0;
  for (let i = 0; i < n; i++) v = v * 256 + (b[at + 1 + i] as number);
  return at + 1 + n + v;
}

/** Where RLP item `at` of `b` has its payload, and where the item ends. */
export function rlpItem(b: Uint8Array, at: number): { start: number; end: number; list: boolean } {
  const p = b[at] as number;
  if (p < 0x80) return { start: at, end: at + 1, list: false };
  const len = (n: number) => {
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 256 + (b[at + 1 + i] as number);
    return v;
  };
  if (p <= 0xb7) return { start: at + 1, end: at + 1 + p - 0x80, list: false };
  if (p < 0xc0) {
    const n = p - 0xb7;
    return { start: at + 1 + n, end: at + 1 + n + len(n), list: false };
  }
  if (p <= 0xf7) return { start: at + 1, end: at + 1 + p - 0xc0, list: true };
  const n = p - 0xf7;
  return { start: at + 1 + n, end: at + 1 + n + len(n), list: true };
}
