// Follow benchmark (never a timed test):
//  1. throughput: a chainnode primary serves the fixtures (imported first, from the file);
//     `node-cli sync --from <primary URL>` follows it into a fresh datadir; vs the file import.
//  2. head lag while anvil mines one block per second with 20 transactions each, followed by
//     `serve --follow`: time from anvil having a block to this node serving it (p50/p99), and
//     the latency of eth_getBlockByNumber("latest") on the follower meanwhile (p50/p99).
//   npm run bench:follow [-- --seconds 60] [--lag-only]
import { execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ANVIL_DEV_ACCOUNTS } from '@chainnode/testkit';
import { percentileOf, printLagLine, startDevAnvil, trailLags } from './src/anvil.js';
import { rpc } from './src/children.js';
import { arg, createKey, startServe } from './src/cli.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:follow');

const root = resolve('.');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');
const lagSeconds = Number(arg('seconds', '60'));
/** --lag-only: skip the throughput part (two imports of the fixture chain). */
const lagOnly = process.argv.includes('--lag-only');

const run = (argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((res) =>
    execFile(process.execPath, [cli, ...argv], { maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      res({ code: err === null ? 0 : 1, stdout, stderr }),
    ),
  );

const serve = (argv: string[]) => startServe(cli, [...argv]);

const key = (datadir: string): Promise<string> => createKey(cli, datadir);

const pct = percentileOf;

const base = await mkdtemp(join(tmpdir(), 'bench-follow-'));
const kill: ChildProcess[] = [];
try {
  const load0 = loadavg()[0]?.toFixed(2);
  // 1. Throughput.
  if (!lagOnly) {
    const primaryDir = join(base, 'primary');
    let t0 = Date.now();
    const imp = await run(['sync', '--from', join(root, 'fixtures'), '--datadir', primaryDir]);
    if (imp.code !== 0) throw new Error(imp.stderr);
    const fileSecs = (Date.now() - t0) / 1000;
    const pk = await key(primaryDir);
    const primary = await serve(['--datadir', primaryDir]);
    kill.push(primary.proc);
    t0 = Date.now();
    const fol = await run([
      'sync',
      '--from',
      `http://127.0.0.1:${primary.port}/v3/${pk}`,
      '--genesis',
      join(root, 'fixtures', 'genesis.json'),
      '--datadir',
      join(base, 'replica'),
    ]);
    if (fol.code !== 0) throw new Error(fol.stderr);
    const rpcSecs = (Date.now() - t0) / 1000;
    primary.proc.kill('SIGTERM');
    const logs = 45_373;
    console.log(
      JSON.stringify({
        part: 'throughput',
        blocks: 1600,
        logs,
        fileImportSeconds: fileSecs,
        fileBlocksPerSec: +(1600 / fileSecs).toFixed(1),
        followSeconds: rpcSecs,
        followBlocksPerSec: +(1600 / rpcSecs).toFixed(1),
        followLogsPerSec: Math.round(logs / rpcSecs),
        load1: load0,
      }),
    );
  }

  // 2. Lag while anvil mines 1 block/s with 20 txs.
  const anvil = await startDevAnvil(base);
  const anvilUrl = anvil.url;
  const gpath = anvil.genesisPath;
  try {
    const fdir = join(base, 'follower');
    const fk = await key(fdir);
    const follower = await serve(['--datadir', fdir, '--follow', anvilUrl, '--genesis', gpath, '--poll-ms', '100']);
    kill.push(follower.proc);
    const fUrl = `http://127.0.0.1:${follower.port}/v3/${fk}`;
    const latencies: number[] = [];
    let stop = false;
    const prober = (async () => {
      while (!stop) {
        const t = performance.now();
        await rpc(fUrl, 'eth_getBlockByNumber', ['latest', false]).catch(() => undefined);
        latencies.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const dev = [...ANVIL_DEV_ACCOUNTS];
    const transfers = Array.from({ length: 20 }, (_, i) => ({
      from: dev[i % 4],
      to: dev[(i + 1) % 4],
      value: '0x1',
      gas: '0x5208',
    }));
    const lags = await trailLags(anvilUrl, fUrl, lagSeconds, () => transfers, 'follower');
    stop = true;
    await prober;
    printLagLine(
      lags,
      {},
      {
        getBlockByNumberMsP50: +pct(latencies, 50).toFixed(2),
        getBlockByNumberMsP99: +pct(latencies, 99).toFixed(2),
        calls: latencies.length,
      },
    );
  } finally {
    await anvil.stop();
  }
} finally {
  for (const p of kill) p.kill('SIGKILL');
  await rm(base, { recursive: true, force: true });
}
