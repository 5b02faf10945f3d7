// chainnode -> chainnode: a primary serves the fixture chain; replica R1 follows it over HTTP
// (its URL with the primary's key) from an empty datadir, replicating (`--ingest replicate`: the
// primary's raw blocks, receipts and state changes, every root verified; executing the whole chain
// again, as the prepared datadir's import already does, took half of this suite's CPU), and is
// SIGKILLed twice while catching up (once just after a commit, once mid-batch: a third kill there
// proved the same again); replica R2 follows over WebSocket, executing, from a datadir the file
// import prepared. Then the primary is stopped (both replicas keep serving and retry), imports
// fixtures/fork (the file reorgs its store 10 blocks deep) and restarts on the same port; R1 is
// SIGKILLed twice more while it reorgs.
// Checked: once caught up, all eight methods answer byte-equal on the primary and R1 at every
// third block and the last 12 (R2's datadir is still a copy of the primary's); after the fork,
// every block's header and transaction hashes by number are equal on all three, and all eight
// methods byte-equal from block 1500 (the log range holding the fork point 1591) on: below it
// the reorg changed nothing, and the stores' digests prove them still equal.
// Orphaned txs are null; the three stores end digest-equal but for the rows only execution
// records (file reorg, executed followed reorg, and a replicated one interrupted four times).
import { join } from 'node:path';
import { EXECUTED_ONLY, digestDatadir } from '@chainnode/store';
import { chainDir, datadirCopy, freePort, runCli, tempDir } from '@chainnode/testkit';
import { call, result } from './anvil-upstream.js';
import { compareNodes, rawBatch } from './compare-nodes.js';
import { createKeyCli, kept, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

type Json = Record<string, unknown>;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;
const FIXTURES = chainDir('fixtures') as string;
const FORK = join(FIXTURES, 'fork');

async function waitHead(url: string, hash: string, what: string, timeoutMs = 900_000): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const r = await call(url, 'eth_getBlockByNumber', ['latest', false]).catch(() => undefined);
    if ((r?.result as Json | undefined)?.hash === hash) return;
    if (Date.now() - t0 > timeoutMs)
      throw new Error(
        `${what}: not at ${hash} after ${timeoutMs} ms (${JSON.stringify(r?.result ?? r).slice(0, 200)})`,
      );
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** After the fork, the first block compared method by method: the 100-block log range holding the fork point. */
const FULL_AFTER_FORK = 1500;

/** Every block below `to` by number (header and transaction hashes), byte-equal on `a` and each of `b`. */
async function compareHeaders(a: string, b: string[], to: number): Promise<void> {
  const calls = Array.from({ length: to }, (_, n): [string, unknown[]] => ['eth_getBlockByNumber', [hexN(n), false]]);
  const [ra, ...rbs] = await Promise.all([a, ...b].map((url) => rawBatch(url, calls)));
  expect(ra?.filter((t) => !t.includes('"hash":"0x'))).toEqual([]);
  for (const rb of rbs) {
    const n = rb.findIndex((t, i) => t !== ra?.[i]);
    expect([n, rb[n]]).toEqual([-1, undefined]);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the replica serves a head above `n`. */
async function waitPast(p: ServeProcess, key: string, n: number): Promise<void> {
  for (;;) {
    const r = await call(p.url(key), 'eth_blockNumber', []).catch(() => undefined);
    if (typeof r?.result === 'string' && Number(r.result) > n) return;
    await sleep(50);
  }
}

/** Waits until the replica's ingest reports an upstream head of at least `n`. */
async function waitUpstream(p: ServeProcess, n: number): Promise<void> {
  for (;;) {
    const h = (await fetch(`${p.base}/health`)
      .then((r) => r.json())
      .catch(() => undefined)) as { follow?: { upstreamHead?: number } } | undefined;
    if ((h?.follow?.upstreamHead ?? 0) >= n) return;
    await sleep(10);
  }
}

/** The replica's /health once its ingest reports 'retrying' (its upstream gone), within 30 s. */
async function followRetrying(p: ServeProcess): Promise<{ follow: Json }> {
  const t0 = Date.now();
  for (;;) {
    const h = (await (await fetch(`${p.base}/health`)).json()) as { follow: Json };
    if (h.follow.state === 'retrying' || Date.now() - t0 > 30_000) return h;
    await sleep(50);
  }
}

describe('a chainnode replica follows a chainnode primary', () => {
  const cleanups: (() => Promise<void>)[] = [];
  const procs: ServeProcess[] = [];
  afterAll(async () => {
    for (const p of procs) await p.stop('SIGKILL').catch(() => undefined);
    for (const c of cleanups) await c();
  });

  test('HTTP and WebSocket replicas, SIGKILL x4, primary restart with a 10-block reorg: byte-equal answers, equal digests', async () => {
    const primaryCopy = await kept(cleanups, datadirCopy('fixtures'));
    const wsCopy = await kept(cleanups, datadirCopy('fixtures'));
    const t = await kept(cleanups, tempDir('follow-replica-'));
    const primaryDir = primaryCopy.dir;
    const r1Dir = join(t.dir, 'r1');
    const r2Dir = wsCopy.dir;
    // Three datadirs, three `keys create` processes at once.
    const [pk, k1, k2] = (await Promise.all([primaryDir, r1Dir, r2Dir].map((dir) => createKeyCli(dir, 'custom')))).map(
      (k) => k.key,
    ) as [string, string, string];
    // Below the ephemeral range: the replicas keep reconnecting while the primary is down, and a
    // client retrying a free ephemeral port on loopback can connect to itself (TCP self-connect)
    // and hold the port the primary restarts on.
    let primary = await spawnServe(primaryDir, ['--port', String(await freePort())]);
    procs.push(primary);
    const port = primary.port;
    const pUrl = primary.url(pk);
    const mainHead = await result<Json>(pUrl, 'eth_getBlockByNumber', ['latest', false]);
    expect(mainHead.number).toBe(hexN(1600));
    const genesis = join(FIXTURES, 'genesis.json');
    // A head poll every 500 ms once caught up: each is a request to the primary for as long as the
    // test runs, and nothing here waits on a replica noticing a new head sooner.
    const r1Args = ['--follow', pUrl, '--genesis', genesis, '--ingest', 'replicate', '--poll-ms', '500'];
    const r2 = await spawnServe(r2Dir, ['--follow', `ws://127.0.0.1:${port}/ws/v3/${pk}`, '--poll-ms', '500']);
    procs.push(r2);
    // R1: follow from an empty datadir, SIGKILLed twice while catching up.
    let r1 = await spawnServe(r1Dir, r1Args);
    procs.push(r1);
    for (let k = 0; k < 2; k++) {
      // Killed mid-catch-up: once it has committed past 400 blocks, and 150 ms after it has
      // committed past 1000 (inside the next batch).
      await waitPast(r1, k1, 400 + 600 * k);
      await sleep(150 * k);
      await r1.stop('SIGKILL');
      r1 = await spawnServe(r1Dir, r1Args);
      procs.push(r1);
    }
    await waitHead(r1.url(k1), mainHead.hash as string, 'R1');
    await waitHead(r2.url(k2), mainHead.hash as string, 'R2');
    // R1 against the primary at every third block (and the last 12): the stores' digests, at the
    // end, prove every row equal. R2's datadir is a copy of the primary's, untouched until the
    // fork: its answers here could differ only by its serving as a follower, which the comparison
    // of every block from 1500 after the fork (where it has reorged) checks on all three.
    const seen = await compareNodes(pUrl, r1.url(k1), undefined, 0, 3);
    expect(seen.blocks).toBeGreaterThan(540);
    expect(seen.txs).toBeGreaterThan(3_000);
    const orphanBlock = await result<Json>(pUrl, 'eth_getBlockByNumber', [hexN(1595), false]);

    // The primary goes away: the replicas keep serving and report it (as soon as R1's next head
    // poll fails).
    await primary.stop('SIGTERM');
    const health = await followRetrying(r1);
    expect(await result(r1.url(k1), 'eth_blockNumber', [])).toBe(hexN(1600));
    expect(health.follow.state).toBe('retrying');
    expect(String(health.follow.lastError)).toContain(`http://127.0.0.1:${port}`);
    expect(String(health.follow.lastError)).not.toContain(pk); // the key in the URL path is never shown

    // The primary imports the fork: chain.rlp leaves its store at block 1591 (a file reorg).
    const tooDeep = await runCli(['sync', '--from', FORK, '--datadir', primaryDir, '--reorg-depth', '5']);
    expect(tooDeep.code).toBe(1);
    expect(tooDeep.stderr).toMatch(
      /(^|\n)node-cli: chain\.rlp leaves the stored chain at block 1591 \(stored head 1600\): a reorg of 10 blocks is deeper than --reorg-depth 5\n$/,
    );
    const sync = await runCli(['sync', '--from', FORK, '--datadir', primaryDir]);
    expect(sync.code).toBe(0);
    primary = await spawnServe(primaryDir, ['--port', String(port)]);
    procs.push(primary);
    const forkHead = await result<Json>(pUrl, 'eth_getBlockByNumber', ['latest', false]);
    expect(forkHead.number).toBe(hexN(1605));
    // R1 is killed twice more while it reorgs.
    for (let k = 0; k < 2; k++) {
      // As soon as its ingest has seen the primary's new head: the reorg batch is being built
      // or written.
      await waitUpstream(r1, 1605);
      await sleep(k * 40);
      await r1.stop('SIGKILL');
      r1 = await spawnServe(r1Dir, r1Args);
      procs.push(r1);
    }
    await waitHead(r1.url(k1), forkHead.hash as string, 'R1 after the fork');
    await waitHead(r2.url(k2), forkHead.hash as string, 'R2 after the fork');
    await compareHeaders(pUrl, [r1.url(k1), r2.url(k2)], FULL_AFTER_FORK);
    expect((await compareNodes(pUrl, [r1.url(k1), r2.url(k2)], undefined, FULL_AFTER_FORK)).blocks).toBe(106);
    // Orphaned: block by hash and its txs are gone, on the primary (file reorg) and replicas.
    for (const url of [pUrl, r1.url(k1), r2.url(k2)]) {
      expect(await result(url, 'eth_getBlockByHash', [orphanBlock.hash, false])).toBeNull();
      for (const tx of orphanBlock.transactions as string[])
        expect(await result(url, 'eth_getTransactionByHash', [tx])).toBeNull();
    }
    const h2 = (await (await fetch(`${r2.base}/health`)).json()) as { follow: Json };
    expect(h2.follow).toMatchObject({
      state: 'following',
      localHead: 1605,
      upstreamHead: 1605,
      lagBlocks: 0,
      reorgs: 1,
    });

    // Stores: file reorg == executed followed reorg == replicated followed reorg killed 4 times.
    for (const p of [primary, r1, r2]) expect(await p.stop('SIGTERM')).toBe(0);
    const [dp, d1, d2] = await Promise.all([
      digestDatadir(primaryDir, undefined, EXECUTED_ONLY),
      digestDatadir(r1Dir, undefined, EXECUTED_ONLY),
      digestDatadir(r2Dir, undefined, EXECUTED_ONLY),
    ]);
    expect(d1).toEqual(dp);
    expect(d2).toEqual(dp);
  }, 2_400_000); // the prepared datadir's import (when this suite asks first), R1's replication, the fork, on 2 cores
});
