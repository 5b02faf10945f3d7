// The dashboard's JSON API, route by route, in process on port 0 over a temp datadir: admin
// token login (wrong, missing, rate-limited), session cookie flags, CSRF refusals, every key
// action, the usage route, and what the static page serves.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { DEFAULT_PLANS, EmbeddedLedger, EmbeddedUsage, FileKeyStore, KeyManager, readKeys } from '@chainnode/accounts';
import type { KeyRecord, KeyView, UsageEvent } from '@chainnode/accounts';
import { createAdminToken, startDashboard } from '../src/index.js';
import type { RunningDashboard } from '../src/index.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

interface Env {
  dir: string;
  base: string;
  origin: string;
  token: string;
  usage: EmbeddedUsage;
  dash: RunningDashboard;
}

async function setup(): Promise<Env> {
  const dir = mkdtempSync(join(tmpdir(), 'chainnode-dash-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const token = createAdminToken(dir);
  const usage = new EmbeddedUsage(dir);
  cleanups.push(() => usage.close());
  const ledger = new EmbeddedLedger(dir);
  cleanups.push(() => ledger.close());
  const keys = new KeyManager({
    keys: new FileKeyStore(dir),
    config: { plans: { ...DEFAULT_PLANS, core: { ...DEFAULT_PLANS.core, dailyCredits: 1000 } } },
    usage,
    balance: (h) => ledger.usage(h),
  });
  const dash = await startDashboard({ datadir: dir, keys, host: '127.0.0.1', port: 0 });
  cleanups.push(() => dash.close());
  const origin = `http://127.0.0.1:${dash.port}`;
  return { dir, base: origin, origin, token, usage, dash };
}

interface Res {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { error?: string };
  text: string;
}

async function req(
  env: Env,
  method: string,
  path: string,
  opts: { body?: unknown; cookie?: string; csrf?: string; headers?: Record<string, string> } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
  if (method !== 'GET' && headers['origin'] === undefined && !('no-origin' in headers)) headers['origin'] = env.origin;
  delete headers['no-origin'];
  if (opts.cookie) headers['cookie'] = opts.cookie;
  if (opts.csrf) headers['x-csrf-token'] = opts.csrf;
  const res = await fetch(`${env.base}${path}`, {
    method,
    headers,
    ...(opts.body === undefined ? {} : { body: typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) }),
  });
  const text = await res.text();
  let body: Res['body'] = {};
  try {
    body = JSON.parse(text) as Res['body'];
  } catch {
    // static files
  }
  return { status: res.status, headers: res.headers, body, text };
}

async function login(env: Env): Promise<{ cookie: string; csrf: string }> {
  const r = await req(env, 'POST', '/api/login', { body: { token: env.token } });
  expect(r.status).toBe(200);
  const set = r.headers.get('set-cookie') ?? '';
  return { cookie: set.split(';')[0] as string, csrf: r.body['csrf'] as string };
}

test('login: wrong or missing admin token -> 401; the right one -> HttpOnly SameSite=Strict session cookie and a CSRF token', async () => {
  const env = await setup();
  expect((await req(env, 'POST', '/api/login', { body: { token: 'cna_wrong' } })).status).toBe(401);
  expect((await req(env, 'POST', '/api/login', { body: {} })).status).toBe(400);
  expect((await req(env, 'POST', '/api/login', { body: { token: '' } })).status).toBe(401);
  const r = await req(env, 'POST', '/api/login', { body: { token: env.token } });
  expect(r.status).toBe(200);
  const set = r.headers.get('set-cookie') ?? '';
  expect(set).toMatch(/^chainnode_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/); // no Secure over plain HTTP
  expect(set).not.toContain(env.token);
  expect(r.body['csrf']).toMatch(/^[A-Za-z0-9_-]{43}$/);
  // Only the hash of the admin token is on disk.
  const stored = readFileSync(join(env.dir, 'admin.json'), 'utf8');
  expect(stored).not.toContain(env.token);
  expect(stored).toContain(createHash('sha256').update(env.token).digest('hex'));
  // The token is created once.
  expect(() => createAdminToken(env.dir)).toThrow(/exists already/);
});

test('login is rate-limited: after 5 wrong tokens from one client, 429 with Retry-After even for the right one', async () => {
  const env = await setup();
  for (let i = 0; i < 5; i++)
    expect((await req(env, 'POST', '/api/login', { body: { token: `cna_guess${i}` } })).status).toBe(401);
  const r = await req(env, 'POST', '/api/login', { body: { token: env.token } });
  expect(r.status).toBe(429);
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
});

test('every API route needs a session: 401 without a cookie and with a forged one', async () => {
  const env = await setup();
  const id = '0123456789ab';
  const routes: Array<[string, string]> = [
    ['GET', '/api/plans'],
    ['GET', '/api/keys'],
    ['POST', '/api/keys'],
    ['GET', `/api/keys/${id}`],
    ['PATCH', `/api/keys/${id}`],
    ['POST', `/api/keys/${id}/revoke`],
    ['POST', `/api/keys/${id}/rotate`],
    ['POST', `/api/keys/${id}/secret`],
    ['DELETE', `/api/keys/${id}/secret`],
    ['GET', `/api/keys/${id}/usage`],
    ['POST', '/api/logout'],
  ];
  for (const [m, p] of routes) {
    expect([m, p, (await req(env, m, p, { body: m === 'GET' || m === 'DELETE' ? undefined : {} })).status]).toEqual([
      m,
      p,
      401,
    ]);
    expect([
      m,
      p,
      (
        await req(env, m, p, {
          cookie: `chainnode_session=${'A'.repeat(43)}`,
          body: m === 'GET' || m === 'DELETE' ? undefined : {},
        })
      ).status,
    ]).toEqual([m, p, 401]);
  }
  expect((await req(env, 'GET', '/api/nope')).status).toBe(404);
  expect((await req(env, 'GET', '/api/session')).body).toEqual({ loggedIn: false });
});

test('CSRF: a state-changing call needs the same origin AND the session CSRF token', async () => {
  const env = await setup();
  const { cookie, csrf } = await login(env);
  const body = { name: 'x', plan: 'core' };
  // No token / wrong token.
  expect((await req(env, 'POST', '/api/keys', { cookie, body })).status).toBe(403);
  expect((await req(env, 'POST', '/api/keys', { cookie, csrf: 'A'.repeat(43), body })).status).toBe(403);
  // Right token, but from another origin, or a cross-site fetch, or no origin information at all.
  expect(
    (await req(env, 'POST', '/api/keys', { cookie, csrf, body, headers: { origin: 'http://evil.test' } })).status,
  ).toBe(403);
  expect(
    (await req(env, 'POST', '/api/keys', { cookie, csrf, body, headers: { 'sec-fetch-site': 'cross-site' } })).status,
  ).toBe(403);
  expect((await req(env, 'POST', '/api/keys', { cookie, csrf, body, headers: { 'no-origin': '1' } })).status).toBe(403);
  // A form post (text/plain or urlencoded, the classic CSRF vehicle) is refused even with everything else right.
  expect(
    (
      await req(env, 'POST', '/api/keys', {
        cookie,
        csrf,
        body: 'name=x&plan=core',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      })
    ).status,
  ).toBe(415);
  // Login itself is also origin-checked (login CSRF).
  expect(
    (await req(env, 'POST', '/api/login', { body: { token: env.token }, headers: { origin: 'http://evil.test' } }))
      .status,
  ).toBe(403);
  expect(readKeys(env.dir)).toHaveLength(0);
  // Same origin by Sec-Fetch-Site alone (no Origin header) with the token: accepted.
  expect(
    (
      await req(env, 'POST', '/api/keys', {
        cookie,
        csrf,
        body,
        headers: { 'no-origin': '1', 'sec-fetch-site': 'same-origin' },
      })
    ).status,
  ).toBe(200);
  expect((await req(env, 'POST', '/api/keys', { cookie, csrf, body })).status).toBe(200);
  expect(readKeys(env.dir)).toHaveLength(2);
});

test('keys: create shows the key once; list, get, rename, networks, limits, allowlists, secret, rotate, revoke', async () => {
  const env = await setup();
  const s = await login(env);
  const call = (m: string, p: string, body?: unknown): Promise<Res> =>
    req(env, m, p, { cookie: s.cookie, csrf: s.csrf, body });

  expect((await call('GET', '/api/session')).body).toMatchObject({ loggedIn: true, csrf: s.csrf });
  expect((await call('GET', '/api/plans')).body).toEqual(
    expect.arrayContaining([{ name: 'core', dailyCredits: 1000, creditsPerSecond: 500 }]),
  );

  const c = await call('POST', '/api/keys', {
    name: 'web app',
    plan: 'core',
    networks: ['mainnet', 'sepolia'],
    limits: { creditsPerDay: 500, creditsPerSecond: 100 },
  });
  expect(c.status).toBe(200);
  const key = c.body['key'] as string;
  const view = c.body['view'] as KeyView;
  expect(key).toMatch(/^[0-9a-f]{32}$/);
  expect(view).toMatchObject({
    name: 'web app',
    plan: 'core',
    status: 'active',
    prefix: key.slice(0, 6),
    networks: ['mainnet', 'sepolia'],
    limits: { creditsPerDay: 500, creditsPerSecond: 100 },
  });
  const rec = readKeys(env.dir)[0] as KeyRecord;
  expect(rec.hash).toBe(createHash('sha256').update(key).digest('hex'));
  expect(readFileSync(join(env.dir, 'keys.json'), 'utf8')).not.toContain(key);
  // Never again: not in the list, not in the key's page data.
  const list = await call('GET', '/api/keys');
  expect(list.text).not.toContain(key);
  expect(list.text).not.toContain(rec.hash);
  expect((list.body as unknown as KeyView[]).map((k) => k.id)).toEqual([view.id]);
  const got = await call('GET', `/api/keys/${view.id}`);
  expect(got.text).not.toContain(key);
  expect(got.body['lastUsed']).toBeNull();

  // Invalid input is refused with 400 and a message; nothing changes.
  expect((await call('POST', '/api/keys', { name: '', plan: 'core' })).status).toBe(400);
  expect((await call('POST', '/api/keys', { name: 'x', plan: 'platinum' })).status).toBe(400);
  expect((await call('POST', '/api/keys', { name: 'x', plan: 'core', networks: ['Main Net'] })).status).toBe(400);
  expect((await call('POST', '/api/keys', { name: 'x', plan: 'core', extra: 1 })).status).toBe(400);
  expect((await call('POST', '/api/keys', '{"name":')).status).toBe(400);
  const tooMany = Array.from({ length: 31 }, (_, i) => `https://a${i}.example.com`);
  const bad = await call('PATCH', `/api/keys/${view.id}`, { allowlists: { origins: tooMany } });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatch(/at most 30/);
  expect((await call('PATCH', `/api/keys/${view.id}`, { limits: { creditsPerSecond: -1 } })).status).toBe(400);

  const upd = await call('PATCH', `/api/keys/${view.id}`, {
    name: 'web app (prod)',
    networks: null,
    limits: { creditsPerDay: 0 },
    allowlists: { origins: ['https://*.example.com'], methods: ['eth_blockNumber'], addresses: [], userAgents: [] },
  });
  expect(upd.status).toBe(200);
  expect(upd.body).toMatchObject({
    name: 'web app (prod)',
    networks: null,
    limits: { creditsPerDay: null, creditsPerSecond: 100 },
    allowlists: { origins: ['https://*.example.com'], methods: ['eth_blockNumber'], addresses: [], userAgents: [] },
  });
  expect(readKeys(env.dir)[0]?.allowlists).toEqual({
    origins: ['https://*.example.com'],
    methods: ['eth_blockNumber'],
  });

  // Secret: require needs one; created once; stored hashed.
  expect((await call('PATCH', `/api/keys/${view.id}`, { secretRequired: true })).status).toBe(409);
  const sec = await call('POST', `/api/keys/${view.id}/secret`);
  const secret = sec.body['secret'] as string;
  expect(secret).toMatch(/^[0-9a-f]{32}$/);
  expect(readKeys(env.dir)[0]?.secretHash).toBe(createHash('sha256').update(secret).digest('hex'));
  expect((await call('PATCH', `/api/keys/${view.id}`, { secretRequired: true })).body['secret']).toEqual({
    set: true,
    required: true,
  });
  expect((await call('GET', `/api/keys/${view.id}`)).text).not.toContain(secret);
  expect((await call('DELETE', `/api/keys/${view.id}/secret`)).body['secret']).toEqual({ set: false, required: false });

  // Rotate: a new value for the same record; its balance identity stays the original hash.
  const rot = await call('POST', `/api/keys/${view.id}/rotate`);
  const key2 = rot.body['key'] as string;
  expect(key2).toMatch(/^[0-9a-f]{32}$/);
  expect(key2).not.toBe(key);
  expect((rot.body['view'] as KeyView).id).toBe(view.id);
  expect((rot.body['view'] as KeyView).prefix).toBe(key2.slice(0, 6));
  const stored = readKeys(env.dir);
  const after = stored.find((k) => k.replacedBy === undefined) as KeyRecord;
  expect(after.hash).toBe(createHash('sha256').update(key2).digest('hex'));
  expect(after.chargeTo).toBe(rec.hash);
  // The old value's record stays, revoked and pointing at its successor (refused, hidden from lists).
  expect(stored.find((k) => k.hash === rec.hash)).toMatchObject({
    replacedBy: after.hash,
    revokedAt: expect.any(String),
  });
  expect(((await call('GET', '/api/keys')).body as unknown as KeyView[]).map((k) => k.id)).toEqual([view.id]);

  // Revoke; a revoked key cannot be changed; unknown ids are 404; wrong methods 405.
  expect((await call('POST', `/api/keys/${view.id}/revoke`)).body['status']).toBe('revoked');
  expect((await call('PATCH', `/api/keys/${view.id}`, { name: 'again' })).status).toBe(409);
  expect((await call('POST', `/api/keys/${view.id}/rotate`)).status).toBe(409);
  expect((await call('GET', '/api/keys/0123456789ab')).status).toBe(404);
  expect((await call('PUT', `/api/keys/${view.id}`, {})).status).toBe(405);

  // Logout ends the session.
  expect((await call('POST', '/api/logout')).status).toBe(200);
  expect((await call('GET', '/api/keys')).status).toBe(401);
});

test('usage route: 30 UTC days, per-method totals, the last 15 minutes, and the balance with resetsAt', async () => {
  const env = await setup();
  const s = await login(env);
  const c = await req(env, 'POST', '/api/keys', {
    cookie: s.cookie,
    csrf: s.csrf,
    body: { name: 'u', plan: 'core', limits: { creditsPerDay: 600 } },
  });
  const id = (c.body['view'] as KeyView).id;
  const events: UsageEvent[] = [
    { key: id, method: 'eth_getBlockByNumber', credits: 80 },
    { key: id, method: 'eth_getBlockByNumber', credits: 80 },
    { key: id, method: 'eth_getLogs', credits: 0, error: 'rpc' },
    { key: id, method: 'eth_getLogs', credits: 0, error: '4xx' },
    { key: id, method: 'eth_blockNumber', credits: 0, error: '5xx' },
    { key: 'someoneelse', method: 'eth_getLogs', credits: 255 },
  ];
  for (const e of events) env.usage.record(e);
  const u = await req(env, 'GET', `/api/keys/${id}/usage`, { cookie: s.cookie });
  expect(u.status).toBe(200);
  const days = u.body['days'] as Array<{ day: string; calls: number; credits: number }>;
  expect(days).toHaveLength(30);
  expect(days[29]).toMatchObject({ day: new Date().toISOString().slice(0, 10), calls: 5, credits: 160 });
  expect(u.body['methods']).toEqual([
    { method: 'eth_getBlockByNumber', calls: 2, credits: 160, e4xx: 0, e5xx: 0, erpc: 0 },
    { method: 'eth_getLogs', calls: 2, credits: 0, e4xx: 1, e5xx: 0, erpc: 1 },
    { method: 'eth_blockNumber', calls: 1, credits: 0, e4xx: 0, e5xx: 1, erpc: 0 },
  ]);
  const minutes = u.body['minutes'] as Array<{ calls: number }>;
  expect(minutes).toHaveLength(16);
  expect(minutes[15]?.calls).toBe(5);
  // No ledger in this setup: today's journal is empty, so the whole key limit (below the plan's 1000) remains.
  expect(u.body['balance']).toEqual({
    dailyCredits: 600,
    used: 0,
    remaining: 600,
    resetsAt: expect.stringMatching(/T00:00:00\.000Z$/),
    byNetwork: {},
  });
  // lastUsed appears in the list.
  const k = (await req(env, 'GET', `/api/keys/${id}`, { cookie: s.cookie })).body as unknown as KeyView;
  expect(k.lastUsed).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/);
});

test('static page: CSP without inline script, no secrets, uPlot served from node_modules, nothing else from disk', async () => {
  const env = await setup();
  const page = await req(env, 'GET', '/');
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
  expect(page.headers.get('content-security-policy')).not.toMatch(/unsafe-inline/);
  expect(page.headers.get('x-frame-options')).toBe('DENY');
  expect(page.text).not.toContain(env.token);
  expect(page.text).not.toMatch(/(src|href)="(https?:)?\/\//); // no CDN: every asset from this listener
  const up = await req(env, 'GET', '/vendor/uPlot.iife.min.js');
  expect(up.status).toBe(200);
  expect(up.text.length).toBeGreaterThan(40_000);
  expect((await req(env, 'GET', '/vendor/uPlot.min.css')).status).toBe(200);
  expect((await req(env, 'GET', '/app.js')).headers.get('content-type')).toMatch(/javascript/);
  expect((await req(env, 'GET', '/../package.json')).status).toBe(404);
  expect((await req(env, 'GET', '/admin.json')).status).toBe(404);
  expect((await req(env, 'GET', '/keys.json')).status).toBe(404);
});
