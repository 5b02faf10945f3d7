// Ingest benchmark: imports a chain export (default: fixtures/) into a fresh temporary datadir
// with the same code path as `node-cli sync`, then reports throughput (blocks, transactions, logs
// and gas per second of wall-clock time, and gas per CPU-second of this process: user + system
// of all its threads, steadier than wall-clock time on a shared machine) and bytes on disk.
//   npm run bench:ingest [-- --from <dir>] [--keep]
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
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
  const gas = gasOf(join(from, 'chain.rlp'));
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const s = await importChain({ from, datadir });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(c0);
  const cpuSecs = (cpu.user + cpu.system) / 1e6;
  const disk = await sizeOnDisk(datadir);
  const model = cpus()[0]?.model ?? 'unknown cpu';
  const result = {
    date: new Date().toISOString(),
    machine: `${cpus().length} x ${model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, node ${process.version}`,
    chain: from,
    chainRlpBytes: chainBytes,
    blocks: s.blocks,
    txs: s.txs,
    logs: s.logs,
    seconds: Number(secs.toFixed(1)),
    cpuSeconds: Number(cpuSecs.toFixed(1)),
    mgas: Number((gas / 1e6).toFixed(1)),
    mgasPerSec: Number((gas / 1e6 / secs).toFixed(2)),
    mgasPerCpuSec: Number((gas / 1e6 / cpuSecs).toFixed(2)),
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

/** The gas used by every block of a chain.rlp, from the headers (field 10). */
function gasOf(file: string): number {
  let rest: Uint8Array = readFileSync(file);
  let gas = 0;
  while (rest.length > 0) {
    const { data, remainder } = RLP.decode(rest, true) as unknown as { data: [Uint8Array[]]; remainder: Uint8Array };
    const g = data[0][10] as Uint8Array;
    gas += g.length === 0 ? 0 : Number.parseInt(Buffer.from(g).toString('hex'), 16);
    rest = remainder;
  }
  return gas;
}
