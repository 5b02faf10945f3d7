// `npm run bench:http [-- --datadir <dir>] [--duration 10] [--connections 64]`: requests per
// second and p50/p99 latency per method against a `node-cli serve` child process on loopback,
// HTTP with autocannon, WebSocket with a closed-loop `ws` client (64 connections, one call in
// flight each, like autocannon without pipelining). The load tool shares the 2 cores with the
// server. Without --datadir the fixture chain (else the execution-apis chain) is imported into
// a temporary datadir first.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = require('autocannon') as Autocannon;
interface WsClient {
  on(ev: string, cb: (...a: unknown[]) => void): void;
  send(data: string): void;
  close(): void;
}
const WsCtor = require('ws') as new (url: string) => WsClient;

function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
}
const duration = Number(arg('duration', '10'));
const connections = Number(arg('connections', '64'));

function node(args: string[]): string {
  return execFileSync(process.execPath, [cli, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

async function main(): Promise<void> {
  let datadir = arg('datadir');
  let tmp: string | undefined;
  if (datadir === undefined) {
    const fixtures = join(root, 'fixtures');
    const from = existsSync(join(fixtures, 'chain.rlp')) ? fixtures : resolve(root, '..', 'shared', 'chains', 'execution-apis');
    tmp = mkdtempSync(join(tmpdir(), 'bench-http-'));
    datadir = join(tmp, 'data');
    console.error(`bench: importing ${from} into ${datadir}`);
    node(['sync', '--from', from, '--datadir', datadir]);
  }
  const key = (JSON.parse(node(['keys', 'create', '--plan', 'custom', '--daily-credits', '900000000000000', '--label', 'bench', '--json', '--datadir', datadir])) as { key: string }).key;
  const srv = spawn(process.execPath, [cli, 'serve', '--datadir', datadir, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((res, rej) => {
    let out = '';
    srv.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
    srv.on('exit', () => rej(new Error('serve exited')));
  });
  const url = `http://127.0.0.1:${port}/v3/${key}`;
  const get = async (method: string, params: unknown[]): Promise<unknown> => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    return ((await r.json()) as { result: unknown }).result;
  };
  const head = Number(await get('eth_blockNumber', []));
  let txHash = '';
  for (let n = head; n > 0 && txHash === ''; n--) {
    const b = (await get('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])) as { transactions: string[] };
    txHash = b.transactions[0] ?? '';
  }
  const logs = (await get('eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }])) as { address: string }[];
  const contract = logs[0]?.address ?? '0x0000000000000000000000000000000000000000';
  const mid = `0x${Math.max(1, Math.floor(head / 2)).toString(16)}`;
  const cases: [string, string, unknown[]][] = [
    ['eth_getBlockByNumber', 'eth_getBlockByNumber', [mid, false]],
    ['eth_getTransactionByHash', 'eth_getTransactionByHash', [txHash]],
    ['eth_getStorageAt', 'eth_getStorageAt', [contract, '0x0', 'latest']],
    ['eth_getProof', 'eth_getProof', [contract, ['0x0000000000000000000000000000000000000000000000000000000000000000'], 'latest']],
  ];
  const rows: string[] = [];
  const results: Record<string, { rps: number; p50: number; p99: number }> = {};
  for (const [label, method, params] of cases) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    await autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections, duration: 2 }); // warm-up
    const r = await autocannon({ url, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections, duration });
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`${label}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    results[`http ${label}`] = { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
    rows.push(`| HTTP | ${label} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} |`);
    console.error(rows[rows.length - 1]);
  }
  // WebSocket, same call as the first case.
  for (const [label, method, params] of [cases[0], cases[1]] as [string, string, unknown[]][]) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    const ws = await wsLoad(`ws://127.0.0.1:${port}/ws/v3/${key}`, body, connections, duration);
    rows.push(`| WebSocket | ${label} | ${Math.round(ws.rps)} | ${ws.p50} | ${ws.p99} |`);
    console.error(rows[rows.length - 1]);
  }
  srv.kill('SIGTERM');
  await new Promise((r) => srv.on('exit', r));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  console.log(`\nMachine: ${cpus().length} cores, ${cpu}; Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`);
  console.log(`Command: npm run bench:http (autocannon ${connections} connections, ${duration} s per method after a 2 s warm-up; chain head ${head})\n`);
  console.log('| Transport | Method | req/s | p50 ms | p99 ms |\n|---|---|---|---|---|');
  for (const r of rows) console.log(r);
}

/** Closed loop: each connection sends its next call when the previous answer arrives. */
async function wsLoad(url: string, body: string, conns: number, seconds: number): Promise<{ rps: number; p50: number; p99: number }> {
  const lat: number[] = [];
  let count = 0;
  let running = true;
  const sockets: WsClient[] = [];
  await Promise.all(
    Array.from({ length: conns }, () =>
      new Promise<void>((res, rej) => {
        const ws = new WsCtor(url);
        sockets.push(ws);
        let t0 = 0;
        ws.on('open', () => {
          res();
        });
        ws.on('error', (e) => rej(e as Error));
        ws.on('message', () => {
          if (t0 !== 0) {
            lat.push(performance.now() - t0);
            count++;
          }
          if (running) {
            t0 = performance.now();
            ws.send(body);
          }
        });
        (ws as unknown as { kick: () => void }).kick = () => {
          t0 = performance.now();
          ws.send(body);
        };
      }),
    ),
  );
  // warm-up 2 s, then measure
  for (const s of sockets) (s as unknown as { kick: () => void }).kick();
  await new Promise((r) => setTimeout(r, 2000));
  lat.length = 0;
  count = 0;
  const start = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const elapsed = (performance.now() - start) / 1000;
  const n = count;
  running = false;
  const sorted = lat.slice(0, n).sort((a, b) => a - b);
  for (const s of sockets) s.close();
  const pct = (p: number): number => Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) * 100) / 100;
  return { rps: n / elapsed, p50: pct(0.5), p99: pct(0.99) };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
