// The recorded form of a block's call frames (its TxFrames rows): what the frame tracers are fed
// (hooks.ts: each frame entered and left, each log) for every transaction, compact. The rows are
// framed and cut as core's trace-rows.ts says (the block's hash, TRACE_ROW_TXS transactions a
// row, each transaction's bytes found by their lengths); a transaction's bytes:
//
//   tx    := flags(1) gasLimit(b) gasUsed(b) logsBefore(v) eventCount(v) events
//   enter := 0x01 type(1) bits(1) [from(20)] to(20) [input(v-length bytes)] gas(b) [value(b)]
//   exit  := 0x02 bits(1) [error] output(v-length bytes) gasUsed(b)
//   log   := 0x03 bits(1) indexDelta(v) (receiptLog(v) | address(20) topics(1 + 32 each) data)
//
// (v): unsigned LEB128; (b): a big integer, its length (1) then its big-endian bytes. A frame's
// `from` is left out when it is its parent's context (the address whose storage the parent runs
// on), the top frame's input when it is the transaction's data; a log that survives into the
// receipt is stored as its position among the transaction's receipt logs.
import {
  TRACE_ROW_VERSION,
  encodeTraceRows,
  keccak256,
  traceRowSpans,
  varintLength,
  writeVarint,
} from '@chainnode/core';
import type { TraceRowSpans } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { FrameEnter, FrameExit, FrameType, TraceLog } from '../hooks.js';

/** The version byte of a row (core's trace-rows.ts). */
export const FRAMES_VERSION = TRACE_ROW_VERSION;

export const FRAME_TYPES: readonly FrameType[] = [
  'CALL',
  'CALLCODE',
  'DELEGATECALL',
  'STATICCALL',
  'CREATE',
  'CREATE2',
  'SELFDESTRUCT',
];

/**
 * geth's error texts a frame ends with most, by code (others are stored as text). Codes 2 and 3
 * are the bare texts an earlier release wrote, before the halts named their opcode and stack
 * (`invalid opcode: INVALID`, `stack underflow (0 <=> 2)`, now stored as text): a row holding them
 * is stale (`RecordedTx.stale`).
 */
const ERRORS = [
  'execution reverted',
  'out of gas',
  'invalid opcode',
  'stack underflow',
  'invalid jump destination',
  'write protection',
  'insufficient balance for transfer',
  'max call depth exceeded',
  'contract address collision',
  'max code size exceeded',
  'invalid code: must not begin with 0xef',
  'return data out of bounds',
];

/** One recorded event; a log is either a receipt log's position or the log itself. */
export type RecordedEvent =
  | { kind: 'enter'; f: FrameEnter; precompile: boolean }
  | { kind: 'exit'; f: FrameExit }
  | { kind: 'log'; l: TraceLog; receiptLog: number | undefined };

export interface RecordedTx {
  creation: boolean;
  gasLimit: bigint;
  gasUsed: bigint;
  logsBefore: number;
  events: RecordedEvent[];
  /**
   * A frame ends with an error text an earlier release recorded in fewer words than geth's (a
   * bare `invalid opcode` or `stack underflow`, ethereumjs's `invalid JUMP at …`): the
   * transaction is traced by re-executing it instead.
   */
  stale?: true;
}

/** The error texts of rows recorded before the halts were worded as geth's (staleError). */
function staleError(e: string): boolean {
  return e === 'invalid opcode' || e === 'stack underflow' || e.startsWith('invalid JUMP');
}

export class ByteWriter {
  private buf = new Uint8Array(256);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.length++] = b;
  }

  uint(n: number): void {
    this.room(varintLength(n));
    this.length = writeVarint(n, this.buf, this.length);
  }

  big(v: bigint): void {
    let hex = v.toString(16);
    if (hex === '0') hex = '';
    if (hex.length % 2 === 1) hex = `0${hex}`;
    this.byte(hex.length / 2);
    for (let i = 0; i < hex.length; i += 2) this.byte(Number.parseInt(hex.slice(i, i + 2), 16));
  }

  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  bytes(b: Uint8Array): void {
    this.uint(b.length);
    this.raw(b);
  }

  done(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

export class ByteReader {
  at = 0;
  constructor(readonly buf: Uint8Array) {}

  byte(): number {
    if (this.at >= this.buf.length) throw new RangeError('recorded frames: truncated row');
    return this.buf[this.at++] as number;
  }

  /** Unsigned LEB128 (core's varint), read in place: this runs for every field of every frame replayed. */
  uint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      const b = this.byte();
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 0x80;
    }
  }

  big(): bigint {
    const len = this.byte();
    let v = 0n;
    for (let i = 0; i < len; i++) v = (v << 8n) | BigInt(this.byte());
    return v;
  }

  raw(n: number): Uint8Array {
    if (this.at + n > this.buf.length) throw new RangeError('recorded frames: truncated row');
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  bytes(): Uint8Array {
    return this.raw(this.uint());
  }
}

const same = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/** The address a frame's callees see as their caller: its own, or its caller's for DELEGATECALL and CALLCODE. */
function contextOf(f: FrameEnter): Bytes {
  return f.type === 'DELEGATECALL' || f.type === 'CALLCODE' ? f.from : f.to;
}

const EMPTY = new Uint8Array();

/**
 * Encodes one transaction's events (`txData` and `sender`: its input and sender, which the top
 * frame's input and caller are not stored as).
 */
export function encodeTx(w: ByteWriter, tx: RecordedTx, txData: Uint8Array, sender: Bytes): void {
  w.byte(tx.creation ? 1 : 0);
  w.big(tx.gasLimit);
  w.big(tx.gasUsed);
  w.uint(tx.logsBefore);
  w.uint(tx.events.length);
  const open: FrameEnter[] = [];
  for (const e of tx.events) {
    if (e.kind === 'enter') {
      const f = e.f;
      const parent = open[open.length - 1];
      const fromParent = same(f.from, parent === undefined ? sender : contextOf(parent));
      const txInput = f.depth === 0 && same(f.input, txData);
      w.byte(1);
      w.byte(FRAME_TYPES.indexOf(f.type));
      w.byte((fromParent ? 1 : 0) | (txInput ? 2 : 0) | (f.value !== undefined ? 4 : 0) | (e.precompile ? 8 : 0));
      if (!fromParent) w.raw(f.from);
      w.raw(f.to);
      if (!txInput) w.bytes(f.input);
      w.big(f.gas);
      if (f.value !== undefined) w.big(f.value);
      open.push(f);
    } else if (e.kind === 'exit') {
      const f = e.f;
      open.pop();
      const known = f.error === undefined ? -1 : ERRORS.indexOf(f.error);
      w.byte(2);
      w.byte((f.reverted ? 1 : 0) | (f.error !== undefined ? 2 : 0) | (known >= 0 ? 4 : 0));
      if (f.error !== undefined) {
        if (known >= 0) w.byte(known);
        else w.bytes(new TextEncoder().encode(f.error));
      }
      w.bytes(f.output);
      w.big(f.gasUsed);
    } else {
      const l = e.l;
      w.byte(3);
      w.byte(e.receiptLog !== undefined ? 1 : 0);
      w.uint(l.index - tx.logsBefore);
      if (e.receiptLog !== undefined) w.uint(e.receiptLog);
      else {
        w.raw(l.address);
        w.byte(l.topics.length);
        for (const t of l.topics) w.raw(t);
        w.bytes(l.data);
      }
    }
  }
}

/** A recorded transaction's receipt logs, by position (what `log` events refer to). */
export type ReceiptLogs = readonly { address: Bytes; topics: Bytes[]; data: Bytes }[];

/**
 * Decodes one transaction's events (`sender`, `txData` as encodeTx was given). `receiptLogs` resolves the logs stored by their position
 * (asked only when the transaction has such logs and the caller wants logs).
 */
export function decodeTx(
  r: ByteReader,
  sender: Bytes,
  txData: Uint8Array,
  receiptLogs: ReceiptLogs | undefined,
): RecordedTx {
  const creation = (r.byte() & 1) === 1;
  const gasLimit = r.big();
  const gasUsed = r.big();
  const logsBefore = r.uint();
  const count = r.uint();
  const events: RecordedEvent[] = [];
  const open: FrameEnter[] = [];
  let stale = false;
  for (let i = 0; i < count; i++) {
    const tag = r.byte();
    if (tag === 1) {
      const type = FRAME_TYPES[r.byte()];
      if (type === undefined) throw new RangeError('recorded frames: unknown frame type');
      const bits = r.byte();
      const parent = open[open.length - 1];
      const depth = open.length;
      const caller = (bits & 1) === 0 ? r.raw(20) : parent === undefined ? sender : contextOf(parent);
      const to = r.raw(20);
      const input = (bits & 2) === 2 ? txData : r.bytes();
      const gas = r.big();
      const value = (bits & 4) === 4 ? r.big() : undefined;
      const f: FrameEnter = { depth, type, from: caller, to, input, gas, value };
      open.push(f);
      events.push({ kind: 'enter', f, precompile: (bits & 8) === 8 });
    } else if (tag === 2) {
      const bits = r.byte();
      let error: string | undefined;
      if ((bits & 2) === 2) error = (bits & 4) === 4 ? ERRORS[r.byte()] : new TextDecoder().decode(r.bytes());
      if (error !== undefined && staleError(error)) stale = true;
      const output = r.bytes();
      const gasUsed = r.big();
      open.pop();
      events.push({ kind: 'exit', f: { depth: open.length, output, gasUsed, error, reverted: (bits & 1) === 1 } });
    } else if (tag === 3) {
      const bits = r.byte();
      const index = logsBefore + r.uint();
      if ((bits & 1) === 1) {
        const at = r.uint();
        const l = receiptLogs?.[at];
        events.push({
          kind: 'log',
          l: { address: l?.address ?? EMPTY, topics: l?.topics ?? [], data: l?.data ?? EMPTY, index },
          receiptLog: at,
        });
      } else {
        const address = r.raw(20);
        const topics: Bytes[] = [];
        const n = r.byte();
        for (let t = 0; t < n; t++) topics.push(r.raw(32));
        events.push({ kind: 'log', l: { address, topics, data: r.bytes(), index }, receiptLog: undefined });
      }
    } else throw new RangeError(`recorded frames: unknown event ${tag}`);
  }
  return { creation, gasLimit, gasUsed, logsBefore, events, ...(stale ? { stale: true as const } : {}) };
}

/** A block's rows (core's trace-rows.ts framing): each of TRACE_ROW_TXS transactions' events (encodeTx). */
export function encodeBlockFrames(blockHash: Bytes, txs: Uint8Array[]): Uint8Array[] {
  return encodeTraceRows(blockHash, txs);
}

/** A block's rows as one (what a trace of the whole block reads). */
export function joinRows(rows: Uint8Array[]): Uint8Array {
  return rows.length === 1 ? (rows[0] as Uint8Array) : Buffer.concat(rows);
}

/** Each transaction's span in a row or rows joined, read once per bytes object. */
const spans = new WeakMap<Uint8Array, TraceRowSpans>();

function txSpans(row: Uint8Array): TraceRowSpans {
  let out = spans.get(row);
  if (out === undefined) {
    out = traceRowSpans(row);
    spans.set(row, out);
  }
  return out;
}

/**
 * The reader of transaction `index`'s events in a block's row (or rows); undefined when the row is
 * another block's or does not hold the transaction.
 */
export function txFramesAt(row: Uint8Array, blockHash: Bytes, index: number): ByteReader | undefined {
  if (row.length < 33 || !same(row.subarray(0, 32), blockHash)) return undefined;
  const span = txSpans(row)[index];
  if (span === undefined) return undefined;
  return new ByteReader(row.subarray(span.start, span.end));
}

export { EMPTY as NO_BYTES };

/**
 * framesMayHold for transaction `index` of the row alone (its sender aside); true when the row is
 * another block's or lacks the transaction.
 */
export function txFramesMayHold(row: Uint8Array, blockHash: Bytes, index: number, address: Bytes): boolean {
  const r = txFramesAt(row, blockHash, index);
  return r === undefined || framesMayHold(r.buf, address);
}

/**
 * Whether the frames of a block's row may involve `address` (as a frame's caller or callee, a
 * created contract, a SELFDESTRUCT's beneficiary). Every such address is in the row's bytes, or is
 * a transaction's sender: a caller left out is its parent's context, which is its parent's callee
 * or caller, up to the top frame's, the sender. So false is exact when `address` is no sender of
 * the block; true may be a chance match of bytes (the caller then reads the frames).
 */
export function framesMayHold(row: Uint8Array, address: Bytes): boolean {
  return Buffer.from(row.buffer, row.byteOffset, row.length).indexOf(address) >= 0;
}

/** Bytes of a block's frame bloom: 4,096 bits, three per address. */
export const FRAME_BLOOM_BYTES = 512;

/** The three bits of `address` in a frame bloom (12 bits each of its keccak, as logsBloom takes 11). */
function bloomBits(address: Bytes): number[] {
  const h = keccak256(address);
  return [0, 2, 4].map((i) => (((h[i] as number) << 8) | (h[i + 1] as number)) & 0xfff);
}

/**
 * A block's frame bloom: every address its transactions' frames name (callers, callees, created
 * contracts, SELFDESTRUCT beneficiaries), their senders, and the block's and its uncles' authors. A query for an address whose bits are
 * not all set skips the block; about 1% of blocks of 300 addresses match by chance.
 */
export function frameBloom(addresses: Iterable<Bytes>): Uint8Array {
  const out = new Uint8Array(FRAME_BLOOM_BYTES);
  for (const a of addresses) for (const b of bloomBits(a)) out[b >> 3] = (out[b >> 3] as number) | (1 << (b & 7));
  return out;
}

/** Whether `bloom` (frameBloom) may hold `address`; false is exact. */
export function bloomMayHold(bloom: Uint8Array, address: Bytes): boolean {
  return bloomProbe(address)(bloom);
}

/** bloomMayHold for one address over many blooms: its bits found once. */
export function bloomProbe(address: Bytes): (bloom: Uint8Array) => boolean {
  const bits = bloomBits(address);
  return (bloom) =>
    bloom.length !== FRAME_BLOOM_BYTES || bits.every((b) => ((bloom[b >> 3] as number) & (1 << (b & 7))) !== 0);
}
