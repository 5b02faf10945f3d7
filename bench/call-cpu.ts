// `node bench/dist/call-cpu.js --datadir <copy of a datadir> [--calls 3000] [--warmup 1000] [--at latest|recent] [--contracts 4] [--selector <4 bytes hex>] [--pause-ms <ms>] [--exec <index.js> [--pair]]`:
// CPU time per eth_call of packages/exec's Executor (the engine alone: no HTTP, no JSON, no
// answer cache), every call a body never asked before. The calls are the chain's own: the
// transactions to the `--contracts` most called contracts of its last 64 blocks, replayed by their senders at the head
// (`--at latest`) or at a random one of the last 64 blocks (`--at recent`), the last word of the
// calldata replaced by a counter so that no two calls are alike (a `balanceOf(holder)` then reads
// a slot never read before, as a never-repeating call does). `--selector 70a08231`: each call's
// calldata is that selector and one word instead (a token's `balanceOf` of an address never read). A warm-up of other calls first (the
// JIT, the store's node caches of the upper trie), then the measured pass: process CPU (user +
// system) over the pass / calls. Prints the outcome kinds and a digest of every answer, so a
// before/after pair (run each build on its own copy of the datadir, back to back) also shows the
// answers did not change. With `node --cpu-prof bench/dist/call-cpu.js …` the profile is of the
// same pass. `--pause-ms 1`: the thread idles that long before each measured call, as a server's
// does between the calls of one client (the timer's own CPU, measured alone in the same run, is
// subtracted): what a call costs when it meets caches the rest of the machine has used meanwhile.
// Never run on a benchmark datadir itself: LevelDB writes to the directory it opens.
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { openChainStore } from '@chainnode/store';
import { pathToFileURL } from 'node:url';
import { Executor as BuiltExecutor } from '@chainnode/exec';
import type { CallArgs, CallOutcome } from '@chainnode/exec';
import type { HeaderRecord } from '@chainnode/core';
import { arg } from './src/cli.js';
import { medianOf } from './src/anvil.js';
import { resolve } from 'node:path';

interface Template {
  from: Uint8Array;
  to: Uint8Array;
  input: Uint8Array;
}

/** The transactions to the `contracts` most called contracts (code at the head) of the last `depth` blocks. */
async function templates(
  store: Awaited<ReturnType<typeof openChainStore>>,
  head: HeaderRecord,
  depth: number,
  contracts: number,
) {
  const reader = store.stateReader();
  const out: Template[] = [];
  for (let n = head.number; n > 0n && n > head.number - BigInt(depth); n--) {
    const block = await store.block((await store.canonicalHash(n)) as Uint8Array);
    for (const tx of block?.transactions ?? []) {
      if (tx.to === null || tx.input.length < 4) continue;
      const a = reader.account(head.stateRoot, tx.to);
      if (a === null || store.stateReader().code(a.codeHash)?.length === 0) continue;
      out.push({ from: tx.from, to: tx.to, input: tx.input });
    }
  }
  const key = (t: Template): string => Buffer.from(t.to).toString('hex');
  const count = new Map<string, number>();
  for (const t of out) count.set(key(t), (count.get(key(t)) ?? 0) + 1);
  const top = new Set(
    [...count]
      .sort((a, b) => b[1] - a[1])
      .slice(0, contracts)
      .map(([k]) => k),
  );
  return out.filter((t) => top.has(key(t)));
}

/** Call `i`: template `i mod n` with its last word (or a new one) set to `i + salt`. */
function callOf(t: Template[], i: number, salt: number): CallArgs {
  const tpl = t[i % t.length] as Template;
  const words = Math.max(1, Math.floor((tpl.input.length - 4) / 32));
  const input = new Uint8Array(4 + 32 * words);
  input.set(tpl.input.subarray(0, Math.min(tpl.input.length, input.length)));
  const v = BigInt(i + salt);
  for (let b = 0; b < 8; b++) input[input.length - 1 - b] = Number((v >> BigInt(8 * b)) & 0xffn);
  // A mapping key at the end reads as an address: keep it 20 bytes wide, varied in its low bytes.
  input[input.length - 20] = 0x5a;
  return { from: tpl.from, to: tpl.to, input, gas: 1_000_000n };
}

interface Caller {
  call(header: HeaderRecord, args: CallArgs): Promise<CallOutcome>;
}

/** A line per outcome, for the answers' digest. */
const outcomeLine = (o: CallOutcome): string =>
  `${o.kind} ${o.gasUsed} ${o.error ?? ''} ${Buffer.from(o.returnValue).toString('hex')}\n`;

/**
 * `--exec <other build> --pair`: both builds in this process on one store, in alternating batches
 * of BATCH never-asked calls each (the order of the two flipped every round), so that what the
 * machine does meanwhile falls on both alike; per build the median of its batches' CPU per call,
 * and the median of each round's ratio (other / this tree's build). Then 200 calls asked of both,
 * their answers compared (the timed batches ask each build other calls: a call asked twice would
 * find the store's caches warm the second time).
 */
async function paired(
  a: Caller,
  b: Caller,
  o: { t: Template[]; calls: number; warmup: number; headerFor: () => HeaderRecord },
): Promise<void> {
  const BATCH = 250;
  let next = 0;
  const batch = async (e: Caller, n: number): Promise<number> => {
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await e.call(o.headerFor(), callOf(o.t, next++, 0));
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / n;
  };
  await batch(a, o.warmup);
  await batch(b, o.warmup);
  const ua: number[] = [];
  const ub: number[] = [];
  const ratio: number[] = [];
  for (let r = 0; r < Math.ceil(o.calls / BATCH); r++) {
    let x: number;
    let y: number;
    if (r % 2 === 0) {
      x = await batch(a, BATCH);
      y = await batch(b, BATCH);
    } else {
      y = await batch(b, BATCH);
      x = await batch(a, BATCH);
    }
    ua.push(x);
    ub.push(y);
    ratio.push(y / x);
  }
  let differ = 0;
  const da = createHash('sha256');
  for (let i = 0; i < 200; i++) {
    const args = callOf(o.t, next++, 0);
    const header = o.headerFor();
    const [ra, rb] = [outcomeLine(await a.call(header, args)), outcomeLine(await b.call(header, args))];
    if (ra !== rb) differ++;
    da.update(ra);
  }
  console.log(
    JSON.stringify({
      rounds: ua.length,
      batch: BATCH,
      thisBuildUsPerCall: Math.round(medianOf(ua)),
      otherBuildUsPerCall: Math.round(medianOf(ub)),
      otherOverThis: Number(medianOf(ratio).toFixed(3)),
      ratioRange: [Number(Math.min(...ratio).toFixed(3)), Number(Math.max(...ratio).toFixed(3))],
      answersCompared: 200,
      answersDiffering: differ,
      digest: da.digest('hex').slice(0, 16),
      load: loadavg()[0]?.toFixed(2),
    }),
  );
}

async function main(): Promise<void> {
  const datadir = arg('datadir');
  if (datadir === undefined) throw new Error('--datadir <dir>: a copy of a datadir');
  const calls = Number(arg('calls', '3000'));
  const warmup = Number(arg('warmup', '1000'));
  const at = arg('at', 'latest') as 'latest' | 'recent';
  const contracts = Number(arg('contracts', '4'));
  const pauseMs = Number(arg('pause-ms', '0'));
  if (!Number.isFinite(pauseMs) || pauseMs < 0) throw new Error('--pause-ms <ms>: milliseconds, 0 or more');
  const store = await openChainStore(datadir);
  try {
    const headNo = (await store.head()).number;
    const headerAt = async (n: bigint) =>
      (await store.header((await store.canonicalHash(n)) as Uint8Array)) as HeaderRecord;
    const head = await headerAt(headNo);
    const found = await templates(store, head, 64, contracts);
    if (found.length === 0) throw new Error('no transaction to a contract in the last 64 blocks');
    const selector = arg('selector');
    const t =
      selector === undefined
        ? found
        : found.map((x) => ({
            ...x,
            input: Uint8Array.from([...Buffer.from(selector, 'hex'), ...new Uint8Array(32)]),
          }));
    const recent: HeaderRecord[] = [];
    for (let n = headNo; n > 0n && recent.length < 64; n--) recent.push(await headerAt(n));
    // `--exec <dist/src/index.js of another build>`: that build's Executor (a before/after pair in one tree).
    const other = arg('exec');
    const Executor: typeof BuiltExecutor =
      other === undefined ? BuiltExecutor : (await import(pathToFileURL(resolve(other)).href)).Executor;
    const executor = new Executor(store.info(), store.stateReader(), (n) => store.canonicalHash(n));
    let seed = 12345;
    const rnd = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
      return seed % n;
    };
    const headerFor = (): HeaderRecord => (at === 'latest' ? head : (recent[rnd(recent.length)] as HeaderRecord));
    if (other !== undefined && process.argv.includes('--pair')) {
      const built = new BuiltExecutor(store.info(), store.stateReader(), (n) => store.canonicalHash(n));
      await paired(built, executor, { t, calls, warmup, headerFor });
      return;
    }
    for (let i = 0; i < warmup; i++) await executor.call(headerFor(), callOf(t, i, 1 << 30));
    const digest = createHash('sha256');
    const kinds: Record<string, number> = {};
    const outcomes: CallOutcome[] = [];
    const pause = (): Promise<void> => new Promise((r) => setTimeout(r, pauseMs));
    // The pauses' own CPU (a timer and the event loop's wait), measured alone, to subtract.
    let pauseUs = 0;
    if (pauseMs > 0) {
      const p0 = process.cpuUsage();
      for (let i = 0; i < Math.min(calls, 2000); i++) await pause();
      const p = process.cpuUsage(p0);
      pauseUs = (p.user + p.system) / Math.min(calls, 2000);
    }
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    for (let i = 0; i < calls; i++) {
      if (pauseMs > 0) await pause();
      outcomes.push(await executor.call(headerFor(), callOf(t, i, 0)));
    }
    const wall = performance.now() - w0;
    const cpu = process.cpuUsage(c0);
    for (const o of outcomes) {
      kinds[o.kind] = (kinds[o.kind] ?? 0) + 1;
      digest.update(outcomeLine(o));
    }
    const us = (cpu.user + cpu.system) / calls - pauseUs;
    console.log(
      JSON.stringify({
        at,
        calls,
        // With pauses, wallUsPerCall includes them; cpuUsPerCall does not (pauseOnlyUs subtracted).
        ...(pauseMs > 0 ? { pauseMs, pauseOnlyUs: Math.round(pauseUs) } : {}),
        templates: t.length,
        cpuUsPerCall: Math.round(us),
        wallUsPerCall: Math.round((wall * 1000) / calls),
        kinds,
        digest: digest.digest('hex').slice(0, 16),
        load: loadavg()[0]?.toFixed(2),
      }),
    );
  } finally {
    await store.close();
  }
}

await main();
