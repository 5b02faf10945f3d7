// The compressed text of one address's sealed span (log-segments.ts): the blocks' texts, joined
// by ',' as the reply has them, cut at block boundaries into chunks of at least CHUNK_TARGET
// bytes, each compressed on its own with brotli (quality 4). A query over a few blocks decodes
// the one or two chunks that hold them, not the address's whole span; docs/decisions/rows.md has
// the measurements behind the codec and the chunk size (bench/rows-codec.ts).
import { promisify } from 'node:util';
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
  const parts: Uint8Array[] = [];
  const chunks: SpanChunk[] = [];
  let packedEnd = 0;
  let firstEntry = 0;
  let start = 0;
  for (let i = 0; i < textEnds.length; i++) {
    const end = textEnds[i] as number;
    if (end - start < CHUNK_TARGET && i < textEnds.length - 1) continue;
    const raw = joined.subarray(start, end);
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
