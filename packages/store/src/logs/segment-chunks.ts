// The compressed text of one address's sealed span (log-segments.ts): the blocks' texts, joined
// by ',' as the reply has them, cut at block boundaries into chunks of at least CHUNK_TARGET
// bytes, each compressed on its own with brotli (quality 4). A query over a few blocks decodes
// the one or two chunks that hold them, not the address's whole span; docs/decisions/rows.md has
// the measurements behind the codec and the chunk size (bench/rows-codec.ts).
//
// Chunks are compressed without their logs' transaction and block hashes (stripHashes): 64 hex
// digits each, which no codec shrinks where they do not repeat, a third of a busy chain's
// compressed text. Decoding writes them back from the store's own rows (restoreHashes: the
// block's hash and its transactions' hashes, by the log's block number and transaction index),
// so a decoded chunk is byte for byte the text that was sealed; its length, which the span's
// index records, is checked.
import { promisify } from 'node:util';
import { HEX_DIGITS } from '@chainnode/core';
import { brotliCompress, brotliDecompressSync, constants } from 'node:zlib';

/** Raw bytes a chunk holds at least (the span's last chunk may hold less). */
export const CHUNK_TARGET = 64 * 1024;
const QUALITY = 4;
const WINDOW = 22;
const compress = promisify(brotliCompress);

/** A chunk of a packed span: it holds entries [firstEntry, next chunk's), its bytes end at `packedEnd`. */
export interface SpanChunk {
  firstEntry: number;
  packedEnd: number;
}

export interface PackedSpan {
  bytes: Uint8Array;
  chunks: SpanChunk[];
}

/**
 * `texts[i]` is block entry i's text; `textEnds[i]` where it ends in the joined text (the
 * separators counted). The chunks are compressed on libuv's thread pool (the writer's event loop
 * keeps going), one after another, in order.
 */
export async function packSpan(joined: Uint8Array, textEnds: number[]): Promise<PackedSpan> {
  // Each chunk is compressed stripped of its hashes (its recorded ends stay the whole text's).
  const parts: Uint8Array[] = [];
  const chunks: SpanChunk[] = [];
  let packedEnd = 0;
  let firstEntry = 0;
  let start = 0;
  for (let i = 0; i < textEnds.length; i++) {
    const end = textEnds[i] as number;
    if (end - start < CHUNK_TARGET && i < textEnds.length - 1) continue;
    const raw = stripHashes(joined.subarray(start, end));
    const packed = await compress(raw, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: QUALITY,
        [constants.BROTLI_PARAM_LGWIN]: WINDOW,
        [constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
      },
    });
    parts.push(packed);
    packedEnd += packed.length;
    chunks.push({ firstEntry, packedEnd });
    firstEntry = i + 1;
    start = end + 1; // past the ',' before the next block's text
  }
  return { bytes: Buffer.concat(parts, packedEnd), chunks };
}

/** A chunk's text back (throws on damaged bytes, or when it does not decode to `length` bytes). */
export function unpackChunk(packed: Uint8Array, length: number): Buffer {
  const out = brotliDecompressSync(packed, { maxOutputLength: Math.max(length, 1) });
  if (out.length !== length)
    throw new Error(`log segments: a chunk decoded to ${out.length} bytes, its index says ${length}`);
  return out;
}

/**
 * A stripped chunk's text back (packSpan's chunks since hashes were stripped): decoded, its
 * hashes written back from `blockOf`, checked to be `length` bytes.
 */
export function unpackStrippedChunk(
  packed: Uint8Array,
  length: number,
  blockOf: (number: bigint) => BlockHashes,
): Buffer {
  const stripped = brotliDecompressSync(packed, { maxOutputLength: Math.max(length, 1) });
  return restoreHashes(stripped, length, blockOf);
}

/** What a stripped chunk leaves out of a block's logs: the block's hash, its transactions' hashes (32 bytes each, in order). */
export interface BlockHashes {
  hash: Uint8Array;
  txHashes: Uint8Array;
}

const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');
// A log's text (core's log-json.ts, geth's field order): ..."blockNumber":"0x<n>","transactionHash":
// "0x<hash>","transactionIndex":"0x<i>","blockHash":"0x<hash>","blockTimestamp":...
const TX_HASH_KEY = latin1('"transactionHash":"0x');
const BLOCK_HASH_KEY = latin1('"blockHash":"0x');
const BLOCK_NUMBER_KEY = latin1('"blockNumber":"0x');
/** After a stripped log's block number digits: up to where its transaction hash goes. */
const BEFORE_TX_HASH = latin1('","transactionHash":"0x');
/** After it: up to the transaction index's digits. */
const BEFORE_TX_INDEX = latin1('","transactionIndex":"0x');
/** After those: up to where the block hash goes. */
const BEFORE_BLOCK_HASH = latin1('","blockHash":"0x');
const HASH_DIGITS = 64;
const CAPITAL_N = 0x4e;
const N_IN_KEY = BLOCK_NUMBER_KEY.indexOf(CAPITAL_N);
const QUOTE = 0x22;

/**
 * `text` without the 64 hex digits of every transaction and block hash (what follows
 * `"transactionHash":"0x` and `"blockHash":"0x`). The keys are never inside a value (every value
 * of a log's text is hex or a boolean).
 */
export function stripHashes(text: Uint8Array): Buffer {
  const src = Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  const out = Buffer.allocUnsafe(src.length);
  let at = 0;
  let o = 0;
  let nextTx = src.indexOf(TX_HASH_KEY, at);
  let nextBlock = src.indexOf(BLOCK_HASH_KEY, at);
  while (nextTx >= 0 || nextBlock >= 0) {
    const isTx = nextTx >= 0 && (nextBlock < 0 || nextTx < nextBlock);
    const key = isTx ? TX_HASH_KEY : BLOCK_HASH_KEY;
    const hashAt = (isTx ? nextTx : nextBlock) + key.length;
    if (src[hashAt + HASH_DIGITS] !== QUOTE) throw new Error('log segments: a hash in a log text is not 32 bytes');
    o += src.copy(out, o, at, hashAt);
    at = hashAt + HASH_DIGITS;
    if (isTx) nextTx = src.indexOf(TX_HASH_KEY, at);
    else nextBlock = src.indexOf(BLOCK_HASH_KEY, at);
  }
  o += src.copy(out, o, at);
  return out.subarray(0, o);
}

/** The 32 bytes at `from` of `src` as 64 hex digits at `at` of `out`; returns the end. */
function hex32Into(src: Uint8Array, from: number, out: Uint8Array, at: number): number {
  for (let i = from; i < from + 32; i++) {
    const v = src[i] as number;
    out[at++] = HEX_DIGITS[v >> 4] as number;
    out[at++] = HEX_DIGITS[v & 15] as number;
  }
  return at;
}

/** Hex digits at `at` of `b` up to the next quote, as a number (throws when there are none or too many). */
function hexNumberAt(b: Buffer, at: number): { value: number; end: number } {
  let value = 0;
  let i = at;
  for (; i < b.length && b[i] !== QUOTE; i++) {
    const c = b[i] as number;
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (d < 0 || i - at >= 13) throw new Error('log segments: a stripped log text is malformed');
    value = value * 16 + d;
  }
  if (i === at || i === b.length) throw new Error('log segments: a stripped log text is malformed');
  return { value, end: i };
}

function expectAt(b: Buffer, at: number, what: Buffer): void {
  // A loop, not Buffer.compare: ~20 bytes, three times a log, where a native call's overhead is most of the cost.
  if (at + what.length > b.length) throw new Error('log segments: a stripped log text is malformed');
  for (let i = 0; i < what.length; i++)
    if (b[at + i] !== what[i]) throw new Error('log segments: a stripped log text is malformed');
}

/**
 * stripHashes(text) back to `text`, `length` bytes, the hashes taken from `blockOf` by each log's
 * block number and transaction index (throws on a text that is not stripHashes' output, an index
 * past the block's transactions, or a result of another length).
 */
export function restoreHashes(stripped: Buffer, length: number, blockOf: (number: bigint) => BlockHashes): Buffer {
  const out = Buffer.allocUnsafe(length);
  const tooLong = (): Error => new Error(`log segments: a chunk decodes to more than its index's ${length} bytes`);
  let o = 0;
  let at = 0;
  let blockNumber = -1;
  let block: BlockHashes | undefined;
  let txCount = 0;
  // Each log's "blockNumber" found by its 'N', the one upper-case N of a log's text (its values
  // are lower-case hex): a byte search, cheaper than a search for the whole key.
  for (let found = stripped.indexOf(CAPITAL_N, at); found >= 0; found = stripped.indexOf(CAPITAL_N, at)) {
    const key = found - N_IN_KEY;
    expectAt(stripped, key, BLOCK_NUMBER_KEY);
    const n = hexNumberAt(stripped, key + BLOCK_NUMBER_KEY.length);
    const txHashAt = n.end + BEFORE_TX_HASH.length;
    expectAt(stripped, n.end, BEFORE_TX_HASH);
    expectAt(stripped, txHashAt, BEFORE_TX_INDEX);
    const tx = hexNumberAt(stripped, txHashAt + BEFORE_TX_INDEX.length);
    const blockHashAt = tx.end + BEFORE_BLOCK_HASH.length;
    expectAt(stripped, tx.end, BEFORE_BLOCK_HASH);
    if (n.value !== blockNumber || block === undefined) {
      block = blockOf(BigInt(n.value));
      if (block.hash.length !== 32 || block.txHashes.length % 32 !== 0)
        throw new Error(`log segments: block ${n.value}'s hashes are malformed`);
      blockNumber = n.value;
      txCount = block.txHashes.length / 32;
    }
    if (tx.value >= txCount)
      throw new Error(`log segments: a log of transaction ${tx.value} in block ${n.value}, which has ${txCount}`);
    // The log up to its transaction hash (one copy: most of its bytes), the hash, the ~40 bytes up
    // to its block hash, the hash; the short parts in loops (a Buffer copy costs a view's
    // allocation and a native call, more than copying them).
    if (o + (blockHashAt - at) + 2 * HASH_DIGITS > length) throw tooLong();
    o += stripped.copy(out, o, at, txHashAt);
    o = hex32Into(block.txHashes, tx.value * 32, out, o);
    for (let i = txHashAt; i < blockHashAt; i++) out[o++] = stripped[i] as number;
    o = hex32Into(block.hash, 0, out, o);
    at = blockHashAt;
  }
  if (o + (stripped.length - at) > length) throw tooLong();
  o += stripped.copy(out, o, at);
  if (o !== length) throw new Error(`log segments: a chunk decoded to ${o} bytes, its index says ${length}`);
  return out;
}
