// Follow benchmark (never a timed test):
//  1. throughput: a chainnode primary serves the fixtures (imported first, from the file);
//     `node-cli sync --from <primary URL>` follows it into a fresh datadir; vs the file import.
//  2. head lag while anvil mines one block per second with 20 transactions each, followed by
//     `serve --follow`: time from anvil having a block to this node serving it (p50/p99), and
//     the latency of eth_getBlockByNumber("latest") on the follower meanwhile (p50/p99).
//   npm run bench:follow [-- --seconds 60] [--lag-only]
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ANVIL_DEV_ACCOUNTS, cancunGenesis, freePort } from '@chainnode/testkit';
import { rpc } from './src/children.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:follow');

const root = resolve('.');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');
const args = process.argv.slice(2);
const secondsIdx = args.indexOf('--seconds');
const lagSeconds = secondsIdx >= 0 ? Number(args[secondsIdx + 1]) : 60;
/** --lag-only: skip the throughput part (two imports of the fixture chain). */
const lagOnly = args.includes('--lag-only');

const run = (argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((res) =>
    execFile(process.execPath, [cli, ...argv], { maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      res({ code: err === null ? 0 : 1, stdout, stderr }),
    ),
  );

function serve(argv: string[]): Promise<{ proc: ChildProcess; port: number }> {
  return new Promise((res, rej) => {
    const proc = spawn(process.execPath, [cli, 'serve', '--port', '0', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) res({ proc, port: Number(m[1]) });
    });
    proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('exit', (c) => rej(new Error(`serve exited ${c}: ${out}`)));
  });
}

async function key(datadir: string): Promise<string> {
  const r = await run(['keys', 'create', '--plan', 'custom', '--json', '--datadir', datadir]);
  return (JSON.parse(r.stdout) as { key: string }).key;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

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
  const anvilPort = await freePort();
  const genesis = cancunGenesis({ accounts: ANVIL_DEV_ACCOUNTS, balance: '0x21e19e0c9bab2400000' });
  const gpath = join(base, 'genesis.json');
  await writeFile(gpath, JSON.stringify(genesis));
  const anvil = spawn(
    join(root, 'node_modules', '.bin', 'anvil'),
    [
      '--init',
      gpath,
      '--hardfork',
      'cancun',
      '--accounts',
      '4',
      '--no-create2',
      '--port',
      String(anvilPort),
      '--no-mining',
    ],
    { stdio: 'ignore', detached: true },
  );
  const anvilUrl = `http://127.0.0.1:${anvilPort}`;
  try {
    for (let i = 0; i < 100; i++) {
      try {
        await rpc(anvilUrl, 'eth_chainId', []);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const fdir = join(base, 'follower');
    const fk = await key(fdir);
    const follower = await serve(['--datadir', fdir, '--follow', anvilUrl, '--genesis', gpath, '--poll-ms', '100']);
    kill.push(follower.proc);
    const fUrl = `http://127.0.0.1:${follower.port}/v3/${fk}`;
    const lags: number[] = [];
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
    for (let s = 0; s < lagSeconds; s++) {
      const tick = Date.now();
      for (let i = 0; i < 20; i++)
        await rpc(anvilUrl, 'eth_sendTransaction', [
          { from: dev[i % 4], to: dev[(i + 1) % 4], value: '0x1', gas: '0x5208' },
        ]);
      await rpc(anvilUrl, 'evm_mine', []);
      const mined = Date.now();
      const want = ((await rpc(anvilUrl, 'eth_getBlockByNumber', ['latest', false])) as { hash: string }).hash;
      for (;;) {
        const got = (await rpc(fUrl, 'eth_getBlockByNumber', ['latest', false]).catch(() => null)) as {
          hash?: string;
        } | null;
        if (got?.hash === want) break;
        if (Date.now() - mined > 30_000) throw new Error('follower does not keep up');
        await new Promise((r) => setTimeout(r, 5));
      }
      lags.push(Date.now() - mined);
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - tick))));
    }
    stop = true;
    await prober;
    console.log(
      JSON.stringify({
        part: 'lag',
        blocks: lags.length,
        txsPerBlock: 20,
        pollMs: 100,
        lagMsP50: pct(lags, 50),
        lagMsP99: pct(lags, 99),
        getBlockByNumberMsP50: +pct(latencies, 50).toFixed(2),
        getBlockByNumberMsP99: +pct(latencies, 99).toFixed(2),
        calls: latencies.length,
        load1: loadavg()[0]?.toFixed(2),
        cpus: cpus().length,
      }),
    );
  } finally {
    try {
      if (anvil.pid !== undefined) process.kill(-anvil.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
} finally {
  for (const p of kill) p.kill('SIGKILL');
  await rm(base, { recursive: true, force: true });
}
