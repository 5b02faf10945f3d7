// `npm run bench:http -- --varied`: real-traffic shaped load. For each request mix, thousands of
// distinct request bodies drawn across the WHOLE chain, sent by the raw closed-loop client
// (bench/src/load.ts, one body after the other over 64 keep-alive sockets) to this node
// (`node-cli serve`) and to anvil 1.7.1 (node_modules/.bin/anvil) holding a chain of the same
// shape, in the same run. Two chains:
// - `--chain scaled` (default): a chain larger than every cache, built here with anvil as the
//   block builder and imported into chainnode from it (varied-scaled.ts): the same blocks on both.
// - `--chain fixtures`: the bundled 1,600-block fixture chain, its transactions replayed into
//   anvil (varied-fixtures.ts). Smaller than the caches: most mixes measure caches after warm-up.
//
// Per mix and server:
// 1. cold pass: every body of the mix sent once (64 connections), the digest (XXH3-128) of each answer kept;
//    its req/s and latencies are the "cold" columns (first time this server process sees these
//    bodies; earlier mixes may have warmed shared data, e.g. for the mixed workload);
// 2. check: each distinct body is asked again and its reply checked against an answer the bench
//    computes itself (the chain module's check), the two servers' normalised replies compared with
//    each other, and the reply's digest compared with the cold pass's (so the cold answers are checked
//    too);
// 3. warm load: 2 s warm-up + --duration s, bodies in turn, each answer's digest compared with its
//    body's checked digest; anything else is counted (wrong replies, -32005 sheds among them,
//    non-200s, socket errors).
// The client keeps a 16-byte digest per body and server, never reply texts (memory stays bounded
// with 20,000 bodies of up to ~1 MB each); the client CPU spent hashing answers is measured and
// printed per case.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupCpuMs, onExit, runChild, spawnChild, stopChild, waitRpc } from './children.js';
import { benchBudget, createKey } from './cli.js';
import { DIGEST, digest } from './load.js';
import { rawLoadVariedThread, rawOnceThread } from './load-thread.js';
import type { OnceResult, VariedResult } from './load.js';
import { fixtureBuilder, mainnetBuilder } from './varied-fixtures.js';
import { scaledBuilder } from './varied-scaled.js';
import { builderFrom } from './varied-mix.js';
import type { Call, ChainBuilder, ChainUnderTest, Mix, Reply, ServerName } from './varied-mix.js';
import { settleLoad } from './settle.js';
import { freePort } from '@chainnode/testkit';

export interface VariedOptions {
  root: string;
  cli: string;
  chain: 'scaled' | 'fixtures' | 'mainnet';
  /** With chain 'mainnet': the export written by `npm run bench:chain` (manifest.json names its contracts). */
  from?: string;
  /** Scaled chain length. */
  blocks: number;
  /** States anvil keeps on the scaled chain (--prune-history). */
  anvilHistory: number;
  /** eth_getProof bodies per mix sent to anvil on the scaled chain. */
  anvilProofSample: number;
  datadir?: string;
  seconds: number;
  connections: number;
  bodies: number;
  /** Bodies of the getLogs mix (its replies are up to ~1 MB). */
  logBodies: number;
  /** Only these mixes (labels' first word), or all. */
  only?: string[];
  /** Each server's run of a mix starts once the 1-minute load is below this (bench/src/settle.ts). */
  settle?: number;
  /** Build the scaled chain in this directory and keep it; reuse it when it is there (with noAnvil). */
  keep?: string;
  /** Skip anvil (quick iterations on this node only). */
  noAnvil?: boolean;
  /** Extra args for `serve`. */
  serveArgs?: string[];
  /** The command line printed with the table (default: bench:http's). */
  command?: string;
  /** A chain built by the caller's builder instead of `chain` (in the run's temporary directory). */
  builder?: ChainBuilder<VariedOptions>;
  /**
   * Runs once the node serves, before the mixes (e.g. a cold measurement); its lines are printed
   * with the table. `serverCpuMs`: the CPU time (user + system, ms) of this node's process group
   * so far; undefined where it cannot be read.
   */
  beforeMixes?: (url: string, serverCpuMs: () => number | undefined) => Promise<string[]>;
}

interface Target {
  name: ServerName;
  port: number;
  path: string;
  /** Checked reply digest per body. */
  digests: Map<string, Buffer>;
  unsupported: Set<string>;
  /** Process group of the server (its CPU time is read around each warm run). */
  pgid?: number;
}

/**
 * Asks each distinct call of `calls` (not yet checked on `t`) again, checks it, compares it with
 * the other server's normalised reply (`facts`) and with the cold pass's digest.
 */
async function checkReplies(
  chain: ChainUnderTest,
  t: Target,
  calls: Call[],
  cold: OnceResult | undefined,
  facts: Map<string, Buffer>,
  peer: Target | undefined,
): Promise<number> {
  const url = `http://127.0.0.1:${t.port}${t.path}`;
  const coldOf = new Map<string, Buffer>();
  if (cold !== undefined)
    calls.forEach((c, i) => {
      coldOf.set(c.body, cold.digests.subarray(i * DIGEST, i * DIGEST + DIGEST));
    });
  // Bodies checked in an earlier mix: the cold answer must be the checked one.
  for (const [body, cd] of coldOf) {
    const d = t.digests.get(body);
    if (d !== undefined && !d.equals(cd))
      throw new Error(`${t.name}: ${body}: the cold pass got another answer than the checked one`);
  }
  const todo = [
    ...new Map(
      calls.filter((c) => !t.digests.has(c.body) && !t.unsupported.has(c.body)).map((c) => [c.body, c]),
    ).values(),
  ];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < todo.length) {
      const c = todo[next++] as Call;
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: c.body });
      const buf = Buffer.from(await r.arrayBuffer());
      if (r.status !== 200) throw new Error(`${t.name}: ${c.body} -> HTTP ${r.status}`);
      const d = digest(buf);
      const reply = JSON.parse(buf.toString('utf8')) as Reply;
      const verdict = await chain.check(c, reply, t.name);
      if (verdict === 'unsupported') {
        t.unsupported.add(c.body);
        continue;
      }
      const cd = coldOf.get(c.body);
      if (cd !== undefined && !cd.equals(d))
        throw new Error(
          `${t.name}: ${c.body}: the cold pass got another answer than the check (${buf.toString('utf8').slice(0, 200)})`,
        );
      const n = chain.normalise(c, reply, t.name);
      if (n !== undefined) {
        const nd = digest(Buffer.from(n));
        const other = facts.get(c.body);
        if (other === undefined) facts.set(c.body, nd);
        else if (!other.equals(nd))
          throw new Error(
            `${t.name}: ${c.body}: the two servers' normalised replies differ: ${await diff(chain, c, n, peer)}`,
          );
      }
      t.digests.set(c.body, d);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return todo.length;
}

/** Where `mine` (normalised) differs from the peer's normalised reply to the same call (asked again). */
async function diff(chain: ChainUnderTest, c: Call, mine: string, peer: Target | undefined): Promise<string> {
  if (peer === undefined) return mine.slice(0, 300);
  const r = await fetch(`http://127.0.0.1:${peer.port}${peer.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: c.body,
  });
  const theirs = chain.normalise(c, (await r.json()) as Reply, peer.name) ?? '';
  const flat = (s: string): Map<string, string> => {
    const out = new Map<string, string>();
    const walk = (v: unknown, path: string): void => {
      if (v !== null && typeof v === 'object')
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) walk(x, `${path}.${k}`);
      else out.set(path, JSON.stringify(v));
    };
    try {
      walk(JSON.parse(s), '');
    } catch {
      out.set('', s);
    }
    return out;
  };
  const a = flat(mine);
  const b = flat(theirs);
  const d: string[] = [];
  for (const k of new Set([...a.keys(), ...b.keys()]))
    if (a.get(k) !== b.get(k)) d.push(`${k}: ${a.get(k) ?? '(absent)'} vs ${peer.name} ${b.get(k) ?? '(absent)'}`);
  return d.slice(0, 12).join('; ');
}

/** The chains of --chain, each built from the run's options. */
const CHAINS: Record<VariedOptions['chain'], ChainBuilder<VariedOptions>> = {
  scaled: builderFrom(scaledBuilder, (o) => ({
    root: o.root,
    cli: o.cli,
    blocks: o.blocks,
    bodies: o.bodies,
    logBodies: o.logBodies,
    anvilHistory: o.anvilHistory,
    anvilProofSample: o.anvilProofSample,
    noAnvil: o.noAnvil === true,
    keep: o.keep !== undefined,
  })),
  fixtures: builderFrom(fixtureBuilder, (o) => ({
    root: o.root,
    cli: o.cli,
    ...(o.datadir !== undefined ? { datadir: o.datadir } : {}),
    bodies: o.bodies,
    noAnvil: o.noAnvil === true,
  })),
  mainnet: builderFrom(mainnetBuilder, (o) => ({
    root: o.root,
    ...(o.from !== undefined ? { from: o.from } : {}),
    cli: o.cli,
    ...(o.datadir !== undefined ? { datadir: o.datadir } : {}),
    bodies: o.bodies,
    noAnvil: o.noAnvil === true,
    anvilHistory: o.anvilHistory,
    anvilProofSample: o.anvilProofSample,
  })),
};

/** The chain the run measures: the caller's builder, or the one --chain names. */
function prepareChain(o: VariedOptions, tmp: string, log: (line: string) => void): Promise<ChainUnderTest> {
  return (o.builder ?? CHAINS[o.chain]).build(o, tmp, log);
}

/** This node serving the chain's datadir, and the servers measured: it, and anvil when the chain has one. */
async function startTargets(o: VariedOptions, chain: ChainUnderTest) {
  const key = await createKey(o.cli, chain.datadir, benchBudget('bench'));
  const ourPort = await freePort();
  const srv = spawnChild(
    process.execPath,
    [o.cli, 'serve', '--datadir', chain.datadir, '--port', String(ourPort), ...(o.serveArgs ?? [])],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const url = `http://127.0.0.1:${ourPort}/v3/${key}`;
  const target = (name: ServerName, port: number, path: string, pgid: number | undefined): Target => ({
    name,
    port,
    path,
    digests: new Map(),
    unsupported: new Set(),
    ...(pgid !== undefined ? { pgid } : {}),
  });
  const targets: Target[] = [target('chainnode', ourPort, `/v3/${key}`, srv.pid)];
  if (chain.anvilUrl !== undefined) {
    const u = new URL(chain.anvilUrl);
    targets.push(target('anvil', Number(u.port), u.pathname, chain.anvilPgid));
  }
  return { srv, url, targets };
}

/** One mix on one server: the cold pass, the check, the warm load; undefined when it answers no body. */
interface TargetRun {
  res: VariedResult | undefined;
  cpu: { usPerReq: number; coreShare: number } | undefined;
  cold: OnceResult | undefined;
  /** Distinct bodies it answered, when fewer than the mix's (else 0). */
  subset: number;
}

/** What the mixes measured, for the report. */
interface Measured {
  rows: string[];
  coldRows: string[];
  /** 1-min load average at the start of each pass. */
  loads: number[];
  /** Client CPU ms per second of load spent checking digests. */
  checkCost: number[];
}

const NOT_ANSWERED: TargetRun = { res: undefined, cpu: undefined, cold: undefined, subset: 0 };

async function runTarget(
  o: VariedOptions,
  chain: ChainUnderTest,
  m: Mix,
  t: Target,
  targets: Target[],
  facts: Map<string, Buffer>,
  acc: Measured,
  log: (line: string) => void,
): Promise<TargetRun> {
  // Bodies the chain knows anvil refuses (or is too slow for) are not sent to it.
  const skips = t.name === 'anvil' && chain.anvilSkips !== undefined ? chain.anvilSkips(m.calls) : new Set<string>();
  for (const b of skips) t.unsupported.add(b);
  const calls = t.unsupported.size === 0 ? m.calls : m.calls.filter((c) => !t.unsupported.has(c.body));
  const bodies = calls.map((c) => c.body);
  if (bodies.length === 0) {
    log(`varied: ${m.label}: ${t.name}: no body it answers`);
    return NOT_ANSWERED;
  }
  const at = { host: '127.0.0.1', port: t.port, path: t.path, connections: o.connections };
  if (o.settle !== undefined) await settleLoad(o.settle, log);
  acc.loads.push(loadavg()[0] as number);
  const cold = await rawOnceThread({ ...at, bodies, seconds: 0 });
  if (cold.bad + cold.errors > 0)
    throw new Error(`${t.name}: ${m.label}: cold pass: ${cold.bad} non-200, ${cold.errors} socket errors`);
  const tc = Date.now();
  const checked = await checkReplies(
    chain,
    t,
    calls,
    cold,
    facts,
    targets.find((x) => x !== t),
  );
  log(
    `varied: ${m.label}: ${t.name} cold pass ${bodies.length} bodies in ${cold.secs.toFixed(1)} s (${Math.round(cold.rps)} req/s, p50 ${cold.p50} p99 ${cold.p99} ms); ${checked} new distinct replies checked in ${((Date.now() - tc) / 1000).toFixed(1)} s${t.unsupported.size > 0 ? ` (${t.unsupported.size} unsupported so far)` : ''}`,
  );
  const usable = m.calls.filter((c) => !t.unsupported.has(c.body));
  const subset = usable.length < m.calls.length ? new Set(usable.map((c) => c.body)).size : 0;
  if (usable.length === 0) return { ...NOT_ANSWERED, subset };
  const expected = Buffer.concat(usable.map((c) => t.digests.get(c.body) as Buffer));
  acc.loads.push(loadavg()[0] as number);
  // The server's CPU time in the measured window, per request answered in it.
  const pgid = t.pgid;
  const cpu: number[] = [];
  const r = await rawLoadVariedThread({
    ...at,
    bodies: usable.map((c) => c.body),
    expected,
    seconds: o.seconds,
    ...(pgid !== undefined ? { onWindow: () => cpu.push(groupCpuMs(pgid)) } : {}),
  });
  acc.checkCost.push(r.checkMsPerSec);
  log(
    `varied: ${m.label}: ${t.name} ${Math.round(r.rps)} req/s p50 ${r.p50} p99 ${r.p99} wrong ${r.mismatched} (shed ${r.shed}) non-200 ${r.bad} errors ${r.errors}, ${r.distinct} distinct bodies answered; client digest checks ${r.checkMsPerSec.toFixed(0)} ms CPU per s`,
  );
  const used = cpu.length === 2 ? (cpu[1] as number) - (cpu[0] as number) : undefined;
  return {
    res: r,
    cpu:
      used === undefined
        ? undefined
        : { usPerReq: (used * 1000) / Math.max(1, r.ok), coreShare: used / 1000 / o.seconds },
    cold,
    subset,
  };
}

const fmtWarm = (x: TargetRun): string => {
  const { res: r, cpu } = x;
  return r === undefined
    ? 'unsupported | | | | '
    : `${Math.round(r.rps)}${x.subset > 0 ? ` (${x.subset} bodies)` : ''} | ${r.p50} | ${r.p99} | ${r.bad + r.mismatched + r.errors}${r.shed > 0 ? ` (${r.shed} shed)` : ''} | ${cpu === undefined ? '' : `${cpu.usPerReq.toFixed(0)} (${(cpu.coreShare * 100).toFixed(0)}%)`}`;
};
const fmtCold = (r: OnceResult | undefined): string =>
  r === undefined ? 'unsupported | | ' : `${Math.round(r.rps)} | ${r.p50} | ${r.p99}`;

/** The run's tables and the facts to read them by, on stdout. */
function printReport(
  o: VariedOptions,
  chain: ChainUnderTest,
  targets: Target[],
  acc: Measured,
  facts: { datadirBytes: number; setupSecs: number; before: string[] },
): void {
  const { loads, checkCost } = acc;
  const la = loads.length === 0 ? 'n/a' : `${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`;
  console.log(
    `\nMachine: ${cpus().length} cores, ${cpus()[0]?.model ?? 'cpu'}; Node ${process.version}; ${new Date().toISOString().slice(0, 16)} UTC; load average ${la} (1-min, at the start of each pass)`,
  );
  console.log(o.command ?? `Command: node bench/dist/http.js ${process.argv.slice(2).join(' ')}`);
  console.log(
    `Chain: ${chain.describe}; chainnode datadir ${(facts.datadirBytes / 1e6).toFixed(0)} MB; setup (build + import) ${facts.setupSecs.toFixed(0)} s`,
  );
  console.log(
    `Client: raw-http, ${o.connections} connections, closed loop; warm: ${o.seconds} s after a 2 s warm-up per case; every answer's digest (XXH3-128) compared with its body's checked reply (client CPU for it: ${checkCost.length === 0 ? 'n/a' : `${Math.min(...checkCost).toFixed(0)}-${Math.max(...checkCost).toFixed(0)}`} ms per second of load)${targets[1]?.unsupported.size ? `; anvil: ${targets[1].unsupported.size} bodies not answered or not sent (no state before its last ${o.anvilHistory} blocks), its rows run on the bodies it answers (distinct count in brackets; eth_getProof: a sample of at most ${o.anvilProofSample} per mix, the rest not sent)` : ''}\n`,
  );
  console.log(
    "Server CPU: user + system time of the server's process group in the measured window per request answered (µs), and as a share of one core; on 2 cores the load client takes about one, so a server below ~100% is limited by the client, not by itself.\n",
  );
  console.log(
    '| request mix | distinct params | chainnode req/s | p50 ms | p99 ms | errors | CPU µs/req (core) | anvil req/s | p50 ms | p99 ms | errors | CPU µs/req (core) |\n|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of acc.rows) console.log(r);
  console.log(
    '\nCold pass (every body of the mix sent once, the first time this server process is asked it; where the distinct params are fewer than the bodies, the repeats may be answered from the answer cache):\n',
  );
  console.log(
    '| request mix | bodies | distinct params | chainnode req/s | p50 ms | p99 ms | anvil req/s | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|---|---|',
  );
  for (const r of acc.coldRows) console.log(r);
  for (const line of facts.before) console.log(line);
}

export async function runVaried(o: VariedOptions): Promise<void> {
  // --keep <dir>: the chain is built (or reused) there and kept after the run (scaled chain only).
  const tmp = o.keep ?? mkdtempSync(join(tmpdir(), 'bench-varied-'));
  const dropTmp = o.keep !== undefined ? () => {} : onExit(() => rmSync(tmp, { recursive: true, force: true }));
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  let chain: ChainUnderTest | undefined;
  let srv: ReturnType<typeof spawnChild> | undefined;
  try {
    const tSetup = Date.now();
    chain = await prepareChain(o, tmp, log);
    const setupSecs = (Date.now() - tSetup) / 1000;
    const mixes = chain.mixes.filter(
      (m) => o.only === undefined || o.only.some((w) => m.label.startsWith(w) || m.label.includes(w)),
    );
    const datadirBytes = Number((await runChild('du', ['-sb', chain.datadir])).split('\t')[0]);
    const started = await startTargets(o, chain);
    srv = started.srv;
    const { url, targets } = started;
    await waitRpc(url);
    if (o.settle !== undefined && o.beforeMixes !== undefined) await settleLoad(o.settle, log);
    const pgid = targets[0]?.pgid;
    const serverCpuMs = (): number | undefined => (pgid === undefined ? undefined : groupCpuMs(pgid));
    const before = o.beforeMixes !== undefined ? await o.beforeMixes(url, serverCpuMs) : [];
    const facts = new Map<string, Buffer>();
    const acc: Measured = { rows: [], coldRows: [], loads: [], checkCost: [] };
    for (const m of mixes) {
      const runs: TargetRun[] = [];
      for (const t of targets) runs.push(await runTarget(o, chain, m, t, targets, facts, acc, log));
      const [ours, anvil] = runs as [TargetRun, TargetRun | undefined];
      const distinct = new Set(m.calls.map((c) => c.body.replace(/"id":\d+,/, ''))).size;
      acc.rows.push(
        `| ${m.label} | ${distinct} | ${fmtWarm(ours)} | ${anvil !== undefined ? fmtWarm(anvil) : 'not run | | | | '} |`,
      );
      acc.coldRows.push(
        `| ${m.label} | ${m.calls.length} | ${distinct} | ${fmtCold(ours.cold)} | ${anvil !== undefined ? fmtCold(anvil.cold) : 'not run | | '} |`,
      );
    }
    printReport(o, chain, targets, acc, { datadirBytes, setupSecs, before });
  } finally {
    if (srv !== undefined) await stopChild(srv);
    if (chain !== undefined) await chain.close();
    if (o.keep === undefined) rmSync(tmp, { recursive: true, force: true });
    dropTmp();
  }
}
