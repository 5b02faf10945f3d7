// Joining benchmark (never a timed test). One run, on one chain (the fixture chain unless
// --chain <dir>), with a chainnode primary of it (`serve`, a child process) as the upstream:
//  1. time from an empty datadir to serving the upstream's head, for `serve --follow` that
//     executes every block from genesis, replicates from genesis, joins at head-1,000
//     (--start-block head-1000: history only from there, state proven on demand), or joins there
//     with --join-state download (that block's whole state downloaded, later blocks replicated);
//  2. state queries (eth_getBalance, eth_getStorageAt, eth_getProof) at random blocks of the joined
//     range, each asked of each joined node twice (cold: the first time; proven on demand that is a
//     proof round trip to the upstream, verified and stored; downloaded, a walk of its own trie
//     from disk; warm: the second) and of the upstream directly (the primary: a fully local
//     archive node), sequentially, one at a time; in two rounds on disjoint halves of the genesis
//     accounts, the first the nodes' first state reads (their code not yet compiled), the second
//     state never read with that code compiled.
// With --disk <datadir> --genesis <genesis.json> instead: a copy of that datadir (a chain imported
// from genesis, e.g. the mainnet-shaped chain's) served as the upstream, joined at block 1 with
// history only; the joined datadir's bytes per block, transaction and log (docs/joining.md).
//   npm run bench:join [-- --chain <dir>] [--join-depth 1000] [--queries 300]
//   npm run bench:join -- --disk <datadir> --genesis <genesis.json>
import type { ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { followUpstream, importChain } from '@chainnode/ingest';
import { sizeOnDisk } from '@chainnode/store';
import { Sfc32 } from '@chainnode/testkit';
import { killAllChildren, rpc, stopChild } from './src/children.js';
import { percentileOf } from './src/anvil.js';
import { createKey, startServe } from './src/cli.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:join');

const root = resolve('.');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');
const args = process.argv.slice(2);
const opt = (name: string, dflt: string): string => {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] as string) : dflt;
};
const chain = resolve(opt('--chain', join(root, 'fixtures')));
const depth = Number(opt('--join-depth', '1000'));
const queries = Number(opt('--queries', '300'));

const key = (datadir: string): Promise<string> => createKey(cli, datadir);

/** `node-cli serve` on a free port, one thread; resolves with its port once it listens. */
const serve = (argv: string[]) => startServe(cli, ['--threads', '1', ...argv]);

const pct = percentileOf;
const r2 = (x: number) => Math.round(x * 100) / 100;

const base = await mkdtemp(join(tmpdir(), 'bench-join-'));
const diskOf = args.includes('--disk') ? resolve(opt('--disk', '')) : undefined;
try {
  if (diskOf !== undefined) await measureDisk(diskOf, resolve(opt('--genesis', join(diskOf, 'genesis.json'))));
  else await main();
} finally {
  killAllChildren();
  await rm(base, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const primaryDir = join(base, 'primary');
  const imp = await importChain({ from: chain, datadir: primaryDir });
  const pk = await key(primaryDir);
  const primary = await serve(['--datadir', primaryDir]);
  const upstream = `http://127.0.0.1:${primary.port}/v3/${pk}`;
  const head = Number(await rpc(upstream, 'eth_blockNumber', []));
  const genesis = join(chain, 'genesis.json');

  // 1. Empty datadir to serving the head.
  const modes: { name: string; extra: string[] }[] = [
    { name: 'execute from genesis', extra: ['--ingest', 'execute'] },
    { name: 'replicate from genesis', extra: ['--ingest', 'replicate'] },
    { name: `join at head-${depth}`, extra: ['--start-block', `head-${depth}`] },
    {
      name: `join at head-${depth}, state downloaded`,
      extra: ['--start-block', `head-${depth}`, '--join-state', 'download'],
    },
  ];
  let joined: { proc: ChildProcess; url: string; dir: string } | undefined;
  let downloaded: { proc: ChildProcess; url: string; dir: string } | undefined;
  for (const m of modes) {
    const dir = join(base, m.name.replace(/\W+/g, '-'));
    const k = await key(dir);
    const t0 = performance.now();
    const node = await serve([
      '--datadir',
      dir,
      '--follow',
      upstream,
      '--genesis',
      genesis,
      '--poll-ms',
      '100',
      ...m.extra,
    ]);
    const url = `http://127.0.0.1:${node.port}/v3/${k}`;
    for (;;) {
      const n = await rpc(url, 'eth_blockNumber', []).catch(() => '0x0');
      if (Number(n) >= head) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const secs = (performance.now() - t0) / 1000;
    console.log(
      JSON.stringify({
        part: 'to-head',
        mode: m.name,
        blocks: head,
        secondsToServeHead: r2(secs),
        datadirMiB: r2((await sizeOnDisk(dir)) / 2 ** 20),
      }),
    );
    if (m.extra.includes('download')) downloaded = { proc: node.proc, url, dir };
    else if (m.extra[0] === '--start-block') joined = { proc: node.proc, url, dir };
    else await stopChild(node.proc);
  }
  if (joined === undefined || downloaded === undefined) throw new Error('no joined node');

  // 2. State queries at random blocks of the joined range: cold, warm, the upstream directly. Two
  //    rounds on disjoint halves of the genesis accounts: the first on nodes that have answered no
  //    state read yet (the joined nodes' code never run: V8 compiles it as the round goes), the
  //    second on accounts none of them has read, with that code compiled (state cold, code warm:
  //    a node that has served anything).
  const alloc = Object.keys((JSON.parse(await readFile(genesis, 'utf8')) as { alloc: object }).alloc).map((a) =>
    a.startsWith('0x') ? a : `0x${a}`,
  );
  const rng = new Sfc32(0x0b, 0x1e, 0x55, 0xed);
  const first = head - depth;
  const queriesOf = (accounts: string[]): [string, unknown[]][] => {
    const qs: [string, unknown[]][] = [];
    for (let i = 0; i < queries; i++) {
      const block = `0x${(first + Math.floor(rng.next() * (depth + 1))).toString(16)}`;
      const address = accounts[Math.floor(rng.next() * accounts.length)] as string;
      const kind = i % 3;
      if (kind === 0) qs.push(['eth_getBalance', [address, block]]);
      else if (kind === 1) qs.push(['eth_getStorageAt', [address, '0x0', block]]);
      else qs.push(['eth_getProof', [address, ['0x0'], block]]);
    }
    return qs;
  };
  const rounds = [
    { code: 'first state reads of each node', accounts: alloc.filter((_, i) => i % 2 === 0) },
    { code: 'after the first round (code compiled)', accounts: alloc.filter((_, i) => i % 2 === 1) },
  ];
  for (const round of rounds) {
    const qs = queriesOf(round.accounts);
    const time = async (url: string): Promise<number[]> => {
      const out: number[] = [];
      for (const [m, p] of qs) {
        const t0 = performance.now();
        await rpc(url, m, p);
        out.push(performance.now() - t0);
      }
      return out;
    };
    const upstreamMs = await time(upstream); // the primary warms its own caches first: it is the archive node
    const cold = await time(joined.url);
    const warm = await time(joined.url);
    const coldDownloaded = await time(downloaded.url);
    const warmDownloaded = await time(downloaded.url);
    const again = await time(upstream);
    const row = (name: string, xs: number[]) => ({ name, medianMs: r2(pct(xs, 50)), p90Ms: r2(pct(xs, 90)) });
    console.log(
      JSON.stringify({
        part: 'state-queries',
        round: round.code,
        queries: qs.length,
        distinctBlocks: new Set(qs.map((q) => q[1][q[1].length - 1])).size,
        rows: [
          row('cold (joined: upstream proof + verify + store + local walk)', cold),
          row('warm (joined: local walk)', warm),
          row('cold (joined, state downloaded: local walk from disk)', coldDownloaded),
          row('warm (joined, state downloaded)', warmDownloaded),
          row('upstream directly (archive, first pass)', upstreamMs),
          row('upstream directly (archive, second pass)', again),
        ],
        coldOverUpstream: r2(pct(cold, 50) / pct(again, 50)),
        coldOverUpstreamFirstPass: r2(pct(cold, 50) / pct(upstreamMs, 50)),
        downloadedColdOverUpstream: r2(pct(coldDownloaded, 50) / pct(again, 50)),
        downloadedColdOverUpstreamFirstPass: r2(pct(coldDownloaded, 50) / pct(upstreamMs, 50)),
      }),
    );
    // Per method: the target names cold eth_getBalance.
    for (const method of ['eth_getBalance', 'eth_getStorageAt', 'eth_getProof']) {
      const of = (xs: number[]) => xs.filter((_, i) => qs[i]?.[0] === method);
      const med = (xs: number[]) => r2(pct(of(xs), 50));
      console.log(
        JSON.stringify({
          part: 'state-queries-by-method',
          round: round.code,
          method,
          queries: of(cold).length,
          medianMs: {
            joinedCold: med(cold),
            joinedWarm: med(warm),
            downloadedCold: med(coldDownloaded),
            downloadedWarm: med(warmDownloaded),
            upstreamFirstPass: med(upstreamMs),
            upstreamSecondPass: med(again),
          },
          downloadedColdOverUpstream: r2(pct(of(coldDownloaded), 50) / pct(of(again), 50)),
          downloadedColdOverUpstreamFirstPass: r2(pct(of(coldDownloaded), 50) / pct(of(upstreamMs), 50)),
        }),
      );
    }
  }
  console.log(JSON.stringify({ part: 'chain', blocks: imp.blocks, txs: imp.txs, logs: imp.logs }));
  await stopChild(joined.proc);
  await stopChild(downloaded.proc);
  await stopChild(primary.proc);
}

/** History-only bytes per block, transaction and log of a chain joined at block 1 (see the file comment). */
async function measureDisk(datadir: string, genesisPath: string): Promise<void> {
  const copy = join(base, 'upstream');
  await cp(datadir, copy, { recursive: true });
  const k = await key(copy);
  const up = await serve(['--datadir', copy]);
  try {
    const url = `http://127.0.0.1:${up.port}/v3/${k}`;
    const dir = join(base, 'joined');
    const t0 = performance.now();
    const s = await followUpstream({ url, datadir: dir, genesisPath, startBlock: { number: 1n } });
    const secs = (performance.now() - t0) / 1000;
    const bytes = await sizeOnDisk(dir);
    const blocks = s.blocks + 1; // the anchor too
    const head = Number(s.head.number);
    const headTxs = Number(await rpc(url, 'eth_getBlockTransactionCountByNumber', ['0x1']));
    const txs = s.txs + headTxs;
    console.log(
      JSON.stringify({
        part: 'disk',
        blocks,
        head,
        txs,
        logsAfterAnchor: s.logs,
        historyBytes: bytes,
        bytesPerBlock: Math.round(bytes / blocks),
        bytesPerTx: Math.round(bytes / txs),
        upstreamDatadirBytes: await sizeOnDisk(copy),
        joinSeconds: r2(secs),
      }),
    );
  } finally {
    await stopChild(up.proc);
  }
}
