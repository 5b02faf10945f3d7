// `npm run bench:chain -- --shape mainnet --blocks N [--out <dir>] [--datadir <dir>] [--cache <dir>]
// [--senders S]`:
// generates the mainnet-shaped chain (bench/src/mainnet-shape/generator.ts) as a geth export,
// genesis.json + chain.rlp (+ manifest.json), which `node-cli sync --from <dir>` imports. The
// result is cached under .cache/bench-chains/<key> (key: the parameters and the generator's
// version; not committed, it is large) and linked or copied to --out. A cached chain is reused.
// Prints the run record first: generation executes every block, so it also measures execution.
// With --datadir (a fresh directory) every block is also written into that datadir the way the
// import writes it (its call frames and state changes recorded for traces included) (one execution for both; the cache is then refreshed), and the rate printed is
// the import's: execution with the import's trie setup, sender recovery, staging and batches.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATOR_VERSION, generateMainnetShape, MAINNET_PARAMS } from './src/mainnet-shape/generator.js';
import type { Manifest, ShapeParams } from './src/mainnet-shape/generator.js';
import { printRunRecord } from './src/run-record.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FILES = ['genesis.json', 'chain.rlp', 'manifest.json'];

class UsageError extends Error {}

function parse(argv: string[]): { params: ShapeParams; out?: string; datadir?: string; cache: string } {
  const get = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    if (i < 0) return undefined;
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`--${name}: expected a value`);
    return v;
  };
  const shape = get('shape') ?? 'mainnet';
  if (shape !== 'mainnet') throw new UsageError(`--shape: only "mainnet" is known, not ${JSON.stringify(shape)}`);
  const blocks = Number(get('blocks') ?? '2000');
  const senders = Number(get('senders') ?? String(MAINNET_PARAMS.senders));
  if (!Number.isInteger(blocks) || blocks < 1) throw new UsageError('--blocks: a positive integer');
  if (!Number.isInteger(senders) || senders < 10) throw new UsageError('--senders: an integer of at least 10');
  const out = get('out');
  const datadir = get('datadir');
  return {
    params: { blocks, senders, seed: MAINNET_PARAMS.seed },
    ...(out !== undefined ? { out: resolve(out) } : {}),
    ...(datadir !== undefined ? { datadir: resolve(datadir) } : {}),
    cache: resolve(get('cache') ?? join(ROOT, '.cache', 'bench-chains')),
  };
}

/** The cache key: everything the output depends on. */
export function cacheKey(p: ShapeParams): string {
  const text = JSON.stringify({ shape: 'mainnet', version: GENERATOR_VERSION, ...p });
  return `mainnet-${p.blocks}-${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
}

async function main(): Promise<void> {
  const { params, out, datadir, cache } = parse(process.argv.slice(2));
  printRunRecord('bench:chain');
  let dir = join(cache, cacheKey(params));
  if (datadir === undefined && existsSync(join(dir, 'manifest.json'))) {
    process.stderr.write(`bench:chain: cached ${dir}\n`);
  } else {
    // SIGINT/SIGTERM end the chain after the current block: the blocks so far are written (and
    // cached under their own count), with the datadir flushed.
    let stopping = false;
    const onSignal = (): void => {
      stopping = true;
    };
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    const r = await generateMainnetShape({
      ...params,
      chainRlpPath: join(tmp, 'chain.rlp'),
      ...(datadir !== undefined ? { datadir } : {}),
      onGenesis: (json) => writeFileSync(join(tmp, 'genesis.json'), json),
      progress: (m) => process.stderr.write(`bench:chain: ${m}\n`),
      stop: () => stopping,
    });
    writeFileSync(join(tmp, 'genesis.json'), r.genesisJson);
    writeFileSync(join(tmp, 'manifest.json'), `${JSON.stringify(r.manifest, null, 1)}\n`);
    writeFileSync(join(tmp, 'timing.json'), `${JSON.stringify(r.timing)}\n`);
    if (r.growth.length > 0) writeFileSync(join(tmp, 'growth.json'), `${JSON.stringify(r.growth)}\n`);
    if (r.manifest.params.blocks !== params.blocks) dir = join(cache, cacheKey(r.manifest.params));
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    const s = r.manifest.stats;
    console.log(
      JSON.stringify({
        blocks: s.blocks,
        txs: s.txs,
        logs: s.logs,
        mgas: Math.round(s.gasUsed / 1e6),
        generateSeconds: Math.round(r.timing.totalSeconds),
        executeSeconds: Math.round(r.timing.executeSeconds),
        writeSeconds: Math.round(r.timing.writeSeconds),
        executeMgasPerSec: Number((s.gasUsed / 1e6 / r.timing.executeSeconds).toFixed(1)),
        ...(datadir !== undefined
          ? {
              importMgasPerSec: Number(
                (s.gasUsed / 1e6 / (r.timing.executeSeconds + r.timing.writeSeconds)).toFixed(1),
              ),
              importMgasPerCpuSecond: Number(
                (s.gasUsed / 1e6 / (r.timing.executeCpuSeconds + r.timing.writeCpuSeconds)).toFixed(1),
              ),
            }
          : {}),
      }),
    );
  }
  const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  const s = m.stats;
  console.log(
    `chain ${dir}: ${s.blocks} blocks, ${s.txs} txs (${(s.txs / s.blocks).toFixed(0)}/block), ${s.logs} logs ` +
      `(${(s.logs / s.blocks).toFixed(0)}/block), ${(s.gasUsed / s.blocks / 1e6).toFixed(1)} Mgas/block`,
  );
  if (out !== undefined && out !== dir) {
    mkdirSync(out, { recursive: true });
    for (const f of FILES) {
      rmSync(join(out, f), { force: true });
      try {
        linkSync(join(dir, f), join(out, f));
      } catch {
        copyFileSync(join(dir, f), join(out, f));
      }
    }
    console.log(`wrote ${out}`);
  }
}

main().catch((err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(
      `bench:chain: ${err.message}\nusage: npm run bench:chain -- --shape mainnet --blocks N [--out <dir>]\n`,
    );
    process.exitCode = 2;
    return;
  }
  process.stderr.write(`bench:chain failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
