// Key security and per-key limits in the serving path (the Gate chain and the transport), in
// process on port 0 with the fake rpc service: API key secret (HTTP and WebSocket upgrade),
// each allowlist type, per-key credits/day (429, event -33400) and credits/s (429, event
// -33300), and the per-key usage record (calls, credits, errors by class).
import { createRequire } from 'node:module';
import { toData } from '@chainnode/core';
import { outageStore, transportConfig } from '../src/index.js';
import { EmbeddedUsage, createKey, hashKey, readKeys, readUsage, utcDay, writeKeys } from '@chainnode/accounts';
import type { RunningServer } from '../src/index.js';
import type { KeyRecord } from '@chainnode/accounts';
import { FAKE_COSTS, call, fakeHash, fakeService, fakeStore, post, sleep, tempDir, startOnDatadir } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

function datadir(): string {
  const t = tempDir();
  cleanups.push(t.cleanup);
  return t.dir;
}

async function start(dir: string, outage = false): Promise<{ srv: RunningServer; url: string; ws: string }> {
  const store = outage ? outageStore(fakeStore()) : fakeStore();
  const srv = await startOnDatadir({
    service: fakeService(store),
    store,
    datadir: dir,
    config: transportConfig({}),
    host: '127.0.0.1',
    port: 0,
  });
  cleanups.push(() => srv.close());
  return { srv, url: `http://127.0.0.1:${srv.port}`, ws: `ws://127.0.0.1:${srv.port}` };
}

/** A key (plan custom: no plan throughput limit) whose record is edited before the server starts. */
async function keyWith(dir: string, edit: (r: KeyRecord) => void): Promise<{ key: string; rec: KeyRecord }> {
  const { key, record } = await createKey(dir, { plan: 'custom' });
  const all = readKeys(dir);
  const rec = all.find((k) => k.id === record.id) as KeyRecord;
  edit(rec);
  writeKeys(dir, all);
  return { key, rec };
}

const basic = (user: string, pass: string): string => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
type Err = { code: number; message: string; event?: number; details?: string; data?: { resetsAt?: string } };
type Env = { result?: unknown; error?: Err };
const BLOCK = call('eth_getBlockByNumber', ['0x1', false]);

interface WsLike {
  on(ev: string, cb: (...a: unknown[]) => void): void;
  close(): void;
}
const WsCtor = createRequire(import.meta.url)('ws') as new (
  url: string,
  opts?: { headers?: Record<string, string> },
) => WsLike;
/** Resolves 101 when the upgrade succeeds, else the refusal's HTTP status. */
function upgradeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WsCtor(url, { headers });
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => resolve((res as { statusCode: number }).statusCode));
    ws.on('error', () => {});
  });
}

test('API key secret: optional until required; wrong or missing -> 401 for HTTP and the WebSocket upgrade', async () => {
  const dir = datadir();
  const secret = 'a'.repeat(32);
  const { key, rec } = await keyWith(dir, (r) => {
    r.secretHash = hashKey(secret);
  });
  const { url, ws, srv } = await start(dir);
  // Set but not required: no header is accepted; the right one too; a wrong one never.
  expect((await post(`${url}/v3/${key}`, BLOCK)).status).toBe(200);
  expect((await post(`${url}/v3/${key}`, BLOCK, { authorization: basic('', secret) })).status).toBe(200);
  const wrong = await post(`${url}/v3/${key}`, BLOCK, { authorization: basic('', 'b'.repeat(32)) });
  expect(wrong.status).toBe(401);
  expect((wrong.json as Env).error).toEqual({ code: -32001, message: 'invalid project id or project secret' });
  expect((await post(`${url}/v3/${key}`, BLOCK, { authorization: basic('someone', secret) })).status).toBe(401); // user name must be empty
  expect((await post(`${url}/v3/${key}`, BLOCK, { authorization: `Bearer ${secret}` })).status).toBe(401);
  expect(await upgradeStatus(`${ws}/ws/v3/${key}`)).toBe(101);
  expect(await upgradeStatus(`${ws}/ws/v3/${key}`, { authorization: basic('', 'nope') })).toBe(401);

  // Required: a request without it is refused too (reloaded from keys.json within a second on a
  // quiet machine; the deadline is for a loaded one).
  const all = readKeys(dir);
  (all.find((k) => k.id === rec.id) as KeyRecord).secretRequired = true;
  writeKeys(dir, all);
  const t0 = Date.now();
  let answered = 2; // the two 200s above
  while ((await post(`${url}/v3/${key}`, BLOCK)).status !== 401) {
    answered++;
    expect(Date.now() - t0).toBeLessThan(30_000);
    await sleep(25);
  }
  const missing = await post(`${url}/v3/${key}`, BLOCK);
  expect((missing.json as Env).error?.message).toMatch(/project secret required/);
  expect((await post(`${url}/v3/${key}`, BLOCK, { authorization: basic('', secret) })).status).toBe(200);
  expect(await upgradeStatus(`${ws}/ws/v3/${key}`)).toBe(401);
  expect(await upgradeStatus(`${ws}/ws/v3/${key}`, { authorization: basic('', secret) })).toBe(101);

  // Refusals are 4xx of the key's usage, not charged.
  const day = (await srv.usage.days(rec.id, 1))[0];
  expect(day?.methods['(request)']?.e4xx).toBeGreaterThanOrEqual(5);
  expect(readUsage(dir, utcDay(Date.now())).get(rec.hash)).toBe(80 * (answered + 1));
});

test('allowlists in the serving path: -32002 "rejected due to project ID settings", HTTP 403 alone, per call in a batch, not charged', async () => {
  const dir = datadir();
  const A1 = `0x${'11'.repeat(20)}`;
  const { key, rec } = await keyWith(dir, (r) => {
    r.allowlists = {
      origins: ['https://*.example.com'],
      userAgents: ['MyApp'],
      methods: ['eth_getBlockByNumber', 'eth_getProof'],
      addresses: [A1],
    };
  });
  const { url } = await start(dir);
  const good = { origin: 'https://app.example.com', 'user-agent': 'MyApp/1.0' };
  expect((await post(`${url}/v3/${key}`, BLOCK, good)).status).toBe(200);
  const REJECT = { code: -32002, message: 'rejected due to project ID settings' };
  for (const [headers, body] of [
    [{ ...good, origin: 'https://evil.test' }, BLOCK], // origin
    [{ 'user-agent': 'MyApp/1.0' }, BLOCK], // no Origin header at all
    [{ ...good, 'user-agent': 'curl/8' }, BLOCK], // user agent
    [good, call('eth_getBlockByHash', [toData(fakeHash(1)), false])], // method
    [good, call('eth_getProof', [`0x${'22'.repeat(20)}`, [], 'latest'])], // address
  ] as const) {
    const r = await post(`${url}/v3/${key}`, body, headers);
    expect(r.status).toBe(403);
    expect((r.json as Env).error).toEqual(REJECT);
  }
  expect((await post(`${url}/v3/${key}`, call('eth_getProof', [A1, [], 'latest']), good)).status).toBe(200);
  // In a batch each call is judged on its own; the batch answers 200.
  const b = await post(`${url}/v3/${key}`, [BLOCK, call('eth_chainId', [], 2)], good);
  expect(b.status).toBe(200);
  const [ok, refused] = b.json as Env[];
  expect(ok?.result).toBeDefined();
  expect(refused?.error).toEqual(REJECT);
  // Charged: 3 block calls (80) + 1 proof (150); the refused ones cost nothing.
  expect(readUsage(dir, utcDay(Date.now())).get(rec.hash)).toBe(80 * 2 + 150);
});

test('per-key credits/day below the plan: 429 with event -33400, the plan balance untouched', async () => {
  const dir = datadir();
  const { key, rec } = await keyWith(dir, (r) => {
    r.limits = { creditsPerDay: 200 };
  });
  const { url } = await start(dir);
  const replies = [];
  for (let i = 0; i < 4; i++) replies.push(await post(`${url}/v3/${key}`, BLOCK));
  expect(replies.map((r) => r.status)).toEqual([200, 200, 429, 429]);
  const e = (replies[2]!.json as Env).error as Err;
  expect(e.code).toBe(429);
  expect(e.event).toBe(-33400);
  expect(e.message).toBe('Too Many Requests');
  expect(e.details).toMatch(/user-defined key daily credit limit/);
  expect(e.data?.resetsAt).toMatch(/T00:00:00\.000Z$/);
  // A cheaper call that still fits: eth_chainId (its cost, from the method table, within the 40 left).
  const chainId = FAKE_COSTS.eth_chainId as number;
  expect(chainId).toBeLessThanOrEqual(200 - 160);
  expect((await post(`${url}/v3/${key}`, call('eth_chainId', []))).status).toBe(200);
  expect(readUsage(dir, utcDay(Date.now())).get(rec.hash)).toBe(160 + chainId);
});

test('per-key credits/second: 429 with event -33300 past the rate, accepted again once it drops', async () => {
  const dir = datadir();
  const { key } = await keyWith(dir, (r) => {
    r.limits = { creditsPerSecond: 160 };
  });
  const { url } = await start(dir);
  // Two calls of 80 fill the bucket; it refills one per 500 ms while the burst runs.
  const t0 = performance.now();
  const burst = await Promise.all(
    Array.from({ length: 10 }, (_, i) => post(`${url}/v3/${key}`, call('eth_getBlockByNumber', ['0x1', false], i))),
  );
  const t1 = performance.now();
  const ok = burst.filter((r) => r.status === 200).length;
  expect(ok).toBeGreaterThanOrEqual(2);
  expect(ok).toBeLessThanOrEqual(2 + Math.floor((t1 - t0) / 500));
  expect(burst.filter((r) => r.status === 429)).toHaveLength(10 - ok);
  expect(ok).toBeLessThan(10);
  const e = (burst.find((r) => r.status === 429)!.json as Env).error as Err;
  expect(e).toMatchObject({ code: 429, event: -33300, message: 'Too Many Requests' });
  expect(e.details).toMatch(/user-defined key throughput limit/);
  await sleep(1100);
  expect((await post(`${url}/v3/${key}`, BLOCK)).status).toBe(200);
});

test('usage record: per key, day and method: calls, credits, errors by class (4xx, 5xx, JSON-RPC); per minute; durable', async () => {
  const dir = datadir();
  const { key, rec } = await keyWith(dir, (r) => {
    r.limits = { creditsPerDay: 245 };
  });
  const { srv, url } = await start(dir);
  await post(`${url}/v3/${key}`, BLOCK); // ok, 80
  await post(`${url}/v3/${key}`, call('eth_getBlockByHash', [toData(fakeHash(2)), false])); // ok, 80
  await post(`${url}/v3/${key}`, call('eth_getBlockByHash', ['0x12', false])); // invalid params: JSON-RPC error, 5 credits (Infura's rule)
  await post(`${url}/v3/${key}`, BLOCK); // ok, 80 (245 reached)
  await post(`${url}/v3/${key}`, BLOCK); // per-key day limit: 4xx
  const day = (await srv.usage.days(rec.id, 1))[0];
  expect(day).toMatchObject({ calls: 5, credits: 245, e4xx: 1, e5xx: 0, erpc: 1 });
  expect(day?.methods['eth_getBlockByNumber']).toEqual({ calls: 3, credits: 160, e4xx: 1, e5xx: 0, erpc: 0 });
  expect(day?.methods['eth_getBlockByHash']).toEqual({ calls: 2, credits: 85, e4xx: 0, e5xx: 0, erpc: 1 });
  const minutes = await srv.usage.minutes(rec.id);
  expect(minutes).toHaveLength(16);
  // Oldest first, one entry a minute; the five calls, a few ms apart, in the last minute, or in
  // the last two when the calls or the read straddle a minute's turn.
  expect(minutes.every((m, i) => i === 0 || (minutes[i - 1]?.minute as string) < m.minute)).toBe(true);
  const busy = minutes.flatMap((m, i) => (m.calls > 0 ? [i] : []));
  expect(busy.reduce((sum, i) => sum + (minutes[i]?.calls ?? 0), 0)).toBe(5);
  expect(['15', '14', '14,15', '13,14']).toContain(busy.join());
  // The 30-day series is zero-filled and ends today.
  const days = await srv.usage.days(rec.id);
  expect(days).toHaveLength(30);
  expect(days[29]?.day).toBe(utcDay(Date.now()));
  // Written to disk (another process, the CLI, reads the same numbers).
  await srv.usage.flush();
  const reader = new EmbeddedUsage(dir);
  expect((await reader.days(rec.id))[29]).toMatchObject({ calls: 5, credits: 245, e4xx: 1, erpc: 1 });
  // The credit ledger agrees with the record's credits.
  expect(readUsage(dir, utcDay(Date.now())).get(rec.hash)).toBe(245);
});

test('usage record: a failure on our side is a 5xx', async () => {
  const dir = datadir();
  const { key, rec } = await keyWith(dir, () => {});
  const { srv, url } = await start(dir, true);
  const r = await post(`${url}/v3/${key}`, BLOCK);
  expect((r.json as Env).error?.code).toBe(-32603);
  expect((await srv.usage.days(rec.id, 1))[0]).toMatchObject({ calls: 1, credits: 0, e5xx: 1 });
});

test('the embedded usage record keeps 30 days and drops older ones', async () => {
  const dir = datadir();
  let now = Date.UTC(2026, 0, 1, 12);
  const u = new EmbeddedUsage(dir, () => now);
  for (let d = 0; d < 40; d++) {
    u.record({ key: 'k', method: 'eth_chainId', credits: d });
    now += 86_400_000;
  }
  now -= 86_400_000;
  await u.close();
  const days = await u.days('k');
  expect(days).toHaveLength(30);
  expect(days.map((d) => d.credits)).toEqual(Array.from({ length: 30 }, (_, i) => i + 10));
  // Reopened from disk: the same 30 days, and the older files are gone.
  const again = new EmbeddedUsage(dir, () => now);
  expect((await again.days('k')).map((d) => d.credits)).toEqual(Array.from({ length: 30 }, (_, i) => i + 10));
  await again.close();
});
