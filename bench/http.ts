// `npm run bench:http -- --varied [--chain scaled|fixtures|mainnet --from <bench:chain export>] [--blocks 3000] [--anvil-history 128] [--anvil-proofs 200]
//  [--duration 6] [--bodies 20000 (fixtures: 4000)] [--log-bodies 2000] [--only <mix words>] [--no-anvil] [--settle <load>]
//  [--serve-args "<args>"] [--datadir <imported fixtures, with --chain fixtures>] [--keep <dir>: build the
//  scaled chain there and keep it; a later run with the same --keep and --no-anvil reuses it]`: varied bodies across
// the whole chain, against this node and anvil in the same run (bench/src/varied-run.ts). The default
// scaled chain is built in the run by anvil and imported by this node (several minutes).
//
// `npm run bench:http [-- --datadir <dir>] [--duration 10] [--connections 64] [--tool wrk|autocannon]
//  [--runs 3] [--json] [--cli <node-cli.js of another build>] [--serve-args "<args>"]`: the MEMO PATH, one request body
// repeated per method (after the first request every reply is the memoised one):
// requests per second and p50/p99 latency per method against a `node-cli
// serve` child process on loopback, 64 connections, closed loop (no pipelining), 2 s warm-up
// per case. HTTP with wrk when it is installed (Debian's `wrk`, one thread, so the server keeps
// the other core), else autocannon. WebSocket vs HTTP is compared with one raw node:net client
// for both transports (bench/src/load.ts), so the comparison is not one of client libraries.
// Every answer is checked byte for byte against the expected reply; non-200s, mismatched
// bodies (JSON-RPC errors included) and socket errors are counted and printed, and a case with
// any of them is flagged. The load tool shares the 2 cores with the server. Without --datadir
// the fixture chain (else the execution-apis chain) is imported into a temporary datadir first.
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { servePort } from './src/children.js';
import { arg, benchBudget, cliFromArgs, createKeySync, importIntoTemp, ROOT as root } from './src/cli.js';
import { autocannonLoad, haveWrk, rawLoad, wrkLoad } from './src/load.js';
import { runVaried } from './src/varied-run.js';
import type { LoadResult, LoadSpec } from './src/load.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:http');

/** --cli: another build's node-cli.js (e.g. a checkout of an older commit) for before/after runs. */
const cli = cliFromArgs();
const duration = Number(arg('duration', '10'));
const connections = Number(arg('connections', '64'));
const runs = Number(arg('runs', '1'));
const toolArg = arg('tool', haveWrk() ? 'wrk' : 'autocannon');

/** `--varied`: the varied bench on the scaled, fixture or mainnet-shaped chain (src/varied-run.ts). */
async function runVariedFromArgs(): Promise<void> {
  const only = arg('only');
  const serveArgs = arg('serve-args');
  const datadir = arg('datadir');
  const chain = arg('chain', 'scaled');
  if (chain !== 'scaled' && chain !== 'fixtures' && chain !== 'mainnet')
    throw new Error(`--chain: scaled, fixtures or mainnet, not ${chain}`);
  const from = arg('from');
  if (chain === 'scaled' && datadir !== undefined)
    throw new Error('--datadir: only with --chain fixtures or mainnet (the scaled chain is built in the run)');
  const bodies = Number(arg('bodies', chain === 'scaled' ? '20000' : '4000'));
  await runVaried({
    root,
    cli,
    chain,
    ...(from !== undefined ? { from: resolve(from) } : {}),
    blocks: Number(arg('blocks', '3000')),
    anvilHistory: Number(arg('anvil-history', '128')),
    anvilProofSample: Number(arg('anvil-proofs', '200')),
    seconds: Number(arg('duration', '6')),
    connections,
    bodies,
    logBodies: Number(arg('log-bodies', String(Math.min(bodies, 2000)))),
    noAnvil: process.argv.includes('--no-anvil'),
    ...(arg('keep') !== undefined ? { keep: arg('keep') as string } : {}),
    ...(datadir !== undefined ? { datadir } : {}),
    ...(only !== undefined ? { only: only.split(',') } : {}),
    ...(arg('settle') !== undefined ? { settle: Number(arg('settle')) } : {}),
    ...(serveArgs !== undefined ? { serveArgs: serveArgs.split(' ').filter((x) => x !== '') } : {}),
  });
}

type MemoCase = [label: string, method: string, params: unknown[]];

/** The memo-path cases: a block, a transaction, a storage slot and a proof of the served chain. */
async function memoCases(url: string): Promise<{ head: number; cases: MemoCase[] }> {
  const get = async (method: string, params: unknown[]): Promise<unknown> => {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return ((await r.json()) as { result: unknown }).result;
  };
  const head = Number(await get('eth_blockNumber', []));
  let txHash = '';
  for (let n = head; n > 0 && txHash === ''; n--) {
    const b = (await get('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])) as { transactions: string[] };
    txHash = b.transactions[0] ?? '';
  }
  // A contract that emitted logs lately (a small range: the whole chain may pass the result cap).
  const logs = ((await get('eth_getLogs', [
    { fromBlock: `0x${Math.max(0, head - 64).toString(16)}`, toBlock: 'latest' },
  ])) ?? []) as { address: string }[];
  const contract = logs[0]?.address ?? '0x0000000000000000000000000000000000000000';
  const mid = `0x${Math.max(1, Math.floor(head / 2)).toString(16)}`;
  const cases: MemoCase[] = [
    ['eth_getBlockByNumber', 'eth_getBlockByNumber', [mid, false]],
    ['eth_getTransactionByHash', 'eth_getTransactionByHash', [txHash]],
    ['eth_getStorageAt', 'eth_getStorageAt', [contract, '0x0', 'latest']],
    [
      'eth_getProof',
      'eth_getProof',
      [contract, ['0x0000000000000000000000000000000000000000000000000000000000000000'], 'latest'],
    ],
  ];
  return { head, cases };
}

interface Measured {
  rows: string[];
  results: Record<string, LoadResult & { runs: number[] }>;
  loads: number[];
  measure(label: string, load: () => Promise<LoadResult>, warm: () => Promise<unknown>): Promise<void>;
}

/** Runs each case `runs` times after its warm-up and keeps the median run and a table row. */
function measurer(): Measured {
  const rows: string[] = [];
  const results: Record<string, LoadResult & { runs: number[] }> = {};
  const loads: number[] = [];
  const measure = async (
    label: string,
    load: () => Promise<LoadResult>,
    warm: () => Promise<unknown>,
  ): Promise<void> => {
    await warm();
    const all: LoadResult[] = [];
    for (let i = 0; i < runs; i++) {
      loads.push(loadavg()[0] as number);
      all.push(await load());
    }
    // The median run by req/s; every run's anomalies are summed.
    const sorted = [...all].sort((x, y) => x.rps - y.rps);
    const med = sorted[Math.floor(sorted.length / 2)] as LoadResult;
    const bad = all.reduce((n, r) => n + r.bad, 0);
    const mism = all.reduce((n, r) => n + r.mismatched, 0);
    const errs = all.reduce((n, r) => n + r.errors, 0);
    results[label] = { ...med, bad, mismatched: mism, errors: errs, runs: all.map((r) => Math.round(r.rps)) };
    const flag = bad + mism + errs > 0 ? ` INVALID: ${bad} non-200, ${mism} wrong bodies, ${errs} socket errors` : '';
    rows.push(
      `| ${label} (memo path) | ${med.tool} | ${Math.round(med.rps)} | ${med.p50} | ${med.p99} | ${all.map((r) => Math.round(r.rps)).join(', ')} | ${bad}/${mism}/${errs} |${flag}`,
    );
    console.error(rows[rows.length - 1]);
  };
  return { rows, results, loads, measure };
}

/** The results as JSON (--json) or as the Markdown table of docs/performance.md. */
function printReport(head: number, m: Measured): void {
  const { rows, results, loads } = m;
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  const la = loads.length === 0 ? 'n/a' : `${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`;
  if (process.argv.includes('--json')) {
    console.log(
      JSON.stringify(
        {
          machine: `${cpus().length} x ${cpu}`,
          node: process.version,
          head,
          connections,
          duration,
          runs,
          loadavg: la,
          results,
        },
        null,
        2,
      ),
    );
    return;
  }
  console.log(
    `\nMachine: ${cpus().length} cores, ${cpu}; Node ${process.version}; ${new Date().toISOString().slice(0, 10)}; load average ${la} (1-min, at the start of each run)`,
  );
  console.log(
    `Command: node bench/dist/http.js ${process.argv.slice(2).join(' ')} (${connections} connections, closed loop, ${duration} s per run after a 2 s warm-up, median of ${runs} run(s); chain head ${head})\n`,
  );
  console.log(
    '| Case | Tool | req/s | p50 ms | p99 ms | runs req/s | non-200/wrong/errors |\n|---|---|---|---|---|---|---|',
  );
  for (const r of rows) console.log(r);
  if (Object.values(results).some((r) => r.bad + r.mismatched + r.errors > 0)) process.exitCode = 1;
}

async function main(): Promise<void> {
  if (process.argv.includes('--varied')) {
    await runVariedFromArgs();
    return;
  }
  const given = arg('datadir');
  const fixtures = join(root, 'fixtures');
  const from = existsSync(join(fixtures, 'chain.rlp'))
    ? fixtures
    : resolve(root, '..', 'shared', 'chains', 'execution-apis');
  const { datadir, tmp } =
    given !== undefined ? { datadir: given, tmp: undefined } : importIntoTemp(cli, from, 'bench-http-');
  const key = createKeySync(cli, datadir, benchBudget('bench'));
  const extra = (arg('serve-args') ?? '').split(' ').filter((x) => x !== '');
  const srv = spawn(process.execPath, [cli, 'serve', '--datadir', datadir, '--port', '0', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await servePort(srv);
  const url = `http://127.0.0.1:${port}/v3/${key}`;
  const { head, cases } = await memoCases(url);
  const spec = (path: string, body: string, expected: string): LoadSpec => ({
    host: '127.0.0.1',
    port,
    path,
    body,
    expected,
    connections,
    seconds: duration,
  });
  const m = measurer();
  const measure = m.measure;
  const path = `/v3/${key}`;
  const expect = async (body: string): Promise<string> => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await r.text();
    if (r.status !== 200 || text.includes('"error"'))
      throw new Error(`bench: ${body} answered ${r.status} ${text.slice(0, 200)}`);
    return text;
  };
  for (const [label, method, params] of cases) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    const s = spec(path, body, await expect(body));
    const short = { ...s, seconds: 2 };
    if (toolArg === 'wrk')
      await measure(
        `HTTP ${label}`,
        () => wrkLoad(s),
        () => wrkLoad(short),
      );
    else
      await measure(
        `HTTP ${label}`,
        () => autocannonLoad(s),
        () => autocannonLoad(short),
      );
  }
  // WebSocket vs HTTP through the same raw client (rawLoad warms up by itself).
  for (const [label, method, params] of cases) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    const s = spec(path, body, await expect(body));
    await measure(
      `HTTP ${label}`,
      () => rawLoad(s, 'http'),
      async () => {},
    );
    await measure(
      `WebSocket ${label}`,
      () => rawLoad({ ...s, path: `/ws/v3/${key}` }, 'ws'),
      async () => {},
    );
  }
  srv.kill('SIGTERM');
  await new Promise((r) => srv.on('exit', r));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  printReport(head, m);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
