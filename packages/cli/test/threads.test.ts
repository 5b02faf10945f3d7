// `node-cli serve --threads 2` as a child process: several uWS apps on one port, credits exact
// across them through real sockets (each call on its own TCP connection, so the kernel spreads
// them over the threads), and durable across a restart; with --follow, every thread serves (and
// every WebSocket hears) what the one ingest thread commits.
import { request } from 'node:http';
import { join } from 'node:path';
import { NO_REDIS, datadirCopy, redisServerPath, runCli, startRedis, tempDir } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { DEV, result, startAnvil } from './anvil-upstream.js';
import type { Anvil } from './anvil-upstream.js';
import { bannerOf, createKeyCli, rpc, sleep, spawnServe, usageCli } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';
import { WsClient } from './subs-helpers.js';

/** One POST on a fresh connection (no keep-alive agent). */
function post(port: number, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', connection: 'close' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Sum of chainnode_rpc_calls_total in a Prometheus text. */
function callsTotal(text: string): number {
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('chainnode_rpc_calls_total{')) n += Number(line.split(' ').pop());
  return n;
}

test('--threads 2: 150 concurrent calls over fresh connections against a 100-call balance: exactly 100 served (402 for the rest), spread over both threads, durable', async () => {
  const c = await datadirCopy('fixtures');
  let srv: ServeProcess | undefined;
  try {
    // No throughput limit: the daily balance alone decides (the main thread's engine, one debit at a time).
    const { key } = await createKeyCli(c.dir, 'core', [
      '--daily-credits',
      String(100 * 80),
      '--credits-per-second',
      '0',
    ]);
    srv = await spawnServe(c.dir, ['--threads', '2', '--metrics-port', '0']);
    expect(bannerOf(srv.output()).threads).toBe(2);
    const metricsPort = Number(/:(\d+)\/metrics$/.exec(bannerOf(srv.output()).metrics ?? '')?.[1]);
    expect(metricsPort).toBeGreaterThan(0);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_getBlockByNumber', params: ['0x10', false] });
    const port = srv.port;
    const replies = await Promise.all(Array.from({ length: 150 }, () => post(port, `/v3/${key}`, body)));
    const served = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 402);
    expect(served.length).toBe(100);
    expect(refused.length).toBe(50);
    for (const r of served) expect((JSON.parse(r.body) as { result: { number: string } }).result.number).toBe('0x10');
    for (const r of refused) {
      const e = (JSON.parse(r.body) as { error: { code: number; event: number } }).error;
      expect([e.code, e.event]).toEqual([402, -33000]);
    }
    // Thread 0 serves the metrics of both threads: all 150 calls, and each thread answered some.
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(callsTotal(text)).toBe(150);
    const perThread = threadCalls(text);
    expect([...perThread.keys()].sort()).toEqual([0, 1]);
    expect(perThread.get(0)).toBeGreaterThan(0);
    expect(perThread.get(1)).toBeGreaterThan(0);
    expect((perThread.get(0) ?? 0) + (perThread.get(1) ?? 0)).toBe(150);
    // Every thread sees the same exhausted balance.
    for (let i = 0; i < 6; i++) expect((await post(port, `/v3/${key}`, body)).status).toBe(402);
    expect((await srv.stop()) ?? 0).toBe(0);
    srv = undefined;
    expect((await usageCli(c.dir, key)).used).toBe(8000);
    // After a restart the journal still holds the charges: nothing refunded.
    srv = await spawnServe(c.dir, ['--threads', '2']);
    expect((await rpc(srv.url(key), 'eth_getBlockByNumber', ['0x10', false])).status).toBe(402);
  } finally {
    if (srv !== undefined) await srv.stop();
    await c.cleanup();
  }
});

/** chainnode_thread_rpc_calls_total by thread. */
function threadCalls(text: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of text.matchAll(/^chainnode_thread_rpc_calls_total\{thread="(\d+)"\} (\d+)$/gm))
    out.set(Number(m[1]), Number(m[2]));
  return out;
}

/** Open WebSockets of the whole process (all threads), from the metrics. */
function wsOpen(text: string): number {
  const m = /^chainnode_websocket_connections(?:\{[^}]*\})? (\d+)$/m.exec(text);
  if (m === null) throw new Error('no chainnode_websocket_connections in the metrics');
  return Number(m[1]);
}

type Json = Record<string, unknown>;

/** The running `--threads N --follow` server, its metrics and the calls the follow test makes. */
interface ThreadsFollow {
  up: string;
  port: number;
  threads: number;
  metrics: () => Promise<string>;
  ask: (method: string, params: unknown[]) => Promise<unknown>;
}

/** The hashes of the newHeads notifications a socket has heard, in order. */
function heads(ws: WsClient): string[] {
  return ws.notifications().map((n) => n.result.hash as string);
}

/** The follow test's view of a started server (its metrics port read from the banner). */
function threadsFollow(srv: ServeProcess, up: string, key: string, threads: number): ThreadsFollow {
  expect(bannerOf(srv.output()).threads).toBe(threads);
  const metricsPort = Number(/:(\d+)\/metrics$/.exec(bannerOf(srv.output()).metrics ?? '')?.[1]);
  expect(metricsPort).toBeGreaterThan(0);
  const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const port = srv.port;
  const ask = async (method: string, params: unknown[]): Promise<unknown> => {
    const r = await post(port, `/v3/${key}`, JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
    expect(r.status).toBe(200);
    return (JSON.parse(r.body) as { result: unknown }).result;
  };
  return { up, port, threads, metrics, ask };
}

/**
 * At least `n` calls, each on a fresh connection (the kernel picks the thread by a hash of
 * the connection: `n` of them all land on one thread once in 2^(n-1) times): their answers,
 * after checking from the per-thread counts of the metrics that both threads answered some.
 * While one thread has answered none, up to 5n calls are made; every answer is returned.
 * A single-thread server answers one call: its repetitions would all be the same thread's answer.
 */
async function onBothThreads(f: ThreadsFollow, n: number, method: string, params: unknown[]): Promise<unknown[]> {
  if (f.threads === 1) return [await f.ask(method, params)];
  const before = threadCalls(await f.metrics());
  const answers: unknown[] = [];
  for (let i = 0; i < n; i++) answers.push(await f.ask(method, params));
  const deltas = async (): Promise<[number, number]> => {
    const after = threadCalls(await f.metrics());
    return [(after.get(0) ?? 0) - (before.get(0) ?? 0), (after.get(1) ?? 0) - (before.get(1) ?? 0)];
  };
  let [d0, d1] = await deltas();
  while ((d0 === 0 || d1 === 0) && answers.length < 5 * n) {
    for (let i = 0; i < n; i++) answers.push(await f.ask(method, params));
    [d0, d1] = await deltas();
  }
  expect([d0 > 0, d1 > 0, d0 + d1]).toEqual([true, true, answers.length]);
  return answers;
}

/**
 * newHeads on WebSockets (pushed to `sockets`) until both threads hold some (each eth_subscribe
 * is a call on the socket's thread).
 */
async function subscribeOnThreads(
  f: ThreadsFollow,
  srv: ServeProcess,
  key: string,
  sockets: WsClient[],
): Promise<void> {
  const subscribedOn = new Set<number>();
  for (let i = 0; i < 32 && (sockets.length < 4 || subscribedOn.size < Math.min(f.threads, 2)); i++) {
    const before = threadCalls(await f.metrics());
    const ws = await WsClient.open(srv.ws(key));
    sockets.push(ws);
    await ws.subscribe(['newHeads']);
    const after = threadCalls(await f.metrics());
    for (const [thread, n] of after) if (n > (before.get(thread) ?? 0)) subscribedOn.add(thread);
  }
  if (f.threads > 1) expect([...subscribedOn].sort()).toEqual([0, 1]);
  else expect(threadCalls(await f.metrics()).size).toBe(0); // no app threads, no per-thread family
  expect(wsOpen(await f.metrics())).toBe(sockets.length);
}

/**
 * Each new block: every socket hears its head (so both threads applied it), then fresh
 * connections on both threads serve it as anvil does.
 */
async function mineAndCheckThreads(f: ThreadsFollow, sockets: WsClient[]): Promise<void> {
  const { up } = f;
  const mined: string[] = [];
  for (let i = 0; i < 3; i++) {
    await result(up, 'eth_sendTransaction', [
      { from: DEV[0], to: DEV[1], value: `0x${(i + 1).toString(16)}`, gas: '0x5208' },
    ]);
    await result(up, 'evm_mine', []);
    const b = await result<Json>(up, 'eth_getBlockByNumber', ['latest', false]);
    mined.push(b.hash as string);
    await Promise.all(sockets.map((ws) => ws.until(() => heads(ws).includes(b.hash as string))));
    const answers = (await onBothThreads(f, 16, 'eth_getBlockByNumber', [b.number, false])) as Json[];
    for (const a of answers)
      expect([a.hash, a.parentHash, a.transactions]).toEqual([b.hash, b.parentHash, b.transactions]);
    expect(new Set(await onBothThreads(f, 16, 'eth_blockNumber', []))).toEqual(new Set([b.number]));
  }
  for (const ws of sockets) expect(heads(ws)).toEqual(mined);
}

/**
 * A reorg of the last 2 blocks (a replacement tx makes the new branch differ). Both threads
 * have the old branch cached now (just read before); after the commit every one serves anvil's
 * blocks and the new branch's transactions. Returns anvil's new head.
 */
async function reorgAndCheckThreads(f: ThreadsFollow, sockets: WsClient[]): Promise<Json> {
  const { up } = f;
  const top = Number(await result<string>(up, 'eth_blockNumber', []));
  const old = await result<Json>(up, 'eth_getBlockByNumber', [`0x${top.toString(16)}`, false]);
  await result(up, 'anvil_reorg', [2, [[{ from: DEV[2], to: DEV[3], value: '0x99', gas: '0x5208' }, 0]]]);
  const newTop = await result<Json>(up, 'eth_getBlockByNumber', ['latest', false]);
  expect(newTop.hash).not.toBe(old.hash);
  await Promise.all(sockets.map((ws) => ws.until(() => heads(ws).includes(newTop.hash as string))));
  for (let n = top - 3; n <= Number(newTop.number); n++) {
    const want = await result<Json>(up, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
    const answers = (await onBothThreads(f, 12, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false])) as Json[];
    for (const a of answers)
      expect([n, a.hash, a.parentHash, a.transactions]).toEqual([n, want.hash, want.parentHash, want.transactions]);
  }
  // The new branch's transactions (the replacement among them), on both threads, where anvil has them.
  const branchTxs: string[] = [];
  for (let n = top - 1; n <= Number(newTop.number); n++)
    branchTxs.push(
      ...((await result<Json>(up, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).transactions as string[]),
    );
  expect(branchTxs.length).toBeGreaterThan(0);
  for (const tx of branchTxs) {
    const want = await result<Json>(up, 'eth_getTransactionByHash', [tx]);
    const answers = (await onBothThreads(f, 12, 'eth_getTransactionByHash', [tx])) as Json[];
    for (const a of answers) expect([tx, a.blockHash, a.blockNumber]).toEqual([tx, want.blockHash, want.blockNumber]);
  }
  return newTop;
}

/**
 * /health on fresh connections (either thread) shows the follower's status; the reorg count
 * comes with the ingest's next status update, so each answer may take a few polls.
 */
async function checkThreadsHealth(port: number, newTop: Json): Promise<void> {
  const follow = async (): Promise<Json | undefined> => {
    const h = (await (await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: 'close' } })).json()) as {
      follow?: Json;
    };
    return h.follow;
  };
  const settled = (f: Json | undefined): boolean =>
    f?.state === 'following' && f.localHead === Number(newTop.number) && f.reorgs === 1;
  for (let i = 0; i < 8; i++) {
    let f = await follow();
    for (let k = 0; k < 100 && !settled(f); k++) f = await sleep(50).then(follow);
    expect(f).toMatchObject({
      state: 'following',
      localHead: Number(newTop.number),
      upstreamHead: Number(newTop.number),
      reorgs: 1,
      lastError: null,
    });
  }
}

// One ingest thread (owned by the main thread) follows anvil; each app thread applies every commit
// to its own store (whose head is cached: without the commit a thread would keep serving the old
// head) and publishes it to its own WebSockets. Expected answers are anvil's own.
// `--threads 1` runs the same scenario on the single-thread server (no app threads: the serving
// thread owns the ingest thread itself), which no other follow test exercises now that the default
// is one thread per core.
test.each([2, 1])(
  '--threads %i --follow <anvil>: every thread serves each new block, every WebSocket on either thread hears every head, and after anvil_reorg every thread serves the new branch',
  async (threads) => {
    const t = await tempDir('threads-follow-');
    let anvil: Anvil | undefined;
    let srv: ServeProcess | undefined;
    const sockets: WsClient[] = [];
    try {
      anvil = await startAnvil(t.dir, ['--no-mining']);
      const up = anvil.url;
      for (let i = 0; i < 3; i++) await result(up, 'evm_mine', []);
      const datadir = join(t.dir, 'data');
      const { key } = await createKeyCli(datadir, 'custom');
      srv = await spawnServe(datadir, [
        '--threads',
        String(threads),
        '--follow',
        up,
        '--genesis',
        join(t.dir, 'anvil-genesis.json'),
        '--poll-ms',
        '50',
        '--metrics-port',
        '0',
      ]);
      const f = threadsFollow(srv, up, key, threads);
      // Caught up with anvil's head, on both threads (each learns of a commit on its own).
      const head0 = await result<string>(up, 'eth_blockNumber', []);
      for (const t0 = Date.now(); ; await sleep(50)) {
        const seen = new Set(await onBothThreads(f, 24, 'eth_blockNumber', []));
        if (seen.size === 1 && seen.has(head0)) break;
        expect(Date.now() - t0).toBeLessThan(30_000);
      }
      await subscribeOnThreads(f, srv, key, sockets);
      // A block filter made on one thread, polled on both: every new block once, in order.
      const blockFilter = await f.ask('eth_newBlockFilter', []);
      await mineAndCheckThreads(f, sockets);
      const polled = (await onBothThreads(f, 8, 'eth_getFilterChanges', [blockFilter])).flat();
      const top = Number(await result<string>(up, 'eth_blockNumber', []));
      const mined = [];
      for (let n = Number(head0) + 1; n <= top; n++)
        mined.push((await result<Json>(up, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).hash);
      expect(polled).toEqual(mined);
      const newTop = await reorgAndCheckThreads(f, sockets);
      await checkThreadsHealth(f.port, newTop);
      for (const ws of sockets) ws.close();
      sockets.length = 0;
      expect((await srv.stop()) ?? 0).toBe(0);
      expect(srv.output()).toContain('stopped cleanly');
      srv = undefined;
    } finally {
      for (const ws of sockets) ws.close();
      if (srv !== undefined) await srv.stop();
      await anvil?.stop();
      await t.cleanup();
    }
  },
  180_000,
);

// An ingest that fails before the datadir holds a chain fails every app thread's start: serve must
// then stop the threads it started (one of which has already ended) and exit 1 with the reason,
// as with one thread (it once waited forever on the ended thread and exited 13, silently).
test.each([2, 1])(
  '--threads %i --follow with an unreadable --genesis on an empty datadir: exit 1 with the reason, nothing left listening',
  async (threads) => {
    const t = await tempDir('threads-follow-fail-');
    try {
      const r = await runCli(
        [
          'serve',
          '--datadir',
          join(t.dir, 'data'),
          '--port',
          '0',
          '--threads',
          String(threads),
          '--follow',
          'http://127.0.0.1:9',
          '--genesis',
          join(t.dir, 'missing.json'),
        ],
        { timeoutMs: 60_000 },
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`node-cli: --follow: cannot read ${join(t.dir, 'missing.json')}`);
      expect(r.stdout).not.toContain('listening');
    } finally {
      await t.cleanup();
    }
  },
);

// With --ledger redis:// the main thread's Redis engine decides every app thread's debits.
(redisServerPath() !== undefined ? test : test.skip)(
  '--threads 2 --ledger redis://: 150 concurrent calls against a 100-call balance: exactly 100 served, usage in Redis',
  async () => {
    const c = await datadirCopy('fixtures');
    let redis: RedisProcess | undefined;
    let srv: ServeProcess | undefined;
    try {
      redis = await startRedis();
      const r = await runCli([
        'keys',
        'create',
        '--plan',
        'core',
        '--json',
        '--daily-credits',
        String(100 * 80),
        '--credits-per-second',
        '0',
        '--ledger',
        redis.url,
        '--datadir',
        c.dir,
      ]);
      expect(r.code).toBe(0);
      const { key } = JSON.parse(r.stdout) as { key: string };
      srv = await spawnServe(c.dir, ['--threads', '2', '--ledger', redis.url]);
      expect(bannerOf(srv.output())).toMatchObject({ threads: 2, ledger: 'redis' });
      const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_getBlockByNumber', params: ['0x10', false] });
      const port = srv.port;
      const replies = await Promise.all(Array.from({ length: 150 }, () => post(port, `/v3/${key}`, body)));
      expect(replies.filter((x) => x.status === 200).length).toBe(100);
      expect(replies.filter((x) => x.status === 402).length).toBe(50);
      expect((await srv.stop()) ?? 0).toBe(0);
      srv = undefined;
      const u = await runCli(['keys', 'usage', key, '--json', '--ledger', redis.url, '--datadir', c.dir]);
      expect((JSON.parse(u.stdout) as { used: number }).used).toBe(8000);
    } finally {
      if (srv !== undefined) await srv.stop();
      await redis?.stop();
      await redis?.cleanup();
      await c.cleanup();
    }
  },
);
if (redisServerPath() === undefined) console.log(NO_REDIS);
