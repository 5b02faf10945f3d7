// `node bench/dist/logs-once.js --datadir <imported datadir> [--reps N]`: the logs kept ONCE, in
// candidate encodings: bytes per block and the cost of decoding one block's logs back. Read-only;
// nothing else may have the datadir open (LevelDB's lock). Run it on a copy.
//
// Candidates, all from the datadir's Logs rows (every block's logs, in order):
//   (a) Logs rows        one RLP row per log (key 9 bytes + value), as stored today (LevelDB then
//                        snappy-compresses its table blocks: the on-disk figure is store-cost's);
//   (b) block columns    one value per block (the store's block-logs codec: address and topic
//                        dictionaries per block, data blobs concatenated), uncompressed, deflate
//                        and brotli at a few levels;
//   (c) span columns     SPAN consecutive blocks' column values concatenated and compressed as
//                        one (a one-block read decompresses the whole span).
// Decode cost: the best of --reps passes over every block, µs per block (decompress + decode to
// records' fields; for (a) each row's RLP decode), one core.
import { join, resolve } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { Level } from 'level';
import {
  LogBlockCodec,
  Prefix,
  compressLogColumns,
  decodeBlockLogColumns,
  decodeLog,
  decompressLogColumns,
  encodeBlockLogColumns,
} from '@chainnode/store';
import type { LogBlockCodecId } from '@chainnode/store';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:logs-once');

const arg = (name: string, dflt?: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const datadir = resolve(arg('datadir') ?? '');
const reps = Number(arg('reps', '3'));

const db = new Level<Uint8Array, Uint8Array>(join(datadir, 'chain'), { keyEncoding: 'view', valueEncoding: 'view' });
await db.open();
const range = (prefix: number) => ({ gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) });

// Every block's Logs rows, in block order (log ids follow block order).
const blocks: { number: bigint; rows: Uint8Array[] }[] = [];
let rowBytes = 0;
let logCount = 0;
for await (const [k, v] of db.iterator(range(Prefix.Logs))) {
  const log = decodeLog(v);
  let last = blocks[blocks.length - 1];
  if (last === undefined || last.number !== log.blockNumber) {
    last = { number: log.blockNumber, rows: [] };
    blocks.push(last);
  }
  last.rows.push(v.slice());
  rowBytes += k.length + v.length;
  logCount++;
}
let indexBytes = 0;
for await (const [k, v] of db.iterator(range(Prefix.LogIndex))) indexBytes += k.length + v.length;
let blockCount = 0;
for await (const _ of db.keys(range(Prefix.BlockLogs))) blockCount++;
await db.close();

const perBlock = (bytes: number): string => (bytes / blockCount).toFixed(0).padStart(8);
/** Best of `reps` passes of `pass` (returns nothing useful), µs per block. */
const time = (pass: () => void, per = blocks.length): string => {
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < reps; r++) {
    const t = process.hrtime.bigint();
    pass();
    best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e3);
  }
  return (best / per).toFixed(1).padStart(8);
};
let sink = 0;

console.log(
  `${blockCount} blocks, ${blocks.length} with logs, ${logCount} logs (${(logCount / blockCount).toFixed(0)} a block)`,
);
console.log(`log index (LogIndex keys + values): ${perBlock(indexBytes)} B/block`);
console.log('\ncandidate                         B/block   decode µs/block');
const row = (name: string, bytes: number, us: string): void =>
  console.log(`${name.padEnd(32)} ${perBlock(bytes)}   ${us}`);

row(
  '(a) Logs rows (key + RLP value)',
  rowBytes,
  time(() => {
    for (const b of blocks) for (const r of b.rows) sink += decodeLog(r).data.length;
  }),
);

const columns = blocks.map((b) => encodeBlockLogColumns(b.rows.map((r) => decodeLog(r))));
// The columns must give back exactly the rows' logs.
blocks.forEach((b, i) => {
  const back = decodeBlockLogColumns(columns[i] as Uint8Array, b.number);
  b.rows.forEach((r, j) => {
    const want = decodeLog(r);
    const got = back[j];
    const same =
      got !== undefined &&
      got.txIndex === want.txIndex &&
      got.logIndex === want.logIndex &&
      Buffer.from(got.address).equals(want.address) &&
      Buffer.from(got.data).equals(want.data) &&
      got.topics.length === want.topics.length &&
      got.topics.every((t, x) => Buffer.from(t).equals(want.topics[x] as Uint8Array));
    if (!same) throw new Error(`block ${b.number} log ${j}: the columns decode to another log`);
  });
});
/** Block values: key 8 bytes (the block's first log id) + value. */
const KEY = 8;
const blockCandidate = (name: string, codec: LogBlockCodecId, level?: number): void => {
  const values = columns.map((c) => compressLogColumns(c, codec, level));
  const bytes = values.reduce((n, v) => n + KEY + v.length, 0);
  row(
    name,
    bytes,
    time(() => {
      blocks.forEach((b, i) => {
        sink += decodeBlockLogColumns(decompressLogColumns(values[i] as Uint8Array), b.number).length;
      });
    }),
  );
};
blockCandidate('(b) block columns, raw', LogBlockCodec.None);
for (const level of [1, 6, 9]) blockCandidate(`(b) block columns, deflate ${level}`, LogBlockCodec.Deflate, level);
for (const q of [4, 6, 9]) blockCandidate(`(b) block columns, brotli q${q}`, LogBlockCodec.Brotli, q);

const spanCandidate = (
  span: number,
  name: string,
  enc: (b: Uint8Array) => Uint8Array,
  dec: (b: Uint8Array) => Uint8Array,
): void => {
  const spans: { packed: Uint8Array; ends: number[]; first: number }[] = [];
  for (let i = 0; i < columns.length; i += span) {
    const part = columns.slice(i, i + span);
    const ends: number[] = [];
    let end = 0;
    for (const c of part) ends.push((end += c.length));
    // A span's index: one end offset per block (4 bytes), with the packed bytes.
    spans.push({ packed: enc(Buffer.concat(part)), ends, first: i });
  }
  const bytes = spans.reduce((n, s) => n + KEY + 4 * s.ends.length + s.packed.length, 0);
  // One block read: its whole span decompressed, then its own columns decoded (each span's
  // first block: the cost is the span's, whichever block is read).
  const one = time(() => {
    for (const s of spans) {
      const all = dec(s.packed);
      sink += decodeBlockLogColumns(all.subarray(0, s.ends[0]), (blocks[s.first] as { number: bigint }).number).length;
    }
  }, spans.length);
  // A range read: each span decompressed once for all its blocks.
  const all = time(() => {
    for (const s of spans) {
      const raw = dec(s.packed);
      let from = 0;
      s.ends.forEach((end, j) => {
        sink += decodeBlockLogColumns(
          raw.subarray(from, end),
          (blocks[s.first + j] as { number: bigint }).number,
        ).length;
        from = end;
      });
    }
  });
  row(`(c) ${span}-block spans, ${name}`, bytes, `${one} one block; ${all.trim()} a range`);
};
const brotli = (q: number) => (b: Uint8Array) =>
  brotliCompressSync(b, {
    params: { [constants.BROTLI_PARAM_QUALITY]: q, [constants.BROTLI_PARAM_SIZE_HINT]: b.length },
  });
for (const span of [16, 256]) {
  spanCandidate(
    span,
    'deflate 6',
    (b) => deflateRawSync(b, { level: 6 }),
    (b) => inflateRawSync(b),
  );
  spanCandidate(span, 'brotli q6', brotli(6), (b) => brotliDecompressSync(b));
  spanCandidate(span, 'brotli q9', brotli(9), (b) => brotliDecompressSync(b));
}
if (sink < 0) console.log(sink);
