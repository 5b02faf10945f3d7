// `node bench/dist/rows-codec.js --datadir <imported datadir> [--codecs <dir>] [--reps N]`: what
// the logs cost kept once, compressed, and what decoding them back costs. Read-only; nothing else
// may have the datadir open (LevelDB's lock).
//
// Three sets of frames, all read from the datadir:
//   segment JSON  each sealed span's text of one address (what a LogSegments index key names: the
//                 unit a one-address getLogs reads), the logs' JSON as served; then the same
//                 texts cut at block boundaries into chunks of at least 64 KB (a short range
//                 decodes one or two chunks, not the address's whole span);
//   log rows      the same (span, address) frames as the Logs rows' bytes (RLP, 184 B a log at
//                 mainnet's shape), the binary encoding the JSON is written from;
//   ready rows    each AddressLogsJson row on its own (one address, one block: LevelDB's snappy
//                 compresses each table block of ~4 KB, about this unit).
// Each set through each codec: node's zlib (deflate, brotli), and with --codecs <dir> (a folder
// whose node_modules holds them; none is a dependency of the project) @napi-rs/snappy, lz4-napi
// and @bokuweb/zstd-wasm. Printed per codec: bytes kept, ratio, and decode speed (the best of
// --reps passes over every frame, MB of output per second, one core).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, constants, deflateRawSync, inflateRawSync } from 'node:zlib';
import { Level } from 'level';
import { RLP } from '@ethereumjs/rlp';
import { Prefix } from '@chainnode/store';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:rows-codec');

const arg = (name: string, dflt?: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const datadir = resolve(arg('datadir') ?? '');
const codecsDir = arg('codecs');
const reps = Number(arg('reps', '3'));
const SPAN = 256;

interface Codec {
  name: string;
  encode(b: Uint8Array): Uint8Array;
  decode(b: Uint8Array, rawLength: number): Uint8Array;
}

const brotli = (quality: number, window = 22): Codec => ({
  name: `brotli q${quality} w${window}`,
  encode: (b) =>
    brotliCompressSync(b, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: quality,
        [constants.BROTLI_PARAM_LGWIN]: window,
        [constants.BROTLI_PARAM_SIZE_HINT]: b.length,
      },
    }),
  decode: (b) => brotliDecompressSync(b),
});
const deflate = (level: number): Codec => ({
  name: `deflate ${level}`,
  encode: (b) => deflateRawSync(b, { level }),
  decode: (b) => inflateRawSync(b),
});
const codecs: Codec[] = [deflate(1), deflate(6), brotli(4), brotli(6), brotli(9)];

if (codecsDir !== undefined) {
  const req = createRequire(join(resolve(codecsDir), 'package.json'));
  const snappy = req('@napi-rs/snappy') as {
    compressSync(b: Uint8Array): Buffer;
    uncompressSync(b: Uint8Array): Buffer;
  };
  codecs.push({ name: 'snappy', encode: (b) => snappy.compressSync(b), decode: (b) => snappy.uncompressSync(b) });
  const lz4 = req('lz4-napi') as { compressSync(b: Uint8Array): Buffer; uncompressSync(b: Uint8Array): Buffer };
  codecs.push({ name: 'lz4', encode: (b) => lz4.compressSync(b), decode: (b) => lz4.uncompressSync(b) });
  const zstd = req('@bokuweb/zstd-wasm') as {
    init(): Promise<void>;
    compress(b: Uint8Array, level: number): Uint8Array;
    decompress(b: Uint8Array): Uint8Array;
  };
  await zstd.init();
  for (const level of [3, 9, 19])
    codecs.push({
      name: `zstd ${level} (wasm)`,
      encode: (b) => zstd.compress(b, level),
      decode: (b) => zstd.decompress(b),
    });
}

const db = new Level<Uint8Array, Uint8Array>(join(datadir, 'chain'), { keyEncoding: 'view', valueEncoding: 'view' });
await db.open();
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const u64 = (b: Uint8Array, at: number): number => {
  let n = 0;
  for (let i = at; i < at + 8; i++) n = n * 256 + (b[i] as number);
  return n;
};
const range = (prefix: number) => ({ gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) });

// Segment JSON frames: (span, address) -> the index value names file, offset, and the text's end.
const segment = new Map<string, Uint8Array>();
/** The same texts cut at block boundaries into chunks of at least CHUNK bytes (the last one less). */
const CHUNK = 64 * 1024;
const chunks: Uint8Array[] = [];
const files = new Map<number, Buffer>();
for await (const [k, v] of db.iterator(range(Prefix.LogSegments))) {
  const dv = new DataView(v.buffer, v.byteOffset, v.byteLength);
  const file = dv.getUint32(0);
  const offset = dv.getUint32(4) * 2 ** 32 + dv.getUint32(8);
  const n = dv.getUint32(12);
  const end = dv.getUint32(16 + 12 * (n - 1) + 4);
  let bytes = files.get(file);
  if (bytes === undefined) {
    bytes = readFileSync(join(datadir, 'log-segments', `${String(file).padStart(6, '0')}.seg`));
    files.set(file, bytes);
  }
  segment.set(`${u64(k, 1)}:${hex(k.subarray(9, 29))}`, bytes.subarray(offset, offset + end));
  let start = 0;
  for (let i = 0; i < n; i++) {
    const textEnd = dv.getUint32(16 + 12 * i + 4);
    if (textEnd - start >= CHUNK || i === n - 1) {
      chunks.push(bytes.subarray(offset + start, offset + textEnd));
      start = textEnd + 1;
    }
  }
}
// Log rows of the same (span, address) pairs, concatenated in log order.
const sealedSpans = new Set([...segment.keys()].map((k) => k.split(':')[0]));
const rowParts = new Map<string, Uint8Array[]>();
let logs = 0;
for await (const [, v] of db.iterator(range(Prefix.Logs))) {
  logs++;
  const [number, , , address] = RLP.decode(v) as Uint8Array[];
  const span = Math.floor(Number(number?.length ? BigInt(`0x${hex(number)}`) : 0n) / SPAN) * SPAN;
  if (!sealedSpans.has(String(span))) continue;
  const key = `${span}:${hex(address as Uint8Array)}`;
  let list = rowParts.get(key);
  if (list === undefined) rowParts.set(key, (list = []));
  list.push(v.slice());
}
const rows = [...rowParts.values()].map((parts) => Buffer.concat(parts));
// Ready rows, one value each.
const ready: Uint8Array[] = [];
for await (const [, v] of db.iterator(range(Prefix.AddressLogsJson))) ready.push(v.slice());
await db.close();

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
function measure(set: string, frames: Uint8Array[]): void {
  const raw = frames.reduce((n, f) => n + f.length, 0);
  console.log(`\n${set}: ${frames.length} frames, ${fmt(raw)} bytes raw (${fmt(raw / frames.length)} per frame)`);
  console.log('codec | bytes kept | ratio | encode MB/s | decode MB/s (output)');
  for (const c of codecs) {
    let t = performance.now();
    const packed = frames.map((f) => c.encode(f));
    const encodeMs = performance.now() - t;
    const kept = packed.reduce((n, f) => n + f.length, 0);
    let best = Infinity;
    for (let r = 0; r < reps; r++) {
      t = performance.now();
      for (let i = 0; i < packed.length; i++) {
        const out = c.decode(packed[i] as Uint8Array, (frames[i] as Uint8Array).length);
        if (out.length !== (frames[i] as Uint8Array).length) throw new Error(`${c.name}: frame ${i} decoded wrong`);
      }
      best = Math.min(best, performance.now() - t);
    }
    const mbps = (ms: number): string => (raw / 1e6 / (ms / 1e3)).toFixed(0);
    console.log(`${c.name} | ${fmt(kept)} | ${(raw / kept).toFixed(2)} | ${mbps(encodeMs)} | ${mbps(best)}`);
  }
}

console.log(
  `datadir ${datadir}: ${fmt(logs)} logs; ${sealedSpans.size} sealed spans, ${segment.size} (span, address) frames`,
);
measure('segment JSON (span, address)', [...segment.values()]);
measure(`segment JSON cut at block boundaries, chunks of >= ${CHUNK} bytes`, chunks);
measure('log rows (span, address), RLP', rows);
measure('ready rows (address, block)', ready);
