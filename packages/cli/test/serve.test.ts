// Black-box tests of `node-cli serve` + `node-cli keys` as child processes on an imported chain:
// per-method charges (costs read from the rpc method table), key changes seen by a running
// server within a second, durability across a SIGKILL restart, failover against a real partner
// process with NODE_FAULT_INJECT=store-outage, and a clean SIGTERM shutdown.
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { methodCosts } from '@chainnode/rpc';
import { runCli } from '@chainnode/testkit';
import {
  bannerOf,
  createKeyCli,
  jsonRecords,
  metricValue,
  rpc,
  sleep,
  spawnServe,
  usageCli,
  perTest,
} from './serve-helpers.js';
import type { KeyUsageJson, ServeProcess } from './serve-helpers.js';

const costs = methodCosts() as Record<string, number>;

const { cleanups, copy } = perTest();

async function serveOn(dir: string, extra: string[] = [], env: Record<string, string> = {}): Promise<ServeProcess> {
  const s = await spawnServe(dir, extra, env);
  cleanups.push(() => s.stop('SIGKILL'));
  return s;
}

test('keys CLI + serve: every method charged its table cost; new and revoked keys honoured while it runs', async () => {
  const dir = await copy();
  const { key } = await createKeyCli(dir, 'team');
  const s = await serveOn(dir);
  const head = await rpc(s.url(key), 'eth_getBlockByNumber', ['latest', false]);
  const block = head.body.result as { hash: string; number: string; stateRoot: string };
  const calls: [string, unknown[]][] = [
    ['eth_getBlockByNumber', ['0x1', false]],
    ['eth_getBlockByHash', [block.hash, false]],
    ['eth_getStorageAt', ['0x0000000000000000000000000000000000000000', '0x0', 'latest']],
    ['eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x1' }]],
    ['eth_getProof', ['0x0000000000000000000000000000000000000000', [], 'latest']],
    ['eth_getTransactionByHash', [`0x${'00'.repeat(32)}`]],
    ['eth_getUncleByBlockNumberAndIndex', ['0x1', '0x0']],
    ['eth_getUncleByBlockHashAndIndex', [block.hash, '0x0']],
    ['eth_chainId', []],
    ['eth_blockNumber', []],
  ];
  let expected = costs['eth_getBlockByNumber'] as number;
  expect((await usageCli(dir, key)).used).toBe(expected);
  for (const [method, params] of calls) {
    const r = await rpc(s.url(key), method, params);
    expect(r.body.error).toBeUndefined();
    expected += costs[method] as number;
  }
  // The usage for all the calls: the balance, and each method's credits its table cost times its
  // calls (eth_getBlockByNumber twice: the head, block 1). The server writes the per-method record
  // once a second: read until it holds every call (or 3 s have passed).
  const want = Object.fromEntries(
    calls.map(([method]) => {
      const n = method === 'eth_getBlockByNumber' ? 2 : 1;
      return [method, [n, n * (costs[method] as number)]];
    }),
  );
  const methodsOf = (u: KeyUsageJson) => Object.fromEntries(u.methods.map((m) => [m.method, [m.calls, m.credits]]));
  let u = await usageCli(dir, key);
  for (let i = 0; i < 30 && !isDeepStrictEqual(methodsOf(u), want); i++) {
    await sleep(100);
    u = await usageCli(dir, key);
  }
  expect(u.used).toBe(expected);
  expect(u.plan).toBe('team');
  expect(u.remaining).toBe(u.dailyCredits - expected);
  const charged = methodsOf(u);
  expect(charged).toEqual(want);

  // A key created by the CLI while the server runs works (within a second when the machine is
  // not loaded: the deadlines here are for a loaded one); a revoke likewise.
  const fresh = await createKeyCli(dir, 'core');
  const t0 = Date.now();
  while ((await rpc(s.url(fresh.key), 'eth_blockNumber', [])).status !== 200) {
    expect(Date.now() - t0).toBeLessThan(30_000);
    await sleep(20);
  }
  const rv = await runCli(['keys', 'revoke', fresh.key, '--datadir', dir]);
  expect(rv.code).toBe(0);
  const t1 = Date.now();
  while ((await rpc(s.url(fresh.key), 'eth_blockNumber', [])).status !== 401) {
    expect(Date.now() - t1).toBeLessThan(30_000);
    await sleep(20);
  }
  // keys list never prints keys.
  const list = await runCli(['keys', 'list', '--datadir', dir]);
  expect(list.stdout).not.toContain(key);
  expect(list.stdout).toContain(fresh.id);
  expect(s.output()).not.toContain(key);
});

test('exhaustion and durability: 402 past the balance, and a SIGKILL restart neither refunds nor double-charges', async () => {
  const dir = await copy();
  const cost = costs['eth_getBlockByNumber'] as number;
  const { key } = await createKeyCli(dir, 'core', ['--daily-credits', String(cost * 5)]);
  const s1 = await serveOn(dir);
  const replies = await Promise.all(
    Array.from({ length: 8 }, (_, i) => rpc(s1.url(key), 'eth_getBlockByNumber', ['0x1', false], i)),
  );
  expect(replies.filter((r) => r.status === 200)).toHaveLength(5);
  const limited = replies.filter((r) => r.status === 402);
  expect(limited).toHaveLength(3);
  const err = limited[0]?.body.error as {
    code: number;
    event?: number;
    message: string;
    details?: string;
    data?: { resetsAt?: string };
  };
  expect([err.code, err.event, err.message]).toEqual([402, -33000, 'Payment Required']);
  expect(err.details).toMatch(
    /^You have reached your daily credit limit\. .*resets at \d{4}-\d\d-\d\dT00:00:00.000Z\.$/,
  );
  expect(err.data?.resetsAt).toMatch(/^\d{4}-\d\d-\d\dT00:00:00.000Z$/);
  expect(await s1.stop('SIGKILL')).toBeNull();
  expect((await usageCli(dir, key)).used).toBe(cost * 5);
  const s2 = await serveOn(dir);
  expect((await rpc(s2.url(key), 'eth_getBlockByNumber', ['0x1', false])).status).toBe(402);
  expect((await usageCli(dir, key)).used).toBe(cost * 5);
});

test('failover: a growth key gets eth_getBlockByHash from the partner process during an injected outage', async () => {
  const partnerDir = await copy();
  const partnerKey = (await createKeyCli(partnerDir, 'custom')).key;
  const partner = await serveOn(partnerDir);
  const dir = await copy();
  const growth = (await createKeyCli(dir, 'growth')).key;
  const custom = (await createKeyCli(dir, 'custom')).key;
  const core = (await createKeyCli(dir, 'core')).key;
  const down = await serveOn(dir, ['--failover-url', partner.url(partnerKey)], { NODE_FAULT_INJECT: 'store-outage' });
  expect(down.output()).toContain('fault injection active');

  const b1 = await rpc(partner.url(partnerKey), 'eth_getBlockByNumber', ['0x1', false]);
  const hash = (b1.body.result as { hash: string }).hash;
  const direct = await rpc(partner.url(partnerKey), 'eth_getBlockByHash', [hash, true]);
  for (const k of [growth, custom]) {
    const fwd = await rpc(down.url(k), 'eth_getBlockByHash', [hash, true], 77);
    expect(fwd.status).toBe(200);
    expect(fwd.body.id).toBe(77);
    expect(fwd.body.result).toEqual(direct.body.result);
  }
  const coreReply = await rpc(down.url(core), 'eth_getBlockByHash', [hash, true]);
  expect(coreReply.body.error?.code).toBe(-32603);
  const otherMethod = await rpc(down.url(growth), 'eth_getBlockByNumber', ['0x1', false]);
  expect(otherMethod.body.error?.code).toBe(-32603);
  // eth_getLogs runs in an offload worker (offloadWorkers defaults to 1), whose store has the fault too.
  expect(down.output()).toContain('offloaded calls run in 1 worker thread');
  const logs = await rpc(down.url(core), 'eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x10' }]);
  expect(logs.body.error).toEqual({ code: -32603, message: 'internal error' });
  expect((await fetch(`${down.base}/health`)).status).toBe(503);
  expect((await usageCli(dir, core)).used).toBe(0);
  expect((await usageCli(dir, growth)).used).toBe(costs['eth_getBlockByHash']);
});

// One server for both: the SIGTERM stop is the same with the log format given or taken by default
// (JSON, stdout and stderr being pipes here).
test('SIGTERM exits 0 after closing the store (the datadir opens again at once; SIGINT exits 0 too); --log-format json: every line on stdout and stderr is a JSON record; the banner is one info line', async () => {
  const dir = await copy();
  const { key } = await createKeyCli(dir, 'core');
  const s = await spawnServe(dir, ['--log-format', 'json', '--threads', '1', '--metrics-port', '0']);
  expect((await rpc(s.url(key), 'eth_blockNumber', [])).status).toBe(200);
  expect(await s.stop('SIGTERM')).toBe(0);
  const out = jsonRecords(s.stdout());
  const err = jsonRecords(s.stderr());
  expect(err.map((r) => r['msg'])).toContain('stopped cleanly');
  // The banner: one info line of the log's format, the listening address as its fields.
  const banners = [...out, ...err].filter((r) => String(r['msg']).startsWith('listening on'));
  expect(banners).toHaveLength(1);
  expect(banners[0]).toMatchObject({
    level: 'info',
    component: 'serve',
    network: null,
    msg: `listening on 127.0.0.1:${s.port}`,
    host: '127.0.0.1',
    port: s.port,
    threads: 1,
    ledger: 'embedded',
    http: `http://127.0.0.1:${s.port}/v3/`,
    ws: `ws://127.0.0.1:${s.port}/ws/v3/`,
    health: `http://127.0.0.1:${s.port}/health`,
  });
  expect(bannerOf(s.output()).metrics).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  const again = await serveOn(dir); // every handle on the datadir is closed
  expect((await rpc(again.url(key), 'eth_blockNumber', [])).status).toBe(200);
  expect(await again.stop('SIGINT')).toBe(0);
});

test('SIGTERM with eth_getLogs in flight in the offload worker: answered in full, then workers and store close, exit 0', async () => {
  const dir = await copy();
  const { key } = await createKeyCli(dir, 'custom');
  // 32 calls of ~1,000-2,000 logs each, answered one after the other (a batch): over a second of
  // work on a 2-core machine, so the signal sent once the first is answered finds it in flight.
  const batch = JSON.stringify(
    Array.from({ length: 32 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'eth_getLogs',
      params: [
        { fromBlock: `0x${(0x100 + i * 0x20).toString(16)}`, toBlock: `0x${(0x100 + i * 0x20 + 0x48).toString(16)}` },
      ],
    })),
  );
  const post = async (url: string): Promise<string> =>
    (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: batch })).text();
  // The same batch answered inline (offloadWorkers 0) is what the worker must answer.
  // The whole answer (~36 MB) is over the default batch answer limit (25 MB, geth's): raised here.
  const inlineConfig = join(dirname(dir), 'inline.json');
  await writeFile(inlineConfig, JSON.stringify({ offloadWorkers: 0, maxBatchResponseBytes: 100_000_000 }));
  // The grace a drain waits for in-flight requests raised from its 10 s: on a loaded machine this
  // batch can take longer than that, and what is checked here is that it is finished, not cut.
  const workerConfig = join(dirname(dir), 'worker.json');
  await writeFile(workerConfig, JSON.stringify({ maxBatchResponseBytes: 100_000_000, shutdownGraceMs: 300_000 }));
  const inline = await spawnServe(dir, ['--config', inlineConfig]);
  expect(inline.output()).not.toContain('worker thread');
  const want = await post(inline.url(key));
  expect(await inline.stop('SIGTERM')).toBe(0);
  const replies = JSON.parse(want) as { id: number; result?: unknown[] }[];
  expect(replies.map((r) => r.id)).toEqual(Array.from({ length: 32 }, (_, i) => i));
  for (const r of replies) expect(r.result?.length).toBeGreaterThan(1_000);

  // With app threads (the default, one per core): the drain on SIGTERM is checked here for a
  // server with app threads; a single-thread server cut this batch off in flight (not covered).
  const s = await spawnServe(dir, ['--config', workerConfig, '--threads', 'cores', '--metrics-port', '0']);
  expect(s.output()).toContain('offloaded calls run in 1 worker thread');
  let answeredAt = 0;
  const answer = post(s.url(key)).then((text) => {
    answeredAt = Date.now();
    return text;
  });
  // The signal once the worker has answered the batch's first call (the rest still to come),
  // rather than after a fixed wait a loaded machine may not have read the request in.
  const metrics = bannerOf(s.output()).metrics as string;
  const t0 = Date.now();
  while ((await metricValue(metrics, 'chainnode_offloaded_calls_total')) < 1) {
    if (Date.now() - t0 > 60_000) throw new Error('no offloaded call answered within 60 s');
    await sleep(10);
  }
  const signalledAt = Date.now();
  const exited = s.stop('SIGTERM');
  expect(await answer).toBe(want);
  expect(answeredAt).toBeGreaterThan(signalledAt); // it was in flight when the signal came
  expect(await exited).toBe(0);
  expect(s.output()).toContain('stopped cleanly');
  const again = await serveOn(dir); // every handle on the datadir is closed
  expect((await rpc(again.url(key), 'eth_blockNumber', [])).status).toBe(200);
});
