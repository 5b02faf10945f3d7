// The usage record (UsageRecord) against both engines — embedded (files in the datadir) and
// Redis (a private redis-server) — with one suite; then the serving path of two replicas over
// one Redis: the key's own limits (429, -33400 / -33300) hold across both, and either replica's
// usage record shows the calls of both.
import { join } from 'node:path';
import { NO_REDIS, redisServerPath, startRedis } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { toData } from '@chainnode/core';
import { startServer, transportConfig } from '../src/index.js';
import {
  EmbeddedUsage,
  RedisKeyStore,
  RedisLedger,
  RedisUsage,
  connectRedis,
  createKey,
  utcDay,
} from '@chainnode/accounts';
import type { RunningServer } from '../src/index.js';
import type { KeyRecord, UsageRecord } from '@chainnode/accounts';
import { call, fakeHash, fakeService, fakeStore, post, tempDir } from './helpers.js';

const HAVE_REDIS = redisServerPath() !== undefined;
if (!HAVE_REDIS) console.log(NO_REDIS);

interface UsageEngine {
  a: UsageRecord;
  /** Another instance over the same storage (a replica, or this one reopened after a.close()). */
  another(): Promise<UsageRecord>;
  /** Seconds to live of the stored day and minute of `key` (Redis), or undefined (embedded). */
  ttl?(key: string): Promise<{ day: number; minute: number }>;
  close(): Promise<void>;
}

let n = 0;
const freshKey = (): string => `k${process.pid}x${n++}`;

function usageSuite(name: string, open: () => Promise<UsageEngine | undefined>): void {
  describe(`usage record engine: ${name}`, () => {
    let e: UsageEngine | undefined;
    beforeAll(async () => {
      e = await open();
    });
    afterAll(async () => {
      await e?.close();
    });

    test('per day and method: calls, credits, errors by class; per minute; seen by another instance', async () => {
      if (!e) return;
      const k = freshKey();
      e.a.record({ key: k, method: 'eth_getBlockByNumber', credits: 80 });
      e.a.record({ key: k, method: 'eth_getBlockByNumber', credits: 80 });
      e.a.record({ key: k, method: 'eth_getBlockByNumber', credits: 0, error: '4xx' });
      e.a.record({ key: k, method: 'eth_getLogs', credits: 5, error: 'rpc' });
      e.a.record({ key: k, method: 'eth_getLogs', credits: 0, error: '5xx' });
      e.a.record({ key: 'someone-else', method: 'eth_getLogs', credits: 255 });
      const days = await e.a.days(k);
      expect(days).toHaveLength(30);
      expect(days[29]?.day).toBe(utcDay(Date.now()));
      expect(days.slice(0, 29).every((d) => d.calls === 0)).toBe(true);
      expect(days[29]).toMatchObject({ calls: 5, credits: 165, e4xx: 1, e5xx: 1, erpc: 1 });
      expect(days[29]?.methods).toEqual({
        eth_getBlockByNumber: { calls: 3, credits: 160, e4xx: 1, e5xx: 0, erpc: 0 },
        eth_getLogs: { calls: 2, credits: 5, e4xx: 0, e5xx: 1, erpc: 1 },
      });
      expect(await e.a.days(k, 7)).toHaveLength(7);
      const minutes = await e.a.minutes(k);
      expect(minutes).toHaveLength(16);
      expect(minutes.reduce((s, m) => s + m.calls, 0)).toBe(5);
      expect(minutes.reduce((s, m) => s + m.credits, 0)).toBe(165);
      expect(
        minutes.map((m) => Date.parse(m.minute)).every((t, i, a) => i === 0 || t - (a[i - 1] as number) === 60_000),
      ).toBe(true);
      await e.a.flush();
      const b = await e.another();
      b.record({ key: k, method: 'eth_getLogs', credits: 255 });
      expect((await b.days(k, 1))[0]).toMatchObject({ calls: 6, credits: 420 });
      expect((await b.minutes(k)).reduce((s, m) => s + m.calls, 0)).toBe(6);
      await b.close();
    });

    test('bounded: a stored day lives 31 days at most, a minute 17 minutes', async () => {
      if (!e?.ttl) return;
      const k = freshKey();
      e.a.record({ key: k, method: 'eth_chainId', credits: 0 });
      await e.a.flush();
      const t = await e.ttl(k);
      expect(t.day).toBeGreaterThan(30 * 86_400);
      expect(t.day).toBeLessThanOrEqual(31 * 86_400);
      expect(t.minute).toBeGreaterThan(15 * 60);
      expect(t.minute).toBeLessThanOrEqual(17 * 60);
    });
  });
}

usageSuite('embedded', async () => {
  const t = tempDir();
  let a = new EmbeddedUsage(t.dir);
  return {
    get a() {
      return a;
    },
    another: async () => {
      await a.close();
      const b = new EmbeddedUsage(t.dir);
      a = new EmbeddedUsage(t.dir); // the suite's own instance goes on from the same files
      return b;
    },
    close: async () => {
      await a.close();
      t.cleanup();
    },
  };
});

let redisForSuite: RedisProcess | undefined;
usageSuite('redis', async () => {
  if (!HAVE_REDIS) return undefined;
  redisForSuite = await startRedis();
  const redis = redisForSuite;
  const clients: Array<{ close(): Promise<unknown> }> = [];
  const make = async (): Promise<RedisUsage> => {
    const c = await connectRedis({ url: redis.url });
    clients.push(c);
    return new RedisUsage(c as never);
  };
  const a = await make();
  const probe = await connectRedis({ url: redis.url });
  clients.push(probe);
  return {
    a,
    another: make,
    ttl: async (key: string) => {
      const now = Date.now();
      const day = Number(await probe.ttl(`cn:{u:${key}}:d:${utcDay(now)}`));
      const minute = Number(await probe.ttl(`cn:{u:${key}}:m:${now - (now % 60_000)}`));
      return { day, minute };
    },
    close: async () => {
      await a.close();
      for (const c of clients) await c.close();
      await redis.stop();
      await redis.cleanup();
    },
  };
});

const redisTest = HAVE_REDIS ? test : test.skip;

redisTest(
  'two replicas over one Redis: the key limits (429 -33400 / -33300) hold across both; each usage record shows both',
  async () => {
    const redis = await startRedis();
    const closers: Array<() => Promise<unknown> | void> = [];
    try {
      const dirs = [tempDir(), tempDir()];
      for (const d of dirs) closers.push(d.cleanup);
      const clientFor = async (): Promise<Awaited<ReturnType<typeof connectRedis>>> => {
        const c = await connectRedis({ url: redis.url });
        closers.push(() => c.close());
        return c;
      };
      const admin = await clientFor();
      const keys = new RedisKeyStore(admin);
      const { key, record } = await createKey(keys, { plan: 'custom' });
      const rec: KeyRecord = { ...record, limits: { creditsPerDay: 400 } };
      await keys.put(rec);
      const replicas: RunningServer[] = [];
      for (const [i, d] of dirs.entries()) {
        const c = await clientFor();
        const store = fakeStore();
        const usage = new RedisUsage(c as never).start();
        closers.push(() => usage.close());
        const srv = await startServer({
          service: fakeService(store),
          store,
          config: transportConfig({}),
          host: '127.0.0.1',
          port: 0,
          ledger: {
            keys: new RedisKeyStore(c),
            credits: new RedisLedger({ client: c, failure: 'open', journalDir: join(d.dir, `j${i}`) }),
          },
          usage,
        });
        closers.push(() => srv.close());
        replicas.push(srv);
      }
      const url = (i: number): string => `http://127.0.0.1:${(replicas[i] as RunningServer).port}/v3/${key}`;
      // 8 calls of 80 alternating over the replicas against the key's own 400/day: exactly 5 pass.
      const statuses: number[] = [];
      const events: Array<number | undefined> = [];
      for (let i = 0; i < 8; i++) {
        const r = await post(url(i % 2), call('eth_getBlockByHash', [toData(fakeHash(1)), false], i));
        statuses.push(r.status);
        events.push((r.json as { error?: { event?: number } }).error?.event);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
      expect(events.slice(5)).toEqual([-33400, -33400, -33400]);
      // Either replica's usage record shows all 8 calls of the key.
      for (const srv of replicas) {
        await srv.usage.flush();
      }
      for (const srv of replicas) {
        expect((await srv.usage.days(rec.id, 1))[0]?.methods['eth_getBlockByHash']).toEqual({
          calls: 8,
          credits: 400,
          e4xx: 3,
          e5xx: 0,
          erpc: 0,
        });
      }
      // The key's own credits/second, across replicas (one bucket in Redis).
      await keys.put({ ...rec, limits: { creditsPerSecond: 160 } });
      // Replicas see key changes within a second (allow more on a loaded machine).
      const t0 = Date.now();
      while (!replicas.every((srv) => srv.keys.byKeyHash(rec.hash)?.limits?.creditsPerSecond === 160)) {
        expect(Date.now() - t0).toBeLessThan(30_000);
        await new Promise((r) => setTimeout(r, 50));
      }
      // Two calls of 80 fill the bucket; it refills one per 500 ms while the burst runs (Redis's
      // clock, read within the burst).
      const tb0 = performance.now();
      const burst = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          post(url(i % 2), call('eth_getBlockByHash', [toData(fakeHash(1)), false], i)),
        ),
      );
      const tb1 = performance.now();
      const ok = burst.filter((r) => r.status === 200).length;
      expect(ok).toBeGreaterThanOrEqual(2);
      expect(ok).toBeLessThanOrEqual(2 + Math.floor((tb1 - tb0) / 500));
      const limited = burst.filter((r) => r.status === 429);
      expect(limited).toHaveLength(10 - ok);
      expect(limited.length).toBeGreaterThan(0);
      for (const r of limited) expect((r.json as { error?: { event?: number } }).error?.event).toBe(-33300);
    } finally {
      for (const c of closers.reverse()) await c();
      await redis.stop();
      await redis.cleanup();
    }
  },
);
