// `npm run bench:ledger [-- --datadir <imported fixtures>] [--duration 10] [--connections 64]
//  [--bodies 4000] [--mix blocks,transactions,mixed] [--threads <per replica>] [--lease-credits 10000000]
//  [--replicas 1] [--settle <load>] [--rounds 1]`: the credit ledger's cost on real
// traffic. The fixture chain's varied mixes (bench/src/varied-fixtures.ts: thousands of distinct
// bodies across the whole chain, every answer checked against an answer the bench computes itself
// and then compared by digest), sent by the raw closed-loop client (bench/src/load.ts, in a worker
// thread) over `--connections` keep-alive sockets, in one run, to:
//   - `serve` with the embedded ledger (one replica);
//   - `serve --ledger redis://…` (one replica);
//   - three such replicas over the same Redis (the connections split between them);
//   - the same two with credit leases (`ledgerLeaseCredits` --lease-credits, in a --config file);
//   one-replica cases first (embedded, leased, Redis), then the three-replica ones (--replicas 1:
//   none). --settle L: each case starts once the 1-minute load is below L (at most 3 minutes' wait).
//   --rounds N: the embedded and leased one-replica cases N times each, alternating (embedded
//   first in odd rounds, leased first in even ones, so neither always meets the machine first),
//   each round's rows printed and the medians' ratio after them: on a shared machine one pair of
//   10-second runs moves by more than the difference between the two ledgers.
// Every call is paid (one key, limits high enough never to refuse, so the token bucket runs on
// every call). Reported per case: req/s (sum), p50 and p99 (worst replica), and for Redis:
//   - Redis requests per answered call: the script calls Redis received in the measured window
//     (INFO commandstats: EVALSHA + EVAL calls) over the calls answered in it; and the replicas'
//     own count over their lifetime (each prints "N Redis requests carried M charges" at exit);
//   - Redis CPU per answered call: used_cpu_user + used_cpu_sys (INFO cpu) over the window, over
//     the calls answered; and the time Redis spent in the scripts (commandstats usec).
// Everything (servers, Redis, the client) shares the machine: the load average is printed per case.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@redis/client';
import { RedisLedger, connectRedis, hashKey } from '@chainnode/accounts';
import { startRedis } from '@chainnode/testkit';
import { DIGEST, digest } from './src/load.js';
import type { VariedResult } from './src/load.js';
import { rawLoadVariedThread } from './src/load-thread.js';
import { settleLoad } from './src/settle.js';
import { medianOf } from './src/anvil.js';
import { printRunRecord } from './src/run-record.js';
import { runChild } from './src/children.js';
import { arg, keyArgs, keyOf } from './src/cli.js';
import { fixtureBuilder } from './src/varied-fixtures.js';
import type { Call, Mix, Reply } from './src/varied-mix.js';

printRunRecord('bench:ledger');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');
const duration = Number(arg('duration', '10'));
const connections = Number(arg('connections', '64'));
const bodies = Number(arg('bodies', '4000'));
const mixWords = (arg('mix', 'blocks,mixed') as string).split(',');
const threads = arg('threads');
// The lease's cap: a slice aims at two seconds of the key's spend (ledger-engines.md), about
// 30,000 calls a second of 80-150 credits here; a cap far below that syncs every few dozen calls.
const leaseCredits = Number(arg('lease-credits', '10000000'));
const threeReplicas = arg('replicas', '1,3') !== '1';
const settleBelow = arg('settle') === undefined ? undefined : Number(arg('settle'));
const rounds = Number(arg('rounds', '1'));
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`--rounds ${arg('rounds')}: a whole number of rounds, 1 or more`);

const log = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

interface Served {
  proc: ChildProcess;
  port: number;
  /** Everything the process wrote to stderr (its exit line counts its Redis requests). */
  err: () => string;
}

/** --mix words for the mixes the ledger's targets are set on (any other word: a label's beginning). */
const MIX_WORDS: Record<string, string> = {
  blocks: 'eth_getBlockByNumber, random block, hashes',
  transactions: 'eth_getTransactionByHash',
};

/** The report's short name of a mix (its label up to the first comma, or a name for the known ones). */
function mixName(label: string): string {
  if (label.startsWith('mixed (')) return 'mixed';
  if (label.startsWith('eth_getBlockByNumber, random block, hashes')) return 'random blocks (hashes)';
  if (label.startsWith('eth_getTransactionByHash')) return 'random transactions';
  return label.split(',')[0] as string;
}

function serve(datadir: string, extra: string[]): Promise<Served> {
  const args = [
    cli,
    'serve',
    '--datadir',
    datadir,
    '--port',
    '0',
    ...(threads ? ['--threads', threads] : []),
    ...extra,
  ];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((res, rej) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) res({ proc, port: Number(m[1]), err: () => err });
    });
    proc.on('exit', () => rej(new Error(`serve exited: ${err}`)));
  });
}

async function stop(p: ChildProcess): Promise<void> {
  const exited = new Promise((r) => p.on('exit', r));
  p.kill('SIGTERM');
  await exited;
}

async function createKey(datadir: string, extra: string[]): Promise<string> {
  const budget = ['--daily-credits', '900000000000000', '--credits-per-second', '1000000000000'];
  return keyOf(await runChild(process.execPath, [cli, ...keyArgs(datadir, budget), ...extra], () => {}));
}

/** Checks every distinct body's answer on `port` (the chain's own check) and returns the digests in body order. */
async function checkedDigests(
  port: number,
  key: string,
  calls: Call[],
  check: (c: Call, r: Reply) => Promise<unknown>,
): Promise<Buffer> {
  const byBody = new Map<string, Buffer>();
  const todo = [...new Map(calls.map((c) => [c.body, c])).values()];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < todo.length) {
        const c = todo[next++] as Call;
        const r = await fetch(`http://127.0.0.1:${port}/v3/${key}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: c.body,
        });
        const buf = Buffer.from(await r.arrayBuffer());
        if (r.status !== 200) throw new Error(`${c.body} -> HTTP ${r.status}`);
        await check(c, JSON.parse(buf.toString('utf8')) as Reply);
        byBody.set(c.body, digest(buf));
      }
    }),
  );
  const out = Buffer.alloc(calls.length * DIGEST);
  calls.forEach((c, i) => {
    (byBody.get(c.body) as Buffer).copy(out, i * DIGEST);
  });
  return out;
}

/**
 * The Redis engine alone, in this process (no HTTP): `n` debits (each settled at its full cost)
 * from `concurrency` loops over 100 keys, one script call per debit (the engine before batching)
 * or batched. What Redis spends per debit, and how many debits one connection gets decided per second.
 */
async function engineAlone(
  url: string,
  batched: boolean,
  n: number,
  concurrency: number,
  counters: () => Promise<RedisCounters>,
  dir: string,
): Promise<string> {
  const client = await connectRedis({ url, commandTimeoutMs: 10_000 });
  const ledger = new RedisLedger({
    client,
    failure: 'closed',
    journalDir: dir,
    commandTimeoutMs: 10_000,
    ...(batched ? {} : { maxBatch: 1, maxInFlight: Number.POSITIVE_INFINITY }),
  });
  const keys = Array.from({ length: 100 }, (_, i) => hashKey(`engine-alone-${i}`));
  const limits = { daily: 1e15, perSecond: 1e12 };
  await ledger.debit(keys[0] as string, 0, limits); // the script loaded
  const before = await counters();
  const calls0 = ledger.stats.redisCalls;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const d = await ledger.debit(keys[i % keys.length] as string, 10, limits);
        if (!d.ok) throw new Error('refused');
        await ledger.settle(d.debit, 10);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const after = await counters();
  const scripts = ledger.stats.redisCalls - calls0;
  await ledger.close();
  await client.close();
  return `| ${batched ? 'batched' : 'one script call per debit'} | ${Math.round(n / secs)} | ${(scripts / n).toFixed(4)} | ${(((after.cpuSec - before.cpuSec) * 1e6) / n).toFixed(1)} | ${((after.scriptUsec - before.scriptUsec) / n).toFixed(1)} | ${loadavg()[0]?.toFixed(1)} |`;
}

interface RedisCounters {
  scripts: number;
  scriptUsec: number;
  cpuSec: number;
}

/** Redis's script calls and CPU so far (INFO commandstats and cpu). */
async function redisCounters(admin: { sendCommand(args: string[]): Promise<unknown> }): Promise<RedisCounters> {
  const stats = String(await admin.sendCommand(['INFO', 'commandstats']));
  const cpu = String(await admin.sendCommand(['INFO', 'cpu']));
  let scripts = 0;
  let scriptUsec = 0;
  for (const m of stats.matchAll(/cmdstat_(evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
    scripts += Number(m[2]);
    scriptUsec += Number(m[3]);
  }
  const f = (name: string): number => Number(new RegExp(`${name}:([0-9.]+)`).exec(cpu)?.[1] ?? 'NaN');
  return { scripts, scriptUsec, cpuSec: f('used_cpu_user') + f('used_cpu_sys') };
}

/** The replicas' own count of Redis requests and the charges they carried, from their stderr. */
function ownLedgerCount(servers: Served[]): string {
  let sent = 0;
  let charges = 0;
  for (const s of servers) {
    // One line per ledger instance (the main thread's, and each app thread's).
    const lines = [...s.err().matchAll(/ledger: (\d+) Redis requests carried (\d+) charges/g)];
    if (lines.length === 0) throw new Error(`a replica printed no ledger count:\n${s.err()}`);
    for (const m of lines) {
      sent += Number(m[1]);
      charges += Number(m[2]);
    }
  }
  return `${sent} requests, ${charges} charges: ${(sent / charges).toFixed(4)} per charge`;
}

/** The engine-alone table and the served table, as in docs/performance.md. */
function printLedgerReport(describe: string, alone: string[], rows: string[], notes: string[]): void {
  console.log(`\nChain: ${describe}; ${bodies} bodies per mix`);
  console.log(
    `Machine: ${cpus().length} cores, ${cpus()[0]?.model ?? '?'}; Node ${process.version}; servers${threads ? ` --threads ${threads}` : ' with the default threads (one per core)'}`,
  );
  console.log(
    `\nThe Redis engine alone (in process, no HTTP): 20,000 debits, each settled at its cost, from ${connections} loops over 100 keys\n`,
  );
  console.log(
    '| debits | debits/s (one connection) | Redis requests per debit | Redis CPU µs per debit | in scripts µs per debit | load (1-min) |\n|---|---|---|---|---|---|',
  );
  for (const a of alone) console.log(a);
  console.log(
    `\nCommand: npm run bench:ledger -- ${process.argv.slice(2).join(' ')} (${connections} connections in total, closed loop, ${duration} s per case after a 2 s warm-up, ${rounds === 1 ? 'one run' : `${rounds} alternating rounds of the embedded and leased one-replica cases`})\n`,
  );
  console.log(
    '| mix | ledger | replicas | req/s (sum) | p50 ms (worst replica) | p99 ms (worst replica) | Redis requests per answered call | Redis CPU µs per answered call (in scripts) | load (1-min) | non-200/wrong/errors |\n|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of rows) console.log(r);
  console.log('');
  for (const n of notes) console.log(`- ${n}`);
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-ledger-'));
  const redis = await startRedis();
  const admin = createClient({ url: redis.url });
  admin.on('error', () => {});
  await admin.connect();
  const counters = (): Promise<RedisCounters> => redisCounters(admin);
  const rows: string[] = [];
  const notes: string[] = [];
  const alone: string[] = [];
  try {
    for (const batched of [false, true])
      alone.push(await engineAlone(redis.url, batched, 20_000, connections, counters, join(tmp, `alone-${batched}`)));
    for (const a of alone) log(a);
    const chain = await fixtureBuilder.build(
      {
        root,
        cli,
        ...(arg('datadir') !== undefined ? { datadir: arg('datadir') as string } : {}),
        bodies,
        noAnvil: true,
      },
      join(tmp, 'chain'),
      log,
    );
    const mixes: Mix[] = chain.mixes.filter((m) => mixWords.some((w) => m.label.startsWith(MIX_WORDS[w] ?? w)));
    if (mixes.length === 0) throw new Error(`--mix ${mixWords.join(',')}: no such mix`);
    // Three private copies (one per replica; LevelDB admits one process per datadir).
    const copies = [0, 1, 2].map((i) => {
      const d = join(tmp, `replica-${i}`);
      cpSync(chain.datadir, d, { recursive: true });
      return d;
    });
    const leaseConfig = join(tmp, 'leases.json');
    writeFileSync(leaseConfig, JSON.stringify({ ledgerLeaseCredits: leaseCredits }));
    const embeddedKey = await createKey(copies[0] as string, []);
    const redisKey = await createKey(copies[0] as string, ['--ledger', redis.url]);

    for (const mix of mixes) {
      const calls = mix.calls;
      const bodyTexts = calls.map((c) => c.body);
      let expected: Buffer | undefined;
      const run = async (label: string, dirs: string[], key: string, extra: string[]): Promise<number> => {
        if (settleBelow !== undefined) await settleLoad(settleBelow, log);
        const servers = await Promise.all(dirs.map((d) => serve(d, extra)));
        let stopped = false;
        try {
          // The answers are the same on every server (same chain): checked once, on the first server of the first case.
          expected ??= await checkedDigests((servers[0] as Served).port, key, calls, (c, r) =>
            chain.check(c, r, 'chainnode'),
          );
          const per = Math.floor(connections / servers.length);
          const load = loadavg()[0]?.toFixed(1) ?? '?';
          let before: RedisCounters | undefined;
          let after: RedisCounters | undefined;
          let opened = 0;
          let closed = 0;
          const results: VariedResult[] = await Promise.all(
            servers.map((s) =>
              rawLoadVariedThread({
                host: '127.0.0.1',
                port: s.port,
                path: `/v3/${key}`,
                bodies: bodyTexts,
                expected: expected as Buffer,
                connections: per,
                seconds: duration,
                onWindow: (edge) => {
                  // The window of the counters: from the first client's opening to the last one's closing.
                  if (edge === 'open' && opened++ === 0) void counters().then((c) => (before = c));
                  if (edge === 'close' && ++closed === servers.length) void counters().then((c) => (after = c));
                },
              }),
            ),
          );
          while (before === undefined || after === undefined) await new Promise((r) => setTimeout(r, 10));
          const answered = results.reduce((n, r) => n + r.ok, 0);
          const rps = results.reduce((n, r) => n + r.rps, 0);
          const p50 = Math.max(...results.map((r) => r.p50));
          const p99 = Math.max(...results.map((r) => r.p99));
          const anomalies = results.reduce((n, r) => n + r.bad + r.mismatched + r.errors, 0);
          await Promise.all(servers.map((s) => stop(s.proc)));
          stopped = true;
          let requests = '—';
          let cpu = '—';
          let own = '';
          if (extra.length > 0) {
            const scripts = after.scripts - before.scripts;
            requests = (scripts / answered).toFixed(4);
            cpu = `${(((after.cpuSec - before.cpuSec) * 1e6) / answered).toFixed(1)} (scripts ${((after.scriptUsec - before.scriptUsec) / answered).toFixed(1)})`;
            own = ownLedgerCount(servers);
          }
          rows.push(
            `| ${mixName(mix.label)} | ${label} | ${servers.length} | ${Math.round(rps)} | ${p50} | ${p99} | ${requests} | ${cpu} | ${load} | ${anomalies} |`,
          );
          if (own !== '') notes.push(`${mix.label} / ${label} x${servers.length}: the replicas' own count, ${own}`);
          log(rows[rows.length - 1] as string);
          return rps;
        } finally {
          if (!stopped) for (const s of servers) await stop(s.proc);
        }
      };
      // Credit leases (ledgerLeaseCredits): each replica spends slices of the key's balance in process.
      const leased = ['--ledger', redis.url, '--config', leaseConfig];
      // One replica first, the ledgers the targets compare side by side: the three-replica cases
      // run nine serving threads on the machine and raise the load the cases after them meet.
      const one = [copies[0] as string];
      const embeddedRps: number[] = [];
      const leasedRps: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const embedded = async (): Promise<void> => {
          embeddedRps.push(await run('embedded', one, embeddedKey, []));
        };
        const withLeases = async (): Promise<void> => {
          leasedRps.push(await run('Redis, leases', one, redisKey, leased));
        };
        if (round % 2 === 0) {
          await embedded();
          await withLeases();
        } else {
          await withLeases();
          await embedded();
        }
      }
      if (rounds > 1) {
        const [e, l] = [medianOf(embeddedRps), medianOf(leasedRps)];
        const line = `${mixName(mix.label)}, one replica over ${rounds} alternating rounds: leased ${leasedRps.map(Math.round).join(', ')} req/s (median ${Math.round(l)}), embedded ${embeddedRps.map(Math.round).join(', ')} (median ${Math.round(e)}): medians' ratio ${(l / e).toFixed(2)}x`;
        notes.push(line);
        log(line);
      }
      await run('Redis', one, redisKey, ['--ledger', redis.url]);
      if (threeReplicas) {
        await run('Redis', copies, redisKey, ['--ledger', redis.url]);
        await run('Redis, leases', copies, redisKey, leased);
      }
    }
    printLedgerReport(chain.describe, alone, rows, notes);
    await chain.close();
  } finally {
    admin.destroy();
    await redis.stop();
    await redis.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
