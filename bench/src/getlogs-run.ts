// The getLogs benchmark: builds (or reuses) a synthetic chain, times the query mix (docs/performance.md) on
// the log index and on the per-block bloom-scan baseline in the same process (and checks that
// both give the same answer), measures the index size from LevelDB, then probes a `node-cli
// serve` child: eth_getBlockByNumber latency while 4 full-range getLogs run concurrently.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import type { LogQuery, LogQueryResult } from '@chainnode/core';
import { LevelChainStore } from '@chainnode/store';
import { HOT_SHARES, Rng, TRANSFER, buildChain, chainSpec, contractAddress, holderTopic } from './synth.js';
import type { ChainFacts, ChainSpec } from './synth.js';
import type { ChainBuilder } from './varied-mix.js';
import { servePort } from './children.js';
import { benchBudget, createKeySync, NODE_CLI, ROOT as root } from './cli.js';

export const MAX_RESULTS = 10_000;
export const TIMEOUT_MS = 10_000;
/** Deadline of one bloom-scan baseline query. */
const BASELINE_TIMEOUT_MS = 30 * 60_000;

export interface RunOptions {
  size: 'smoke' | 'standard';
  scale: number;
  /** Build into (or reuse) this datadir and keep it; default: a temporary one, removed after. */
  datadir?: string;
  /** Run the server concurrency probe (needs packages/cli built). */
  server: boolean;
  /** Generate the chain on the writer's thread (for comparison; default: a generator thread). */
  inlineGenerator?: boolean;
  log: (line: string) => void;
}

export interface Stats {
  runs: number;
  p50: number;
  p99: number;
  qps: number;
  meanResults: number;
  tooMany: number;
}

export interface QueryFigures {
  description: string;
  index: Stats;
  bloomScan: Stats;
  /** bloomScan p50 / index p50. */
  ratioP50: number;
}

export interface BenchResult {
  schema: 'getlogs-bench/1';
  date: string;
  machine: string;
  size: string;
  scale: number;
  chain: {
    blocks: number;
    logs: number;
    txs: number;
    indexedValues: number;
    tailContracts: number;
    holders: number;
    hottestShare: number;
    transferShare: number;
  };
  /**
   * The chain build: `seconds` is its wall time (first block to the last durable flush, the
   * generator running on its own thread meanwhile) and `logsPerSecTotal` = logs / seconds;
   * `writeSeconds` is the writer's thread's time in the store writer (staging rows and index,
   * flushes, waiting for LevelDB) and `logsPerSecWriter` = logs / writeSeconds: the ingest rate
   * of the store; `generateSeconds` is the generator thread's time.
   */
  ingest: {
    seconds: number;
    writeSeconds: number;
    generateSeconds: number;
    logsPerSecWriter: number;
    logsPerSecTotal: number;
  };
  index: {
    entries: number;
    keyValueBytes: number;
    diskBytesAfterCompaction: number;
    bytesPerValueKeyValue: number;
    bytesPerValueDisk: number;
  };
  queries: Record<string, QueryFigures>;
  /** Index answers that differed from the bloom-scan answers (must be 0). */
  mismatches: number;
  concurrency: {
    getLogsWorkers: number;
    getLogsCompleted: number;
    getLogsCapErrors: number;
    getLogsOtherErrors: number;
    getLogsP50: number;
    blockByNumberIdle: { calls: number; p50: number; p99: number };
    blockByNumberUnderLoad: { calls: number; p50: number; p99: number };
  } | null;
}

/** Every figure name the JSON carries (the smoke test checks they are all present and numeric). */
export const QUERY_NAMES = [
  'a_by_block_hash',
  'b_blocks_1',
  'b_blocks_10',
  'b_blocks_100',
  'c_hot_address_100',
  'c_hot_address_1000',
  'c_hot_address_10000',
  'd_rare_address_full',
  'e_address_topic0_topic2_full',
  'f_topic0_1000',
  'g_50_addresses_10000',
  'h_cap_error_full',
] as const;

const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;
const qhex = (n: number): string => `0x${n.toString(16)}`;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] as number;
}

const round = (x: number, d = 2): number => Number(x.toFixed(d));

function stats(ms: number[], results: number[], tooMany: number, totalMs: number): Stats {
  const s = [...ms].sort((a, b) => a - b);
  return {
    runs: ms.length,
    p50: round(percentile(s, 50)),
    p99: round(percentile(s, 99)),
    qps: round(ms.length / (totalMs / 1000), 1),
    meanResults: round(results.reduce((a, b) => a + b, 0) / Math.max(1, results.length), 1),
    tooMany,
  };
}

/** Comparable form of an answer. */
function answerKey(r: LogQueryResult): string {
  if (r.kind === 'too-many') return `too-many:${r.lastFittingBlock}`;
  return r.logs
    .map((l) => `${l.blockNumber}:${l.logIndex}:${Buffer.from(l.transactionHash).toString('hex').slice(0, 8)}`)
    .join(',');
}

interface Case {
  name: (typeof QUERY_NAMES)[number];
  description: string;
  make: (i: number) => LogQuery;
  byHash?: boolean;
  indexRuns: number;
  scanRuns: number;
}

/** The query mix, drawn deterministically from what the generator counted. */
export function queryCases(facts: ChainFacts, quick: boolean): Case[] {
  const head = facts.head;
  const rng = new Rng(99);
  const block = (span: number) => 1 + rng.int(Math.max(1, head - span + 1));
  const range = (span: number): { fromBlock: bigint; toBlock: bigint } => {
    const from = block(span);
    return { fromBlock: BigInt(from), toBlock: BigInt(Math.min(head, from + span - 1)) };
  };
  const full = { fromBlock: 0n, toBlock: BigInt(head) };
  const hot = HOT_SHARES.length;
  // (c): the busiest hot contract whose logs over 10,000 blocks stay under the cap.
  const perBlock = facts.logs / facts.head;
  const cIdx = HOT_SHARES.findIndex((s) => s * perBlock * 10_000 < MAX_RESULTS * 0.9);
  const cAddr = contractAddress(cIdx < 0 ? hot - 1 : cIdx);
  const rare: number[] = [];
  facts.contractLogs.forEach((n, i) => {
    if (i >= hot && n >= 10 && n <= 200) rare.push(i);
  });
  const holders: number[] = [];
  facts.hotIncoming.forEach((n, i) => {
    if (n >= 2 && n <= 100) holders.push(i);
  });
  if (rare.length === 0 || holders.length === 0)
    throw new Error('chain too small: no rare contract or holder to query');
  const tail = facts.contractLogs.length - hot;
  const pick = <T>(xs: T[]): T => xs[rng.int(xs.length)] as T;
  // The smoke size checks the bench runs and names its figures: a few runs of each query, fewer
  // of the bloom scans (a full-range scan takes ~0.5-1 s at smoke size).
  const runs = (n: number) => (quick ? Math.max(3, Math.ceil(n / 5)) : n);
  const scans = (n: number) => (quick ? Math.max(2, Math.ceil(n / 20)) : n);
  return [
    {
      name: 'a_by_block_hash',
      description: 'blockHash: all logs of one block',
      make: () => ({ ...range(1), addresses: [], topics: [] }),
      byHash: true,
      indexRuns: runs(200),
      scanRuns: scans(50),
    },
    {
      name: 'b_blocks_1',
      description: 'all logs of 1 block',
      make: () => ({ ...range(1), addresses: [], topics: [] }),
      indexRuns: runs(200),
      scanRuns: scans(50),
    },
    {
      name: 'b_blocks_10',
      description: 'all logs of 10 blocks',
      make: () => ({ ...range(10), addresses: [], topics: [] }),
      indexRuns: runs(100),
      scanRuns: scans(30),
    },
    {
      name: 'b_blocks_100',
      description: 'all logs of 100 blocks',
      make: () => ({ ...range(100), addresses: [], topics: [] }),
      indexRuns: runs(50),
      scanRuns: scans(20),
    },
    {
      name: 'c_hot_address_100',
      description: `hot address (${HOT_SHARES[cIdx] ?? '?'} of logs) over 100 blocks`,
      make: () => ({ ...range(100), addresses: [cAddr], topics: [] }),
      indexRuns: runs(100),
      scanRuns: scans(30),
    },
    {
      name: 'c_hot_address_1000',
      description: 'same address over 1,000 blocks',
      make: () => ({ ...range(1_000), addresses: [cAddr], topics: [] }),
      indexRuns: runs(50),
      scanRuns: scans(10),
    },
    {
      name: 'c_hot_address_10000',
      description: 'same address over 10,000 blocks',
      make: () => ({ ...range(10_000), addresses: [cAddr], topics: [] }),
      indexRuns: runs(20),
      scanRuns: scans(5),
    },
    {
      name: 'd_rare_address_full',
      description: 'rare tail contract (10-200 logs) over the full range',
      make: () => ({ ...full, addresses: [contractAddress(pick(rare))], topics: [] }),
      indexRuns: runs(100),
      scanRuns: scans(5),
    },
    {
      name: 'e_address_topic0_topic2_full',
      description: `hottest contract (${HOT_SHARES[0]}) + Transfer + topic2 = one holder, full range`,
      make: () => ({
        ...full,
        addresses: [contractAddress(0)],
        topics: [[TRANSFER], null, [holderTopic(pick(holders))]],
      }),
      indexRuns: runs(100),
      scanRuns: scans(5),
    },
    {
      name: 'f_topic0_1000',
      description: 'Transfer topic0 alone over 1,000 blocks',
      make: () => ({ ...range(1_000), addresses: [], topics: [[TRANSFER]] }),
      indexRuns: runs(20),
      scanRuns: scans(5),
    },
    {
      name: 'g_50_addresses_10000',
      description: '50 tail contracts at once over 10,000 blocks',
      make: () => ({
        ...range(10_000),
        addresses: Array.from({ length: 50 }, () => contractAddress(hot + rng.int(tail))),
        topics: [],
      }),
      indexRuns: runs(30),
      scanRuns: scans(5),
    },
    {
      name: 'h_cap_error_full',
      description: 'Transfer topic0 over the full range: more than 10,000 results (time to the error)',
      make: () => ({ ...full, addresses: [], topics: [[TRANSFER]] }),
      indexRuns: runs(50),
      scanRuns: scans(5),
    },
  ];
}

async function timeQueries(
  store: LevelChainStore,
  c: Case,
  queries: LogQuery[],
  how: 'index' | 'bloomScan',
): Promise<{ stats: Stats; answers: string[] }> {
  const ms: number[] = [];
  const results: number[] = [];
  const answers: string[] = [];
  let tooMany = 0;
  const t0 = performance.now();
  for (const q of queries) {
    const s = performance.now();
    let query = q;
    if (c.byHash) {
      // As eth_getLogs does for {blockHash}: resolve the hash, then query that one block.
      const hash = await store.canonicalHash(q.fromBlock);
      const n = hash && (await store.blockNumber(hash));
      if (n === undefined) throw new Error(`block ${q.fromBlock} not found by hash`);
      query = { ...q, fromBlock: n, toBlock: n };
    }
    // The index answers under the served 10 s deadline; the bloom-scan baseline is allowed to
    // run long (a full-range scan of a --scale 10 chain takes more than 10 s), since its answer
    // is needed to check the index's.
    const opts = { limit: MAX_RESULTS, deadline: Date.now() + (how === 'index' ? TIMEOUT_MS : BASELINE_TIMEOUT_MS) };
    const r = how === 'index' ? await store.logs(query, opts) : await store.logsByBloomScan(query, opts);
    ms.push(performance.now() - s);
    if (r.kind === 'ok') results.push(r.logs.length);
    else tooMany++;
    answers.push(answerKey(r));
  }
  return { stats: stats(ms, results, tooMany, performance.now() - t0), answers };
}

async function indexSize(datadir: string): Promise<BenchResult['index'] & { entries: number }> {
  const db = new Level<Uint8Array, Uint8Array>(join(datadir, 'chain'), {
    keyEncoding: 'view',
    valueEncoding: 'view',
    createIfMissing: false,
  });
  await db.open();
  try {
    const lo = Uint8Array.of(0x0d);
    const hi = Uint8Array.of(0x0e);
    let entries = 0;
    let bytes = 0;
    for await (const [k, v] of db.iterator({ gte: lo, lt: hi })) {
      entries++;
      bytes += k.length + v.length;
    }
    // `level` is classic-level on Node; its type only declares the portable subset.
    const native = db as unknown as {
      compactRange(a: Uint8Array, b: Uint8Array): Promise<void>;
      approximateSize(a: Uint8Array, b: Uint8Array): Promise<number>;
    };
    await native.compactRange(lo, hi);
    const disk = await native.approximateSize(lo, hi);
    return {
      entries,
      keyValueBytes: bytes,
      diskBytesAfterCompaction: disk,
      bytesPerValueKeyValue: 0,
      bytesPerValueDisk: 0,
    };
  } finally {
    await db.close();
  }
}

const cli = NODE_CLI;

/** Item 4: eth_getBlockByNumber latency over HTTP while 4 full-range getLogs run concurrently. */
async function concurrencyProbe(
  datadir: string,
  facts: ChainFacts,
  seconds: number,
  log: (s: string) => void,
): Promise<BenchResult['concurrency']> {
  if (!existsSync(join(root, 'packages', 'cli', 'dist', 'src', 'main.js'))) {
    log('concurrency probe skipped: packages/cli is not built (npx tsc -b packages/cli)');
    return null;
  }
  const key = createKeySync(cli, datadir, benchBudget('bench-getlogs'));
  const srv = spawn(process.execPath, [cli, 'serve', '--datadir', datadir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const port = await servePort(srv);
    const url = `http://127.0.0.1:${port}/v3/${key}`;
    const call = async (
      method: string,
      params: unknown[],
    ): Promise<{ result?: unknown; error?: { code: number; message: string } }> => {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return (await r.json()) as { result?: unknown; error?: { code: number; message: string } };
    };
    const rng = new Rng(5);
    const blockCalls = async (ms: number): Promise<number[]> => {
      const lat: number[] = [];
      const end = performance.now() + ms;
      while (performance.now() < end) {
        const s = performance.now();
        const r = await call('eth_getBlockByNumber', [qhex(1 + rng.int(facts.head)), false]);
        lat.push(performance.now() - s);
        if (r.error !== undefined || r.result === null)
          throw new Error(`eth_getBlockByNumber failed: ${JSON.stringify(r.error)}`);
      }
      return lat.sort((a, b) => a - b);
    };
    await blockCalls(Math.min(1000, seconds * 250)); // warm-up
    const idle = await blockCalls(Math.min(5000, seconds * 1000));
    const cases = queryCases(facts, true);
    const heavy = [
      'd_rare_address_full',
      'e_address_topic0_topic2_full',
      'h_cap_error_full',
      'g_50_addresses_10000',
    ].map((n) => cases.find((c) => c.name === n) as Case);
    const filterOf = (q: LogQuery): Record<string, unknown> => ({
      fromBlock: '0x0',
      toBlock: qhex(facts.head),
      address: q.addresses.map(hex),
      topics: q.topics.map((t) => (t === null ? null : t.map(hex))),
    });
    let stop = false;
    let completed = 0;
    let capErrors = 0;
    let otherErrors = 0;
    const logLat: number[] = [];
    const workers = heavy.map(async (c) => {
      while (!stop) {
        const s = performance.now();
        const r = await call('eth_getLogs', [filterOf(c.make(0))]);
        logLat.push(performance.now() - s);
        completed++;
        if (r.error !== undefined) {
          if (r.error.code === -32005 && r.error.message.includes('more than')) capErrors++;
          else otherErrors++;
        }
      }
    });
    const loaded = await blockCalls(seconds * 1000);
    stop = true;
    await Promise.all(workers);
    logLat.sort((a, b) => a - b);
    const summary = (xs: number[]) => ({
      calls: xs.length,
      p50: round(percentile(xs, 50)),
      p99: round(percentile(xs, 99)),
    });
    return {
      getLogsWorkers: heavy.length,
      getLogsCompleted: completed,
      getLogsCapErrors: capErrors,
      getLogsOtherErrors: otherErrors,
      getLogsP50: round(percentile(logLat, 50)),
      blockByNumberIdle: summary(idle),
      blockByNumberUnderLoad: summary(loaded),
    };
  } finally {
    srv.kill('SIGTERM');
    await new Promise((r) => srv.once('exit', r));
  }
}

function factsToJson(f: ChainFacts): string {
  return JSON.stringify({
    ...f,
    contractLogs: [...f.contractLogs],
    hotIncoming: [...f.hotIncoming],
    generated: undefined,
  });
}

function factsFromJson(text: string): ChainFacts {
  const o = JSON.parse(text) as ChainFacts & { contractLogs: number[]; hotIncoming: number[] };
  return { ...o, contractLogs: Uint32Array.from(o.contractLogs), hotIncoming: Uint32Array.from(o.hotIncoming) };
}

export interface LogChainOptions {
  spec: ChainSpec;
  /** Keep every generated log in the facts (the tests' brute force). */
  keepLogs?: boolean;
  /** Generate in this thread instead of a worker. */
  inlineGenerator?: boolean;
}

/** The log chain: the synthetic chain of synth.ts written into a datadir (or reused from it), with its facts. */
export const logChainBuilder: ChainBuilder<LogChainOptions, ChainFacts> = {
  name: 'logs',
  build: (o, datadir, log) => prepareChain(datadir, o.spec, log, o.keepLogs === true, o.inlineGenerator === true),
};

/** Builds (or reuses) the chain at `datadir`. */
async function prepareChain(
  datadir: string,
  spec: ChainSpec,
  log: (s: string) => void,
  keepLogs: boolean,
  inlineGenerator: boolean,
): Promise<ChainFacts> {
  const factsFile = join(datadir, 'getlogs-facts.json');
  if (existsSync(factsFile)) {
    const facts = factsFromJson(await readFile(factsFile, 'utf8'));
    if (facts.spec.blocks !== spec.blocks || facts.spec.seed !== spec.seed)
      throw new Error(`${datadir} holds a different synthetic chain (${facts.spec.name})`);
    log(`reusing ${datadir} (${facts.head} blocks, ${facts.logs} logs)`);
    return facts;
  }
  if (existsSync(join(datadir, 'chain')))
    throw new Error(`${datadir} already holds a chain that this bench did not finish building; use a fresh directory`);
  log(`building ${spec.name}: ${spec.blocks} blocks, ~${spec.blocks * spec.logsPerBlock} logs into ${datadir}`);
  const start = performance.now();
  let lastReport = start;
  const facts = await buildChain(datadir, spec, {
    keepLogs,
    inlineGenerator,
    onProgress: (n, logs) => {
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        log(`  block ${n}/${spec.blocks}, ${logs} logs, ${Math.round(logs / ((lastReport - start) / 1000))} logs/s`);
      }
    },
  });
  await writeFile(factsFile, factsToJson(facts));
  return facts;
}

export async function runGetLogsBench(opts: RunOptions): Promise<BenchResult> {
  const spec = chainSpec(opts.size, opts.scale);
  const tmp = opts.datadir === undefined ? await mkdtemp(join(tmpdir(), 'bench-getlogs-')) : undefined;
  const datadir = opts.datadir ?? join(tmp as string, 'data');
  try {
    const facts = await logChainBuilder.build(
      { spec, inlineGenerator: opts.inlineGenerator === true },
      datadir,
      opts.log,
    );
    const store = await LevelChainStore.open(datadir);
    const queries: Record<string, QueryFigures> = {};
    let mismatches = 0;
    try {
      for (const c of queryCases(facts, opts.size === 'smoke')) {
        const qs = Array.from({ length: c.indexRuns }, (_, i) => c.make(i));
        await timeQueries(store, c, qs.slice(0, 3), 'index'); // warm-up
        const idx = await timeQueries(store, c, qs, 'index');
        const scanQs = qs.slice(0, c.scanRuns);
        const scan = await timeQueries(store, c, scanQs, 'bloomScan');
        scan.answers.forEach((a, i) => {
          if (a !== idx.answers[i]) {
            mismatches++;
            opts.log(`MISMATCH ${c.name} run ${i}: index and bloom scan differ`);
          }
        });
        queries[c.name] = {
          description: c.description,
          index: idx.stats,
          bloomScan: scan.stats,
          ratioP50: round(scan.stats.p50 / Math.max(0.001, idx.stats.p50), 1),
        };
        opts.log(
          `${c.name.padEnd(30)} index p50 ${idx.stats.p50} ms p99 ${idx.stats.p99} ms (${idx.stats.meanResults} logs), bloom p50 ${scan.stats.p50} ms, x${queries[c.name]?.ratioP50}`,
        );
      }
    } finally {
      await store.close();
    }
    const index = await indexSize(datadir);
    index.bytesPerValueKeyValue = round(index.keyValueBytes / facts.indexedValues);
    index.bytesPerValueDisk = round(index.diskBytesAfterCompaction / facts.indexedValues);
    const concurrency = opts.server
      ? await concurrencyProbe(datadir, facts, opts.size === 'smoke' ? 1.5 : 20, opts.log)
      : null;
    const cpu = cpus()[0]?.model ?? 'unknown cpu';
    // Wall time of the build (generation overlaps writing); facts of chains built before
    // wallSeconds existed: generation and writing were sequential.
    const total = facts.wallSeconds ?? facts.generateSeconds + facts.writeSeconds;
    return {
      schema: 'getlogs-bench/1',
      date: new Date().toISOString(),
      machine: `${cpus().length} x ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, node ${process.version}`,
      size: spec.name,
      scale: opts.scale,
      chain: {
        blocks: facts.head,
        logs: facts.logs,
        txs: facts.txs,
        indexedValues: facts.indexedValues,
        tailContracts: spec.tailContracts,
        holders: spec.holders,
        hottestShare: round((facts.contractLogs[0] as number) / facts.logs, 3),
        transferShare: round(facts.transferLogs / facts.logs, 3),
      },
      ingest: {
        seconds: round(total, 1),
        writeSeconds: round(facts.writeSeconds, 1),
        generateSeconds: round(facts.generateSeconds, 1),
        logsPerSecWriter: Math.round(facts.logs / facts.writeSeconds),
        logsPerSecTotal: Math.round(facts.logs / total),
      },
      index,
      queries,
      mismatches,
      concurrency,
    };
  } finally {
    if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
  }
}

/** The human table. */
export function formatReport(r: BenchResult): string {
  const lines: string[] = [];
  lines.push(
    `getLogs bench: ${r.size} (${r.chain.blocks} blocks, ${r.chain.logs} logs, ${r.chain.indexedValues} indexed values), ${r.machine}`,
  );
  lines.push(
    `ingest: ${r.ingest.logsPerSecWriter} logs/s in the store writer (${r.ingest.writeSeconds} s), ${r.ingest.logsPerSecTotal} logs/s for the whole build with generation (${r.ingest.seconds} s wall; generator thread ${r.ingest.generateSeconds} s)`,
  );
  lines.push(
    `index: ${r.index.entries} chunks, ${r.index.keyValueBytes} key+value bytes (${r.index.bytesPerValueKeyValue} B/value), ${r.index.diskBytesAfterCompaction} bytes on disk after compaction (${r.index.bytesPerValueDisk} B/value)`,
  );
  lines.push('');
  lines.push(
    '| query | results | index p50 ms | index p99 ms | index q/s | bloom p50 ms | bloom p99 ms | bloom/index |',
  );
  lines.push('|---|---|---|---|---|---|---|---|');
  for (const [name, q] of Object.entries(r.queries)) {
    const res = q.index.tooMany > 0 ? `cap error (${q.index.tooMany}/${q.index.runs})` : String(q.index.meanResults);
    lines.push(
      `| ${name} | ${res} | ${q.index.p50} | ${q.index.p99} | ${q.index.qps} | ${q.bloomScan.p50} | ${q.bloomScan.p99} | ${q.ratioP50} |`,
    );
  }
  lines.push('');
  lines.push(`index vs bloom-scan mismatches: ${r.mismatches}`);
  const c = r.concurrency;
  if (c !== null) {
    lines.push(
      `server: eth_getBlockByNumber idle p50 ${c.blockByNumberIdle.p50} ms p99 ${c.blockByNumberIdle.p99} ms; with ${c.getLogsWorkers} full-range getLogs running p50 ${c.blockByNumberUnderLoad.p50} ms p99 ${c.blockByNumberUnderLoad.p99} ms (${c.blockByNumberUnderLoad.calls} calls; ${c.getLogsCompleted} getLogs done, ${c.getLogsCapErrors} cap errors, ${c.getLogsOtherErrors} other errors, p50 ${c.getLogsP50} ms)`,
    );
  }
  return lines.join('\n');
}
