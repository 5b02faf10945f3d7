// Credit leases over the Redis engine: the shared ledger suite, then the edges of leases: a
// balance running out while three replicas hold slices, a replica killed holding a slice, Redis
// stopped mid-slice and restarted, and the Redis requests a paid call costs. One redis-server for
// the file (a second, persistent one for the outage).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NO_REDIS, redisServerPath, startRedis } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { LeasedLedger, RedisKeyStore, RedisLedger, connectRedis, hashKey, redisUsage } from '../src/index.js';
import type { DebitResult, Limits, RedisClient } from '../src/index.js';
import { ledgerSuite } from './ledger-suite.js';

const HAVE_REDIS = redisServerPath() !== undefined;
if (!HAVE_REDIS) console.log(NO_REDIS);
const redisTest = HAVE_REDIS ? test : test.skip;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const dirs: string[] = [];
const datadir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'leases-'));
  dirs.push(d);
  return d;
};
let n = 0;
const freshHash = (): string => hashKey(`leases-${process.pid}-${Date.now()}-${n++}`);

let server: RedisProcess | undefined;
const clients: RedisClient[] = [];
const ledgers: LeasedLedger[] = [];
afterAll(async () => {
  for (const l of ledgers) await l.close().catch(() => undefined);
  for (const c of clients) c.destroy();
  await server?.stop('SIGKILL');
  await server?.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface LeaseOptions {
  dir?: string;
  ttlMs?: number;
  timeoutMs?: number;
  maxSlice?: number;
}
/** A leased ledger (a replica) on `r`, its own connection and journal folder. */
async function replica(r: RedisProcess, o: LeaseOptions = {}): Promise<LeasedLedger> {
  const timeoutMs = o.timeoutMs ?? 10_000;
  const client = await connectRedis({ url: r.url, commandTimeoutMs: timeoutMs });
  clients.push(client);
  const journalDir = o.dir ?? datadir();
  const inner = new RedisLedger({ client, failure: 'open', journalDir, commandTimeoutMs: timeoutMs });
  const ledger = new LeasedLedger({
    client,
    inner,
    journalDir,
    maxSlice: o.maxSlice ?? 100_000,
    commandTimeoutMs: timeoutMs,
    ...(o.ttlMs !== undefined ? { ttlMs: o.ttlMs } : {}),
  });
  ledgers.push(ledger);
  return ledger;
}
async function shared(): Promise<RedisProcess> {
  server ??= await startRedis();
  return server;
}

ledgerSuite(
  'redis with credit leases',
  async () => {
    if (!HAVE_REDIS) return undefined;
    const r = await shared();
    const make = async (): Promise<{ ledger: LeasedLedger; keys: RedisKeyStore }> => {
      const ledger = await replica(r);
      return { ledger, keys: new RedisKeyStore(clients[clients.length - 1] as RedisClient) };
    };
    const first = await make();
    return { ...first, another: make, close: async () => {} };
  },
  HAVE_REDIS,
);

/** `count` concurrent calls of `cost` on `ledger`, each settled at its cost; the credits admitted. */
async function round(ledger: LeasedLedger, hash: string, cost: number, limits: Limits, count: number): Promise<number> {
  const rs: DebitResult[] = await Promise.all(Array.from({ length: count }, () => ledger.debit(hash, cost, limits)));
  await Promise.all(rs.map((x) => (x.ok ? ledger.settle(x.debit, cost) : undefined)));
  return rs.filter((x) => x.ok).length * cost;
}

/** Rounds of `round` until one is refused whole; the credits admitted. */
async function untilRefused(ledger: LeasedLedger, hash: string, cost: number, limits: Limits): Promise<number> {
  let total = 0;
  for (;;) {
    const got = await round(ledger, hash, cost, limits, 25);
    total += got;
    if (got === 0) return total;
  }
}

async function usedOf(r: RedisProcess, hash: string): Promise<number> {
  const c = await connectRedis({ url: r.url, commandTimeoutMs: 10_000 });
  try {
    return (await redisUsage(c, hash)).used;
  } finally {
    c.destroy();
  }
}

describe('credit leases', () => {
  redisTest(
    'a balance runs out while three replicas hold slices: never beyond it, and exactly it in the end',
    async () => {
      const r = await shared();
      const h = freshHash();
      const limits: Limits = { daily: 30_000, perSecond: 0 };
      const three = [await replica(r), await replica(r), await replica(r)];
      // Each replica calls until a whole round is refused; the total never passes the balance.
      const admitted = await Promise.all(three.map((l) => untilRefused(l, h, 3, limits)));
      const total = admitted.reduce((a, b) => a + b, 0);
      expect(total).toBeLessThanOrEqual(30_000);
      for (const l of three) expect(l.stats.leased).toBeGreaterThan(0);
      // Refused early by at most what the others' slices held; once they are returned, the rest is spent.
      for (const l of three) await l.close();
      expect(await usedOf(r, h)).toBe(total);
      const last = await replica(r);
      const more = await untilRefused(last, h, 3, limits);
      expect(total + more).toBe(30_000);
      await last.close();
      expect(await usedOf(r, h)).toBe(30_000);
    },
  );

  redisTest(
    'a replica killed holding a slice: the slice comes back after expiry, its spends are charged once',
    async () => {
      const r = await shared();
      const h = freshHash();
      const limits: Limits = { daily: 50_000, perSecond: 0 };
      const dir = datadir();
      const a = await replica(r, { dir, ttlMs: 800, timeoutMs: 200 });
      let spent = 0;
      while (a.stats.leased < 200) spent += await round(a, h, 10, limits, 20);
      a.abandon(); // killed: nothing returned, the last spends unreported (in its journal only)
      const b = await replica(r);
      await sleep(900); // a's lease lapses
      // b's next sync reclaims a's lease: everything but a's allowance is back at once.
      spent += await round(b, h, 10, limits, 5);
      await sleep(300);
      const held = 50_000 - spent;
      // b can reach all but the allowance a held back: spend until refused.
      const more = await untilRefused(b, h, 10, limits);
      expect(spent + more).toBeLessThanOrEqual(50_000);
      expect(spent + more).toBeGreaterThan(held / 2);
      await b.close();
      // The next process on a's folder replays a's journal: unreported spends charged, the rest returned.
      const successor = await replica(r, { dir });
      await successor.close();
      expect(await usedOf(r, h)).toBe(spent + more);
      const c = await replica(r);
      const rest = await untilRefused(c, h, 10, limits);
      await c.close();
      expect(spent + more + rest).toBe(50_000);
      expect(await usedOf(r, h)).toBe(50_000);
    },
  );

  redisTest('Redis stopped mid-slice: the slice is spent on, the spends reach Redis once it is back', async () => {
    const r = await startRedis({ persist: true });
    try {
      const h = freshHash();
      const limits: Limits = { daily: 1_000_000, perSecond: 0 };
      const l = await replica(r, { timeoutMs: 300, ttlMs: 4000 });
      let spent = 0;
      // A stream of calls for a while: the slice (and what may be spent unreported) follows its rate.
      const t0 = Date.now();
      while (Date.now() - t0 < 500) {
        spent += await round(l, h, 5, limits, 20);
        await sleep(5);
      }
      await r.stop('SIGKILL');
      const tKilled = performance.now();
      const before = l.stats.leased;
      let admitted = 0;
      for (let i = 0; i < 5; i++) {
        const got = await round(l, h, 5, limits, 10);
        admitted += got / 5;
        spent += got;
      }
      expect(admitted).toBe(50); // none refused: the slice, then the per-call engine's fail-open
      // Every one from the slice while its deadline holds (a sync's time-out, 300 ms, plus the
      // period, 200 ms, short of the ttl's 3 s of spending), unless the machine stalled that long.
      if (performance.now() - tKilled < 2000) expect(l.stats.leased - before).toBe(50);
      await r.restart();
      const t1 = Date.now();
      while ((await usedOf(r, h).catch(() => -1)) !== spent && Date.now() - t1 < 5000) await sleep(50);
      await l.close();
      expect(await usedOf(r, h)).toBe(spent);
    } finally {
      await r.stop('SIGKILL');
      await r.cleanup();
    }
  });

  redisTest('three replicas under load through a Redis restart: usage equals the credits answered', async () => {
    const r = await startRedis({ persist: true });
    try {
      const h = freshHash();
      const limits: Limits = { daily: 1_000_000_000, perSecond: 0 };
      const o = { timeoutMs: 300, ttlMs: 4000 };
      const three = [await replica(r, o), await replica(r, o), await replica(r, o)];
      const t0 = performance.now();
      const outage = (async () => {
        await sleep(300);
        await r.stop('SIGKILL');
        await sleep(500);
        await r.restart();
      })();
      const admitted = await Promise.all(
        three.map(async (l) => {
          let got = 0;
          while (performance.now() - t0 < 1300) {
            got += await round(l, h, 7, limits, 10);
            await sleep(2); // a stream, not a CPU-bound loop
          }
          return got;
        }),
      );
      await outage;
      // Calls beyond the slices were decided locally and journaled; each replica replays its journal.
      const t1 = Date.now();
      while (three.some((l) => l.inner.isDegraded) && Date.now() - t1 < 5000) await sleep(50);
      for (const l of three) await l.close();
      expect(await usedOf(r, h)).toBe(admitted.reduce((a, b) => a + b, 0));
    } finally {
      await r.stop('SIGKILL');
      await r.cleanup();
    }
  });
  redisTest(
    'a throughput limit across three replicas holding slices: never more than one bucket plus the rate',
    async () => {
      const r = await shared();
      const h = freshHash();
      const K = 3000;
      const limits: Limits = { daily: 1_000_000_000, perSecond: K };
      const three = [await replica(r), await replica(r), await replica(r)];
      await sleep(1100); // a full bucket
      // The bucket refills on Redis's clock (the wall clock, which may be slewed), so the window
      // is measured on it: a TIME before the first call and one after the last.
      const clock = await connectRedis({ url: r.url, commandTimeoutMs: 10_000 });
      clients.push(clock);
      const redisNow = async (): Promise<number> => {
        const [s, us] = (await clock.sendCommand(['TIME'])) as [string, string];
        return Number(s) + Number(us) / 1e6;
      };
      const r0 = await redisNow();
      const t0 = performance.now();
      // Each replica's idle time: gaps of over 50 ms between its rounds (a round takes a few ms; a
      // longer gap is the machine stalling the process, not the ledger refusing).
      const idle: number[] = [];
      const admitted = await Promise.all(
        three.map(async (l) => {
          let got = 0;
          let idleMs = 0;
          let last = performance.now();
          while (last - t0 < 1500) {
            got += await round(l, h, 10, limits, 10);
            const now = performance.now();
            if (now - last > 50) idleMs += now - last;
            last = now;
          }
          idle.push(idleMs);
          return got;
        }),
      );
      const seconds = (await redisNow()) - r0;
      const total = admitted.reduce((a, b) => a + b, 0);
      expect(total).toBeLessThanOrEqual(K * (seconds + 1));
      // Early refusals by lent tokens are bounded: at least half the rate over the time some
      // replica was calling (all three stalled at once is at most the least idle of them).
      expect(total).toBeGreaterThan((K * (seconds - Math.min(...idle) / 1000)) / 2);
      expect(three.reduce((a, l) => a + l.stats.leased, 0)).toBeGreaterThan(0);
      for (const l of three) await l.close();
      expect(await usedOf(r, h)).toBe(total);
    },
  );

  redisTest(
    'a settle below the cost gives the tokens back to the slice: calls settled at 1 never run the bucket dry',
    async () => {
      const r = await shared();
      const h = freshHash();
      // A quarter of the bucket per call, each settled at 1 (a call that turned out cheap): the
      // per-call engine gives 249 of every call's 250 tokens back at once, so none is refused
      // while the calls spend less than the rate; a slice must do the same with the tokens it holds.
      const limits: Limits = { daily: 1_000_000_000, perSecond: 1000 };
      const l = await replica(r);
      await sleep(1100); // a full bucket
      let refused = 0;
      const t0 = performance.now();
      for (let i = 0; i < 400 || (l.stats.leased < 20 && performance.now() - t0 < 30_000); i++) {
        const x = await l.debit(h, 250, limits);
        if (!x.ok) refused++;
        else await l.settle(x.debit, 1);
        if (i % 8 === 0) await sleep(1); // lets the lease's syncs run between calls (and caps the spend rate)
      }
      const calls = l.stats.leased;
      expect(calls).toBeGreaterThanOrEqual(20); // calls decided from the slice's tokens
      expect(refused).toBe(0);
      await l.close();
    },
  );

  redisTest(
    'Redis requests per paid call: a steady stream of calls of one key, with and without a credits/s limit',
    async () => {
      const r = await shared();
      for (const perSecond of [0, 1e12]) {
        const h = freshHash();
        const l = await replica(r);
        const limits: Limits = { daily: 1_000_000_000, perSecond };
        let paid = 0;
        const t0 = Date.now();
        while (paid < 10_000) {
          await round(l, h, 1, limits, 50);
          paid += 50;
          if (paid % 500 === 0) await sleep(20); // a stream over time (about a second), not one burst
        }
        await l.close();
        const perCall = l.redisCalls / paid;
        console.log(
          `credit leases, credits/s ${perSecond}: ${l.redisCalls} Redis requests for ${paid} paid calls (${perCall.toFixed(4)} per call) in ${Date.now() - t0} ms`,
        );
        expect(perCall).toBeLessThanOrEqual(0.02);
        expect(await usedOf(r, h)).toBe(paid);
      }
    },
  );
});
