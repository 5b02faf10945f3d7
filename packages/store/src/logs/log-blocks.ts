// A block's logs as stored: its LogBlocks row (schema.ts; one value per block, columnar and
// compressed: block-logs-codec.ts), or, for a block an earlier release wrote and `db convert` has
// not rewritten yet, one Logs row per log. Every reader of logs (receipts, getLogs, rewinds, the
// ready JSON rows) reads them through here.
import type { BlockLogRange, KvRead, KvSyncRead, StoredLog } from '../schema/index.js';
import { Prefix, putU64, readU64, tables } from '../schema/index.js';
import {
  BlockLogColumns,
  LogBlockCodec,
  compressLogColumns,
  decodeBlockLogColumns,
  decompressLogColumns,
  encodeBlockLogColumns,
} from './block-logs-codec.js';

/**
 * The codec new rows are written with: deflate at level 6 (bench/logs-once at mainnet's shape:
 * 9% more bytes than brotli q6, decoded a quarter faster, 237 µs a block of 723 logs).
 */
const WRITE_CODEC = LogBlockCodec.Deflate;
const WRITE_LEVEL = 6;

/**
 * Columns shorter than this are kept as they are (LevelDB's own snappy still compresses the table
 * block holding them): a zlib call costs ~20 us before it has read a byte (its stream's setup), as
 * much as a sparse getLogs spends on the rest of such a block, and deflate saves a few hundred
 * bytes there. Blocks of a busy chain (~54 KB of columns at mainnet's shape) are deflated.
 */
const RAW_BELOW = 4096;

/** A block's logs as they are decoded from a LogBlocks value. */
export interface LogBlock {
  number: bigint;
  /** Log id of the first log. */
  first: number;
  logs: StoredLog[];
}

/** The LogBlocks value of block `number`'s logs (in log order; at least one). */
export function encodeLogBlock(
  number: bigint,
  logs: readonly Pick<StoredLog, 'txIndex' | 'address' | 'topics' | 'data'>[],
): Uint8Array {
  const columns = encodeBlockLogColumns(logs);
  const packed =
    columns.length < RAW_BELOW
      ? compressLogColumns(columns, LogBlockCodec.None)
      : compressLogColumns(columns, WRITE_CODEC, WRITE_LEVEL);
  const out = new Uint8Array(8 + packed.length);
  putU64(out, 0, Number(number));
  out.set(packed, 8);
  return out;
}

/** The block number a LogBlocks row starts with (written by putU64: below 2^53). */
function rowBlockNumber(value: Uint8Array): bigint {
  if (value.length < 9) throw new RangeError(`block logs: a row of ${value.length} bytes`);
  return BigInt(readU64(value, 0));
}

/** A LogBlocks row's logs; `first`: its key, the first log's id. */
export function decodeLogBlock(first: number, value: Uint8Array): LogBlock {
  const number = rowBlockNumber(value);
  return { number, first, logs: decodeBlockLogColumns(decompressLogColumns(value.subarray(8)), number) };
}

/** A LogBlocks row indexed, its logs built on demand (BlockLogColumns); `first`: its key, the first log's id. */
export function logBlockColumns(first: number, value: Uint8Array): { first: number; columns: BlockLogColumns } {
  const number = rowBlockNumber(value);
  return { first, columns: new BlockLogColumns(decompressLogColumns(value.subarray(8)), number) };
}

/** The key of the LogBlocks row that starts at log `id`. */
export function logBlockKey(id: number): Uint8Array {
  const k = new Uint8Array(9);
  k[0] = Prefix.LogBlocks;
  putU64(k, 1, id);
  return k;
}

/** The first log id of a LogBlocks key. */
export function logBlockFirst(key: Uint8Array): number {
  return readU64(key, 1);
}

/** The logs of the block whose BlockLogs range is `range`, read synchronously. */
export function readBlockLogsSync(db: KvSyncRead, number: bigint, range: BlockLogRange): StoredLog[] {
  if (range.count === 0) return [];
  const value = db.getSync(logBlockKey(Number(range.firstLogId)));
  if (value !== undefined) return checked(decodeLogBlock(Number(range.firstLogId), value), number, range).logs;
  const out: StoredLog[] = [];
  for (let id = range.firstLogId; id < range.firstLogId + BigInt(range.count); id++) {
    const log = tables.logs.getSync(db, id);
    if (log === undefined) throw new Error(`log ${id} of block ${number} missing`);
    out.push(log);
  }
  return out;
}

/** The logs of the block whose BlockLogs range is `range`. */
export async function readBlockLogs(db: KvRead, number: bigint, range: BlockLogRange): Promise<StoredLog[]> {
  if (range.count === 0) return [];
  const value = await db.get(logBlockKey(Number(range.firstLogId)));
  if (value !== undefined) return checked(decodeLogBlock(Number(range.firstLogId), value), number, range).logs;
  const out: StoredLog[] = [];
  for await (const [, log] of tables.logs.range(db, {
    gte: range.firstLogId,
    lt: range.firstLogId + BigInt(range.count),
  }))
    out.push(log);
  if (out.length !== range.count) throw new Error(`block ${number}: ${out.length} log rows of ${range.count}`);
  return out;
}

function checked(b: LogBlock, number: bigint, range: BlockLogRange): LogBlock {
  if (b.number !== number || b.logs.length !== range.count)
    throw new Error(`block ${number}: its logs row holds ${b.logs.length} logs of block ${b.number}`);
  return b;
}
