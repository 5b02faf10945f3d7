// `npm run bench:trace-store -- --datadir <dir> [--samples 200] [--blocks 20] [--reexec 20]
// [--anvil-export <dir>]`: the
// server-side time of trace calls answered from the call frames and state diffs recorded at
// import, on a datadir an executing import wrote (the mainnet-shaped chain's: blocks of mainnet's
// size), through the rpc service's handle() one call at a time: each kind on a freshly opened store
// (cold: every key asked once), then the same calls again (warm). Before each cold pass, calls of
// the same kind on other keys (100 transactions, 5 blocks, 2 addresses, 50 search pages) run on a
// store opened and closed for them: the process has run and optimized the code, as a serving one
// has, while the measured store has read none of the keys. Beside them, the same
// transactions traced by re-execution (the store without its recorded rows), for the ratio. Every
// reply is checked: the top call frame's sender and gas used against the transaction and its
// receipt, the sender's nonce in each state diff, a block's
// traces against its transactions, trace_filter's entries against trace_block's of every block of
// the range filtered by the bench itself, ots_searchTransactionsBefore's against a scan of the
// range's transactions.
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRpcService } from '@chainnode/rpc';
import type { RpcServiceApi } from '@chainnode/rpc';
import { openChainStore } from '@chainnode/store';
import { withoutRecordedRows } from '@chainnode/testkit';
import { stopChild } from './src/children.js';
import { ROOT, arg } from './src/cli.js';
import { readChain, startReplayedAnvil } from './src/fixture-chain.js';
import { printRunRecord } from './src/run-record.js';
import { timeCalls } from './src/timed-calls.js';
import { Rng } from './src/synth.js';

printRunRecord('bench:trace-store');

const datadir = arg('datadir') ?? '';
if (datadir === '') throw new Error('--datadir <dir>: a datadir an executing import wrote');
const samples = Number(arg('samples', '200'));
const blockSamples = Number(arg('blocks', '20'));
const reexec = Number(arg('reexec', '20'));

type Json = Record<string, unknown>;
const body = (method: string, params: unknown[]): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const hex = (n: number): string => `0x${n.toString(16)}`;
const lower = (v: unknown): string => String(v).toLowerCase();

async function call<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const r = JSON.parse((await svc.handle(body(method, params))).body ?? '');
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

const pct = (xs: number[], p: number): string =>
  ([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] as number).toFixed(2);

/**
 * Times `bodies` cold (a fresh store) then warm (again); `check` sees each reply. `warmup`: calls
 * of the same kind on other keys, run first on a store of their own (closed before the timed one
 * opens), so the cold pass measures reads the store has not made, not code the process has not run.
 * The two passes' p50 / p90 and CPU p50, as table cells.
 */
async function measure(
  kind: string,
  bodies: string[],
  check: (i: number, result: unknown) => void,
  warmup: string[],
  recorded = true,
): Promise<string[]> {
  const open = async () => {
    const s = await openChainStore(datadir);
    return { s, svc: createRpcService(recorded ? s : withoutRecordedRows(s), { callTimeoutMs: 120_000 }) };
  };
  const first = await open();
  await timeCalls(first.svc, warmup, (_, reply) => {
    if (reply.error !== undefined) throw new Error(`${kind}, warm-up: ${JSON.stringify(reply.error)}`);
  });
  await first.s.close();
  const { s: store, svc } = await open();
  await svc.handle(body('eth_blockNumber', []));
  const line: string[] = [];
  for (const pass of ['cold', 'warm']) {
    const { times, cpu } = await timeCalls(svc, bodies, (i, reply) => {
      if (reply.error !== undefined) throw new Error(`${kind}: ${JSON.stringify(reply.error)}`);
      check(i, reply.result);
    });
    line.push(`${pass} ${pct(times, 0.5)} / ${pct(times, 0.9)} ms, CPU ${pct(cpu, 0.5)} ms`);
  }
  await store.close();
  return line;
}

/** measure(), printed as a row of the table. */
async function run(...args: Parameters<typeof measure>): Promise<void> {
  const [kind, bodies] = args;
  console.log(`| ${kind} | ${bodies.length} | ${(await measure(...args)).join(' | ')} |`);
}

/**
 * anvil's answers to `bodies` over loopback HTTP, one at a time, twice (each reply checked): the
 * two passes' p50 / p90 as table cells (the client's wall time: a round trip and the reply parsed).
 */
async function anvilPasses(
  url: string,
  kind: string,
  bodies: string[],
  check: (i: number, r: unknown) => void,
): Promise<string[]> {
  const line: string[] = [];
  for (const pass of ['first', 'again']) {
    const times: number[] = [];
    for (const [i, b] of bodies.entries()) {
      const t0 = performance.now();
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b });
      const reply = (await res.json()) as { result?: unknown; error?: unknown };
      times.push(performance.now() - t0);
      if (reply.error !== undefined) throw new Error(`anvil ${kind}: ${JSON.stringify(reply.error)}`);
      check(i, reply.result);
    }
    line.push(`${pass} ${pct(times, 0.5)} / ${pct(times, 0.9)} ms`);
  }
  return line;
}

// anvil beside (--anvil-export <the export this datadir was imported from>): after this node's
// runs, the export's transactions are replayed into it (its own headers, the same transactions),
// keeping the states of its last 128 blocks, and it answers the traces of the last 120 blocks this
// node answered (this node measured first, with anvil not started: its replay and its writes to
// its cache would share the machine).
const anvilExport = arg('anvil-export');

// The chain: its blocks with transactions, their transactions and receipts' facts.
const store = await openChainStore(datadir);
const svc = createRpcService(store);
const head = Number(await call<string>(svc, 'eth_blockNumber', []));
interface TxFact {
  hash: string;
  from: string;
  to: string | null;
  gasUsed: bigint;
  block: number;
  index: number;
}
const txs: TxFact[] = [];
const blocks: { number: number; txs: TxFact[] }[] = [];
for (let n = 1; n <= head; n++) {
  const receipts = await call<Json[]>(svc, 'eth_getBlockReceipts', [hex(n)]);
  const list = receipts.map((r, index) => ({
    hash: lower(r.transactionHash),
    from: lower(r.from),
    to: r.to === null ? null : lower(r.to),
    gasUsed: BigInt(r.gasUsed as string),
    block: n,
    index,
  }));
  if (list.length > 0) blocks.push({ number: n, txs: list });
  txs.push(...list);
}
await store.close();
console.log(
  `trace calls from recorded frames, ${datadir}: ${head} blocks, ${txs.length} transactions; load average ${loadavg()[0]?.toFixed(1)}\n`,
);
console.log('| call | calls | cold p50 / p90, CPU p50 | warm p50 / p90, CPU p50 |\n|---|---|---|---|');

const rng = new Rng(7);
const pick = <T>(xs: T[], n: number): T[] => {
  const out: T[] = [];
  for (let i = 0; i < n && xs.length > 0; i++) out.push(xs[rng.int(xs.length)] as T);
  return out;
};

const someTxs = pick(txs, samples);
// The warm-up's keys: other transactions, blocks and addresses, from blocks no timed call asks.
const other = new Rng(11);
const sampled = new Set(someTxs.map((t) => t.block));
const warmTxs: TxFact[] = [];
for (let tries = 0; warmTxs.length < 200 && tries < 10_000; tries++) {
  const t = txs[other.int(txs.length)] as TxFact;
  if (!sampled.has(t.block)) warmTxs.push(t);
}
const topFrame = (t: TxFact, f: Json): void => {
  if (lower(f.from) !== t.from) throw new Error(`${t.hash}: top frame from ${String(f.from)}`);
  if (BigInt(f.gasUsed as string) !== t.gasUsed) throw new Error(`${t.hash}: gasUsed ${String(f.gasUsed)}`);
};
await run(
  'debug_traceTransaction callTracer',
  someTxs.map((t) => body('debug_traceTransaction', [t.hash, { tracer: 'callTracer' }])),
  (i, r) => topFrame(someTxs[i] as TxFact, r as Json),
  warmTxs.slice(0, 100).map((t) => body('debug_traceTransaction', [t.hash, { tracer: 'callTracer' }])),
);
await run(
  'trace_transaction',
  someTxs.map((t) => body('trace_transaction', [t.hash])),
  (i, r) => {
    const t = someTxs[i] as TxFact;
    const first = (r as Json[])[0] as { action: Json; transactionHash: string };
    if (lower(first.action.from) !== t.from || first.transactionHash !== t.hash) throw new Error(`${t.hash}: trace`);
  },
  warmTxs.slice(0, 100).map((t) => body('trace_transaction', [t.hash])),
);
// State diffs recorded at import: the sender is in every transaction's diff, its nonce among what
// changed (geth leaves a zero nonce out of `pre`).
const senderInDiff = (t: TxFact, pre: Json | undefined, post: Json | undefined): void => {
  const at = (o: Json | undefined): Json | undefined =>
    Object.entries(o ?? {}).find(([k]) => k.toLowerCase() === t.from)?.[1] as Json | undefined;
  if (at(pre) === undefined || at(post)?.nonce === undefined)
    throw new Error(`${t.hash}: the sender's nonce is not in the diff`);
};
const DIFF_MODE = { tracer: 'prestateTracer', tracerConfig: { diffMode: true } };
await run(
  'debug_traceTransaction prestateTracer diffMode',
  someTxs.map((t) => body('debug_traceTransaction', [t.hash, DIFF_MODE])),
  (i, r) => senderInDiff(someTxs[i] as TxFact, (r as Json).pre as Json, (r as Json).post as Json),
  warmTxs.slice(0, 100).map((t) => body('debug_traceTransaction', [t.hash, DIFF_MODE])),
);
await run(
  'trace_replayTransaction stateDiff',
  someTxs.map((t) => body('trace_replayTransaction', [t.hash, ['stateDiff']])),
  (i, r) => {
    const t = someTxs[i] as TxFact;
    const nonce = ((r as Json).stateDiff as Json)?.[t.from] as Json | undefined;
    if ((nonce?.nonce as Json | undefined)?.['*'] === undefined)
      throw new Error(`${t.hash}: stateDiff without the sender's nonce`);
  },
  warmTxs.slice(0, 100).map((t) => body('trace_replayTransaction', [t.hash, ['stateDiff']])),
);
const someBlocks = pick(blocks, blockSamples);
const warmBlocks = blocks.filter((b) => !someBlocks.includes(b) && !sampled.has(b.number)).slice(0, 5);
await run(
  `debug_traceBlockByNumber callTracer (${Math.round(txs.length / Math.max(1, blocks.length))} txs a block)`,
  someBlocks.map((b) => body('debug_traceBlockByNumber', [hex(b.number), { tracer: 'callTracer' }])),
  (i, r) => {
    const b = someBlocks[i] as { txs: TxFact[] };
    const list = r as { txHash: string; result: Json }[];
    if (list.length !== b.txs.length) throw new Error('block: transaction count');
    for (const [j, x] of list.entries()) topFrame(b.txs[j] as TxFact, x.result);
  },
  warmBlocks.map((b) => body('debug_traceBlockByNumber', [hex(b.number), { tracer: 'callTracer' }])),
);
await run(
  'trace_block',
  someBlocks.map((b) => body('trace_block', [hex(b.number)])),
  (i, r) => {
    const b = someBlocks[i] as { txs: TxFact[] };
    const tops = (r as { traceAddress: number[]; transactionPosition?: number }[]).filter(
      (e) => e.traceAddress.length === 0 && e.transactionPosition !== undefined,
    );
    if (tops.length !== b.txs.length) throw new Error('trace_block: one top entry per transaction');
  },
  warmBlocks.map((b) => body('trace_block', [hex(b.number)])),
);

// trace_filter by one address over the whole range (at most 1,000 blocks), five addresses of each
// kind (a recipient of two transactions, one around the 90th percentile of recipients, a sender of
// three or more); each answer checked against trace_block of every block of the range filtered here.
const first = Math.max(1, head - 999);
const counts = new Map<string, number>();
const sent = new Map<string, number>();
for (const t of txs) {
  if (t.block < first) continue;
  if (t.to !== null) counts.set(t.to, (counts.get(t.to) ?? 0) + 1);
  sent.set(t.from, (sent.get(t.from) ?? 0) + 1);
}
const byCount = [...counts.entries()].sort((a, b) => a[1] - b[1]);
const at90 = Math.floor(byCount.length * 0.9);
const queries: [string, 'fromAddress' | 'toAddress', string[], string[]][] = [
  ['toAddress, a recipient of 2 transactions', 'toAddress', byCount.filter(([, c]) => c === 2).map(([a]) => a)],
  ['toAddress, a recipient around the 90th percentile', 'toAddress', byCount.slice(at90, at90 + 5).map(([a]) => a)],
  [
    'fromAddress, a sender of 3 or more transactions',
    'fromAddress',
    [...sent].filter(([, c]) => c >= 3).map(([a]) => a),
  ],
].map(
  ([name, side, as]) =>
    [name, side, (as as string[]).slice(0, 5), (as as string[]).slice(5, 7)] as [
      string,
      'fromAddress' | 'toAddress',
      string[],
      string[],
    ],
);
const check = await openChainStore(datadir);
const full = createRpcService(check);
const expected = queries.map(([, , as]) => as.map(() => 0));
for (let n = first; n <= head; n++)
  for (const e of await call<{ action: Json; result: Json | null; type: string }[]>(full, 'trace_block', [hex(n)]))
    queries.forEach(([, side, as], q) => {
      const from = e.action.from ?? e.action.address;
      const to = e.type === 'create' ? (e.result as Json | null)?.address : (e.action.to ?? e.action.refundAddress);
      const k = as.indexOf(lower(side === 'fromAddress' ? from : to));
      if (k >= 0) (expected[q] as number[])[k] = ((expected[q] as number[])[k] as number) + 1;
    });
await check.close();
const filterBody = (side: string, a: string): string =>
  body('trace_filter', [{ fromBlock: hex(first), toBlock: hex(head), [side]: [a] }]);
for (const [q, [name, side, addresses, warmAddresses]] of queries.entries())
  await run(
    `trace_filter ${name}, ${head - first + 1} blocks`,
    addresses.map((a) => filterBody(side, a)),
    (i, r) => {
      const n = (r as unknown[]).length;
      const want = expected[q]?.[i];
      if (n !== want) throw new Error(`trace_filter ${addresses[i]}: ${n} entries, trace_block has ${want}`);
    },
    warmAddresses.map((a) => filterBody(side, a)),
  );

// ots_searchTransactionsBefore, a page of 25, for senders of the sampled transactions.
const senders = [...new Set(someTxs.map((t) => t.from))].slice(0, 50);
await run(
  'ots_searchTransactionsBefore page of 25',
  senders.map((a) => body('ots_searchTransactionsBefore', [a, 0, 25])),
  (i, r) => {
    const a = senders[i] as string;
    const page = (r as { txs: Json[] }).txs;
    const mine = txs.filter((t) => t.from === a || t.to === a);
    // The index also holds log emitters: a page holds at least the transactions it sent or received.
    if (page.length < Math.min(25, mine.length))
      throw new Error(`ots_searchTransactionsBefore ${a}: ${page.length} of ${mine.length}`);
  },
  [...new Set(warmTxs.map((t) => t.from))]
    .filter((a) => !senders.includes(a))
    .slice(0, 50)
    .map((a) => body('ots_searchTransactionsBefore', [a, 0, 25])),
);

/**
 * The last 120 blocks' calls anvil is asked too, and this node's answers to them, measured here:
 * before the re-executed traces, whose garbage the collector would still be marking.
 */
async function anvilWindow(exportDir: string) {
  const anvilChain = readChain(join(exportDir, 'chain.rlp'));
  const last = anvilChain.at(-1)?.number;
  if (last !== head) throw new Error(`--anvil-export: its chain ends at ${last}, the datadir at ${head}`);
  const lo = head - 120;
  const winTxs = pick(
    txs.filter((t) => t.block > lo),
    50,
  );
  const winBlocks = pick(
    blocks.filter((b) => b.number > lo),
    5,
  );
  const exported = new Set(anvilChain.flatMap((b) => b.txs.map((t) => t.hash)));
  for (const t of winTxs) if (!exported.has(t.hash)) throw new Error(`--anvil-export: ${t.hash} is not in its chain`);
  // anvil's top frame reports the block's cumulative gas as gasUsed (anvil-deviations.md): its
  // frames are checked by sender only.
  const sender = (t: TxFact, f: Json): void => {
    if (lower(f.from) !== t.from) throw new Error(`${t.hash}: top frame from ${String(f.from)}`);
  };
  const blockCheck =
    (frame: (t: TxFact, f: Json) => void) =>
    (i: number, r: unknown): void => {
      const b = winBlocks[i] as { txs: TxFact[] };
      const list = r as { result: Json }[];
      if (list.length !== b.txs.length) throw new Error('block: transaction count');
      for (const [j, x] of list.entries()) frame(b.txs[j] as TxFact, x.result);
    };
  type Check = (i: number, r: unknown) => void;
  const kinds: [string, string[], Check, Check, string[]][] = [
    [
      'debug_traceTransaction callTracer',
      winTxs.map((t) => body('debug_traceTransaction', [t.hash, { tracer: 'callTracer' }])),
      (i, r) => topFrame(winTxs[i] as TxFact, r as Json),
      (i, r) => sender(winTxs[i] as TxFact, r as Json),
      warmTxs.slice(0, 100).map((t) => body('debug_traceTransaction', [t.hash, { tracer: 'callTracer' }])),
    ],
    [
      'debug_traceTransaction prestateTracer diffMode',
      winTxs.map((t) => body('debug_traceTransaction', [t.hash, DIFF_MODE])),
      (i, r) => senderInDiff(winTxs[i] as TxFact, (r as Json).pre as Json, (r as Json).post as Json),
      (i, r) => senderInDiff(winTxs[i] as TxFact, (r as Json).pre as Json, (r as Json).post as Json),
      warmTxs.slice(0, 100).map((t) => body('debug_traceTransaction', [t.hash, DIFF_MODE])),
    ],
    [
      'debug_traceBlockByNumber callTracer',
      winBlocks.map((b) => body('debug_traceBlockByNumber', [hex(b.number), { tracer: 'callTracer' }])),
      blockCheck(topFrame),
      blockCheck(sender),
      warmBlocks.map((b) => body('debug_traceBlockByNumber', [hex(b.number), { tracer: 'callTracer' }])),
    ],
  ];
  const ours: string[][] = [];
  for (const [kind, bodies, check, , warmup] of kinds) ours.push(await measure(kind, bodies, check, warmup));
  return { anvilChain, kinds, ours };
}
const anvilCalls = anvilExport === undefined ? undefined : await anvilWindow(anvilExport);

// The same transactions by re-execution, for the ratio.
const slow = someTxs.slice(0, reexec);
await run(
  'debug_traceTransaction callTracer, re-executed',
  slow.map((t) => body('debug_traceTransaction', [t.hash, { tracer: 'callTracer' }])),
  (i, r) => topFrame(slow[i] as TxFact, r as Json),
  warmTxs.slice(0, 3).map((t) => body('debug_traceTransaction', [t.hash, { tracer: 'callTracer' }])),
  false,
);
await run(
  'debug_traceTransaction prestateTracer diffMode, re-executed',
  slow.map((t) => body('debug_traceTransaction', [t.hash, DIFF_MODE])),
  (i, r) => senderInDiff(slow[i] as TxFact, (r as Json).pre as Json, (r as Json).post as Json),
  warmTxs.slice(0, 3).map((t) => body('debug_traceTransaction', [t.hash, DIFF_MODE])),
  false,
);

if (anvilExport !== undefined && anvilCalls !== undefined) {
  const { anvilChain, kinds, ours } = anvilCalls;
  const anvilDir = await mkdtemp(join(tmpdir(), 'trace-store-anvil-'));
  const anvil = await startReplayedAnvil({
    root: ROOT,
    genesisPath: join(anvilExport, 'genesis.json'),
    cacheDir: anvilDir,
    history: 128,
    blocks: anvilChain,
    log: (line) => console.log(`\nbench:trace-store: ${line}`),
  });
  try {
    console.log(
      `\nThe last 120 blocks, where anvil 1.7.1 can answer (it keeps the states of its last 128; it re-executes each trace): this node in process, measured before anvil started; anvil over loopback HTTP (a round trip and the reply parsed); load average ${loadavg()[0]?.toFixed(1)}\n`,
    );
    console.log('| call | calls | this node | | anvil | |\n|---|---|---|---|---|---|');
    for (const [k, [kind, bodies, , check]] of kinds.entries()) {
      // A refusal or a reply that fails the check is printed in its row; the other kinds still run.
      const theirs = await anvilPasses(anvil.url, kind, bodies, check).catch((e: Error) => [
        `anvil: ${e.message.slice(0, 200)}`,
        '',
      ]);
      console.log(`| ${kind} | ${bodies.length} | ${(ours[k] as string[]).join(' | ')} | ${theirs.join(' | ')} |`);
    }
  } finally {
    await stopChild(anvil.proc);
    await rm(anvilDir, { recursive: true, force: true });
  }
}
console.log(`\nload average at the end ${loadavg()[0]?.toFixed(1)}`);
