// Ingest benchmark: imports a chain export (default: fixtures/) into a fresh temporary datadir
// with the same code path as `node-cli sync`, then reports throughput and bytes on disk.
//   npm run bench:ingest [-- --from <dir>] [--keep]
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { importChain } from '@chainnode/ingest';
import { sizeOnDisk } from '@chainnode/store';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:ingest');

const args = process.argv.slice(2);
const fromIdx = args.indexOf('--from');
const from = resolve(fromIdx >= 0 ? (args[fromIdx + 1] ?? 'fixtures') : 'fixtures');
const base = await mkdtemp(join(tmpdir(), 'bench-ingest-'));
const datadir = join(base, 'data');
try {
  const chainBytes = (await stat(join(from, 'chain.rlp'))).size;
  const t0 = process.hrtime.bigint();
  const s = await importChain({ from, datadir });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const disk = await sizeOnDisk(datadir);
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  const result = {
    date: new Date().toISOString(),
    machine: `${cpus().length} x ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, node ${process.version}`,
    chain: from,
    chainRlpBytes: chainBytes,
    blocks: s.blocks,
    txs: s.txs,
    logs: s.logs,
    seconds: Number(secs.toFixed(1)),
    blocksPerSec: Number((s.blocks / secs).toFixed(1)),
    txsPerSec: Number((s.txs / secs).toFixed(1)),
    logsPerSec: Number((s.logs / secs).toFixed(1)),
    diskBytes: disk,
    bytesPerBlock: Math.round(disk / Math.max(1, s.blocks)),
    bytesPerLog: Math.round(disk / Math.max(1, s.logs)),
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  if (!args.includes('--keep')) await rm(base, { recursive: true, force: true });
  else console.log(`datadir kept: ${datadir}`);
}
