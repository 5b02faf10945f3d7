// Transport, auth, credits, failover and hygiene of the uWS server, in process on port 0 with
// a fake rpc service (the contract of packages/rpc/src/service.ts) over a fake store.
import { request as httpRequest } from 'node:http';
import { toData } from '@chainnode/core';
import type { ChainStore } from '@chainnode/core';
import { outageStore, transportConfig } from '../src/index.js';
import { createKey, nextUtcMidnight, readUsage, revokeKey, utcDay } from '@chainnode/accounts';
import type { RunningServer, TransportConfig } from '../src/index.js';
import type { RpcServiceApi } from '@chainnode/rpc';
import {
  FAKE_COSTS,
  call,
  fakeHash,
  fakeService,
  fakeStore,
  post,
  sleep,
  tempDir,
  wsOpen,
  startOnDatadir,
} from './helpers.js';

interface Running {
  srv: RunningServer;
  url: string;
  ws: string;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function start(
  dir: string,
  opts: {
    store?: ChainStore;
    service?: RpcServiceApi;
    config?: Partial<TransportConfig>;
    failoverUrl?: string;
    metricsPort?: number;
    log?: (line: string) => void;
  } = {},
): Promise<Running> {
  const store = opts.store ?? fakeStore();
  const srv = await startOnDatadir({
    service: opts.service ?? fakeService(store),
    store,
    datadir: dir,
    config: transportConfig(opts.config ?? {}),
    host: '127.0.0.1',
    port: 0,
    ...(opts.failoverUrl !== undefined ? { failoverUrl: opts.failoverUrl } : {}),
    ...(opts.metricsPort !== undefined ? { metricsPort: opts.metricsPort } : {}),
    ...(opts.log !== undefined ? { log: opts.log } : {}),
  });
  cleanups.push(() => srv.close());
  return { srv, url: `http://127.0.0.1:${srv.port}`, ws: `ws://127.0.0.1:${srv.port}` };
}

function datadir(): string {
  const t = tempDir();
  cleanups.push(t.cleanup);
  return t.dir;
}

const used = (dir: string, hash: string): number => readUsage(dir, utcDay(Date.now())).get(hash) ?? 0;

type Envelope = {
  id?: unknown;
  result?: { hash?: string };
  error?: { code: number; message: string; data?: { resetsAt?: string } };
};

test('answers single calls and batches over HTTP and charges each method its cost', async () => {
  const dir = datadir();
  const { key, record } = await createKey(dir, { plan: 'core' });
  const { url } = await start(dir);
  const r1 = await post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x3', false]));
  expect(r1.status).toBe(200);
  expect((r1.json as Envelope).result?.hash).toBe(toData(fakeHash(3)));
  expect(used(dir, record.hash)).toBe(80);
  const r2 = await post(`${url}/v3/${key}`, [
    call('eth_getBlockByHash', [toData(fakeHash(2)), false], 7),
    call('eth_getProof', [], 8),
  ]);
  expect(r2.status).toBe(200);
  const batch = r2.json as Envelope[];
  expect(batch.map((e) => e.id)).toEqual([7, 8]);
  expect(batch[0]?.result?.hash).toBe(toData(fakeHash(2)));
  expect(used(dir, record.hash)).toBe(80 + 80 + 150);
  // Request errors cost 5 credits: bad params, an unknown method, a body that is not JSON.
  await post(`${url}/v3/${key}`, call('eth_getBlockByHash', ['0x12', false]));
  expect(used(dir, record.hash)).toBe(315);
  await post(`${url}/v3/${key}`, call('eth_nope', []));
  expect(used(dir, record.hash)).toBe(320);
  await post(`${url}/v3/${key}`, '{not json');
  expect(used(dir, record.hash)).toBe(325);
  // In a batch each call is charged on its own: 80 + 5 + 5.
  await post(`${url}/v3/${key}`, [
    call('eth_getBlockByNumber', ['0x1', false], 1),
    call('eth_getBlockByNumber', ['nope'], 2),
    call('eth_nope', [], 3),
  ]);
  expect(used(dir, record.hash)).toBe(415);
});

test('missing, unknown and revoked keys: 401 with a JSON-RPC error, WS upgrade refused, nothing charged', async () => {
  const dir = datadir();
  const { key, record } = await createKey(dir, { plan: 'core' });
  await revokeKey(dir, key);
  const { url, ws } = await start(dir);
  for (const path of ['/v3', '/v3/', '/v3/00000000000000000000000000000000', `/v3/${key}`]) {
    const r = await post(`${url}${path}`, call('eth_getBlockByNumber', ['0x1', false]));
    expect(r.status).toBe(401);
    const env = r.json as Envelope;
    expect(env.error?.code).toBe(-32001);
    expect(env.error?.message).toMatch(/API key/);
    expect(r.text).not.toContain(key);
  }
  for (const path of ['/ws/v3/00000000000000000000000000000000', `/ws/v3/${key}`, '/ws/v3', '/ws/v3/']) {
    await expect(wsOpen(`${ws}${path}`)).rejects.toThrow('upgrade refused: 401');
  }
  expect(used(dir, record.hash)).toBe(0);
});

test('a running server honours a new key and a revocation', async () => {
  const dir = datadir();
  await createKey(dir, { plan: 'core' }); // the file exists before start
  const { url } = await start(dir);
  const { key } = await createKey(dir, { plan: 'developer' });
  // Within a second on a quiet machine (the key file's watch); the deadline is for a loaded one.
  const waitFor = async (status: number): Promise<void> => {
    const t0 = Date.now();
    for (;;) {
      const r = await post(`${url}/v3/${key}`, call('eth_chainId', []));
      if (r.status === status) return;
      if (Date.now() - t0 > 30_000) throw new Error(`still ${r.status} after 30 s`);
      await sleep(25);
    }
  };
  await waitFor(200);
  await revokeKey(dir, key);
  await waitFor(401);
});

test("daily credits exhausted: HTTP 402 with Infura's body and data.resetsAt, free; a batch charges each call on its own", async () => {
  const dir = datadir();
  const { key, record } = await createKey(dir, { plan: 'core', dailyCredits: 200 });
  const { url } = await start(dir);
  for (let i = 0; i < 2; i++)
    expect((await post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false]))).status).toBe(200);
  const r = await post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false], 42));
  expect(r.status).toBe(402);
  const resets = nextUtcMidnight(Date.now()).toISOString();
  // Byte for byte: Infura's member order (code, event, message, details) plus data.resetsAt.
  expect(r.text).toBe(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 42,
      error: {
        code: 402,
        event: -33000,
        message: 'Payment Required',
        details: `You have reached your daily credit limit. To continue making requests, upgrade your plan or purchase additional credits. The balance resets at ${resets}.`,
        data: { resetsAt: resets },
      },
    }),
  );
  expect(used(dir, record.hash)).toBe(160);
  // A free call still passes (cost 0 never touches the ledger): eth_chainId, free in the method table.
  expect(FAKE_COSTS.eth_chainId).toBe(0);
  expect((await post(`${url}/v3/${key}`, call('eth_chainId', []))).status).toBe(200);

  const b = await createKey(dir, { plan: 'core', dailyCredits: 250 });
  await sleep(700); // let the server pick up the new key
  const rb = await post(`${url}/v3/${b.key}`, [
    call('eth_getProof', [], 1),
    call('eth_getBlockByNumber', ['0x1', false], 2),
    call('eth_getBlockByNumber', ['0x2', false], 3),
  ]);
  expect(rb.status).toBe(200); // a batch answers 200; the refused call carries the 402 error object
  const out = rb.json as (Envelope & { error?: { event?: number } })[];
  expect(out[0]?.result).toBeDefined();
  expect(out[1]?.result?.hash).toBe(toData(fakeHash(1)));
  expect(out[2]?.error?.code).toBe(402);
  expect(out[2]?.error?.event).toBe(-33000);
  expect(used(dir, b.record.hash)).toBe(230);
});

test('throughput: past the credits per second HTTP 429 with event -33200, free; the bucket refills', async () => {
  const dir = datadir();
  const { key, record } = await createKey(dir, { plan: 'core', creditsPerSecond: 400 }); // 5 calls of 80 at once
  const { url } = await start(dir);
  // 16 at once: more than the bucket and what it refills unless their answers take 2 s.
  const t0 = performance.now();
  const replies = await Promise.all(
    Array.from({ length: 16 }, (_, i) => post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false], i))),
  );
  const t1 = performance.now();
  const ok = replies.filter((x) => x.status === 200);
  const limited = replies.filter((x) => x.status === 429);
  expect(ok.length).toBeGreaterThanOrEqual(5);
  // The bucket refills 0.4 credits per ms while they run: one more call of 80 per 200 ms they took.
  expect(ok.length).toBeLessThanOrEqual(5 + Math.floor((t1 - t0) / 200));
  expect(limited.length).toBeGreaterThan(0);
  expect(limited.length).toBe(16 - ok.length);
  expect(limited[0]?.json).toEqual({
    jsonrpc: '2.0',
    id: (limited[0]!.json as Envelope).id,
    error: {
      code: 429,
      event: -33200,
      message: 'Too Many Requests',
      details:
        'You have surpassed your allowed throughput limit. Reduce the amount of requests per second or upgrade for more capacity.',
    },
  });
  expect(used(dir, record.hash)).toBe(80 * ok.length);
  await sleep(1000);
  expect((await post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false]))).status).toBe(200);
});

test('WebSocket: the 402 reply is sent, then every socket of that key is closed; other keys keep theirs', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'core', dailyCredits: 80 });
  const other = await createKey(dir, { plan: 'core' });
  const { ws } = await start(dir);
  const a = await wsOpen(`${ws}/ws/v3/${key}`);
  const b = await wsOpen(`${ws}/ws/v3/${key}`);
  const c = await wsOpen(`${ws}/ws/v3/${other.key}`);
  expect(((await a.request(call('eth_getBlockByNumber', ['0x1', false], 1))) as Envelope).result?.hash).toBe(
    toData(fakeHash(1)),
  );
  const refused = (await a.request(call('eth_getBlockByNumber', ['0x1', false], 2))) as Envelope;
  expect(refused.error?.code).toBe(402);
  expect(await a.closed).toBe(1008);
  expect(await b.closed).toBe(1008);
  expect(((await c.request(call('eth_getBlockByNumber', ['0x3', false], 3))) as Envelope).result?.hash).toBe(
    toData(fakeHash(3)),
  );
  c.ws.close();
});

test('150 concurrent calls against a balance of 100 calls: exactly 100 succeed', async () => {
  const dir = datadir();
  const { key, record } = await createKey(dir, { plan: 'core', dailyCredits: 100 * 80, creditsPerSecond: 0 });
  const { url } = await start(dir, { store: fakeStore(10, 5) });
  const replies = await Promise.all(
    Array.from({ length: 150 }, (_, i) => post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false], i))),
  );
  const ok = replies.filter((r) => r.status === 200 && (r.json as Envelope).result !== undefined);
  const limited = replies.filter((r) => r.status === 402 && (r.json as Envelope).error?.code === 402);
  expect(ok).toHaveLength(100);
  expect(limited).toHaveLength(50);
  expect(used(dir, record.hash)).toBe(8000);
});

test('charges survive a restart: no refund, no double charge', async () => {
  const dir = datadir();
  const { key, record } = await createKey(dir, { plan: 'core', dailyCredits: 300 });
  const first = await start(dir);
  for (let i = 0; i < 3; i++) await post(`${first.url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false]));
  await first.srv.close();
  expect(used(dir, record.hash)).toBe(240);
  const second = await start(dir);
  const r = await post(`${second.url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false]));
  expect(r.status).toBe(402); // 240 + 80 > 300: the earlier charges still count
  expect(used(dir, record.hash)).toBe(240);
});

test('WebSocket: same envelopes in and out, charged like HTTP', async () => {
  const dir = datadir();
  const { key, record } = await createKey(dir, { plan: 'team' });
  const { ws } = await start(dir);
  const conn = await wsOpen(`${ws}/ws/v3/${key}`);
  const single = (await conn.request(call('eth_getBlockByNumber', ['0x4', false], 5))) as Envelope;
  expect(single.id).toBe(5);
  expect(single.result?.hash).toBe(toData(fakeHash(4)));
  const batch = (await conn.request([
    call('eth_getBlockByHash', [toData(fakeHash(1)), false], 1),
    call('eth_chainId', [], 2),
  ])) as Envelope[];
  expect(batch).toHaveLength(2);
  expect(batch[0]?.result?.hash).toBe(toData(fakeHash(1)));
  const bad = (await conn.request('{not json')) as Envelope;
  expect(bad.error?.code).toBe(-32700);
  // Two block calls, eth_chainId at its table cost, and a request error (5).
  expect(used(dir, record.hash)).toBe(80 + 80 + (FAKE_COSTS.eth_chainId as number) + 5);
  conn.ws.close();
});

test('CORS: preflight answered, responses carry the allow-origin header', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'core' });
  const { url } = await start(dir);
  const pre = await fetch(`${url}/v3/${key}`, {
    method: 'OPTIONS',
    headers: {
      origin: 'https://dapp.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type',
    },
  });
  expect(pre.status).toBe(204);
  expect(pre.headers.get('access-control-allow-origin')).toBe('*');
  expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
  expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
  const r = await post(`${url}/v3/${key}`, call('eth_chainId', []), { origin: 'https://dapp.example' });
  expect(r.headers.get('access-control-allow-origin')).toBe('*');

  // A restricted origin list echoes allowed origins only.
  const dir2 = datadir();
  const k2 = await createKey(dir2, { plan: 'core' });
  const s2 = await start(dir2, { config: { corsOrigins: ['https://good.example'] } });
  const good = await post(`${s2.url}/v3/${k2.key}`, call('eth_chainId', []), { origin: 'https://good.example' });
  expect(good.headers.get('access-control-allow-origin')).toBe('https://good.example');
  const evil = await post(`${s2.url}/v3/${k2.key}`, call('eth_chainId', []), { origin: 'https://evil.example' });
  expect(evil.headers.get('access-control-allow-origin')).toBeNull();
});

/** POSTs without a content-length (chunked), so the limit is enforced while streaming. */
function postChunked(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    for (let i = 0; i < body.length; i += 1024) req.write(body.slice(i, i + 1024));
    req.end();
  });
}

test('oversized bodies get 413 (declared or streamed), oversized WS messages close the socket', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'core' });
  const { url, ws } = await start(dir, { config: { maxBodyBytes: 4096, wsMaxPayloadBytes: 4096 } });
  const big = JSON.stringify(call('eth_getBlockByNumber', ['0x1', false, 'x'.repeat(5000)]));
  const r = await post(`${url}/v3/${key}`, big);
  expect(r.status).toBe(413);
  expect((r.json as Envelope).error?.message).toContain('4096');
  expect(await postChunked(`${url}/v3/${key}`, big)).toBe(413);
  const conn = await wsOpen(`${ws}/ws/v3/${key}`);
  conn.ws.send(big);
  expect([1006, 1009]).toContain(await conn.closed); // uWS drops the connection
  const ok = await post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false]));
  expect((ok.json as Envelope).result?.hash).toBe(toData(fakeHash(1)));
});

test('fuzz: thousands of malformed requests, then the server still answers correctly', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'custom' });
  const { url, ws } = await start(dir, { config: { maxBodyBytes: 8192 } });
  let seed = 12345;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const valid = JSON.stringify([
    call('eth_getBlockByNumber', ['0x1', true]),
    call('eth_getBlockByHash', [toData(fakeHash(1)), false]),
  ]);
  const pieces = [
    '{',
    '}',
    '[',
    ']',
    '"',
    ':',
    ',',
    'null',
    '0x',
    '"jsonrpc"',
    '"2.0"',
    '"method"',
    '"params"',
    '"id"',
    '1e999',
    '-0',
    '\\u0000',
    'true',
    '\u00ff',
    '\ud800',
  ];
  const mutate = (): string => {
    switch (rnd(5)) {
      case 0: // random bytes as latin1
        return Array.from({ length: rnd(200) }, () => String.fromCharCode(rnd(256))).join('');
      case 1: // token soup
        return Array.from({ length: rnd(40) }, () => pieces[rnd(pieces.length)]).join('');
      case 2: {
        // a valid batch with a byte flipped, truncated or duplicated
        const i = rnd(valid.length);
        return (
          valid.slice(0, i) +
          String.fromCharCode(rnd(128)) +
          valid.slice(i + (rnd(2) ? 1 : 0), rnd(2) ? valid.length : i + rnd(valid.length))
        );
      }
      case 3: // well-formed JSON of the wrong shape
        return JSON.stringify(
          [
            { jsonrpc: '2.0', id: { x: 1 }, method: 7, params: 'no' },
            [],
            1,
            null,
            { method: 'eth_getBlockByHash', params: [null, null] },
          ][rnd(5)],
        );
      default: // wrong params to real methods
        return JSON.stringify(
          call(['eth_getBlockByHash', 'eth_getBlockByNumber', 'eth_getProof'][rnd(3)] as string, [
            rnd(2) ? `0x${'g'.repeat(rnd(70))}` : rnd(1e9),
            { a: [] },
          ]),
        );
    }
  };
  const paths = [
    `/v3/${key}`,
    `/v3/${key}`,
    `/v3/${key}`,
    '/v3/',
    `/v3/${key}/x`,
    '/nope',
    '/ws/v3/x',
    `/v3/${key}?a=1`,
  ];
  const allowed = new Set([200, 400, 401, 404, 405, 413]);
  const statuses = new Map<number, number>();
  let i = 0;
  const worker = async (): Promise<void> => {
    while (i < 3000) {
      i++;
      const path = paths[rnd(paths.length)] as string;
      const method = ['POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE'][rnd(6)] as string;
      const res = await fetch(`${url}${path}`, {
        method,
        ...(method === 'GET' ? {} : { body: mutate() }),
        headers: { 'content-type': rnd(4) === 0 ? 'text/plain' : 'application/json' },
      });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (!allowed.has(res.status)) throw new Error(`unexpected status ${res.status}`);
      if (res.status === 200 && text !== '') expect(() => JSON.parse(text)).not.toThrow();
      expect(text).not.toMatch(/at .*\.js:\d+/); // no stack traces
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  expect(statuses.get(200)).toBeGreaterThan(100);
  const conn = await wsOpen(`${ws}/ws/v3/${key}`);
  for (let j = 0; j < 500; j++) {
    const reply = (await conn.request(mutate() || '{')) as Envelope | Envelope[];
    expect(reply).toBeDefined();
  }
  const ok = (await conn.request(call('eth_getBlockByNumber', ['0x5', false]))) as Envelope;
  expect(ok.result?.hash).toBe(toData(fakeHash(5)));
  conn.ws.close();
  const r = await post(`${url}/v3/${key}`, call('eth_getBlockByHash', [toData(fakeHash(7)), false]));
  expect((r.json as Envelope).result?.hash).toBe(toData(fakeHash(7)));
});

test('failover: growth/custom eth_getBlockByHash goes to the partner on outage or timeout; others get an error', async () => {
  const partnerDir = datadir();
  const partnerKey = (await createKey(partnerDir, { plan: 'custom' })).key;
  const partner = await start(partnerDir, { store: fakeStore(20) }); // the partner knows 20 blocks
  const failoverUrl = `${partner.url}/v3/${partnerKey}`;

  const dir = datadir();
  const growth = await createKey(dir, { plan: 'growth' });
  const core = await createKey(dir, { plan: 'core' });
  const down = await start(dir, { store: outageStore(fakeStore(10)), failoverUrl, metricsPort: 0 });
  const h15 = toData(fakeHash(15)); // only the partner has block 15: proves the answer came from it
  const fwd = await post(`${down.url}/v3/${growth.key}`, call('eth_getBlockByHash', [h15, false], 9));
  expect(fwd.status).toBe(200);
  expect((fwd.json as Envelope).id).toBe(9);
  expect((fwd.json as Envelope).result?.hash).toBe(h15);
  expect(used(dir, growth.record.hash)).toBe(80);
  const other = await post(`${down.url}/v3/${growth.key}`, call('eth_getBlockByNumber', ['0x1', false]));
  expect((other.json as Envelope).error?.code).toBe(-32603);
  const coreReply = await post(`${down.url}/v3/${core.key}`, call('eth_getBlockByHash', [h15, false]));
  expect((coreReply.json as Envelope).error?.code).toBe(-32603);
  expect(used(dir, core.record.hash)).toBe(0);
  const m = await (await fetch(`http://127.0.0.1:${down.srv.metricsPort}/metrics`)).text();
  expect(m).toContain('chainnode_rpc_calls_total{method="eth_getBlockByHash",outcome="failover"} 1');
  expect(m).toContain('chainnode_head_block -1');

  // Slow store: past failoverTimeoutMs the call is forwarded.
  const dir2 = datadir();
  const g2 = await createKey(dir2, { plan: 'growth' });
  const slow = await start(dir2, { store: fakeStore(10, 1500), failoverUrl, config: { failoverTimeoutMs: 200 } });
  const fwd2 = await post(`${slow.url}/v3/${g2.key}`, call('eth_getBlockByHash', [h15, false]));
  // Block 15 is the partner's only (the slow store holds 10 and would answer null, which is not
  // forwarded): the answer was forwarded before the store's, and counted as a failover.
  expect((fwd2.json as Envelope).result?.hash).toBe(h15);
  expect(slow.srv.metrics.render()).toContain(
    'chainnode_rpc_calls_total{method="eth_getBlockByHash",outcome="failover"} 1',
  );
});

test('metrics listener is off by default and counts calls, credits and head when on', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'core' });
  const off = await start(dir);
  expect(off.srv.metricsPort).toBeUndefined();
  const dir2 = datadir();
  const k2 = await createKey(dir2, { plan: 'core' });
  const on = await start(dir2, { metricsPort: 0 });
  await post(`${on.url}/v3/${k2.key}`, call('eth_getBlockByNumber', ['0x1', false]));
  await post(`${on.url}/v3/nobody`, call('eth_getBlockByNumber', ['0x1', false]));
  const text = await (await fetch(`http://127.0.0.1:${on.srv.metricsPort}/metrics`)).text();
  expect(text).toContain('chainnode_rpc_calls_total{method="eth_getBlockByNumber",outcome="ok"} 1');
  expect(text).toContain('chainnode_credits_charged_total{method="eth_getBlockByNumber"} 80');
  expect(text).toContain('chainnode_rpc_call_duration_seconds_count{method="eth_getBlockByNumber"} 1');
  expect(text).toContain('chainnode_responses_total{transport="http",status="401"} 1');
  expect(text).toContain('chainnode_head_block 9');
  expect(text).not.toContain(k2.key);
  expect(text).not.toContain(key);
  const health = await fetch(`${on.url}/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'ok', head: '0x9', number: 9 });
});

test('graceful close: in-flight requests finish, new ones are refused', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'core' });
  const store = fakeStore(10, 400);
  const inner = fakeService(store);
  let arrived: () => void = () => {};
  const arrival = new Promise<void>((r) => (arrived = r));
  const service: RpcServiceApi = {
    handle: (...args) => {
      arrived();
      return inner.handle(...args);
    },
  };
  const { url, srv } = await start(dir, { store, service });
  const pending = post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x2', false]));
  await arrival; // in flight (the store answers 400 ms later), not merely sent
  const closing = srv.close();
  const r = await pending;
  expect((r.json as Envelope).result?.hash).toBe(toData(fakeHash(2)));
  await closing;
  await expect(fetch(`${url}/health`)).rejects.toThrow();
});

test('graceful close: past shutdownGraceMs the requests still in flight are cut, and said so', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'core' });
  let arrived: () => void = () => {};
  const arrival = new Promise<void>((r) => (arrived = r));
  const service: RpcServiceApi = {
    handle: () => {
      arrived();
      return new Promise(() => {}); // never answers
    },
  };
  const lines: string[] = [];
  const { url, srv } = await start(dir, { service, config: { shutdownGraceMs: 300 }, log: (l) => lines.push(l) });
  const pending = post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x2', false])).then(
    () => 'answered',
    () => 'cut',
  );
  await arrival;
  const t0 = performance.now();
  await srv.close();
  expect(performance.now() - t0).toBeGreaterThanOrEqual(290); // the grace was waited for
  expect(await pending).toBe('cut');
  expect(lines).toContain('shutdown grace of 300 ms over with 1 request in flight: closing its connection');
});

test('graceful close: long replies in flight reach the client whole (HTTP and WebSocket)', async () => {
  const dir = datadir();
  const { key } = await createKey(dir, { plan: 'core' });
  // Far more than a loopback socket takes at once, so most of each reply is written after close() began.
  const replyOf = (text: string): string => JSON.stringify({ jsonrpc: '2.0', id: 1, result: [text.repeat(1 << 20)] });
  const httpBody = replyOf('0123456789abcdef0123456789abcdef'); // 32 MiB
  const wsBody = replyOf('0123456'); // 7 MiB (uWS ends a WebSocket only after what it has buffered)
  let arrived = 0;
  let allArrived: () => void = () => {};
  const arrivals = new Promise<void>((r) => (allArrived = r));
  let release: () => void = () => {};
  const released = new Promise<void>((r) => (release = r));
  const service: RpcServiceApi = {
    handle: async (body) => {
      if (++arrived === 2) allArrived();
      await released;
      return { body: (JSON.parse(body) as { id: number }).id === 2 ? wsBody : httpBody, batch: false };
    },
  };
  const { srv } = await start(dir, { service });
  const http = post(`http://127.0.0.1:${srv.port}/v3/${key}`, call('eth_getLogs', [{}], 1));
  const ws = await wsOpen(`ws://127.0.0.1:${srv.port}/ws/v3/${key}`);
  const wsReply = ws.request(call('eth_getLogs', [{}], 2));
  await arrivals;
  const closing = srv.close();
  release();
  const r = await http;
  expect(r.text.length).toBe(httpBody.length);
  expect(r.text === httpBody).toBe(true);
  expect(JSON.stringify(await wsReply) === wsBody).toBe(true);
  await closing;
  expect(await ws.closed).toBe(1001);
});
