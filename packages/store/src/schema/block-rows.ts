// Row codecs of a block's data: receipts, bodies and their transaction rows, and the
// BlockTxHashes row with its extras (schema.ts lays out each table).
import { RLP } from '@ethereumjs/rlp';
import {
  bytesToBigInt,
  keccak256,
  rlpBytesLength,
  rlpHeaderLength,
  writeRlpBytes,
  writeRlpHeader,
} from '@chainnode/core';
import { rlpItem, rlpItemEnd, rlpUintLength, writeRlpUint } from './rlp.js';
import { writerCodec } from './codec.js';
import type { Codec } from './codec.js';

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

/** An unsigned integer item's RLP length (minimal big-endian bytes; 0 is the empty string). */
function uintItemLength(v: bigint | number): number {
  if (v < 0) throw new RangeError(`receipt: negative integer ${v}`);
  if (v <= Number.MAX_SAFE_INTEGER) return rlpUintLength(Number(v));
  return RLP.encode(v).length;
}

function writeUintItem(out: Uint8Array, at: number, v: bigint | number): number {
  if (v <= Number.MAX_SAFE_INTEGER) return writeRlpUint(out, at, Number(v));
  const item = RLP.encode(v);
  out.set(item, at);
  return at + item.length;
}

/**
 * A receipt's RLP list payload length: [type, statusOrState, cumulativeGasUsed], then the OP
 * deposit fields when present.
 */
function receiptPayload(r: StoredReceipt): number {
  let n = uintItemLength(r.type) + rlpBytesLength(r.statusOrState) + uintItemLength(r.cumulativeGasUsed);
  if (r.depositNonce !== undefined) {
    n += uintItemLength(r.depositNonce);
    if (r.depositReceiptVersion !== undefined) n += uintItemLength(r.depositReceiptVersion);
  } else if (r.depositReceiptVersion !== undefined)
    throw new RangeError('receipt: depositReceiptVersion without depositNonce');
  return n;
}

/** The receipts list's payload length, from each receipt's (receiptPayload). */
function receiptsPayload(payloads: number[]): number {
  let n = 0;
  for (const p of payloads) n += rlpHeaderLength(p) + p;
  return n;
}

// A block's receipts are written by hand (bytes exactly RLP.encode of each receipt's items, which
// schema.test compares on random receipts): @ethereumjs/rlp's encode of the nested lists, a few
// arrays and a concatenation per item, cost ~5 us a receipt, 7% of the getlogs chain's build.
export const receiptsCodec: Codec<StoredReceipt[]> = writerCodec<StoredReceipt[]>(
  {
    size: (v) => {
      const p = receiptsPayload(v.map(receiptPayload));
      return rlpHeaderLength(p) + p;
    },
    write: (v, out, start) => {
      // Each receipt's payload length once: the list's header needs their sum, each item its own.
      const payloads = v.map(receiptPayload);
      let at = writeRlpHeader(out, start, 0xc0, receiptsPayload(payloads));
      for (let i = 0; i < v.length; i++) {
        const r = v[i] as StoredReceipt;
        at = writeRlpHeader(out, at, 0xc0, payloads[i] as number);
        at = writeUintItem(out, at, r.type);
        at = writeRlpBytes(out, at, r.statusOrState);
        at = writeUintItem(out, at, r.cumulativeGasUsed);
        if (r.depositNonce !== undefined) {
          at = writeUintItem(out, at, r.depositNonce);
          if (r.depositReceiptVersion !== undefined) at = writeUintItem(out, at, r.depositReceiptVersion);
        }
      }
      return at;
    },
  },
  (b) => (RLP.decode(b) as Uint8Array[][]).map(storedReceipt),
);

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

/**
 * The header RLP a BlockTxHashes row's extras hold (their fourth item), found by skipping the
 * items before it (nothing decoded); undefined in the extras of an earlier release (no header).
 */
export function extrasHeaderRlp(extras: Uint8Array): Uint8Array | undefined {
  const list = rlpItem(extras, 0);
  if (!list.list || list.end !== extras.length) throw new RangeError('BlockTxHashes: malformed extras');
  let at = list.start;
  for (let i = 0; i < 3 && at < list.end; i++) at = rlpItemEnd(extras, at);
  if (at >= list.end) return undefined;
  const item = rlpItem(extras, at);
  if (item.list || item.end > list.end) throw new RangeError('BlockTxHashes: malformed extras');
  return extras.subarray(item.start, item.end);
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
