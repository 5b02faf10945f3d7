// `npx tsc -b && node bench/dist/ledger.js [--datadir <dir>] [--duration 10] [--connections 64]`:
// eth_getBlockByNumber (a mid-chain block, a memoised answer: the ledger is most of the per-call
// work) through the embedded ledger vs the Redis ledger with 1 and with 3 replicas, one run each,
// and the Redis round trips per request (Redis INFO commandstats: EVALSHA/EVAL calls and all
// commands, divided by the requests answered). HTTP with wrk (one thread per wrk; for 3 replicas
// one wrk per replica, the connections split between them); every answer is checked byte for
// byte. The key has throughput and daily limits high enough never to refuse, so the token bucket
// code runs on every call. Everything (servers, Redis, wrk) shares the machine: state the load.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@redis/client';
import { startRedis } from '@chainnode/testkit';
import { haveWrk, wrkLoad } from './src/load.js';
import type { LoadResult } from './src/load.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:ledger');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');
function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}
const duration = Number(arg('duration', '10'));
const connections = Number(arg('connections', '64'));

function node(args: string[]): string {
  return execFileSync(process.execPath, [cli, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

function serve(datadir: string, extra: string[]): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, [cli, 'serve', '--datadir', datadir, '--port', '0', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((res, rej) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) res({ proc, port: Number(m[1]) });
    });
    proc.on('exit', () => rej(new Error('serve exited')));
  });
}

async function stop(p: ChildProcess): Promise<void> {
  const exited = new Promise((r) => p.on('exit', r));
  p.kill('SIGTERM');
  await exited;
}

async function main(): Promise<void> {
  if (!haveWrk()) throw new Error('bench:ledger needs wrk (apt-get install wrk)');
  const tmp = mkdtempSync(join(tmpdir(), 'bench-ledger-'));
  let datadir = arg('datadir');
  if (datadir === undefined) {
    const fixtures = join(root, 'fixtures');
    const from = existsSync(join(fixtures, 'chain.rlp'))
      ? fixtures
      : resolve(root, '..', 'shared', 'chains', 'execution-apis');
    datadir = join(tmp, 'data');
    console.error(`bench: importing ${from} into ${datadir}`);
    node(['sync', '--from', from, '--datadir', datadir]);
  }
  // Three private copies (one per replica; LevelDB admits one process per datadir).
  const copies = [0, 1, 2].map((i) => {
    const d = join(tmp, `replica-${i}`);
    cpSync(datadir as string, d, { recursive: true });
    return d;
  });
  const redis = await startRedis();
  const admin = createClient({ url: redis.url });
  admin.on('error', () => {});
  await admin.connect();
  // commandstats also counts the commands a script runs (redis.call): those are not round trips.
  const INSIDE_SCRIPT = new Set([
    'time',
    'zremrangebyscore',
    'hget',
    'zscore',
    'hmget',
    'hset',
    'pexpire',
    'hdel',
    'expire',
    'zadd',
  ]);
  const stats = async (): Promise<{ scripts: number; all: number; scriptUsec: number }> => {
    const info = String(await admin.sendCommand(['INFO', 'commandstats']));
    let scripts = 0;
    let all = 0;
    // Redis CPU spent in debit scripts (commandstats usec, the commands they run included).
    const scriptUsec = [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=\d+,usec=(\d+)/g)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
      const name = m[1] as string;
      const n = Number(m[2]);
      if (name === 'evalsha' || name === 'eval') scripts += n;
      if (!INSIDE_SCRIPT.has(name) && name !== 'info') all += n; // the bench's own INFO excluded
    }
    return { scripts, all, scriptUsec };
  };
  const limits = ['--daily-credits', '900000000000000', '--credits-per-second', '1000000000000'];
  const embeddedKey = (
    JSON.parse(node(['keys', 'create', '--plan', 'custom', ...limits, '--json', '--datadir', copies[0] as string])) as {
      key: string;
    }
  ).key;
  const redisKey = (
    JSON.parse(
      node([
        'keys',
        'create',
        '--plan',
        'custom',
        ...limits,
        '--json',
        '--datadir',
        copies[0] as string,
        '--ledger',
        redis.url,
      ]),
    ) as { key: string }
  ).key;

  const rows: string[] = [];
  const loads: string[] = [];
  const run = async (label: string, dirs: string[], key: string, extra: string[]): Promise<void> => {
    const servers = await Promise.all(dirs.map((d) => serve(d, extra)));
    try {
      const head = Number(
        (
          (await (
            await fetch(`http://127.0.0.1:${servers[0]?.port}/v3/${key}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
            })
          ).json()) as { result: string }
        ).result,
      );
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getBlockByNumber',
        params: [`0x${Math.floor(head / 2).toString(16)}`, false],
      });
      const expected = await (
        await fetch(`http://127.0.0.1:${servers[0]?.port}/v3/${key}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
      ).text();
      const per = Math.floor(connections / servers.length);
      const specs = servers.map((s) => ({
        host: '127.0.0.1',
        port: s.port,
        path: `/v3/${key}`,
        body,
        expected,
        connections: per,
        seconds: duration,
      }));
      await Promise.all(specs.map((s) => wrkLoad({ ...s, seconds: 2 }))); // warm-up
      const before = await stats();
      loads.push(loadavg()[0]?.toFixed(1) ?? '?');
      const results: LoadResult[] = await Promise.all(specs.map((s) => wrkLoad(s)));
      const after = await stats();
      const ok = results.reduce((n, r) => n + r.ok, 0);
      const rps = results.reduce((n, r) => n + r.rps, 0);
      const p99 = Math.max(...results.map((r) => r.p99));
      const p50 = Math.max(...results.map((r) => r.p50));
      const anomalies = results.reduce((n, r) => n + r.bad + r.mismatched + r.errors, 0);
      const trips =
        extra.length === 0
          ? '0'
          : `${((after.scripts - before.scripts) / ok).toFixed(3)} (all round trips ${((after.all - before.all) / ok).toFixed(3)}; ${((after.scriptUsec - before.scriptUsec) / Math.max(1, after.scripts - before.scripts)).toFixed(1)} µs of Redis CPU per script)`;
      rows.push(`| ${label} | ${servers.length} | ${Math.round(rps)} | ${p50} | ${p99} | ${trips} | ${anomalies} |`);
      console.error(rows[rows.length - 1]);
    } finally {
      for (const s of servers) await stop(s.proc);
    }
  };
  try {
    await run('embedded ledger', [copies[0] as string], embeddedKey, []);
    await run('Redis ledger', [copies[0] as string], redisKey, ['--ledger', redis.url]);
    await run('Redis ledger', copies, redisKey, ['--ledger', redis.url]);
  } finally {
    admin.destroy();
    await redis.stop();
    await redis.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log(
    `\nMachine: ${cpus().length} cores, ${cpus()[0]?.model ?? '?'}; Node ${process.version}; ${new Date().toISOString()}; load average (1-min) at the start of each run: ${loads.join(', ')}`,
  );
  console.log(
    `Command: node bench/dist/ledger.js ${process.argv.slice(2).join(' ')} (${connections} connections in total, closed loop, ${duration} s per case after a 2 s warm-up, one run)\n`,
  );
  console.log(
    '| Ledger | replicas | req/s (sum) | p50 ms (worst replica) | p99 ms (worst replica) | Redis round trips per request (debit scripts) | non-200/wrong/errors |\n|---|---|---|---|---|---|---|',
  );
  for (const r of rows) console.log(r);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
