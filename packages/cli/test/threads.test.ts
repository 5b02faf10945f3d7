// `node-cli serve --threads 2` as a child process: several uWS apps on one port, credits exact
// across them through real sockets (each call on its own TCP connection, so the kernel spreads
// them over the threads), and durable across a restart.
import { request } from 'node:http';
import { NO_REDIS, datadirCopy, redisServerPath, runCli, startRedis } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { createKeyCli, rpc, spawnServe, usageCli } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

/** One POST on a fresh connection (no keep-alive agent). */
function post(port: number, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Sum of chainnode_rpc_calls_total in a Prometheus text. */
function callsTotal(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) if (line.startsWith('chainnode_rpc_calls_total{')) n += Number(line.split(' ').pop());
  return n;
}

test('--threads 2: 150 concurrent calls over fresh connections against a 100-call balance: exactly 100 served (402 for the rest), spread over both threads, durable', async () => {
  const c = await datadirCopy('fixtures');
  let srv: ServeProcess | undefined;
  try {
    // No throughput limit: the daily balance alone decides (the main thread's engine, one debit at a time).
    const { key } = await createKeyCli(c.dir, 'core', ['--daily-credits', String(100 * 80), '--credits-per-second', '0']);
    srv = await spawnServe(c.dir, ['--threads', '2', '--metrics-port', '0']);
    expect(srv.output()).toContain('(2 threads)');
    for (let i = 0; i < 50 && !srv.output().includes('/metrics'); i++) await new Promise((r) => setTimeout(r, 100)); // printed just after the listening line
    const metricsPort = Number(/metrics\s+GET\s+http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(srv.output())?.[1]);
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
    // Thread 0 alone serves metrics: it saw some of the 150 calls, not all, so the other thread answered the rest.
    const m = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    const seen = callsTotal(await m.text());
    expect(seen).toBeGreaterThan(0);
    expect(seen).toBeLessThan(150);
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

test('--threads 2 with --follow is refused with one line, before anything is opened', async () => {
  const c = await datadirCopy('fixtures');
  try {
    const r = await runCli(['serve', '--datadir', c.dir, '--port', '0', '--threads', '2', '--follow', 'http://127.0.0.1:9']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('--threads > 1 cannot be combined with --follow');
    expect(r.stdout).not.toContain('listening');
  } finally {
    await c.cleanup();
  }
});

// With --ledger redis:// the main thread's Redis engine decides every app thread's debits.
(redisServerPath() !== undefined ? test : test.skip)('--threads 2 --ledger redis://: 150 concurrent calls against a 100-call balance: exactly 100 served, usage in Redis', async () => {
  const c = await datadirCopy('fixtures');
  let redis: RedisProcess | undefined;
  let srv: ServeProcess | undefined;
  try {
    redis = await startRedis();
    const r = await runCli(['keys', 'create', '--plan', 'core', '--json', '--daily-credits', String(100 * 80), '--credits-per-second', '0', '--ledger', redis.url, '--datadir', c.dir]);
    expect(r.code).toBe(0);
    const { key } = JSON.parse(r.stdout) as { key: string };
    srv = await spawnServe(c.dir, ['--threads', '2', '--ledger', redis.url]);
    expect(srv.output()).toContain('(2 threads)');
    expect(srv.output()).toContain('ledger    redis');
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
});
if (redisServerPath() === undefined) console.log(NO_REDIS);
