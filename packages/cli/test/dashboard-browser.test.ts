// The dashboard in a real browser: Debian's chromium driven by playwright-core (executablePath;
// the registry's browser downloads do not work here) against a real `node-cli serve --dashboard`
// over a 40-block import of the fixture chain. Logs in, creates a key through the page, calls
// the JSON-RPC endpoint with it, sees the usage table and chart update, adds an origin
// allowlist and sees another Origin refused, revokes the key and sees 401. Screenshots go to
// <repo>/.cache/dashboard-screens/ (and, with UPDATE_DOCS_SCREENSHOT=1, the usage page to
// docs/dashboard-usage.png, the picture in docs/dashboard.md). No console error may appear on any page.
import { existsSync, mkdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';
import { methodCosts } from '@chainnode/rpc';
import { REQUEST_ERROR_CREDITS } from '@chainnode/server';
import { chainDir, repoRoot, runCli, tempDir } from '@chainnode/testkit';
import { bannerOf, spawnServe, sleep } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const have = existsSync(CHROMIUM) && chainDir('fixtures') !== undefined;
if (!have) console.log(`dashboard browser test skipped: no chromium at ${CHROMIUM} (apt-get install -y chromium)`);
const maybe = have ? test : test.skip;

// Credits of the calls made: the methods' from the rpc method table, and what a call failing
// because of the request costs (the server's REQUEST_ERROR_CREDITS).
const COST = {
  eth_blockNumber: methodCosts().eth_blockNumber,
  eth_getBlockByNumber: methodCosts().eth_getBlockByNumber,
  requestError: REQUEST_ERROR_CREDITS,
} as const;

async function rpc(
  url: string,
  method: string,
  params: unknown[],
  headers: Record<string, string> = {},
): Promise<{ status: number; body: { result?: unknown; error?: { code: number; message: string } } }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return {
    status: res.status,
    body: (await res.json()) as { result?: unknown; error?: { code: number; message: string } },
  };
}

async function until(what: string, f: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!(await f())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Debian's chromium, headless, with its own profile directory. */
function launchChromium(profileDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1200, height: 1500 },
  });
}

/** The page, with every console error and page error recorded in `problems` and dialogs accepted. */
function watchPage(p: Page, problems: string[]): Page {
  p.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  p.on('dialog', (d) => void d.accept());
  return p;
}

/** The usage chart's legend value at the last bar (the mouse over it), without separators. */
async function lastBar(page: Page): Promise<string> {
  const over = page.locator('#chart .u-over');
  const box = await over.boundingBox();
  if (!box) return '';
  await page.mouse.move(box.x + box.width - 3, box.y + box.height / 2);
  return ((await page.locator('#chart .u-legend .u-series').nth(1).locator('.u-value').textContent()) ?? '').replace(
    /,/g,
    '',
  );
}

/** Logs in with the admin token and creates a key through the page: the key, shown once with the warning. */
async function loginAndCreateKey(page: Page, dashUrl: string, token: string, shots: string): Promise<string> {
  await page.goto(dashUrl);
  await page.locator('#login').waitFor({ state: 'visible' });
  await page.screenshot({ path: join(shots, '1-login.png') });
  await page.fill('#token', token);
  await page.click('#login-form button[type=submit]');
  await page.locator('#app').waitFor({ state: 'visible' });
  expect(await page.content()).not.toContain(token);

  // Create a key through the page: shown once, with the warning.
  await page.fill('#create-name', 'browser e2e');
  await page.selectOption('#create-plan', 'core');
  await page.click('#create-form button[type=submit]');
  await page.locator('#once').waitFor({ state: 'visible' });
  const key = (await page.textContent('#once-value'))?.trim() ?? '';
  expect(key).toMatch(/^[0-9a-f]{32}$/);
  expect(await page.textContent('#once')).toMatch(/shown only this once/);
  await page.screenshot({ path: join(shots, '2-key-created.png') });
  await page.click('#once-done');
  expect(await page.content()).not.toContain(key); // gone from the page
  expect(page.url()).not.toContain(key);
  // The list shows the key's prefix, not the key.
  const row = page.locator('#keys tbody tr', { hasText: 'browser e2e' });
  expect(await row.textContent()).toContain(`${key.slice(0, 6)}…`);
  await page.locator('#detail').waitFor({ state: 'visible' });
  return key;
}

/** The usage table and chart update after the calls spending `spent` (the page refreshes every 3 s). */
async function checkUsage(page: Page, shots: string, spent: number): Promise<void> {
  const methodRow = page.locator('#methods tbody tr', { hasText: 'eth_getBlockByNumber' });
  await methodRow.waitFor({ state: 'visible', timeout: 10_000 });
  const cells = async (): Promise<string[]> =>
    (await methodRow.locator('td').allTextContents()).map((t) => t.replace(/,/g, ''));
  const expected = [
    'eth_getBlockByNumber',
    '4',
    String(3 * COST.eth_getBlockByNumber + COST.requestError),
    '0',
    '0',
    '1',
  ];
  // A refresh may land between the calls (a loaded machine): wait for one that saw all of them.
  await until('the usage table', async () => JSON.stringify(await cells()) === JSON.stringify(expected)).catch(
    () => undefined,
  );
  expect(await cells()).toEqual(expected);
  await until(
    'the balance card',
    async () => ((await page.textContent('#d-used')) ?? '').replace(/,/g, '') === String(spent),
  );
  expect(((await page.textContent('#d-remaining')) ?? '').replace(/,/g, '')).toBe(String(3_000_000 - spent));
  expect(await page.textContent('#d-resets')).toMatch(/T00:00:00\.000Z/);
  expect(await lastBar(page)).toBe(String(spent));
  // The last 15 minutes: 16 one-minute rows whose calls add up to the 5 calls made.
  const minuteCalls = await page.locator('#minutes tbody tr td:nth-child(2)').allTextContents();
  expect(minuteCalls).toHaveLength(16);
  expect(minuteCalls.reduce((a, t) => a + Number(t.replace(/,/g, '')), 0)).toBe(5);
  await page.mouse.move(0, 0);
  await page.locator('#usage').screenshot({ path: join(shots, '3-usage.png') });
  if (process.env['UPDATE_DOCS_SCREENSHOT'] === '1') {
    mkdirSync(join(repoRoot(), 'docs'), { recursive: true });
    copyFileSync(join(shots, '3-usage.png'), join(repoRoot(), 'docs', 'dashboard-usage.png'));
  }
}

/** An origin allowlist set in the page: another Origin is refused with -32002. */
async function checkAllowlist(page: Page, url: string, shots: string): Promise<void> {
  await page.fill('#al-origins', 'https://*.example.com');
  await page.click('#save');
  await until(
    'the saved allowlist',
    async () =>
      (await page.inputValue('#al-origins')) === 'https://*.example.com' && (await page.textContent('#error')) === '',
  );
  await until(
    'the server to apply the allowlist',
    async () => (await rpc(url, 'eth_blockNumber', [], { origin: 'https://evil.test' })).status === 403,
    30_000,
  );
  const refused = await rpc(url, 'eth_blockNumber', [], { origin: 'https://evil.test' });
  expect(refused.body.error).toEqual({ code: -32002, message: 'rejected due to project ID settings' });
  expect((await rpc(url, 'eth_blockNumber', [], { origin: 'https://app.example.com' })).status).toBe(200);
  await page.screenshot({ path: join(shots, '4-allowlist.png') });
}

/** Revoke in the page: the key gets 401. */
async function revokeInPage(page: Page, url: string, shots: string): Promise<void> {
  await page.click('#revoke');
  await until('the revoked status', async () => (await page.textContent('#d-status')) === 'revoked');
  await until(
    '401 for the revoked key',
    async () => (await rpc(url, 'eth_blockNumber', [], { origin: 'https://app.example.com' })).status === 401,
    30_000,
  );
  await page.screenshot({ path: join(shots, '5-revoked.png') });
}

maybe('dashboard in chromium: login, create a key, usage table and chart, origin allowlist, revoke', async () => {
  const data = await tempDir('chainnode-dash-e2e-');
  const profile = await tempDir('chainnode-chromium-');
  const shots = join(repoRoot(), '.cache', 'dashboard-screens');
  mkdirSync(shots, { recursive: true });
  let s: ServeProcess | undefined;
  let ctx: BrowserContext | undefined;
  try {
    const sync = await runCli(['sync', '--from', chainDir('fixtures') as string, '--to', '40', '--datadir', data.dir]);
    expect(sync.code).toBe(0);
    const tok = await runCli(['admin', 'token', 'create', '--json', '--datadir', data.dir]);
    expect(tok.code).toBe(0);
    const token = (JSON.parse(tok.stdout) as { token: string }).token;
    s = await spawnServe(data.dir, ['--admin-port', '0']);
    const srv = s;
    const dashUrl = bannerOf(srv.output()).dashboard as string;
    expect(dashUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);

    ctx = await launchChromium(profile.dir);
    const problems: string[] = [];
    const page = watchPage(ctx.pages()[0] ?? (await ctx.newPage()), problems);

    // Log in; create a key through the page.
    const key = await loginAndCreateKey(page, dashUrl, token, shots);

    // Chart before any call: the legend at the last bar reads 0 credits.
    expect(await lastBar(page)).toBe('0');

    // Call the JSON-RPC endpoint with the key (one answered error too).
    const url = `${s.base}/v3/${key}`;
    expect((await rpc(url, 'eth_blockNumber', [])).body.result).toBe('0x28');
    for (const n of ['0x1', '0x2', '0x3'])
      expect((await rpc(url, 'eth_getBlockByNumber', [n, false])).status).toBe(200);
    expect((await rpc(url, 'eth_getBlockByNumber', ['0xzz', false])).body.error?.code).toBe(-32602);
    const spent = COST.eth_blockNumber + 3 * COST.eth_getBlockByNumber + COST.requestError;

    await checkUsage(page, shots, spent);
    await checkAllowlist(page, url, shots);
    await revokeInPage(page, url, shots);

    // Reload: the session survives (HttpOnly cookie), the key is nowhere in the page.
    await page.reload();
    await page.locator('#app').waitFor({ state: 'visible' });
    expect(await page.content()).not.toContain(key);
    expect(s.output()).not.toContain(key);
    expect(s.output()).not.toContain(token);
    expect(problems).toEqual([]);
  } finally {
    await ctx?.close();
    await s?.stop();
    await profile.cleanup();
    await data.cleanup();
  }
});
