// `npm run bench:soak [-- --datadir <dir>] [--duration 600] [--warmup 60] [--connections 1000]
//  [--think-min-ms 5000] [--think-max-ms 15000] [--max-batch 50] [--cli <node-cli.js>]`: a soak of a freshly started `node-cli serve` (a bench, not a timed test).
// For --duration seconds, --connections clients (80% WebSocket, 20% HTTP keep-alive) send mixed,
// varied traffic with think time (5-15 s: about 100 requests/s in all, a load a 2-core machine
// sustains; a client waits for each answer, 30 s at most): single calls of every method on random blocks, transactions and
// slots, batches of 2-50 calls, bad requests (malformed JSON, unknown methods, invalid params),
// and every second 1% of the WebSocket connections are dropped and replaced (churn). GET /health
// is asked every second throughout. The server's RSS is sampled every 10 s from /proc.
// Verdict: RSS at the end within 10% of RSS after --warmup; no error except the limits' own
// (-32005, -32003, HTTP 503/429, closes 1008/1013) and the expected answers to bad requests; every
// /health answered 200 within 2 s. Without --datadir the fixture chain is imported first.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { servePort } from './src/children.js';
import { arg, benchBudget, cliFromArgs, createKeySync, importIntoTemp, ROOT } from './src/cli.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:soak');

const cli = cliFromArgs();
const durationS = Number(arg('duration', '600'));
const warmupS = Number(arg('warmup', '60'));
const connections = Number(arg('connections', '1000'));
const wsShare = 0.8;
/** Think time between a client's requests: 1,000 connections at 5-15 s offer ~100 requests/s. */
const thinkMinMs = Number(arg('think-min-ms', '5000'));
const thinkMaxMs = Number(arg('think-max-ms', '15000'));
const maxBatch = Number(arg('max-batch', '50'));

interface WsClient {
  on(ev: 'open', cb: () => void): void;
  on(ev: 'message', cb: (data: Buffer) => void): void;
  on(ev: 'error', cb: (err: Error) => void): void;
  on(ev: 'close', cb: (code: number) => void): void;
  send(data: string): void;
  close(): void;
  readyState: number;
}
const WsCtor = createRequire(import.meta.url)('ws') as new (url: string) => WsClient;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const rnd = (n: number): number => Math.floor(Math.random() * n);
const q = (n: number): string => `0x${n.toString(16)}`;
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const counts = {
  requests: 0,
  batches: 0,
  bad: 0,
  answered: 0,
  expectedErrors: 0, // the answers bad requests must get
  limitErrors: 0, // -32005 / -32003 / 503 / 429
  otherErrors: 0,
  unanswered: 0, // no answer within 30 s (the client gives up on that connection)
  wsOpened: 0,
  wsChurned: 0,
  wsCut: 0, // closed by the server with 1008/1013
  wsLost: 0, // closed by the server otherwise
  health: 0,
  healthFailed: 0,
  healthMaxMs: 0,
};
const otherErrorSamples: string[] = [];

interface Chain {
  head: number;
  txs: string[];
  contracts: string[];
}

/** A random request: [body, kind] where kind says which answers are expected. */
function request(chain: Chain): { body: string; kind: 'ok' | 'bad'; batch: boolean } {
  const call = (id: number): unknown => {
    const n = 1 + rnd(chain.head);
    switch (rnd(7)) {
      case 0:
        return { jsonrpc: '2.0', id, method: 'eth_getBlockByNumber', params: [q(n), Math.random() < 0.5] };
      case 1:
        return { jsonrpc: '2.0', id, method: 'eth_getTransactionByHash', params: [chain.txs[rnd(chain.txs.length)]] };
      case 2:
        return {
          jsonrpc: '2.0',
          id,
          method: 'eth_getStorageAt',
          params: [chain.contracts[rnd(chain.contracts.length)], q(rnd(4)), q(n)],
        };
      case 3:
        return {
          jsonrpc: '2.0',
          id,
          method: 'eth_getProof',
          params: [chain.contracts[rnd(chain.contracts.length)], [q(rnd(4))], q(n)],
        };
      case 4:
        return {
          jsonrpc: '2.0',
          id,
          method: 'eth_getLogs',
          params: [{ fromBlock: q(n), toBlock: q(Math.min(chain.head, n + rnd(20))) }],
        };
      case 5:
        return { jsonrpc: '2.0', id, method: 'eth_blockNumber', params: [] };
      default:
        return { jsonrpc: '2.0', id, method: 'eth_getUncleByBlockNumberAndIndex', params: [q(n), '0x0'] };
    }
  };
  const r = Math.random();
  if (r < 0.08) {
    counts.bad++;
    const bad = [
      '{"jsonrpc":"2.0","id":1,"method":',
      '{"jsonrpc":"2.0","id":1,"method":"eth_nope","params":[]}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0xzz",true]}',
      '[]',
      '"hello"',
    ];
    return { body: bad[rnd(bad.length)]!, kind: 'bad', batch: false };
  }
  if (r < 0.2) {
    counts.batches++;
    return {
      body: JSON.stringify(Array.from({ length: 2 + rnd(maxBatch - 1) }, (_, i) => call(i))),
      kind: 'ok',
      batch: true,
    };
  }
  return { body: JSON.stringify(call(1)), kind: 'ok', batch: false };
}

/** Classifies one answer (single or batch text). */
function judge(text: string, kind: 'ok' | 'bad'): void {
  counts.answered++;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    counts.otherErrors++;
    if (otherErrorSamples.length < 5) otherErrorSamples.push(text.slice(0, 200));
    return;
  }
  for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
    const e = (m as { error?: { code: number; message: string } }).error;
    if (e === undefined) continue;
    if (kind === 'bad' && [-32700, -32600, -32601, -32602].includes(e.code)) counts.expectedErrors++;
    else if (e.code === -32005 || e.code === -32003) counts.limitErrors++;
    else {
      counts.otherErrors++;
      if (otherErrorSamples.length < 5) otherErrorSamples.push(JSON.stringify(e));
    }
  }
}

/** What the soak's clients share: the chain they ask about, the end, the open sockets. */
interface SoakRun {
  chain: Chain;
  end: number;
  sockets: Set<WsClient>;
  stopped(): boolean;
  think(): Promise<void>;
}

/** A WebSocket client: one request at a time, with think time; reconnects when churned or cut. */
async function wsClient(r: SoakRun, wsUrl: string): Promise<void> {
  while (!r.stopped() && Date.now() < r.end) {
    const ws = new WsCtor(wsUrl);
    r.sockets.add(ws);
    let waiting: { resolve: (t: string | undefined) => void } | undefined;
    let closedCode: number | undefined;
    ws.on('message', (d) => waiting?.resolve(d.toString('utf8')));
    ws.on('error', () => undefined);
    ws.on('close', (code) => {
      closedCode = code;
      r.sockets.delete(ws);
      waiting?.resolve(undefined);
    });
    const opened = await new Promise<boolean>((settle) => {
      ws.on('open', () => settle(true));
      ws.on('close', () => settle(false));
    });
    if (!opened) {
      await r.think();
      continue;
    }
    counts.wsOpened++;
    while (!r.stopped() && Date.now() < r.end && closedCode === undefined) {
      const req = request(r.chain);
      counts.requests++;
      const reply = await new Promise<string | undefined | null>((resolve) => {
        const timer = setTimeout(() => resolve(null), 30_000);
        waiting = {
          resolve: (t) => {
            clearTimeout(timer);
            resolve(t);
          },
        };
        ws.send(req.body);
      });
      waiting = undefined;
      if (reply === null) {
        counts.unanswered++;
        if (otherErrorSamples.length < 5)
          otherErrorSamples.push(`no WebSocket answer in 30 s to ${req.body.slice(0, 120)}`);
        break;
      }
      if (reply !== undefined) judge(reply, req.kind);
      else break;
      await r.think();
    }
    if (closedCode === 1008 || closedCode === 1013) counts.wsCut++;
    else if (closedCode !== undefined && closedCode !== 1000 && closedCode !== 1005 && !r.stopped()) counts.wsLost++;
    if (ws.readyState === 1) ws.close();
  }
}

/** An HTTP client (fetch keeps connections alive): one request at a time, with think time. */
async function httpClient(r: SoakRun, httpUrl: string): Promise<void> {
  while (!r.stopped() && Date.now() < r.end) {
    const req = request(r.chain);
    counts.requests++;
    try {
      const res = await fetch(httpUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: req.body,
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      if (res.status === 503 || res.status === 429) counts.limitErrors++;
      else judge(text, req.kind);
    } catch (err) {
      counts.otherErrors++;
      if (otherErrorSamples.length < 5) otherErrorSamples.push(String(err));
    }
    await r.think();
  }
}

interface Sample {
  t: number;
  rssMb: number;
  load1: number;
  requests: number;
}

/** The server's own connection metrics, the RSS drift after the warm-up, and the verdict. */
async function report(samples: Sample[], metricsUrl: string | undefined): Promise<void> {
  const serverMetrics =
    metricsUrl === undefined
      ? []
      : (await (await fetch(metricsUrl)).text())
          .split('\n')
          .filter((l) =>
            /^chainnode_(connections_cut_total|reply_bytes_in_flight|websocket_connections|responses_total)/.test(l),
          );
  console.error(serverMetrics.join('\n'));
  const afterWarmup = samples.find((s) => s.t >= warmupS) ?? samples[0]!;
  const last = samples.at(-1)!;
  const drift = (last.rssMb - afterWarmup.rssMb) / afterWarmup.rssMb;
  const verdict = {
    rssFlat: Math.abs(drift) <= 0.1,
    onlyLimitErrors: counts.otherErrors === 0 && counts.wsLost === 0 && counts.unanswered === 0,
    healthThroughout: counts.healthFailed === 0,
  };
  console.log(
    JSON.stringify({
      durationS,
      warmupS,
      connections,
      counts,
      otherErrorSamples,
      rss: {
        afterWarmup: afterWarmup.rssMb,
        last: last.rssMb,
        max: Math.max(...samples.map((s) => s.rssMb)),
        driftPct: Number((drift * 100).toFixed(1)),
      },
      verdict,
      samples,
    }),
  );
  console.log(
    `soak: ${durationS} s, ${connections} connections, ${counts.requests} requests (${counts.batches} batches, ${counts.bad} bad), ` +
      `RSS after warm-up ${afterWarmup.rssMb} MB -> end ${last.rssMb} MB (${(drift * 100).toFixed(1)}%), max ${Math.max(...samples.map((s) => s.rssMb))} MB; ` +
      `limit errors ${counts.limitErrors}, other errors ${counts.otherErrors}, unanswered ${counts.unanswered}, ws cut ${counts.wsCut}, ws lost ${counts.wsLost}; ` +
      `/health ${counts.health - counts.healthFailed}/${counts.health} ok (max ${counts.healthMaxMs} ms); ` +
      `verdict ${Object.values(verdict).every(Boolean) ? 'PASS' : 'FAIL'} ${JSON.stringify(verdict)}`,
  );
  if (!Object.values(verdict).every(Boolean)) process.exitCode = 1;
}

async function main(): Promise<void> {
  const given = arg('datadir');
  const { datadir, tmp } =
    given !== undefined
      ? { datadir: given, tmp: undefined }
      : importIntoTemp(cli, join(ROOT, 'fixtures'), 'bench-soak-', 'soak');
  const key = createKeySync(cli, datadir, benchBudget('soak'));
  const srv = spawn(process.execPath, [cli, 'serve', '--datadir', datadir, '--port', '0', '--metrics-port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((r) => srv.on('exit', r));
  let stopping = false;
  const sockets = new Set<WsClient>();
  try {
    let out = '';
    srv.stdout.on('data', (d: Buffer) => (out += d.toString()));
    // The banner is one JSON line (stdout is a pipe: the JSON log format), the metrics URL a field of it.
    const port = await servePort(srv, /"metrics":"http:/);
    const pid = srv.pid!;
    const base = `http://127.0.0.1:${port}`;
    const httpUrl = `${base}/v3/${key}`;
    const wsUrl = `ws://127.0.0.1:${port}/ws/v3/${key}`;
    const get = async (method: string, params: unknown[]): Promise<unknown> =>
      (
        (await (
          await fetch(httpUrl, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
        ).json()) as { result: unknown }
      ).result;
    const head = Number(await get('eth_blockNumber', []));
    const chain: Chain = { head, txs: [], contracts: [] };
    for (let n = head; n > head - 40; n--)
      chain.txs.push(
        ...((await get('eth_getBlockByNumber', [q(n), false])) as { transactions: string[] }).transactions,
      );
    const logs = (await get('eth_getLogs', [{ fromBlock: q(head - 20), toBlock: q(head) }])) as { address: string }[];
    chain.contracts = [...new Set(logs.map((l) => l.address))];
    if (chain.contracts.length === 0) chain.contracts.push('0x0000000000000000000000000000000000000000');

    const end = Date.now() + durationS * 1000;
    const think = (): Promise<void> => sleep(thinkMinMs + rnd(thinkMaxMs - thinkMinMs));

    const run: SoakRun = { chain, end, sockets, stopped: () => stopping, think };
    const nWs = Math.round(connections * wsShare);
    const clients: Promise<void>[] = [];
    for (let i = 0; i < nWs; i++) {
      clients.push(wsClient(run, wsUrl));
      if (i % 50 === 49) await sleep(50);
    }
    for (let i = 0; i < connections - nWs; i++) clients.push(httpClient(run, httpUrl));

    // Churn: every second, 1% of the open WebSocket connections go away (their client reconnects).
    const churn = setInterval(() => {
      const open = [...sockets];
      for (let i = 0; i < Math.ceil(open.length / 100); i++) {
        const ws = open[rnd(open.length)];
        if (ws?.readyState === 1) {
          counts.wsChurned++;
          ws.close();
        }
      }
    }, 1000);

    // /health every second, throughout.
    const health = (async () => {
      while (!stopping && Date.now() < end) {
        const t = performance.now();
        try {
          const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) });
          await res.text();
          if (res.status !== 200) counts.healthFailed++;
        } catch {
          counts.healthFailed++;
        }
        counts.health++;
        counts.healthMaxMs = Math.max(counts.healthMaxMs, Math.round(performance.now() - t));
        await sleep(1000);
      }
    })();

    // RSS every 10 s.
    const samples: Sample[] = [];
    const t0 = Date.now();
    const sampler = (async () => {
      while (Date.now() < end) {
        samples.push({
          t: Math.round((Date.now() - t0) / 1000),
          rssMb: Math.round(rssMb(pid)),
          load1: Number(loadavg()[0]!.toFixed(1)),
          requests: counts.requests,
        });
        console.error(
          `soak: t=${samples.at(-1)!.t}s rss=${samples.at(-1)!.rssMb} MB requests=${counts.requests} open ws=${sockets.size} load=${samples.at(-1)!.load1}`,
        );
        await sleep(10_000);
      }
    })();

    await Promise.all([...clients, health, sampler]);
    clearInterval(churn);
    samples.push({
      t: Math.round((Date.now() - t0) / 1000),
      rssMb: Math.round(rssMb(pid)),
      load1: Number(loadavg()[0]!.toFixed(1)),
      requests: counts.requests,
    });
    await report(samples, /"metrics":"(http:[^"]+)"/.exec(out)?.[1]);
  } finally {
    stopping = true;
    for (const ws of sockets) ws.close();
    srv.kill('SIGTERM');
    await exited;
    if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
