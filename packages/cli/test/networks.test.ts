// Several networks in one `node-cli serve` process, chosen by Host (docs/networks.md), black box:
// the fixture chain and the execution-apis chain served side by side. Every answer is compared
// with the same chain's own single-network server (`serve --datadir D`), over HTTP and WebSocket;
// one key's credits are charged across both networks against one balance; unknown and disallowed
// networks are refused (404 / 403 -32002) and cost nothing; one network's store failing
// (NODE_FAULT_INJECT=store-outage:<network>) leaves the other answering.
//
// Host routing without DNS: requests go to http://<network>.localhost:<port> with a resolver that
// maps every name to 127.0.0.1, so the Host header is exactly what a client would send.
import { request } from 'node:http';
import type { LookupFunction } from 'node:net';
import { createRequire } from 'node:module';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { methodCosts } from '@chainnode/rpc';
import { chainDir, datadirCopy, runCli, tempDir } from '@chainnode/testkit';
import { bannerOf, createKeyCli, kept, spawnServe, usageCli } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

/** /health's state trie of a datadir imported with the default setting (nothing pruned yet). */
const NEW_DATADIR_TRIE = { mode: 'window', blocks: 90000, trieFrom: 0 };

const haveBoth = chainDir('fixtures') !== undefined && chainDir('execution-apis') !== undefined;
if (!haveBoth) console.log('networks.test: skipped (needs ./fixtures and ../shared/chains/execution-apis)');
const maybe = haveBoth ? test : test.skip;
const costs = methodCosts() as Record<string, number>;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

/** Every name resolves to the loopback (the test's own server). */
const loopback = ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
  if (opts?.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
}) as unknown as LookupFunction;

interface Reply {
  status: number;
  text: string;
  json: { result?: unknown; error?: { code: number; message: string }; [k: string]: unknown };
}

function post(url: string, body: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(
      url,
      {
        method: 'POST',
        lookup: loopback,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, text, json: JSON.parse(text) as Reply['json'] });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

function get(url: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', lookup: loopback }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Reply['json'] = {};
        try {
          json = JSON.parse(text) as Reply['json'];
        } catch {
          // metrics are text
        }
        resolve({ status: res.statusCode ?? 0, text, json });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

// `ws` is installed (a dependency of uWebSockets.js, ethers and viem) but ships no types.
interface WsClient {
  on(ev: 'open', cb: () => void): void;
  on(ev: 'message', cb: (data: Buffer) => void): void;
  on(ev: 'error', cb: (err: Error) => void): void;
  on(ev: 'unexpected-response', cb: (req: unknown, res: { statusCode: number }) => void): void;
  send(data: string): void;
  close(): void;
}
const WsCtor = createRequire(import.meta.url)('ws') as new (url: string, opts: { lookup: LookupFunction }) => WsClient;

/** Opens a WebSocket; resolves with a helper sending one message and awaiting its reply text, or rejects with the upgrade status. */
function wsOpen(url: string): Promise<{ send: (msg: unknown) => Promise<string>; close: () => void }> {
  return new Promise((resolve, reject) => {
    const ws = new WsCtor(url, { lookup: loopback });
    const waiting: ((v: string) => void)[] = [];
    ws.on('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.on('error', reject);
    ws.on('message', (data) => waiting.shift()?.(data.toString('utf8')));
    ws.on('open', () =>
      resolve({
        close: () => ws.close(),
        send: (msg) =>
          new Promise((r) => {
            waiting.push(r);
            ws.send(JSON.stringify(msg));
          }),
      }),
    );
  });
}

const call = (method: string, params: unknown[], id = 1): unknown => ({ jsonrpc: '2.0', id, method, params });

/** The same requests for both chains; answers must match each chain's own server byte for byte. */
function requestsFor(blockOne: string): unknown[] {
  return [
    call('eth_chainId', []),
    call('net_version', []),
    call('eth_blockNumber', []),
    call('eth_getBlockByNumber', ['0x1', true]),
    call('eth_getBlockByNumber', ['latest', false]),
    call('eth_getBlockByHash', [blockOne, false]),
    call('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x8' }]),
    call('eth_getStorageAt', ['0x0000000000000000000000000000000000000000', '0x0', 'latest']),
    call('eth_getUncleByBlockNumberAndIndex', ['0x3', '0x0']),
    [call('eth_blockNumber', [], 7), call('eth_getBlockByNumber', ['0x2', false], 8)],
  ];
}

async function serveOn(dir: string, extra: string[] = [], env: Record<string, string> = {}): Promise<ServeProcess> {
  const s = await spawnServe(dir, extra, env);
  cleanups.push(() => s.stop('SIGKILL'));
  return s;
}

/** Each chain's own answers, from `serve --datadir D` (a single-network server, bare host). */
async function reference(dir: string): Promise<{ blockOne: string; http: string[]; ws: string[] }> {
  const { key } = await createKeyCli(dir, 'custom');
  const s = await serveOn(dir);
  try {
    const b1 = await post(`${s.base}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false]));
    const blockOne = (b1.json.result as { hash: string }).hash;
    const http: string[] = [];
    const reqs = requestsFor(blockOne);
    for (const r of reqs) {
      const reply = await post(`${s.base}/v3/${key}`, r);
      expect(reply.status).toBe(200);
      http.push(reply.text);
    }
    const ws = await wsOpen(s.ws(key));
    const wsTexts: string[] = [];
    for (const r of reqs) wsTexts.push(await ws.send(r));
    ws.close();
    return { blockOne, http, ws: wsTexts };
  } finally {
    await s.stop('SIGTERM');
  }
}

type Reference = Awaited<ReturnType<typeof reference>>;

/** URLs on the test server that pick a network by Host. */
function hostsOf(port: number): {
  at: (net: string, path: string) => string;
  wsAt: (net: string, key: string) => string;
} {
  return {
    at: (net, path) => `http://${net}.localhost:${port}${path}`,
    wsAt: (net, key) => `ws://${net}.localhost:${port}/ws/v3/${key}`,
  };
}

/** 1. The same requests, routed by Host, over HTTP and WebSocket: each chain's own answers. */
async function checkRoutedByHost(port: number, every: string, refA: Reference, refB: Reference): Promise<void> {
  const { at, wsAt } = hostsOf(port);
  for (const [net, ref] of [
    ['fixtures', refA],
    ['execapis', refB],
  ] as const) {
    const reqs = requestsFor(ref.blockOne);
    for (let i = 0; i < reqs.length; i++) {
      const reply = await post(at(net, `/v3/${every}`), reqs[i]);
      expect({ net, i, status: reply.status, text: reply.text }).toEqual({ net, i, status: 200, text: ref.http[i] });
    }
    const ws = await wsOpen(wsAt(net, every));
    for (let i = 0; i < reqs.length; i++)
      expect({ net, i, text: await ws.send(reqs[i]) }).toEqual({ net, i, text: ref.ws[i] });
    ws.close();
  }
  // Host matching ignores case and the port, as DNS does.
  expect((await post(`http://FIXTURES.Localhost:${port}/v3/${every}`, call('eth_chainId', []))).text).toBe(
    refA.http[0],
  );
}

/** 2. One balance across networks: 5 calls' worth, spent on both; the sixth is refused on either. */
async function checkOneBalance(port: number, home: string, small: string, perCall: number): Promise<void> {
  const { at } = hostsOf(port);
  for (const net of ['fixtures', 'execapis', 'fixtures', 'execapis', 'fixtures']) {
    expect((await post(at(net, `/v3/${small}`), call('eth_getBlockByNumber', ['0x1', false]))).status).toBe(200);
  }
  for (const net of ['execapis', 'fixtures']) {
    const r = await post(at(net, `/v3/${small}`), call('eth_getBlockByNumber', ['0x1', false]));
    // The daily balance (the ledger's): Infura's 402 with event -33000, on either network.
    expect(r.status).toBe(402);
    expect(r.json.error?.code).toBe(402);
  }
  const u = await usageCli(home, small);
  expect(u.used).toBe(perCall * 5);
  expect(u.remaining).toBe(0);
  expect(u.byNetwork).toEqual({ fixtures: perCall * 3, execapis: perCall * 2 });
}

/**
 * 3. Unknown network (and a bare host without a default network): 404, nothing charged; a key
 * limited to one network refused on the other.
 */
async function checkRefusals(port: number, home: string, every: string, onlyA: string, refA: Reference): Promise<void> {
  const { at, wsAt } = hostsOf(port);
  const before = await usageCli(home, every);
  const unknown = await post(at('nope', `/v3/${every}`), call('eth_blockNumber', []));
  expect(unknown.status).toBe(404);
  expect(unknown.json.error?.message).toMatch(/^unknown network "nope": this server serves fixtures, execapis/);
  expect((await post(`http://127.0.0.1:${port}/v3/${every}`, call('eth_blockNumber', []))).status).toBe(404);
  await expect(wsOpen(wsAt('nope', every))).rejects.toThrow('upgrade refused: 404');
  // A key limited to `fixtures`: 403 with -32002 on execapis (HTTP and the upgrade), served on fixtures.
  const denied = await post(at('execapis', `/v3/${onlyA}`), call('eth_blockNumber', []));
  expect(denied.status).toBe(403);
  expect(denied.json.error).toEqual({ code: -32002, message: 'API key does not have access to network "execapis"' });
  await expect(wsOpen(wsAt('execapis', onlyA))).rejects.toThrow('upgrade refused: 403');
  expect((await post(at('fixtures', `/v3/${onlyA}`), call('eth_chainId', []))).text).toBe(refA.http[0]);
  const usageOnlyA = await usageCli(home, onlyA);
  // eth_chainId at its table cost; the refusals nothing.
  expect(usageOnlyA).toMatchObject({ used: costs.eth_chainId, networks: ['fixtures'] });
  const after = await usageCli(home, every);
  expect(after.used).toBe(before.used);
}

/**
 * An open WebSocket whose key loses the network (as the dashboard would set it in keys.json):
 * its next calls get -32002 within a second, uncharged.
 */
async function checkNetworkWithdrawn(port: number, home: string): Promise<void> {
  const { wsAt } = hostsOf(port);
  const later = await createKeyCli(home, 'team');
  const open = await wsOpen(wsAt('execapis', later.key));
  expect(JSON.parse(await open.send(call('eth_blockNumber', []))).result).toBe('0x36');
  const file = JSON.parse(await readFile(join(home, 'keys.json'), 'utf8')) as {
    keys: { id: string; networks?: string[] }[];
  };
  for (const k of file.keys) if (k.id === later.id) k.networks = ['fixtures'];
  await writeFile(join(home, 'keys.json.tmp'), JSON.stringify(file));
  await rename(join(home, 'keys.json.tmp'), join(home, 'keys.json'));
  const t0 = Date.now();
  let refused: { error?: { code: number } } = {};
  let answered = 1;
  for (;;) {
    expect(Date.now() - t0).toBeLessThan(30_000); // within a second on a quiet machine
    refused = JSON.parse(await open.send(call('eth_blockNumber', []))) as typeof refused;
    if (refused.error !== undefined) break;
    answered++;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(refused.error.code).toBe(-32002);
  open.close();
  const usedLater = await usageCli(home, later.key);
  expect(usedLater.used).toBe(answered * (costs['eth_blockNumber'] as number));
}

/** Health per network and for the process; metrics labelled by network, each family once. */
async function checkHealthAndMetrics(s: ServeProcess, every: string): Promise<void> {
  const { at } = hostsOf(s.port);
  const health = await get(`http://127.0.0.1:${s.port}/health`);
  expect(health.status).toBe(200);
  expect(health.json).toEqual({
    status: 'ok',
    networks: {
      fixtures: {
        status: 'ok',
        head: '0x640',
        number: 1600,
        stateTrie: NEW_DATADIR_TRIE,
      },
      execapis: { status: 'ok', head: '0x36', number: 54, stateTrie: NEW_DATADIR_TRIE },
    },
  });
  expect((await get(at('execapis', '/health'))).json).toEqual({
    network: 'execapis',
    status: 'ok',
    head: '0x36',
    number: 54,
    stateTrie: NEW_DATADIR_TRIE,
  });
  const metrics = (await get(bannerOf(s.output()).metrics as string)).text;
  expect(metrics).toContain('chainnode_head_block{network="fixtures"} 1600');
  expect(metrics).toContain('chainnode_head_block{network="execapis"} 54');
  expect(metrics).toMatch(/chainnode_credits_charged_total\{network="execapis",method="eth_getBlockByNumber"\} \d+/);
  // The HTTP refusal and the refused upgrade (an upgrade refusal is an HTTP response).
  expect(metrics).toContain('chainnode_responses_total{network="execapis",transport="http",status="403"} 2');
  // Unknown network over HTTP, the bare host, the refused upgrade: no network to count them under.
  expect(metrics).toContain('chainnode_responses_total{transport="http",status="404"} 3');
  expect(metrics.match(/^# TYPE chainnode_rpc_calls_total counter$/gm)).toHaveLength(1);
  expect(s.output()).not.toContain(every);
}

/**
 * 4. Networks from the config file, a default network for bare hosts, and execapis' store
 * failing: fixtures keeps answering exactly as before, execapis answers errors, health says so.
 */
async function checkStoreOutage(
  home: string,
  dirs: { a: string; b: string },
  every: string,
  refA: Reference,
  refB: Reference,
): Promise<void> {
  const { a, b } = dirs;
  await writeFile(
    join(home, 'server.json'),
    JSON.stringify({
      networks: { fixtures: { datadir: a }, execapis: { datadir: b } },
      defaultNetwork: 'fixtures',
    }),
  );
  const f = await serveOn(home, [], { NODE_FAULT_INJECT: 'store-outage:execapis' });
  const atF = (net: string, path: string): string => `http://${net}.localhost:${f.port}${path}`;
  const reqs = requestsFor(refA.blockOne);
  for (let i = 0; i < reqs.length; i++) {
    expect({ i, text: (await post(atF('fixtures', `/v3/${every}`), reqs[i])).text }).toEqual({
      i,
      text: refA.http[i],
    });
    // The bare host is the default network.
    expect({ i, text: (await post(`http://127.0.0.1:${f.port}/v3/${every}`, reqs[i])).text }).toEqual({
      i,
      text: refA.http[i],
    });
  }
  const down = await post(atF('execapis', `/v3/${every}`), call('eth_getBlockByNumber', ['0x1', false]));
  expect(down.json.error?.code).toBe(-32603);
  const downLogs = await post(
    atF('execapis', `/v3/${every}`),
    call('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x8' }]),
  );
  expect(downLogs.json.error?.code).toBe(-32603);
  expect(
    (await post(atF('fixtures', `/v3/${every}`), call('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x8' }]))).text,
  ).toBe(refA.http[6]);
  // eth_chainId needs no store read: the failing network still knows which chain it is.
  expect((await post(atF('execapis', `/v3/${every}`), call('eth_chainId', []))).text).toBe(refB.http[0]);
  const overall = await get(`http://localhost:${f.port}/health`);
  expect(overall.status).toBe(200);
  expect(overall.json).toEqual({
    status: 'degraded',
    networks: {
      fixtures: { status: 'ok', head: '0x640', number: 1600, stateTrie: NEW_DATADIR_TRIE },
      execapis: { status: 'store unavailable' },
    },
  });
  const one = await get(atF('execapis', '/health'));
  expect(one.status).toBe(503);
  expect((await get(atF('fixtures', '/health'))).status).toBe(200);
  expect(await f.stop('SIGTERM')).toBe(0);
}

maybe(
  'two networks in one process: answers by Host match each chain alone; one balance; unknown/disallowed refused; isolated failures',
  async () => {
    const a = await kept(cleanups, datadirCopy('fixtures'));
    const b = await kept(cleanups, datadirCopy('execution-apis'));
    const home = await kept(cleanups, tempDir('chainnode-home-'));

    const refA = await reference(a.dir);
    const refB = await reference(b.dir);
    // The chains differ where it matters: the same request has different answers.
    expect(refA.blockOne).not.toBe(refB.blockOne);
    expect(refA.http[0]).not.toBe(refB.http[0]);

    const every = (await createKeyCli(home.dir, 'custom')).key;
    const onlyA = (await createKeyCli(home.dir, 'team', ['--networks', 'fixtures'])).key;
    const perCall = costs['eth_getBlockByNumber'] as number;
    const small = (await createKeyCli(home.dir, 'core', ['--daily-credits', String(perCall * 5)])).key;

    const nets = ['--network', `fixtures=${a.dir}`, '--network', `execapis=${b.dir}`, '--metrics-port', '0'];
    const s = await serveOn(home.dir, nets);

    await checkRoutedByHost(s.port, every, refA, refB);
    await checkOneBalance(s.port, home.dir, small, perCall);
    await checkRefusals(s.port, home.dir, every, onlyA, refA);
    await checkNetworkWithdrawn(s.port, home.dir);
    await checkHealthAndMetrics(s, every);
    expect(await s.stop('SIGTERM')).toBe(0);
    await checkStoreOutage(home.dir, { a: a.dir, b: b.dir }, every, refA, refB);
  },
);

test('--network is validated: follow URLs, bad names, shared datadirs, unknown default', async () => {
  const home = await tempDir('chainnode-home-');
  cleanups.push(home.cleanup);
  const cases: [string[], RegExp][] = [
    [
      ['--network', `a=${home.dir}/x,follow=http://127.0.0.1:1/`, '--follow', 'http://127.0.0.1:1/'],
      /--follow: with networks, give each network its own/,
    ],
    [['--network', `a=${home.dir}/x,follow=ftp://h/`], /follow: expected an http\(s\):\/\/ or ws\(s\):\/\/ URL/],
    [['--network', `Main_net=${home.dir}/x`], /network name "Main_net"/],
    [['--network', `a=${home.dir}/x`, '--network', `b=${home.dir}/x`], /share the datadir/],
    [['--network', `a=${home.dir}/x`, '--network', `a=${home.dir}/y`], /network "a" given twice/],
    [['--network', `a=${home.dir}/x`, '--default-network', 'b'], /--default-network b: not among the networks \(a\)/],
    [['--network', 'a'], /expected <name>=<datadir>/],
    [
      ['--network', `a=${home.dir}/x,follow=http://127.0.0.1:1/,history=ftp://h/`],
      /history: expected an http\(s\):\/\/ URL/,
    ],
    [
      ['--network', `a=${home.dir}/x,follow=http://127.0.0.1:1/`, '--history-upstream', 'http://127.0.0.1:1/'],
      /--history-upstream: with --network, give each network its own ,history=<URL>/,
    ],
    [['--history-upstream', 'http://127.0.0.1:1/'], /--history-upstream: only with --follow <URL>/],
    [
      ['--network', `a=${home.dir}/x,follow=http://127.0.0.1:1/,ws=http://127.0.0.1:1/`],
      /a: ws: expected a ws\(s\):\/\/ URL/,
    ],
    [
      ['--network', `a=${home.dir}/x,follow=ws://127.0.0.1:1/,ws=ws://127.0.0.1:1/`],
      /ws: the follow URL is a WebSocket already: it subscribes on itself/,
    ],
    [['--follow-ws', 'ws://127.0.0.1:1/'], /--follow-ws: only with --follow <URL>/],
    [
      ['--follow', 'http://127.0.0.1:1/', '--follow-ws', 'https://127.0.0.1:1/'],
      /--follow-ws: expected a ws\(s\):\/\/ URL/,
    ],
    [
      ['--network', `a=${home.dir}/x,follow=http://127.0.0.1:1/`, '--follow-ws', 'ws://127.0.0.1:1/'],
      /--follow-ws: with --network, give each network its own ,ws=<URL>/,
    ],
    [
      ['--network', `a=${home.dir}/x,follow=http://127.0.0.1:1/,history=http://127.0.0.1:2/,ingest=bogus`],
      /ingest: expected "execute" or "replicate", got "bogus"/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(['serve', '--datadir', home.dir, '--port', '0', ...args]);
    expect({ args, code: r.code }).toEqual({ args, code: 1 });
    expect(r.stderr).toMatch(message);
  }
});

maybe('a network with follow=<URL> follows its own upstream while the other network serves unchanged', async () => {
  // Upstream: a chainnode serving the whole execution-apis chain (54 blocks).
  const up = await datadirCopy('execution-apis');
  cleanups.push(up.cleanup);
  const upKey = (await createKeyCli(up.dir, 'custom')).key;
  const upstream = await serveOn(up.dir);
  // The follower starts from the same chain imported to block 20 only.
  const part = await tempDir('chainnode-follow-');
  cleanups.push(part.cleanup);
  const liveDir = join(part.dir, 'live');
  const sync = await runCli([
    'sync',
    '--from',
    chainDir('execution-apis') as string,
    '--datadir',
    liveDir,
    '--to',
    '20',
  ]);
  expect(sync.code).toBe(0);
  const a = await datadirCopy('fixtures');
  cleanups.push(a.cleanup);
  const home = await tempDir('chainnode-home-');
  cleanups.push(home.cleanup);
  const key = (await createKeyCli(home.dir, 'custom')).key;
  const s = await serveOn(home.dir, [
    '--network',
    `fixtures=${a.dir}`,
    '--network',
    `live=${liveDir},follow=${upstream.url(upKey)}`,
    '--poll-ms',
    '50',
    '--metrics-port',
    '0',
  ]);
  expect(s.output()).not.toContain(upKey); // the upstream URL carries a key: never printed
  const at = (net: string): string => `http://${net}.localhost:${s.port}/v3/${key}`;
  const t0 = Date.now();
  for (;;) {
    const n = (await post(at('live'), call('eth_blockNumber', []))).json.result;
    if (n === '0x36') break;
    expect(Date.now() - t0).toBeLessThan(120_000);
    await new Promise((r) => setTimeout(r, 100));
  }
  // What the follower committed answers exactly as the upstream does; fixtures is untouched.
  for (const n of ['0x15', '0x2d', '0x36']) {
    const mine = await post(at('live'), call('eth_getBlockByNumber', [n, true]));
    const theirs = await post(upstream.url(upKey), call('eth_getBlockByNumber', [n, true]));
    expect(mine.text).toBe(theirs.text);
  }
  expect((await post(at('fixtures'), call('eth_blockNumber', []))).json.result).toBe('0x640');
  const health = await get(`http://127.0.0.1:${s.port}/health`);
  expect(health.json['status']).toBe('ok');
  const live = (
    health.json['networks'] as Record<string, { number: number; follow?: { state: string; localHead: number } }>
  )['live'];
  expect(live?.number).toBe(54);
  expect(live?.follow?.localHead).toBe(54);
  expect((health.json['networks'] as Record<string, { follow?: unknown }>)['fixtures']?.follow).toBeUndefined();
  const metrics = (await get(bannerOf(s.output()).metrics as string)).text;
  expect(metrics).toContain('chainnode_follow_local_head_block{network="live"} 54');
  expect(metrics).not.toContain('chainnode_follow_local_head_block{network="fixtures"}');
  expect(await s.stop('SIGTERM')).toBe(0);
});
