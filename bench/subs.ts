// `npm run bench:subs -- --datadir <fixtures datadir> [--subscribers 1000] [--blocks 200]
//  [--interval-ms 50]`: eth_subscribe fan-out. A child process runs the real server (real rpc
// service, real store over a COPY of the datadir) with a ChainEvents source it drives like
// `serve --follow` does after each durable batch: one commit per block, blocks replayed from the
// store (the last `--blocks` of the chain), one every `--interval-ms`. This process opens
// `--subscribers` WebSockets, half subscribed to newHeads, half to logs with different filters
// (token transfers by sender/recipient, single emitters, event signatures), and timestamps every
// notification. Reports commit-to-delivery latency (publish in the child -> message parsed here,
// same clock: performance.timeOrigin + now) p50/p99/max, and the server's CPU (user+system of the
// child) per 1,000 notifications. The clients share the 2 cores with the server.
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChainCommit, ChainCommitListener, ChainEvents, CommittedBlock } from '@chainnode/core';
import { createRpcService, resolveConfig } from '@chainnode/rpc';
import { startServer, transportConfig } from '@chainnode/server';
import { createKey, openLedger } from '@chainnode/accounts';
import { openChainStore } from '@chainnode/store';
import { printRunRecord } from './src/run-record.js';

if (process.argv[2] !== '--child') printRunRecord('bench:subs');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const now = (): number => performance.timeOrigin + performance.now();

function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

type ToChild = { publish: number } | { cpu: true } | { stop: true };
type FromChild =
  | { ready: { port: number; key: string; first: number; last: number } }
  | { published: { block: number; t0: number } }
  | { cpu: { user: number; system: number } };

// ----------------------------------------------------------------------------------------- child
async function child(datadir: string, blocks: number): Promise<void> {
  const send = (m: FromChild): void => {
    process.send?.(m);
  };
  const store = await openChainStore(datadir);
  const listeners = new Set<ChainCommitListener>();
  const events: ChainEvents = {
    subscribe: (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
  const config = transportConfig({
    subscriptionsPerKey: 100_000,
    wsMaxUnsentNotificationBytes: 64 * 1024 * 1024,
  });
  const service = createRpcService(store, resolveConfig({}));
  const accounts = await openLedger({ datadir });
  const srv = await startServer({
    service,
    store,
    ledger: { keys: accounts.keys, credits: accounts.ledger() },
    usage: accounts.usageRecord(),
    config,
    host: '127.0.0.1',
    port: 0,
    chainEvents: events,
  });
  const key = (await createKey(datadir, { plan: 'custom' })).key;
  await srv.keys.reload();
  const head = Number((await store.head()).number);
  const first = head - blocks + 1;
  const commits = new Map<number, ChainCommit>();
  for (let n = first; n <= head; n++) {
    const hash = await store.canonicalHash(BigInt(n));
    const r = await store.logs(
      { fromBlock: BigInt(n), toBlock: BigInt(n), addresses: [], topics: [] },
      { limit: 1_000_000, deadline: Date.now() + 60_000 },
    );
    if (hash === undefined || r.kind !== 'ok') throw new Error(`block ${n}`);
    const b: CommittedBlock = { number: BigInt(n), hash, logs: r.logs };
    commits.set(n, { removed: [], added: [b], head: { number: b.number, hash } });
  }
  process.on('message', (m: ToChild) => {
    if ('publish' in m) {
      const c = commits.get(m.publish) as ChainCommit;
      const t0 = now();
      for (const l of listeners) l(c);
      send({ published: { block: m.publish, t0 } });
    } else if ('cpu' in m) {
      send({ cpu: process.cpuUsage() });
    } else {
      void srv
        .close()
        .then(() => accounts.close())
        .then(() => store.close())
        .then(() => process.exit(0));
    }
  });
  send({ ready: { port: srv.port, key, first, last: head } });
}

// ---------------------------------------------------------------------------------------- parent
interface Ws {
  on(e: 'message', f: (d: Buffer) => void): void;
  on(e: 'open', f: () => void): void;
  on(e: 'error', f: (err: Error) => void): void;
  send(d: string): void;
  close(): void;
}
const WsCtor = createRequire(import.meta.url)('ws') as new (url: string) => Ws;

const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
const EMITTER = '0xac71dc6244075b8763fac5367375306e747c761a';
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function parent(): Promise<void> {
  const src = arg('datadir');
  if (src === undefined)
    throw new Error('--datadir <imported fixtures datadir> is required (it is copied, never opened)');
  const subscribers = Number(arg('subscribers', '1000'));
  const blocks = Number(arg('blocks', '200'));
  const interval = Number(arg('interval-ms', '50'));
  const tmp = await mkdtemp(join(tmpdir(), 'bench-subs-'));
  const datadir = join(tmp, 'data');
  await cp(src, datadir, { recursive: true });
  const accounts = Object.keys(
    (JSON.parse(await readFile(join(root, 'fixtures', 'genesis.json'), 'utf8')) as { alloc: Record<string, unknown> })
      .alloc,
  ).map((a) => `0x${'00'.repeat(12)}${a.replace(/^0x/, '').toLowerCase()}`);
  const proc: ChildProcess = fork(fileURLToPath(import.meta.url), ['--child', datadir, String(blocks)], {
    stdio: 'inherit',
  });
  const waiters: ((m: FromChild) => void)[] = [];
  proc.on('message', (m: FromChild) => waiters.shift()?.(m));
  const next = (): Promise<FromChild> => new Promise((r) => waiters.push(r));
  try {
    const ready = await next();
    if (!('ready' in ready)) throw new Error('child did not start');
    const { port, key, first, last } = ready.ready;
    const url = `ws://127.0.0.1:${port}/ws/v3/${key}`;
    const publishedAt = new Map<number, number>();
    // Arrival times per block; matched with the publish times at the end (a notification can
    // arrive before the child's "published" message does).
    const arrivals: { block: number; t: number }[] = [];
    let heads = 0;
    let logs = 0;
    const open = (i: number): Promise<void> =>
      new Promise((resolveOpen, reject) => {
        const ws = new WsCtor(url);
        ws.on('error', reject);
        ws.on('message', (d) => {
          const t = now();
          const m = JSON.parse(d.toString('utf8')) as {
            id?: number;
            params?: { result: { number?: string; blockNumber?: string } };
          };
          if (m.id !== undefined) return resolveOpen();
          const r = m.params?.result;
          if (r === undefined) return;
          arrivals.push({ block: Number(r.number ?? r.blockNumber), t });
          if (r.number !== undefined) heads++;
          else logs++;
        });
        ws.on('open', () => {
          let params: unknown[];
          if (i % 2 === 0) params = ['newHeads'];
          else {
            const j = (i - 1) / 2;
            const acct = accounts[j % accounts.length] as string;
            const other = accounts[(j * 7 + 3) % accounts.length] as string;
            switch (j % 5) {
              case 0:
                params = ['logs', { address: TOKEN, topics: [TRANSFER, acct] }];
                break;
              case 1:
                params = ['logs', { address: TOKEN, topics: [TRANSFER, null, acct] }];
                break;
              case 2:
                params = ['logs', { topics: [TRANSFER, [acct, other]] }];
                break;
              case 3:
                params = [
                  'logs',
                  {
                    address: [EMITTER, TOKEN].slice(0, 1 + (j % 2)),
                    topics: [null, `0x${(j % 1000).toString(16).padStart(64, '0')}`],
                  },
                ];
                break;
              default:
                params = ['logs', { address: j % 2 === 0 ? TOKEN : EMITTER }];
            }
          }
          ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params }));
        });
      });
    for (let i = 0; i < subscribers; i += 50)
      await Promise.all(Array.from({ length: Math.min(50, subscribers - i) }, (_, k) => open(i + k)));
    proc.send({ cpu: true } satisfies ToChild);
    const c0 = await next();
    const load0 = loadavg()[0] as number;
    const t0 = Date.now();
    for (let b = first; b <= last; b++) {
      proc.send({ publish: b } satisfies ToChild);
      const p = await next();
      if ('published' in p) publishedAt.set(p.published.block, p.published.t0);
      await new Promise((r) => setTimeout(r, interval));
    }
    await new Promise((r) => setTimeout(r, 2000)); // let the last deliveries land
    proc.send({ cpu: true } satisfies ToChild);
    const c1 = await next();
    if (!('cpu' in c0) || !('cpu' in c1)) throw new Error('cpu');
    const cpuMs = (c1.cpu.user + c1.cpu.system - c0.cpu.user - c0.cpu.system) / 1000;
    const total = heads + logs;
    const latencies = arrivals.map((a) => a.t - (publishedAt.get(a.block) ?? NaN)).sort((a, b) => a - b);
    if (latencies.some(Number.isNaN)) throw new Error('a notification for a block never published');
    const out = {
      subscribers,
      blocks: last - first + 1,
      intervalMs: interval,
      seconds: (Date.now() - t0) / 1000,
      notifications: { total, heads, logs },
      latencyMs: {
        p50: +pct(latencies, 50).toFixed(2),
        p99: +pct(latencies, 99).toFixed(2),
        max: +(latencies[latencies.length - 1] ?? NaN).toFixed(2),
      },
      serverCpuMsPer1000: +((cpuMs / total) * 1000).toFixed(1),
      serverCpuMs: +cpuMs.toFixed(0),
      load: { before: load0, after: loadavg()[0] },
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    proc.send({ stop: true } satisfies ToChild);
    await new Promise((r) => proc.once('exit', r));
  } finally {
    if (proc.exitCode === null) proc.kill('SIGKILL');
    await rm(tmp, { recursive: true, force: true });
  }
  process.exit(0);
}

if (process.argv[2] === '--child') {
  void child(process.argv[3] as string, Number(process.argv[4])).catch((err: unknown) => {
    process.stderr.write(`bench child: ${(err as Error).stack}\n`);
    process.exit(1);
  });
} else {
  void parent().catch((err: unknown) => {
    process.stderr.write(`bench: ${(err as Error).stack}\n`);
    process.exit(1);
  });
}
