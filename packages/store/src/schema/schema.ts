// The LevelDB key schema: every table of the store, in ONE database. Each table owns a one-byte
// prefix (never reuse a retired one), numbers in keys are fixed-width big-endian so that byte order
// equals numeric order, and each table is a typed class whose range scans are clamped to its prefix.
//
//   prefix  table           Key -> Value
//   0x01    Meta            utf8 name -> bytes   (schemaVersion, genesisHash, chainConfig, head,
//                           genesisJson, logsJsonFrom, logSegments, firstBlock)
//   0x02    Canonical       number(8) -> blockHash(32)
//   0x03    HashToNumber    blockHash(32) -> number(8)
//   0x04    Headers         blockHash(32) -> header RLP (as in the block)
//   0x05    Bodies          blockHash(32) -> RLP [size, txCount, [uncleHeaderRlp..], withdrawals?]: the
//                           transactions are BodyTxs rows. An earlier release wrote them inline,
//                           RLP [size, [rawTx..], [uncleHeaderRlp..], withdrawals?] (a list where
//                           the count is), still read; `db convert` cuts them out.
//   0x06    Receipts        blockHash(32) -> RLP [[type, status(or postState), cumulativeGasUsed
//                           (, depositNonce(, depositReceiptVersion))]..]: the two trailing items
//                           only on OP-stack deposit receipts that have them (Regolith, Canyon), so
//                           rows written before they existed read unchanged.
//   0x07    TxLookup        txHash(32) -> varint(number) ++ varint(txIndex) (unsigned LEB128: 2-7
//                           bytes), or number(8) ++ txIndex(4): exactly 12 bytes (rows written
//                           before the compact form, which `db convert` rewrites compact)
//   0x08    TotalDifficulty blockHash(32) -> td (minimal big-endian)
//   0x09    Senders         blockHash(32) -> sender(20) per tx, concatenated in tx order
//   0x0a    Blooms          number(8) -> logsBloom(256)
//   0x0b    BlockLogs       number(8) -> firstLogId(8) ++ logCount(4)
//   0x0c    Logs            logId(8) -> RLP [number, txIndex, logIndex, address, [topics..], data]:
//                           one row per log, as earlier releases wrote them. No longer written:
//                           a block's logs are its LogBlocks row; readers read these rows for the
//                           blocks that have no LogBlocks row (logs/log-blocks.ts), and `db
//                           convert` rewrites them as LogBlocks rows.
//   0x0d    LogIndex        kind(1) ++ value(20|32) ++ lastLogId(8) -> delta-varint logIds
//                           kind: 0x00..0x03 topic position, 0x10 address. The value's sorted
//                           log ids are cut into chunks of LOG_INDEX_CHUNK ids (occurrence
//                           0..N-1, N..2N-1, ...); a full chunk is keyed by its last id, the
//                           remainder (1..N-1 ids) by OPEN_CHUNK (all 0xff). A forward seek to
//                           value ++ id lands on the one chunk that may hold id. The layout is a
//                           pure function of the id set (batch grouping does not show).
//   0x0e    TrieNodes       key as the MPT / state manager asks (node hash, 'c'++codeHash) -> bytes
//   0x0f    BlockTxHashes   number(8) -> extras ++ zero padding ++ txHash(32) per tx, concatenated
//                           in tx order. extras: RLP [size, [uncleHash..], totalDifficulty,
//                           headerRlp, withdrawals?] (the block's RLP size, its uncles' hashes,
//                           its total difficulty, its header as in Headers, its withdrawals list
//                           as in the body): a hashes-only block answer is this one row (~0.6 KB
//                           more per block than the hashes alone, for one read instead of three).
//                           The padding (0..31 bytes) makes the value's length 1 more than a
//                           multiple of 32. Rows of earlier releases: the hashes alone (length a
//                           multiple of 32; the answer reads the body), or extras without the
//                           header and total difficulty ([size, [uncleHash..], withdrawals?]; the
//                           answer reads them from their tables); `db convert` rewrites both
//                           (blockTxHashesCodec, decodeBlockExtras).
//   0x10    BlockJson       blockHash(32) -> a block's hashes-only JSON answer, as earlier releases
//                           wrote it at import (0x01 ++ the answer, or an older row: the answer
//                           with an empty transaction list). No longer written or read: the answer
//                           is written on demand from the rows above (reader.ts loadReadyJson),
//                           and `db convert` deletes the rows a datadir still holds.
//   0x11    AddressLogsJson address(20) ++ number(8) -> count(4) ++ count x [logIndex(4) ++ textEnd(4)]
//                           ++ ASCII text: the JSON (core's LogJsonWriter) of the logs this address
//                           emitted in this block, joined by ',', in log order; entry i spans
//                           [i = 0 ? 0 : textEnd(i-1) + 1, textEnd(i)) of the text. Written at
//                           import: a ready-to-serve encoding laid out for the commonest getLogs
//                           query (an address over a block range: one forward scan of contiguous
//                           rows, each read whole). Present from block Meta.logsJsonFrom on (a
//                           datadir written before the table existed has none below its first
//                           block written after; readers then format logs from the Logs rows,
//                           so no schema version bump).
//   0x12    LogSegments     spanStart(8) ++ address(20) -> file(4) ++ offset(8) ++ count(4) ++ count x
//                           [block - spanStart (4) ++ textEnd(4) ++ logCount(4)]: where an address's
//                           AddressLogsJson text of a sealed span (log-segments.ts) lies in segment
//                           file `file`: its blocks in order, block i's text (its row's text) at
//                           [offset + (i = 0 ? 0 : textEnd(i-1) + 1), offset + textEnd(i)), the
//                           blocks joined by ','. Present for the spans of Meta.logSegments only.
//                           With count's top bit set (spans sealed since), the text is compressed
//                           in chunks (logs/segment-chunks.ts): textEnd is in the joined text, and
//                           chunks(4) ++ chunks x [firstEntry(4) ++ packedEnd(4)] follow: chunk j
//                           holds entries [firstEntry(j), firstEntry(j+1)), its brotli bytes at
//                           [offset + packedEnd(j-1), offset + packedEnd(j)) of the file.
//   0x13    AccountHistory  keccak(address)(32) ++ number(8) -> the account's state-trie leaf (RLP
//                           [nonce, balance, storageRoot, codeHash]) after block `number`, or empty
//                           (a tombstone) when the block deleted it: one row per account a block
//                           changed (history/). The account at block N is the row of the greatest
//                           number <= N (one reverse seek); none: absent at N. Present when
//                           Meta.stateHistory is (a datadir written before the table existed, or
//                           one that joined its chain above genesis, has none: readers walk the
//                           trie, so no schema version bump).
//   0x14    StorageHistory  keccak(address)(32) ++ keccak(slot)(32) ++ number(8) -> the slot's value
//                           after block `number` (minimal big-endian, as in its trie leaf), or empty
//                           when the block cleared it (set to zero, or its account deleted or
//                           re-created: every slot the account had gets a row). Read as
//                           AccountHistory; present with it.
//   0x15    StateLatest     keccak(address)(32) (++ keccak(slot)(32)) -> number(8) ++ count(1) ++
//                           count varint gaps ++ value: the key's AccountHistory (32-byte key) or
//                           StorageHistory (64-byte key) row of the greatest number, that number and
//                           its value, and the numbers of the key's earlier rows, newest first, at
//                           most 32 (each as its gap from the one before; fewer than 32: all of
//                           them) (history/latest.ts). A read at a block >= number is this one point
//                           read; at a block between two listed numbers, one more (the row at the
//                           lower); no row: the key has no history row (never changed). Complete
//                           only when Meta.stateLatest is present (a datadir written before the
//                           table existed, or with its earlier form without the list, flagged
//                           Meta.stateLatestUnlisted, is read by the seek until `db convert` fills
//                           it again; so no schema version bump).
//   0x16    LogBlocks       firstLogId(8) -> number(8) ++ codec(1) ++ the block's logs, columnar and
//                           compressed (logs/block-logs-codec.ts: per-block address and topic
//                           dictionaries, then per log its tx index gap, address, topics and data
//                           length, then the data blobs; codec 0 none, 1 deflate, 2 brotli): the
//                           logs of block `number` (log ids firstLogId.. in log order), one row
//                           per block that has logs (BlockLogs gives a block's firstLogId and
//                           count). The log holding id X is in the row of the greatest
//                           firstLogId <= X (one reverse seek), or, for a block written by an
//                           earlier release and not converted yet, its Logs row.
//   0x17    Appearances     kind(1) ++ address(20) ++ lastId(8) -> delta-varint appearance ids: the
//                           address-appearance index (appearances/). kind 0x00. An id is a
//                           transaction's position, number * 2^16 + txIndex (APPEARANCE_TX_BITS);
//                           its address appears in it as the sender, the recipient, the contract a
//                           creation transaction deploys, or the emitter of one of its logs (what
//                           its call frames name besides: FrameAppearances). Chunked exactly as LogIndex (LOG_INDEX_CHUNK
//                           ids a chunk, the open remainder under OPEN_CHUNK), written by the same
//                           writer code at import in every ingest mode. Complete from block
//                           Meta.appearancesFrom on (a datadir written before the table existed has
//                           rows only from its first block written after; the searches refuse until
//                           `db convert` builds the whole index: appearances/build.ts).
//   0x18    TxFrames        number(8) ++ row(2) -> the block's hash(32) ++ the call frames of
//                           TRACE_ROW_TXS of its transactions (core trace-rows.ts; row r holds
//                           transactions 16r .. 16r + 15) as its executing import recorded them
//                           (what the frame tracers are fed: frames entered and left, logs), in
//                           the form the trace module reads (packages/exec trace/record/codec.ts;
//                           opaque here): one transaction's trace reads its row, a block's reads
//                           its rows in order. Written by an import that executes with recording
//                           on; none for replicated or joined blocks (their traces re-execute).
//                           An earlier release wrote one row a block under number(8) alone,
//                           still read. Cut on rewind.
//   0x19    FrameBlooms     number(8) -> the block's hash(32) ++ a 512-byte bloom of every address
//                           its recorded frames name and its senders (exec's frameBloom): what
//                           trace_filter reads first, for a range, to skip the blocks that cannot
//                           match. Written and cut with the TxFrames row.
//   0x1a    FrameAppearances kind(1) ++ address(20) ++ lastId(8) -> delta-varint appearance ids:
//                           the addresses a transaction's recorded call frames name (a frame's
//                           caller or callee, a created contract, a SELFDESTRUCT beneficiary)
//                           that its Appearances do not already hold (an internal call's callee
//                           that emits no log, say). The Appearances layout and kind; written
//                           with the TxFrames row (an executing import with recording on), from
//                           block Meta.frameAppearancesFrom on. The searches and trace_filter
//                           read both tables.
//   0x1b    FrameAddresses  number(8) -> the block's hash(32) ++ the distinct addresses it posted
//                           to FrameAppearances (20 bytes each): what a rewind reads to cut them.
//   0x1c    TxStateDiffs    number(8) ++ row(2) -> the block's hash(32) ++ what each of its transactions
//                           changed of the accounts it touched (balances, nonces, code hashes and
//                           slots before and after; which it created or destroyed), as its
//                           executing import recorded them: what prestateTracer's diffMode and
//                           Parity's stateDiff answer from (packages/exec trace/record/changes.ts;
//                           opaque here), cut into rows and keyed as TxFrames. Written and cut
//                           with the TxFrames rows, under the same setting (Meta.traceFrames).
//   0x1d    BodyTxs         blockHash(32) ++ row(2) -> RLP [rawTx..]: transactions BODY_ROW_TXS * row
//                           .. BODY_ROW_TXS * row + BODY_ROW_TXS - 1 of the block's body (typed:
//                           type byte ++ payload; legacy: the RLP list), one row per BODY_ROW_TXS
//                           (none for a block without transactions), written with its Bodies row.
//                           One transaction read alone reads its row (~5 KB at mainnet's shape),
//                           not the block's ~70 KB of transactions.
import { RLP } from '@ethereumjs/rlp';
import {
  bigIntToFixed,
  bytesToBigInt,
  concatBytes,
  keccak256,
  readVarint,
  varintLength,
  writeVarint,
} from '@chainnode/core';
import { decodeLog, encodeLogRow, rlpItem, rlpItemEnd } from './rlp.js';
import type { StoredLog } from './rlp.js';

export type { StoredLog } from './rlp.js';

export const SCHEMA_VERSION = 2;

export const Prefix = {
  Meta: 0x01,
  Canonical: 0x02,
  HashToNumber: 0x03,
  Headers: 0x04,
  Bodies: 0x05,
  Receipts: 0x06,
  TxLookup: 0x07,
  TotalDifficulty: 0x08,
  Senders: 0x09,
  Blooms: 0x0a,
  BlockLogs: 0x0b,
  Logs: 0x0c,
  LogIndex: 0x0d,
  TrieNodes: 0x0e,
  BlockTxHashes: 0x0f,
  BlockJson: 0x10,
  AddressLogsJson: 0x11,
  LogSegments: 0x12,
  AccountHistory: 0x13,
  StorageHistory: 0x14,
  StateLatest: 0x15,
  LogBlocks: 0x16,
  Appearances: 0x17,
  TxFrames: 0x18,
  FrameBlooms: 0x19,
  FrameAppearances: 0x1a,
  FrameAddresses: 0x1b,
  TxStateDiffs: 0x1c,
  BodyTxs: 0x1d,
} as const;

/** The Appearances table's one kind: an address a transaction touches. */
export const APPEARANCE_KIND = 0x00;

/** Bits of an appearance id below the block number: the transaction's index in its block. */
export const APPEARANCE_TX_BITS = 16;

/** The appearance id of transaction `txIndex` of block `number` (below 2^53 up to block 2^37). */
export function appearanceId(number: bigint | number, txIndex: number): number {
  return Number(number) * 2 ** APPEARANCE_TX_BITS + txIndex;
}

export const LogIndexKind = { Address: 0x10 } as const;

/** Log ids per full posting-list chunk. */
export const LOG_INDEX_CHUNK = 1024;

/** lastLogId of a value's open (not yet full) chunk: sorts after every full chunk. */
export const OPEN_CHUNK = 0xffff_ffff_ffff_ffffn;

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
function writerCodec<T>(into: ByteWriter<T>, decode: (bytes: Uint8Array) => T): Codec<T> {
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

function readU32(b: Uint8Array, at: number): number {
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
function historyKeyCodec(hashes: number): Codec<HistoryKey> {
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

/** Whether a stored TxLookup value is of the fixed form (`db convert` rewrites those compact). */
export function isFixedTxLocation(value: Uint8Array): boolean {
  return value.length === TX_LOCATION_FIXED;
}

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

export interface StoredReceipt {
  type: number;
  /** Post-Byzantium status (1 byte: 0 or 1), or the 32-byte post-state root before it. */
  statusOrState: Uint8Array;
  cumulativeGasUsed: bigint;
  /** OP-stack deposit receipts (type 0x7e) from Regolith on: the sender's nonce the deposit used. */
  depositNonce?: bigint;
  /** OP-stack deposit receipts from Canyon on (1); only with depositNonce. */
  depositReceiptVersion?: bigint;
}

function receiptItems(r: StoredReceipt): (number | bigint | Uint8Array)[] {
  const items: (number | bigint | Uint8Array)[] = [r.type, r.statusOrState, r.cumulativeGasUsed];
  if (r.depositNonce !== undefined) {
    items.push(r.depositNonce);
    if (r.depositReceiptVersion !== undefined) items.push(r.depositReceiptVersion);
  } else if (r.depositReceiptVersion !== undefined)
    throw new RangeError('receipt: depositReceiptVersion without depositNonce');
  return items;
}

// Per-block rows (receipts, bodies) go through @ethereumjs/rlp; only the per-log row below is
// encoded by hand, where the rate of rows makes it worth it.
export const receiptsCodec: Codec<StoredReceipt[]> = {
  encode: (v) => RLP.encode(v.map(receiptItems)),
  decode: (b) => (RLP.decode(b) as Uint8Array[][]).map(storedReceipt),
};

function storedReceipt(f: Uint8Array[]): StoredReceipt {
  const r: StoredReceipt = {
    type: Number(bytesToBigInt(f[0] as Uint8Array)),
    statusOrState: f[1] as Uint8Array,
    cumulativeGasUsed: bytesToBigInt(f[2] as Uint8Array),
  };
  if (f[3] !== undefined) r.depositNonce = bytesToBigInt(f[3]);
  if (f[4] !== undefined) r.depositReceiptVersion = bytesToBigInt(f[4]);
  return r;
}

/** Receipt `index` of a Receipts row, decoded alone (the ones before it skipped by their RLP headers). */
export function storedReceiptAt(row: Uint8Array, index: number): StoredReceipt | undefined {
  const list = rlpItem(row, 0);
  if (!list.list || list.end !== row.length) throw new RangeError('Receipts: not one RLP list');
  let at = list.start;
  for (let i = 0; i < index && at < list.end; i++) at = rlpItemEnd(row, at);
  if (at >= list.end) return undefined;
  const item = rlpItem(row, at);
  return storedReceipt(RLP.decode(row.subarray(at, item.end)) as Uint8Array[]);
}

export interface StoredBody {
  /** RLP length of the whole block. */
  size: number;
  /** Canonical transaction encodings (typed: type byte ++ payload; legacy: the RLP list). */
  transactions: Uint8Array[];
  /** Uncle header RLP encodings. */
  uncles: Uint8Array[];
  /** Raw RLP values of the withdrawals list (absent before Shanghai). */
  withdrawals?: Uint8Array[][];
}

/** Transactions per BodyTxs row. */
export const BODY_ROW_TXS = 16;

/** The BodyTxs row holding transaction `index` of its block. */
export function bodyRowOf(index: number): number {
  return Math.floor(index / BODY_ROW_TXS);
}

/** A Bodies row: the transactions counted (in BodyTxs rows), or inline as an earlier release wrote them. */
export interface StoredBodyRow {
  size: number;
  txCount: number;
  /** The transactions, when the row holds them (an earlier release's row). */
  inline?: Uint8Array[];
  uncles: Uint8Array[];
  withdrawals?: Uint8Array[][];
}

/** Writes the Bodies row of this release (the count; `inline` is never written). */
export const bodyCodec: Codec<StoredBodyRow> = {
  encode: (v) =>
    RLP.encode(
      v.withdrawals === undefined ? [v.size, v.txCount, v.uncles] : [v.size, v.txCount, v.uncles, v.withdrawals],
    ),
  decode: (b) => {
    const f = RLP.decode(b) as unknown as [Uint8Array, Uint8Array | Uint8Array[], Uint8Array[], Uint8Array[][]?];
    const txs = f[1];
    const body: StoredBodyRow = {
      size: Number(bytesToBigInt(f[0])),
      txCount: Array.isArray(txs) ? txs.length : Number(bytesToBigInt(txs)),
      uncles: f[2],
    };
    if (Array.isArray(txs)) body.inline = txs;
    if (f[3] !== undefined) body.withdrawals = f[3];
    return body;
  },
};

/** A BodyTxs row's key: the block's hash, then the row's position among its rows (2 bytes, big-endian). */
export interface BodyRowKey {
  hash: Uint8Array;
  row: number;
}

export const bodyRowKeyCodec: Codec<BodyRowKey> = writerCodec<BodyRowKey>(
  {
    size: () => 34,
    write: (k, out, at) => {
      if (k.hash.length !== 32) throw new RangeError(`body row key: a hash of ${k.hash.length} bytes`);
      if (!Number.isInteger(k.row) || k.row < 0 || k.row > 0xffff) throw new RangeError(`body row ${k.row}`);
      out.set(k.hash, at);
      out[at + 32] = k.row >>> 8;
      out[at + 33] = k.row & 0xff;
      return at + 34;
    },
  },
  (b) => {
    if (b.length !== 34) throw new RangeError(`body row key: expected 34 bytes, got ${b.length}`);
    return { hash: b.slice(0, 32), row: ((b[32] as number) << 8) | (b[33] as number) };
  },
);

/** A block's Bodies row and its BodyTxs rows, staged together. */
export function stageBody(batch: KvBatch, hash: Uint8Array, body: StoredBody, alloc: Alloc): void {
  const row: StoredBodyRow = { size: body.size, txCount: body.transactions.length, uncles: body.uncles };
  if (body.withdrawals !== undefined) row.withdrawals = body.withdrawals;
  tables.bodies.stage(batch, hash, row, alloc);
  for (let first = 0; first < body.transactions.length; first += BODY_ROW_TXS)
    tables.bodyTxs.stage(
      batch,
      { hash, row: bodyRowOf(first) },
      RLP.encode(body.transactions.slice(first, first + BODY_ROW_TXS)),
      alloc,
    );
}

/** A block's body, its transactions from its BodyTxs rows (or inline, an earlier release's row). */
export function readBodySync(db: KvSyncRead, hash: Uint8Array): StoredBody | undefined {
  const row = tables.bodies.getSync(db, hash);
  if (row === undefined) return undefined;
  let transactions = row.inline;
  if (transactions === undefined) {
    transactions = [];
    for (let r = 0; transactions.length < row.txCount; r++) {
      const part = tables.bodyTxs.getRawSync(db, { hash, row: r });
      if (part === undefined) throw new Error(`body: transaction row ${r} missing`);
      const txs = RLP.decode(part) as Uint8Array[];
      if (txs.length === 0 || txs.length > BODY_ROW_TXS)
        throw new RangeError(`body: a row of ${txs.length} transactions`);
      transactions.push(...txs);
    }
    if (transactions.length !== row.txCount)
      throw new Error(`body: ${transactions.length} transactions in rows for a count of ${row.txCount}`);
  }
  const body: StoredBody = { size: row.size, transactions, uncles: row.uncles };
  if (row.withdrawals !== undefined) body.withdrawals = row.withdrawals;
  return body;
}

/** A BlockTxHashes row (see the table above). */
export interface BlockTxHashesRow {
  /** The block's transaction hashes, in tx order. */
  hashes: Uint8Array[];
  /** The block's extras (blockExtras); absent in a row of an earlier release. */
  extras?: Uint8Array;
}

/**
 * The extras of a BlockTxHashes row: RLP [size, [uncleHash..], totalDifficulty, headerRlp,
 * withdrawals?], everything a hashes-only block answer needs besides the tx hashes, so that the
 * answer is one read. Rows of an earlier release hold [size, [uncleHash..], withdrawals?]
 * (2 or 3 items; decodeBlockExtras tells them apart by the item count).
 */
export function blockExtras(body: StoredBody, headerRlp: Uint8Array, totalDifficulty: bigint): Uint8Array {
  const uncles = body.uncles.map((u) => keccak256(u));
  const items = [body.size, uncles, totalDifficulty, headerRlp];
  return RLP.encode(body.withdrawals === undefined ? items : [...items, body.withdrawals]);
}

/** A BlockTxHashes row's extras decoded; `header` is absent in the extras of an earlier release. */
export interface BlockExtras {
  size: number;
  uncleHashes: Uint8Array[];
  withdrawals?: Uint8Array[][];
  header?: { rlp: Uint8Array; totalDifficulty: bigint };
}

export function decodeBlockExtras(extras: Uint8Array): BlockExtras {
  const items = RLP.decode(extras) as unknown as Uint8Array[];
  if (!Array.isArray(items) || items.length < 2 || items.length > 5)
    throw new RangeError('BlockTxHashes: malformed extras');
  const out: BlockExtras = {
    size: Number(bytesToBigInt(items[0] as Uint8Array)),
    uncleHashes: items[1] as unknown as Uint8Array[],
  };
  let w: unknown = items[2];
  if (items.length >= 4) {
    out.header = { rlp: items[3] as Uint8Array, totalDifficulty: bytesToBigInt(items[2] as Uint8Array) };
    w = items[4];
  }
  if (w !== undefined) out.withdrawals = w as Uint8Array[][];
  return out;
}

/** Zero bytes after extras of `length` bytes, so that the row's length is 1 more than a multiple of 32. */
function extrasPadding(length: number): number {
  return (((1 - length) % 32) + 32) % 32;
}

/**
 * A BlockTxHashes row split in place: its hashes concatenated (32 x n bytes) and its extras
 * (undefined: a row of an earlier release, the hashes alone). Throws on a malformed row.
 */
export function splitBlockTxHashes(b: Uint8Array): { hashes: Uint8Array; extras?: Uint8Array } {
  if (b.length % 32 === 0) return { hashes: b };
  const first = b[0] ?? 0;
  if (b.length % 32 !== 1 || first < 0xc0) throw new RangeError(`BlockTxHashes: a value of ${b.length} bytes`);
  // The extras are one RLP list: its length from its header.
  const lenOfLen = first - 0xf7;
  let end = 1 + first - 0xc0;
  if (lenOfLen > 0) {
    end = 0;
    for (let i = 1; i <= lenOfLen; i++) end = end * 256 + (b[i] ?? 0);
    end += 1 + lenOfLen;
  }
  const start = end + extrasPadding(end);
  if (start > b.length) throw new RangeError(`BlockTxHashes: extras of ${end} bytes in a value of ${b.length}`);
  return { hashes: b.subarray(start), extras: b.subarray(0, end) };
}

export const blockTxHashesCodec: Codec<BlockTxHashesRow> = writerCodec<BlockTxHashesRow>(
  {
    size: (v) => (v.extras === undefined ? 0 : v.extras.length + extrasPadding(v.extras.length)) + 32 * v.hashes.length,
    write: (v, out, at) => {
      if (v.extras !== undefined) {
        out.set(v.extras, at);
        const end = at + v.extras.length;
        at = end + extrasPadding(v.extras.length);
        out.fill(0, end, at);
      }
      for (const h of v.hashes) {
        if (h.length !== 32) throw new RangeError(`BlockTxHashes: a hash of ${h.length} bytes`);
        out.set(h, at);
        at += 32;
      }
      return at;
    },
  },
  (b) => {
    const { hashes, extras } = splitBlockTxHashes(b);
    const row: BlockTxHashesRow = { hashes: [] };
    for (let i = 0; i < hashes.length; i += 32) row.hashes.push(hashes.subarray(i, i + 32));
    if (extras !== undefined) row.extras = extras;
    return row;
  },
);

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
 * builder of these keys for the writer (from its arenas) and the reader (seek targets). With
 * `prefix` Prefix.Appearances, an Appearances row key (the same layout).
 */
export function writeLogIndexKey(
  out: Uint8Array,
  kind: number,
  value: Uint8Array,
  lastId: number | undefined,
  prefix: number = Prefix.LogIndex,
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

// ---------------------------------------------------------------------------------------------
// Typed tables over a minimal key/value interface (abstract-level compatible).

export interface KvRead {
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  getMany(keys: Uint8Array[]): Promise<(Uint8Array | undefined)[]>;
  iterator(opts: KvRange): AsyncIterable<[Uint8Array, Uint8Array]> & { close(): Promise<void> };
}

/** A key range and direction to iterate over (abstract-level's iterator options). */
export interface KvRange {
  gt?: Uint8Array;
  gte?: Uint8Array;
  lt?: Uint8Array;
  lte?: Uint8Array;
  reverse?: boolean;
  limit?: number;
}

/**
 * Synchronous point reads (classic-level 3's getSync): on the cold read path a LevelDB get from the
 * OS page cache takes a few microseconds, far less than a round trip through libuv's thread pool
 * and the promise machinery around it, and the answer needs no other turn of the event loop.
 */
export interface KvSyncRead {
  getSync(key: Uint8Array): Uint8Array | undefined;
}

export interface KvBatch {
  put(key: Uint8Array, value: Uint8Array): unknown;
}

export interface RangeOpts<K> {
  gte?: K;
  gt?: K;
  lte?: K;
  lt?: K;
  reverse?: boolean;
  limit?: number;
}

export class Table<K, V> {
  constructor(
    readonly prefix: number,
    readonly name: string,
    readonly keyCodec: Codec<K>,
    readonly valueCodec: Codec<V>,
  ) {}

  key(k: K): Uint8Array {
    return concatBytes(Uint8Array.of(this.prefix), this.keyCodec.encode(k));
  }

  async get(db: KvRead, k: K): Promise<V | undefined> {
    const v = await db.get(this.key(k));
    return v === undefined ? undefined : this.valueCodec.decode(v);
  }

  /** get without leaving the thread (see KvSyncRead). */
  getSync(db: KvSyncRead, k: K): V | undefined {
    const v = db.getSync(this.key(k));
    return v === undefined ? undefined : this.valueCodec.decode(v);
  }

  /** The stored bytes, not decoded: for a reader that takes one item of a row in place. */
  getRawSync(db: KvSyncRead, k: K): Uint8Array | undefined {
    return db.getSync(this.key(k));
  }

  async getMany(db: KvRead, ks: K[]): Promise<(V | undefined)[]> {
    if (ks.length === 0) return [];
    const vs = await db.getMany(ks.map((k) => this.key(k)));
    return vs.map((v) => (v === undefined ? undefined : this.valueCodec.decode(v)));
  }

  put(batch: KvBatch, k: K, v: V): void {
    batch.put(this.key(k), this.valueCodec.encode(v));
  }

  /** put with the key and value written into memory from `alloc` (same bytes; the writer's path). */
  stage(batch: KvBatch, k: K, v: V, alloc: Alloc): void {
    const ki = this.keyCodec.into;
    let key: Uint8Array;
    if (ki === undefined) key = this.key(k);
    else {
      key = alloc(1 + ki.size(k));
      key[0] = this.prefix;
      ki.write(k, key, 1);
    }
    const vi = this.valueCodec.into;
    let value: Uint8Array;
    if (vi === undefined) value = this.valueCodec.encode(v);
    else {
      value = alloc(vi.size(v));
      vi.write(v, value, 0);
    }
    batch.put(key, value);
  }

  /** Entries in key order (or reverse), never leaving this table's prefix. */
  async *range(db: KvRead, opts: RangeOpts<K> = {}): AsyncGenerator<[K, V]> {
    const lower =
      opts.gte !== undefined
        ? { gte: this.key(opts.gte) }
        : opts.gt !== undefined
          ? { gt: this.key(opts.gt) }
          : { gte: Uint8Array.of(this.prefix) };
    const upper =
      opts.lte !== undefined
        ? { lte: this.key(opts.lte) }
        : opts.lt !== undefined
          ? { lt: this.key(opts.lt) }
          : { lt: Uint8Array.of(this.prefix + 1) };
    const it = db.iterator({ ...lower, ...upper, reverse: opts.reverse ?? false, limit: opts.limit ?? -1 });
    try {
      for await (const [k, v] of it) {
        if (k[0] !== this.prefix) break;
        yield [this.keyCodec.decode(k.subarray(1)), this.valueCodec.decode(v)];
      }
    } finally {
      await it.close();
    }
  }
}

const utf8: Codec<string> = {
  encode: (s) => new TextEncoder().encode(s),
  decode: (b) => new TextDecoder().decode(b),
};

export const MetaKey = {
  SchemaVersion: 'schemaVersion',
  GenesisHash: 'genesisHash',
  ChainConfig: 'chainConfig',
  Head: 'head',
  /** The whole genesis.json the chain was started from (JSON): a follower restarts without --genesis. */
  GenesisJson: 'genesisJson',
  /** u64: AddressLogsJson rows exist for every block from this number on (see the table). */
  LogsJsonFrom: 'logsJsonFrom',
  /** u64: the Appearances index holds every block from this number on (see the table). */
  AppearancesFrom: 'appearancesFrom',
  /**
   * u64, only while `db convert` builds the Appearances index of a datadir written without it:
   * the next block to post (appearances/build.ts). Meta.appearancesFrom (0) is written, and this
   * key deleted, in the batch of the last block.
   */
  AppearancesBuilt: 'appearancesBuilt',
  /**
   * u64: the FrameAppearances index holds the recorded frames of every block from this number on
   * (a datadir that recorded frames before the table existed: its next block).
   */
  FrameAppearancesFrom: 'frameAppearancesFrom',
  /**
   * from(8) ++ to(8) ++ file(4) ++ fileLength(8): the spans of blocks [from, to) are sealed into
   * log segments (log-segments.ts), and segment file `file`, the one appended to, ends at
   * fileLength (bytes past it are a crashed seal's and are cut off by the next).
   */
  LogSegments: 'logSegments',
  /**
   * u64: the first block the datadir holds, when it joined its chain at a block N > 0 (absent:
   * from genesis). No rows of any table below N; no state of its own (proven nodes only).
   */
  FirstBlock: 'firstBlock',
  /**
   * 32 bytes: the state root of block 0's state (the genesis alloc's, which an upstream's block 0
   * header may not carry: anvil --init). Present: the datadir keeps flat state history
   * (AccountHistory, StorageHistory) for every block from genesis on.
   */
  StateHistory: 'stateHistory',
  /**
   * utf8: how long the hash-keyed state trie is kept (trie-window.ts): `archive` (every block's
   * trie; also when absent, a datadir written before the setting existed) or `window=<N>` (the
   * last N blocks' tries, older nodes pruned). Fixed when the datadir is created.
   */
  StateTrie: 'stateTrie',
  /**
   * u64 as decimal utf8: the lowest block whose state trie the datadir still holds complete
   * (absent: 0). Written before any node below it is deleted, so no reader trusts a pruned trie.
   */
  TrieFrom: 'trieFrom',
  /**
   * u64 as decimal utf8, only while `db convert` builds the flat state history of a datadir written
   * without it: the change sets of blocks up to this one are written. Meta.stateHistory is written
   * (and this key deleted) in the batch of the last block.
   */
  StateHistoryBuilt: 'stateHistoryBuilt',
  /**
   * Empty: every key of the flat state history has its StateLatest row, with its earlier changes
   * listed (written with genesis, or by `db convert` once it has filled the table). Absent: readers
   * seek the history.
   */
  StateLatest: 'stateLatestListed',
  /**
   * Empty: the StateLatest rows of an earlier release (number ++ value, no list of earlier
   * changes), not read and no longer kept by the writer; `db convert` fills the table again and
   * drops this key.
   */
  StateLatestUnlisted: 'stateLatest',
  /**
   * utf8: `all` when the writer kept every block's new branch nodes as deltas from genesis on
   * (node-delta.ts), or the decimal number of the last block whose nodes `db convert` has
   * rewritten as deltas (resumable). Absent: a datadir of an earlier release, its nodes whole
   * (read the same; a writer of this release keeps the new ones as deltas).
   */
  TrieDeltas: 'trieDeltas',
  /**
   * utf8 `off`: the executing import records no call frames (TxFrames) from now on (`--trace-frames
   * off`). Absent: it records them. Changed whenever an import is given the option.
   */
  TraceFrames: 'traceFrames',
} as const;

export const tables = {
  meta: new Table(Prefix.Meta, 'Meta', utf8, rawCodec),
  canonical: new Table(Prefix.Canonical, 'Canonical', u64Codec, hashCodec),
  hashToNumber: new Table(Prefix.HashToNumber, 'HashToNumber', hashCodec, u64Codec),
  headers: new Table(Prefix.Headers, 'Headers', hashCodec, rawCodec),
  bodies: new Table(Prefix.Bodies, 'Bodies', hashCodec, bodyCodec),
  bodyTxs: new Table(Prefix.BodyTxs, 'BodyTxs', bodyRowKeyCodec, rawCodec),
  receipts: new Table(Prefix.Receipts, 'Receipts', hashCodec, receiptsCodec),
  txLookup: new Table(Prefix.TxLookup, 'TxLookup', hashCodec, txLocationCodec),
  totalDifficulty: new Table(Prefix.TotalDifficulty, 'TotalDifficulty', hashCodec, bigUintCodec),
  senders: new Table(Prefix.Senders, 'Senders', hashCodec, fixedListCodec(20)),
  blooms: new Table(Prefix.Blooms, 'Blooms', u64Codec, fixedBytesCodec(256, 'bloom')),
  blockLogs: new Table(Prefix.BlockLogs, 'BlockLogs', u64Codec, blockLogRangeCodec),
  logs: new Table(Prefix.Logs, 'Logs', u64Codec, logCodec),
  logBlocks: new Table(Prefix.LogBlocks, 'LogBlocks', u64Codec, rawCodec),
  logIndex: new Table(Prefix.LogIndex, 'LogIndex', logIndexKeyCodec, postingCodec),
  appearances: new Table(Prefix.Appearances, 'Appearances', logIndexKeyCodec, postingCodec),
  txFrames: new Table(Prefix.TxFrames, 'TxFrames', traceRowKeyCodec, rawCodec),
  frameBlooms: new Table(Prefix.FrameBlooms, 'FrameBlooms', u64Codec, rawCodec),
  frameAppearances: new Table(Prefix.FrameAppearances, 'FrameAppearances', logIndexKeyCodec, postingCodec),
  frameAddresses: new Table(Prefix.FrameAddresses, 'FrameAddresses', u64Codec, rawCodec),
  txStateDiffs: new Table(Prefix.TxStateDiffs, 'TxStateDiffs', traceRowKeyCodec, rawCodec),
  trieNodes: new Table(Prefix.TrieNodes, 'TrieNodes', rawCodec, rawCodec),
  blockTxHashes: new Table(Prefix.BlockTxHashes, 'BlockTxHashes', u64Codec, blockTxHashesCodec),
  blockJson: new Table(Prefix.BlockJson, 'BlockJson', hashCodec, rawCodec),
  addressLogsJson: new Table(Prefix.AddressLogsJson, 'AddressLogsJson', addressNumberCodec, rawCodec),
  accountHistory: new Table(Prefix.AccountHistory, 'AccountHistory', historyKeyCodec(1), rawCodec),
  storageHistory: new Table(Prefix.StorageHistory, 'StorageHistory', historyKeyCodec(2), rawCodec),
  stateLatest: new Table(Prefix.StateLatest, 'StateLatest', rawCodec, rawCodec),
} as const;

/** The AddressLogsJson row of one address's logs in one block (see the table above), in memory from `alloc`. */
export function encodeAddressLogsJson(
  entries: readonly { logIndex: number; text: string }[],
  alloc: (n: number) => Uint8Array = (n) => new Uint8Array(n),
): Uint8Array {
  let chars = entries.length === 0 ? 0 : entries.length - 1;
  for (const e of entries) chars += e.text.length;
  const head = 4 + 8 * entries.length;
  const out = alloc(head + chars);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setUint32(0, entries.length);
  let at = head;
  entries.forEach((e, i) => {
    if (i > 0) out[at++] = 0x2c; // ','
    const t = e.text;
    for (let c = 0; c < t.length; c++) {
      const code = t.charCodeAt(c);
      if (code > 0x7e) throw new RangeError('log text is not ASCII');
      out[at++] = code;
    }
    view.setUint32(4 + 8 * i, e.logIndex);
    view.setUint32(8 + 8 * i, at - head);
  });
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
