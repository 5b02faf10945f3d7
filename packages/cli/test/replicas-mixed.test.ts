// Three replicas of `node-cli serve --ledger redis://… --threads 2` (six app threads, three Redis
// connections batching their debits) under 10,000 calls from many keys with mixed costs, where
// half of the keys run out of credits mid-run. Per key, three independent counts must agree: the
// credits of the calls this test saw answered (each method's cost from the method table), the
// key's usage in Redis (the ledger's day field, read straight from Redis), and the per-key usage
// record the replicas keep (credits per method, summed). No key ends above its balance, and every
// 402 was due: the key's final usage plus the refused call's cost is above the balance. Nothing
// was decided locally: no replica left a fail-open journal, none logged Redis as unavailable.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { JOURNAL_DIR, RedisKeyStore, RedisUsage, connectRedis, createKey } from '@chainnode/accounts';
import type { RedisClient, UsageRedisClient } from '@chainnode/accounts';
import { methodCosts } from '@chainnode/rpc';
import { NO_REDIS, Sfc32, datadirCopy, redisServerPath, startRedis } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { bannerOf, TEST_CHAIN, rpc, sleep, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

const HAVE_REDIS = redisServerPath() !== undefined;
if (!HAVE_REDIS) console.log(NO_REDIS);
const maybe = HAVE_REDIS ? test : test.skip;

const COSTS = methodCosts() as Record<string, number>;
const ADDRESS = `0x${'11'.repeat(20)}`;
/** Calls with different costs, each valid on any imported chain (so an answer costs the full price). */
const MIX: Array<{ method: string; params: unknown[] }> = [
  { method: 'eth_blockNumber', params: [] },
  { method: 'eth_getBlockByNumber', params: ['0x1', false] },
  { method: 'eth_getStorageAt', params: [ADDRESS, '0x0', '0x1'] },
  { method: 'eth_getProof', params: [ADDRESS, [], '0x1'] },
  { method: 'eth_getLogs', params: [{ fromBlock: '0x1', toBlock: '0x1' }] },
];
const CALLS = 10_000;
const KEYS = 24;
const CONCURRENCY = 48;

interface KeyCase {
  key: string;
  hash: string;
  id: string;
  /** The daily balance (a huge one for the keys that must not run out). */
  balance: number;
  limited: boolean;
  answeredCredits: number;
  answered: number;
  refused: number;
  /** The cheapest call refused with 402 (Infinity: none). */
  cheapestRefused: number;
}

maybe(
  '3 replicas x 2 threads, 10,000 calls of mixed costs from 24 keys, half of them running out mid-run: per key, answered credits = usage in Redis = the usage record, none over its balance',
  async () => {
    const redis: RedisProcess = await startRedis();
    const cleanups: Array<() => Promise<unknown>> = [async () => redis.cleanup(), async () => redis.stop('SIGKILL')];
    try {
      const dirs = [];
      for (let i = 0; i < 3; i++) {
        const d = await datadirCopy(TEST_CHAIN);
        cleanups.push(d.cleanup);
        // A generous Redis timeout: on a loaded machine a slow reply must not count as Redis away.
        await writeFile(join(d.dir, 'server.json'), JSON.stringify({ ledgerCommandTimeoutMs: 10_000 }));
        dirs.push(d.dir);
      }
      const admin: RedisClient = await connectRedis({ url: redis.url });
      cleanups.push(async () => admin.destroy());
      const store = new RedisKeyStore(admin);
      const rng = new Sfc32(0x5eed, 37, 11, 2024);
      const meanCost = MIX.reduce((n, m) => n + (COSTS[m.method] as number), 0) / MIX.length;
      const perKey = CALLS / KEYS;
      const cases: KeyCase[] = [];
      for (let i = 0; i < KEYS; i++) {
        const limited = i % 2 === 0;
        // A limited key's balance covers a quarter to a half of what its calls would cost.
        const balance = limited ? Math.round(perKey * meanCost * (0.25 + 0.25 * rng.next())) : 1_000_000_000;
        const { key, record } = await createKey(store, { plan: 'custom', dailyCredits: balance, creditsPerSecond: 0 });
        cases.push({
          key,
          hash: createHash('sha256').update(key).digest('hex'),
          id: record.id,
          balance,
          limited,
          answeredCredits: 0,
          answered: 0,
          refused: 0,
          cheapestRefused: Number.POSITIVE_INFINITY,
        });
      }
      const replicas: ServeProcess[] = await Promise.all(
        dirs.map((dir) => spawnServe(dir, ['--ledger', redis.url, '--threads', '2'])),
      );
      for (const r of replicas) cleanups.push(() => r.stop('SIGKILL'));
      for (const r of replicas) expect(bannerOf(r.output()).threads).toBe(2);
      // Every app thread learns the keys from its next poll of the key store (within a second).
      await sleep(1500);
      for (const r of replicas)
        for (const c of cases) expect((await rpc(r.url(c.key), 'eth_chainId', [])).status).toBe(200);

      const unexpected: string[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < CALLS) {
            const i = next++;
            const c = cases[Math.floor(rng.next() * KEYS)] as KeyCase;
            const call = MIX[Math.floor(rng.next() * MIX.length)] as (typeof MIX)[number];
            const cost = COSTS[call.method] as number;
            const r = await rpc((replicas[i % 3] as ServeProcess).url(c.key), call.method, call.params, i);
            if (r.status === 200 && r.body.result !== undefined && r.body.error === undefined) {
              c.answered++;
              c.answeredCredits += cost;
            } else if (r.status === 402 && r.body.error?.code === 402) {
              c.refused++;
              c.cheapestRefused = Math.min(c.cheapestRefused, cost);
            } else {
              unexpected.push(`${call.method}: HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
            }
          }
        }),
      );
      expect(unexpected).toEqual([]);
      expect(cases.reduce((n, c) => n + c.answered + c.refused, 0)).toBe(CALLS);

      // The usage in Redis: the ledger's day field of each key (by Redis's clock).
      const t = (await admin.sendCommand(['TIME'])) as string[];
      const day = String(Math.floor(Number(t[0]) / 86_400));
      const redisUsed = async (c: KeyCase): Promise<number> => Number((await admin.hGet(`cn:{${c.hash}}:d`, day)) ?? 0);
      // The usage record: each replica adds its threads' counts to Redis once a second.
      const record = new RedisUsage(admin as unknown as UsageRedisClient);
      const recorded = async (c: KeyCase): Promise<number> => (await record.days(c.id, 1))[0]?.credits ?? -1;
      const t0 = Date.now();
      while (Date.now() - t0 < 15_000) {
        const seen = await Promise.all(cases.map(recorded));
        if (seen.every((credits, i) => credits === (cases[i] as KeyCase).answeredCredits)) break;
        await sleep(250);
      }
      for (const c of cases) {
        const where = `key ${c.id} (balance ${c.balance}, ${c.answered} answered, ${c.refused} refused)`;
        expect({ where, redis: await redisUsed(c) }).toEqual({ where, redis: c.answeredCredits });
        expect({ where, record: await recorded(c) }).toEqual({ where, record: c.answeredCredits });
        expect(c.answeredCredits).toBeLessThanOrEqual(c.balance);
        if (c.limited) {
          // The balance ran out mid-run: calls were answered, then refused; every 402 was due.
          expect(c.answered).toBeGreaterThan(0);
          expect(c.refused).toBeGreaterThan(0);
          expect(c.answeredCredits + c.cheapestRefused).toBeGreaterThan(c.balance);
        } else {
          expect(c.refused).toBe(0);
        }
      }
      // Every debit was decided by Redis: no replica journaled a charge for later replay.
      for (const [i, r] of replicas.entries()) {
        expect(r.output()).not.toContain('Redis unavailable');
        const journals = join(dirs[i] as string, JOURNAL_DIR);
        const files = existsSync(journals)
          ? readdirSync(journals, { recursive: true }).filter((f) => String(f).endsWith('.log'))
          : [];
        expect(files).toEqual([]);
      }
      await Promise.all(replicas.map((r) => r.stop('SIGTERM')));
    } finally {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
    }
  },
);
