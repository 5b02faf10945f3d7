// Sealed log segments: an address's logs over a block range as contiguous bytes of a file.
//
// The AddressLogsJson rows (schema.ts) are one LevelDB value per (address, block): a getLogs
// answer over tens of blocks reads tens of values, and classic-level hands each one out as a
// Buffer of its own (malloc, a copy, and external memory, which is what starts V8's full marking:
// docs/performance.md). Once a span of SEGMENT_SPAN blocks lies SEAL_DEPTH blocks below
// the head, the writer copies its rows, address by address, into an append-only segment file, and
// LogSegments keys (schema.ts) say where each address's text of the span lies. A one-address
// query then costs one small point read per span, and its answer is a file slice that the
// transport reads straight into the reply (core's ascii-chunks.ts): the bytes are copied once,
// from the page cache into the reply, and never live in the JS heap or its external memory.
// The rows of a sealed span go in the seal's batch: the blocks not sealed yet read their rows,
// topic queries over sealed blocks format their matches from the log rows, and queries naming
// several addresses are answered by the log index over sealed blocks.
//
// Spans sealed now are compressed (segment-chunks.ts): an index value whose entry count has
// COMPRESSED set also lists its chunks, and a query decodes the chunks holding its blocks (kept
// in a small cache of decoded chunks). With STRIPPED set as well, the chunks were compressed
// without their logs' transaction and block hashes, which decoding writes back from the block's
// rows. Spans sealed by earlier releases, uncompressed or compressed whole, are read as they
// are: a datadir of any of these kinds, or of several, is served the same (`db convert` seals
// them again as spans are sealed now).
//
// Durability: a span's bytes are written and fsynced before the one batch that names them (its
// index keys and Meta.logSegments). A crash in between leaves bytes past the recorded file length,
// which the next seal cuts off before it appends. A rewind below the sealed end drops the index
// keys of the spans from the rewound block's span on, in the rewind's own batch; their bytes stay
// in the file unreferenced (a reader may be writing a slice of them into a reply right then) and
// the spans are sealed again, appended, once the new branch is deep enough.
import {
  closeSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readSync,
  readdirSync,
  rmSync,
  statSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import type { AsciiChunk, FileSlice } from '@chainnode/core';
import { join } from 'node:path';
import type { Db } from '../db.js';
import { Lru } from '@chainnode/core';
import { AddressLogsJsonView, MetaKey, Prefix, headCodec, putU64, tables, u64Codec } from '../schema/index.js';
import type { KvSyncRead } from '../schema/index.js';
import { readyRowsOf } from './ready-rows.js';
import { packSpan, unpackChunk, unpackStrippedChunk } from './segment-chunks.js';
import type { BlockHashes } from './segment-chunks.js';
import { readBlockLogs } from './log-blocks.js';

/** Blocks per sealed span. A 100-block query touches at most two. */
export const SEGMENT_SPAN = 256;
/**
 * A span is sealed once its last block is this far below the head: the default reorg depth
 * (`--reorg-depth`, 64). A deeper rewind (a larger --reorg-depth, or `rewind`) unseals the spans
 * it reaches (LogSegmentSealer.unsealFrom, in the rewind's batch) and they are sealed again once
 * deep enough.
 */
export const SEAL_DEPTH = 64n;
/** A segment file is appended to until it holds this many bytes; the next span starts a new one. */
const FILE_MAX = 2 ** 30;
const KEY_LENGTH = 1 + 8 + 20;
const ENTRY = 12;
const VALUE_HEAD = 16;
/** Set in an index value's entry count: the span's text is compressed, its chunk table follows the entries. */
const COMPRESSED = 0x8000_0000;
/** Set with COMPRESSED: its chunks were compressed stripped of their hashes (segment-chunks.ts). */
const STRIPPED = 0x4000_0000;
const CHUNK_ENTRY = 8;
/** Decoded chunks kept by the reader (each about 64 KB, or one block's text when that is larger). */
const DECODED_CHUNKS = 512;
const META_KEY = tables.meta.key(MetaKey.LogSegments);
/** Between two blocks' texts in a segment, as between two logs' in a row. */
const SEPARATOR = Uint8Array.of(0x2c);

/** Meta.logSegments: spans [from, to) sealed; file `file` is appended to and ends at fileLength. */
export interface SegmentsState {
  from: bigint;
  to: bigint;
  file: number;
  fileLength: number;
}

function encodeState(s: SegmentsState): Uint8Array {
  const out = new Uint8Array(28);
  putU64(out, 0, Number(s.from));
  putU64(out, 8, Number(s.to));
  new DataView(out.buffer).setUint32(16, s.file);
  putU64(out, 20, s.fileLength);
  return out;
}

function decodeState(b: Uint8Array): SegmentsState {
  if (b.length !== 28) throw new RangeError(`Meta.logSegments: expected 28 bytes, got ${b.length}`);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const u64 = (at: number): number => v.getUint32(at) * 2 ** 32 + v.getUint32(at + 4);
  return { from: BigInt(u64(0)), to: BigInt(u64(8)), file: v.getUint32(16), fileLength: u64(20) };
}

function indexKey(spanStart: number, address: Uint8Array): Uint8Array {
  const key = new Uint8Array(KEY_LENGTH);
  key[0] = Prefix.LogSegments;
  putU64(key, 1, spanStart);
  key.set(address, 9);
  return key;
}

function segmentDir(datadir: string): string {
  return join(datadir, 'log-segments');
}

function segmentPath(dir: string, file: number): string {
  return join(dir, `${String(file).padStart(6, '0')}.seg`);
}

function spanOf(n: bigint): bigint {
  return n - (n % BigInt(SEGMENT_SPAN));
}

/** A compressed span's index value: where its bytes start, its block entries, then its chunks. */
function encodeIndexValue(
  file: number,
  at: number,
  blocks: bigint[],
  start: bigint,
  textEnds: number[],
  counts: number[],
  chunks: { firstEntry: number; packedEnd: number }[],
): Uint8Array {
  const n = blocks.length;
  const value = new Uint8Array(VALUE_HEAD + ENTRY * n + 4 + CHUNK_ENTRY * chunks.length);
  const dv = new DataView(value.buffer);
  dv.setUint32(0, file);
  putU64(value, 4, at);
  dv.setUint32(12, (n | COMPRESSED | STRIPPED) >>> 0);
  for (let i = 0; i < n; i++) {
    const e = VALUE_HEAD + ENTRY * i;
    dv.setUint32(e, Number((blocks[i] as bigint) - start));
    dv.setUint32(e + 4, textEnds[i] as number);
    dv.setUint32(e + 8, counts[i] as number);
  }
  const c = VALUE_HEAD + ENTRY * n;
  dv.setUint32(c, chunks.length);
  chunks.forEach((k, j) => {
    dv.setUint32(c + 4 + CHUNK_ENTRY * j, k.firstEntry);
    dv.setUint32(c + 8 + CHUNK_ENTRY * j, k.packedEnd);
  });
  return value;
}

/** Writer side: seals spans, and unseals them when a rewind goes below their end. */
export class LogSegmentSealer {
  private constructor(
    private readonly db: Db,
    private readonly dir: string,
    private state: SegmentsState | undefined,
  ) {}

  static async open(db: Db, datadir: string): Promise<LogSegmentSealer> {
    const raw = await db.get(META_KEY);
    return new LogSegmentSealer(db, segmentDir(datadir), raw === undefined ? undefined : decodeState(raw));
  }

  /**
   * Seals every whole span not sealed yet whose blocks all have AddressLogsJson rows (from
   * `rowsFrom` on) and lie at least SEAL_DEPTH below `head` (durable).
   */
  async sealBelow(rowsFrom: bigint, head: bigint): Promise<void> {
    const span = BigInt(SEGMENT_SPAN);
    const first = spanOf(rowsFrom + span - 1n);
    const s = this.state;
    // Nothing sealed yet: start at the first whole span with rows.
    if (s === undefined || (s.to === s.from && s.from < first))
      this.state = { from: first, to: first, file: s?.file ?? 0, fileLength: s?.fileLength ?? 0 };
    // Rows missing right after the sealed spans (a datadir upgraded in place): nothing more to seal.
    else if (s.to < first) return;
    for (let start = (this.state as SegmentsState).to; start + span - 1n + SEAL_DEPTH <= head; start += span)
      await this.seal(start);
  }

  /** Spans sealed now. */
  sealedSpans(): number {
    const s = this.state;
    return s === undefined ? 0 : Number(s.to - s.from) / SEGMENT_SPAN;
  }

  /** One span: its rows' text appended to the segment file, fsynced, then its index in one batch. */
  private async seal(start: bigint): Promise<void> {
    const state = this.state as SegmentsState;
    const end = start + BigInt(SEGMENT_SPAN) - 1n;
    const numbers: bigint[] = [];
    for (let n = start; n <= end; n++) numbers.push(n);
    const ranges = await tables.blockLogs.getMany(this.db, numbers);
    // Which addresses emitted logs in which blocks: from the span's logs (block order).
    const blocksOf = new Map<string, { address: Uint8Array; blocks: bigint[] }>();
    for (let i = 0; i < numbers.length; i++) {
      const number = numbers[i] as bigint;
      const range = ranges[i];
      if (range === undefined) throw new Error(`log segments: block log range missing for ${number}`);
      for (const row of await readBlockLogs(this.db, number, range)) {
        const k = Buffer.from(row.address.buffer, row.address.byteOffset, row.address.byteLength).toString('latin1');
        let e = blocksOf.get(k);
        if (e === undefined) blocksOf.set(k, (e = { address: row.address.slice(), blocks: [] }));
        if (e.blocks[e.blocks.length - 1] !== row.blockNumber) e.blocks.push(row.blockNumber);
      }
    }
    let file = state.file;
    let at = state.fileLength;
    if (at >= FILE_MAX) {
      file++;
      at = 0;
    }
    mkdirSync(this.dir, { recursive: true });
    const fd = openSync(segmentPath(this.dir, file), 'a+');
    const batch = this.db.batch();
    try {
      // Bytes past the recorded length are a crashed seal's: cut them off before appending.
      if (fstatSync(fd).size > at) ftruncateSync(fd, at);
      for (const key of [...blocksOf.keys()].sort()) {
        const { address, blocks } = blocksOf.get(key) as { address: Uint8Array; blocks: bigint[] };
        const raws = await tables.addressLogsJson.getMany(
          this.db,
          blocks.map((number) => ({ address, number })),
        );
        const parts: Uint8Array[] = [];
        const textEnds: number[] = [];
        const counts: number[] = [];
        let textEnd = 0;
        raws.forEach((raw, i) => {
          if (raw === undefined) throw new Error(`log segments: AddressLogsJson row of block ${blocks[i]} missing`);
          const view = new AddressLogsJsonView(raw);
          if (i > 0) {
            parts.push(SEPARATOR);
            textEnd++;
          }
          const text = view.allBytes();
          parts.push(text);
          textEnd += text.length;
          textEnds.push(textEnd);
          counts.push(view.count);
        });
        const packed = await packSpan(Buffer.concat(parts, textEnd), textEnds);
        const value = encodeIndexValue(file, at, blocks, start, textEnds, counts, packed.chunks);
        const bytes = packed.bytes;
        let written = 0;
        while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
        at += bytes.length;
        batch.put(indexKey(Number(start), address), value);
        // The segment now holds the rows' text: they go (a rewind that unseals the span puts back
        // the ones that stay canonical, ready-rows.ts).
        for (const number of blocks) batch.del(tables.addressLogsJson.key({ address, number }));
      }
      fsyncSync(fd);
    } catch (err) {
      await batch.close();
      throw err;
    } finally {
      closeSync(fd);
    }
    const next: SegmentsState = { from: state.from, to: end + 1n, file, fileLength: at };
    batch.put(META_KEY, encodeState(next));
    await batch.write();
    this.state = next;
  }

  /**
   * Stages into `ops` (a rewind's batch) the unsealing of every span holding a block from `first`
   * on: their index keys go, their blocks below `first` get their AddressLogsJson rows back, and
   * Meta.logSegments ends before them. The caller must not seal again
   * before that batch has landed.
   */
  async unsealFrom(
    first: bigint,
    ops: { put(key: Uint8Array, value: Uint8Array): void; del(key: Uint8Array): void },
  ): Promise<void> {
    const state = this.state;
    if (state === undefined || first >= state.to) return;
    const to = first <= state.from ? state.from : spanOf(first);
    const it = this.db.keys({
      gte: indexKey(Number(to), new Uint8Array(20)),
      lt: indexKey(Number(state.to), new Uint8Array(20)),
    });
    try {
      for await (const k of it) ops.del(k.slice());
    } finally {
      await it.close();
    }
    // The unsealed spans' blocks below `first` stay: their rows come back.
    for (let n = to; n < first && n < state.to; n++) for (const [k, v] of await readyRowsOf(this.db, n)) ops.put(k, v);
    this.state = { ...state, to };
    ops.put(META_KEY, encodeState(this.state));
  }
}

/** A sealed span's text of one address over a block range, or where the result cap is crossed. */
export type SegmentScan =
  | { kind: 'ok'; slices: AsciiChunk[]; count: number }
  | { kind: 'too-many'; lastFittingBlock: bigint };

/** Reader side: the sealed spans an address's query covers, as file slices. */
export class LogSegmentReader {
  private readonly dir: string;
  /**
   * Segment files open for reading, by number, with the size last seen: immutable where an index
   * names them (only appended to), so kept open.
   */
  private readonly files = new Map<number, { fd: number; size: number }>();
  /** Decoded chunks of compressed spans, by file and position (immutable while an index names them). */
  private readonly decoded = new Lru<string, Buffer>(DECODED_CHUNKS);

  /** `blockOf`: a sealed block's hash and transaction hashes, which stripped chunks leave out. */
  constructor(
    private readonly db: KvSyncRead,
    datadir: string,
    private readonly blockOf: (number: bigint) => BlockHashes,
  ) {
    this.dir = segmentDir(datadir);
  }

  /** Meta.logSegments as stored now: the sealed blocks [from, to), or undefined (none). */
  sealed(): { from: bigint; to: bigint } | undefined {
    const raw = this.db.getSync(META_KEY);
    if (raw === undefined) return undefined;
    const s = decodeState(raw);
    return s.to > s.from ? { from: s.from, to: s.to } : undefined;
  }

  /**
   * `address`'s logs in blocks [from, to] (all sealed) as slices of the segment files, in block
   * order, each slice the blocks' texts joined by ','; `counted` logs come before them in the
   * answer, which may hold at most `limit`.
   */
  scan(address: Uint8Array, from: bigint, to: bigint, counted: number, limit: number): SegmentScan {
    const slices: AsciiChunk[] = [];
    let count = counted;
    const span = BigInt(SEGMENT_SPAN);
    for (let start = spanOf(from); start <= to; start += span) {
      const raw = this.db.getSync(indexKey(Number(start), address));
      if (raw === undefined) continue;
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      const head = dv.getUint32(12);
      const n = (head & ~(COMPRESSED | STRIPPED)) >>> 0;
      const packed = (head & COMPRESSED) !== 0;
      const stripped = packed && (head & STRIPPED) !== 0;
      const chunks = packed && raw.length >= VALUE_HEAD + ENTRY * n + 4 ? dv.getUint32(VALUE_HEAD + ENTRY * n) : 0;
      const length = VALUE_HEAD + ENTRY * n + (packed ? 4 + CHUNK_ENTRY * chunks : 0);
      if (raw.length !== length || n === 0 || (packed && chunks === 0))
        throw new Error(`log segments: malformed index value of span ${start}`);
      const lo = from > start ? Number(from - start) : 0;
      const hi = Number((to < start + span - 1n ? to : start + span - 1n) - start);
      const block = (i: number): number => dv.getUint32(VALUE_HEAD + ENTRY * i);
      // First entry at or after lo (binary search), then forward while at or before hi.
      let a = 0;
      let b = n;
      while (a < b) {
        const mid = (a + b) >>> 1;
        if (block(mid) < lo) a = mid + 1;
        else b = mid;
      }
      let last = -1;
      for (let i = a; i < n && block(i) <= hi; i++) {
        count += dv.getUint32(VALUE_HEAD + ENTRY * i + 8);
        if (count > limit) return { kind: 'too-many', lastFittingBlock: start + BigInt(block(i)) - 1n };
        last = i;
      }
      if (last < 0) continue;
      const offset = dv.getUint32(4) * 2 ** 32 + dv.getUint32(8);
      const textEnd = (i: number): number => dv.getUint32(VALUE_HEAD + ENTRY * i + 4);
      const textStart = (i: number): number => (i === 0 ? 0 : textEnd(i - 1) + 1);
      if (!packed) slices.push(this.slice(dv.getUint32(0), offset + textStart(a), textEnd(last) - textStart(a)));
      else slices.push(...this.unpacked(dv, n, chunks, offset, a, last, textStart, textEnd, stripped));
    }
    return { kind: 'ok', slices, count };
  }

  /**
   * The text of entries [a, last] of a compressed span (index value `dv`, `n` entries, `chunks`
   * chunks, its bytes from `offset` of its file): one piece per chunk it touches, each a run of
   * whole blocks' texts (the reply puts the ',' between two pieces).
   */
  private unpacked(
    dv: DataView,
    n: number,
    chunks: number,
    offset: number,
    a: number,
    last: number,
    textStart: (i: number) => number,
    textEnd: (i: number) => number,
    stripped: boolean,
  ): Uint8Array[] {
    const at = VALUE_HEAD + ENTRY * n + 4;
    const firstEntry = (j: number): number => (j >= chunks ? n : dv.getUint32(at + CHUNK_ENTRY * j));
    const packedEnd = (j: number): number => (j < 0 ? 0 : dv.getUint32(at + CHUNK_ENTRY * j + 4));
    const file = dv.getUint32(0);
    const out: Uint8Array[] = [];
    let j = 0;
    while (j + 1 < chunks && firstEntry(j + 1) <= a) j++;
    for (; j < chunks && firstEntry(j) <= last; j++) {
      const first = firstEntry(j);
      const end = firstEntry(j + 1) - 1;
      const rawStart = textStart(first);
      const position = offset + packedEnd(j - 1);
      const key = `${file}:${position}`;
      let text = this.decoded.get(key);
      if (text === undefined) {
        const packed = this.read(file, position, packedEnd(j) - packedEnd(j - 1));
        const length = textEnd(end) - rawStart;
        text = stripped ? unpackStrippedChunk(packed, length, this.blockOf) : unpackChunk(packed, length);
        this.decoded.set(key, text);
      }
      const lo = textStart(Math.max(first, a)) - rawStart;
      const hi = textEnd(Math.min(end, last)) - rawStart;
      out.push(text.subarray(lo, hi));
    }
    return out;
  }

  /** Bytes [position, position + length) of segment file `file` (checked as slice() does). */
  private read(file: number, position: number, length: number): Buffer {
    const { fd } = this.slice(file, position, length);
    const out = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const got = readSync(fd, out, done, length - done, position + done);
      if (got === 0) throw new Error(`log segments: file ${file} read short at ${position + done}`);
      done += got;
    }
    return out;
  }

  /**
   * A slice of segment file `file`, checked against its size now (the reply reads it later, and
   * a file shorter than its index is a damaged datadir: an error for this query, not a reply cut
   * short).
   */
  private slice(file: number, position: number, length: number): FileSlice {
    let f = this.files.get(file);
    if (f === undefined) {
      const fd = openSync(segmentPath(this.dir, file), 'r');
      f = { fd, size: fstatSync(fd).size };
      this.files.set(file, f);
    }
    if (position + length > f.size) {
      f.size = fstatSync(f.fd).size; // appended to since it was opened
      if (position + length > f.size)
        throw new Error(
          `log segments: file ${file} ends at ${f.size}, its index names bytes up to ${position + length}`,
        );
    }
    return { fd: f.fd, position, length };
  }

  /** Closes the segment files (after the last reply holding a slice of them is written). */
  close(): void {
    for (const f of this.files.values()) closeSync(f.fd);
    this.files.clear();
    this.decoded.clear();
  }
}

/** The segment files of `datadir`: how many and their bytes (none yet: zeros). */
export function segmentFileSizes(datadir: string): { files: number; bytes: number } {
  const dir = segmentDir(datadir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return { files: 0, bytes: 0 }; // no sealed segment yet
  }
  let bytes = 0;
  for (const name of names) bytes += statSync(join(dir, name)).size;
  return { files: names.length, bytes };
}

/** What trimSegmentFiles cut: bytes past the recorded length, and files past the one appended to. */
export interface SegmentTrim {
  truncatedBytes: number;
  removedFiles: number;
}

/**
 * Cuts the segment files to what Meta.logSegments records, as the next seal would: the file
 * appended to ends at its recorded length, and files after it (a crashed seal's, or every file
 * when nothing is sealed) go. Files before it are whole (a rewind's unreferenced bytes inside
 * them stay). Only with the datadir held exclusively (no reader has a slice of them).
 */
export async function trimSegmentFiles(db: Db, datadir: string): Promise<SegmentTrim> {
  const raw = await db.get(META_KEY);
  const state = raw === undefined ? undefined : decodeState(raw);
  const dir = segmentDir(datadir);
  const trim: SegmentTrim = { truncatedBytes: 0, removedFiles: 0 };
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return trim; // no segment file yet
  }
  for (const name of names) {
    const m = /^(\d{6})\.seg$/.exec(name);
    if (m === null) continue;
    const file = Number(m[1]);
    const path = join(dir, name);
    const size = statSync(path).size;
    if (state === undefined || file > state.file) {
      rmSync(path);
      trim.removedFiles++;
      trim.truncatedBytes += size;
    } else if (file === state.file && size > state.fileLength) {
      truncateSync(path, state.fileLength);
      trim.truncatedBytes += size - state.fileLength;
    }
  }
  return trim;
}

/** What resealLogSegments did. */
export interface Reseal {
  /** Spans sealed before, and now. */
  spansBefore: number;
  spansAfter: number;
  /** Segment files' bytes before and after. */
  bytesBefore: number;
  bytesAfter: number;
}

/**
 * Seals the datadir's log segments again from scratch in the layout sealed now: compressed, the
 * sealed blocks' ready rows deleted. A datadir of a release that kept its spans uncompressed,
 * beside their ready rows, is converted so. Each step leaves a datadir that serves the same
 * answers: the sealed blocks' rows are written back (from their log rows), then the index and
 * Meta.logSegments go in one batch, then the unreferenced files, then the spans are sealed as the
 * writer seals them. Only with the datadir held exclusively.
 */
export async function resealLogSegments(db: Db, datadir: string): Promise<Reseal> {
  const raw = await db.get(META_KEY);
  const state = raw === undefined ? undefined : decodeState(raw);
  const dir = segmentDir(datadir);
  const bytesBefore = segmentFileSizes(datadir).bytes;
  const spansBefore = state === undefined ? 0 : Number(state.to - state.from) / SEGMENT_SPAN;
  if (state !== undefined) {
    for (let n = state.from; n < state.to; n++) {
      const batch = db.batch();
      for (const [k, v] of await readyRowsOf(db, n)) batch.put(k, v);
      await batch.write();
    }
    const batch = db.batch();
    for await (const k of db.keys({
      gte: Uint8Array.of(Prefix.LogSegments),
      lt: Uint8Array.of(Prefix.LogSegments + 1),
    }))
      batch.del(k.slice());
    batch.del(META_KEY);
    await batch.write();
  }
  rmSync(dir, { recursive: true, force: true });
  const spansAfter = await sealDueLogSegments(db, datadir);
  return { spansBefore, spansAfter, bytesBefore, bytesAfter: segmentFileSizes(datadir).bytes };
}

/**
 * Seals the spans the head has left SEAL_DEPTH behind that are not sealed yet (a datadir written
 * while the depth was greater), as the writer seals them; the number of spans sealed. Only with
 * the datadir held exclusively.
 */
export async function sealDueLogSegments(db: Db, datadir: string): Promise<number> {
  const head = await tables.meta.get(db, MetaKey.Head);
  const rowsFrom = await tables.meta.get(db, MetaKey.LogsJsonFrom);
  if (head === undefined || rowsFrom === undefined) return 0;
  const sealer = await LogSegmentSealer.open(db, datadir);
  const before = sealer.sealedSpans();
  await sealer.sealBelow(u64Codec.decode(rowsFrom), headCodec.decode(head).number);
  return sealer.sealedSpans() - before;
}

/** Whether any sealed span is kept as an earlier release sealed it (uncompressed, or compressed with its hashes): `db convert` reseals them. */
export async function hasSpansToReseal(db: Db): Promise<boolean> {
  for await (const v of db.values({
    gte: Uint8Array.of(Prefix.LogSegments),
    lt: Uint8Array.of(Prefix.LogSegments + 1),
  })) {
    if (v.length < VALUE_HEAD) continue;
    const head = new DataView(v.buffer, v.byteOffset, v.byteLength).getUint32(12);
    if ((head & COMPRESSED) === 0 || (head & STRIPPED) === 0) return true;
  }
  return false;
}
