// ONE test suite for every ledger engine (the CreditLedger and KeyStore interfaces): ledger.test.ts
// runs it against the embedded engine and against Redis (a private redis-server). What an engine
// must show: exact admission under concurrency, settle at the final cost, the token bucket,
// usage that a second instance (another replica / a restart) sees, and key records stored as
// one JSON value with unknown fields passed through, changes seen by other watchers within 1 s.
import type { CreditLedger, KeyRecord, KeyStore, Limits } from '../src/index.js';
import { hashKey, nextUtcMidnight } from '../src/index.js';

export interface EngineUnderTest {
  ledger: CreditLedger;
  keys: KeyStore;
  /** Another instance over the same storage (another replica, or this one restarted). */
  another(): Promise<{ ledger: CreditLedger; keys: KeyStore }>;
  close(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let n = 0;
/** A fresh key hash per test, so engines sharing storage do not see each other's usage. */
const freshHash = (): string => hashKey(`suite-${process.pid}-${Date.now()}-${n++}`);
const NO_RATE: Limits = { daily: 8000, perSecond: 0 };

/**
 * The token bucket: a burst admits one second of credits, refusals cost nothing, the bucket refills
 * at the rate (bounds taken from the clock around the calls), a settle below the cost gives tokens
 * back, and perSecond 0 means no throughput limit.
 */
async function checkTokenBucket(ledger: CreditLedger): Promise<void> {
  const h = freshHash();
  const limits: Limits = { daily: 1_000_000, perSecond: 1000 };
  const tBurst0 = performance.now();
  const burst = await Promise.all(Array.from({ length: 10 }, () => ledger.debit(h, 200, limits)));
  const tBurst1 = performance.now();
  expect(burst.filter((r) => r.ok)).toHaveLength(5); // 1,000 credits at once, no more
  const refused = burst.find((r) => !r.ok);
  expect(refused && !refused.ok ? refused.reason : undefined).toBe('throughput');
  await Promise.all(burst.map((r) => (r.ok ? ledger.settle(r.debit, 200) : undefined)));
  // Throughput refusals cost nothing.
  expect((await ledger.usage(h)).used).toBe(1000);
  await sleep(450); // ~450 credits refilled: two more calls of 200 (more if the machine stalls)
  const tLater0 = performance.now();
  const later = await Promise.all(Array.from({ length: 6 }, () => ledger.debit(h, 200, limits)));
  const tLater1 = performance.now();
  // Refill is 1 credit per ms: between the end of the burst and the start of these calls at
  // least, between the start of the burst and their end at most; and never past the bucket's
  // size (one second of credits, five calls), however long the machine stalled.
  const admitted = later.filter((r) => r.ok).length;
  expect(admitted).toBeGreaterThanOrEqual(Math.min(5, Math.floor((tLater0 - tBurst1) / 200)));
  expect(admitted).toBeLessThanOrEqual(Math.floor((tLater1 - tBurst0) / 200));
  expect(admitted).toBeLessThanOrEqual(5);
  await Promise.all(later.map((r) => (r.ok ? ledger.settle(r.debit, 200) : undefined)));
  // A settle below the cost gives the tokens back too.
  await sleep(1100);
  const full = await ledger.debit(h, 1000, limits);
  expect(full.ok).toBe(true);
  if (full.ok) await ledger.settle(full.debit, 0);
  expect((await ledger.debit(h, 1000, limits)).ok).toBe(true);
  // perSecond 0: no throughput limit.
  const free = await Promise.all(
    Array.from({ length: 20 }, () => ledger.debit(freshHash(), 5000, { daily: 10_000, perSecond: 0 })),
  );
  expect(free.every((r) => r.ok)).toBe(true);
}

/** A key record with the fields another feature adds, which must come back unchanged. */
function keyRecordWithExtraFields(hash: string): KeyRecord {
  return {
    id: hash.slice(0, 12),
    hash,
    plan: 'developer',
    dailyCredits: 1234,
    creditsPerSecond: 56,
    label: 'suite',
    createdAt: '2026-11-23T00:00:00.000Z',
    // fields another feature adds: they must come back unchanged
    name: 'my dapp',
    allowedOrigins: ['https://*.example.com'],
    quotas: { perDay: 10, nested: { deep: [1, 'two', null] } },
  };
}

/** `available` false (e.g. no redis-server on this machine): the suite is reported as skipped. */
export function ledgerSuite(name: string, open: () => Promise<EngineUnderTest | undefined>, available = true): void {
  (available ? describe : describe.skip)(`ledger engine: ${name}`, () => {
    let e: EngineUnderTest | undefined;
    const extra: { close(): Promise<void> }[] = [];
    beforeAll(async () => {
      e = await open();
    });
    afterAll(async () => {
      for (const x of extra) await x.close();
      await e?.close();
    });
    const engine = (): EngineUnderTest | undefined => e;

    test('exact: 150 concurrent debits of 80 against a daily balance of 100 calls admit exactly 100', async () => {
      const x = engine();
      if (!x) return;
      const h = freshHash();
      const results = await Promise.all(Array.from({ length: 150 }, () => x.ledger.debit(h, 80, NO_RATE)));
      const ok = results.filter((r) => r.ok);
      const refused = results.filter((r) => !r.ok);
      expect(ok).toHaveLength(100);
      expect(refused).toHaveLength(50);
      for (const r of refused) {
        if (r.ok) continue;
        expect(r.reason).toBe('daily');
        expect(r.resetsAt).toBe(nextUtcMidnight(Date.now()).toISOString());
      }
      await Promise.all(ok.map((r) => (r.ok ? x.ledger.settle(r.debit, 80) : undefined)));
      expect((await x.ledger.usage(h)).used).toBe(8000);
      // Another instance (replica / restart) sees the same usage and refuses too.
      const other = await x.another();
      extra.push(other.ledger, other.keys);
      expect((await other.ledger.usage(h)).used).toBe(8000);
      const again = await other.ledger.debit(h, 80, NO_RATE);
      expect(again.ok).toBe(false);
      // Another key has its own balance.
      expect((await x.ledger.debit(freshHash(), 80, NO_RATE)).ok).toBe(true);
    });

    test('settle charges the final cost: full, 5 for a request error, 0 for a server error', async () => {
      const x = engine();
      if (!x) return;
      const h = freshHash();
      const limits: Limits = { daily: 1000, perSecond: 0 };
      const a = await x.ledger.debit(h, 150, limits);
      const b = await x.ledger.debit(h, 255, limits);
      const c = await x.ledger.debit(h, 80, limits);
      if (!a.ok || !b.ok || !c.ok) throw new Error('debits refused');
      await x.ledger.settle(a.debit, 150);
      await x.ledger.settle(b.debit, 5);
      await x.ledger.settle(c.debit, 0);
      expect((await x.ledger.usage(h)).used).toBe(155);
      // What was given back can be spent: 155 + 845 = 1000 exactly, then nothing more.
      const d = await x.ledger.debit(h, 845, limits);
      expect(d.ok).toBe(true);
      if (d.ok) await x.ledger.settle(d.debit, 845);
      expect((await x.ledger.debit(h, 1, limits)).ok).toBe(false);
      expect((await x.ledger.usage(h)).used).toBe(1000);
    });

    test('throughput: a token bucket of one second of credits, refilled at the rate', async () => {
      const x = engine();
      if (!x) return;
      await checkTokenBucket(x.ledger);
    });

    test("networks: one balance across networks, today's usage split by network (refunds too), seen by another instance", async () => {
      const x = engine();
      if (!x) return;
      const h = freshHash();
      const limits: Limits = { daily: 100, perSecond: 0 };
      const a = await x.ledger.debit(h, 30, limits, 'mainnet');
      const b = await x.ledger.debit(h, 50, limits, 'sepolia');
      expect((await x.ledger.debit(h, 30, limits, 'mainnet')).ok).toBe(false); // 80 + 30 > 100: one balance
      const c = await x.ledger.debit(h, 20, limits); // a server without networks: no label
      if (!a.ok || !b.ok || !c.ok) throw new Error('debits refused');
      expect(a.debit.network).toBe('mainnet');
      await Promise.all([x.ledger.settle(a.debit, 30), x.ledger.settle(b.debit, 45), x.ledger.settle(c.debit, 20)]);
      const u = await x.ledger.usage(h);
      expect(u.used).toBe(95);
      expect(u.byNetwork).toEqual({ '': 20, mainnet: 30, sepolia: 45 });
      const other = await x.another();
      extra.push(other.ledger, other.keys);
      expect((await other.ledger.usage(h)).byNetwork).toEqual({ '': 20, mainnet: 30, sepolia: 45 });
      expect((await other.ledger.debit(h, 10, limits, 'sepolia')).ok).toBe(false); // 95 + 10 > 100
      const last = await other.ledger.debit(h, 5, limits, 'sepolia');
      if (!last.ok) throw new Error('refused');
      await other.ledger.settle(last.debit, 5);
      expect(await other.ledger.usage(h)).toMatchObject({ used: 100, byNetwork: { '': 20, mainnet: 30, sepolia: 50 } });
    });

    test('keys: one JSON value per key, unknown fields pass through, other instances see changes', async () => {
      const x = engine();
      if (!x) return;
      const hash = freshHash();
      const rec = keyRecordWithExtraFields(hash);
      const other = await x.another();
      extra.push(other.ledger, other.keys);
      let changed = 0;
      const stop = other.keys.watch(() => changed++);
      try {
        await sleep(300); // the watcher has its baseline
        const t0 = Date.now();
        await x.keys.put(rec);
        expect(await x.keys.get(hash)).toEqual(rec);
        // Within a second on a quiet machine (the watch's poll); the deadline is for a loaded one.
        while (changed === 0) {
          if (Date.now() - t0 > 10_000) throw new Error('no change seen within 10 s');
          await sleep(20);
        }
        expect((await other.keys.list()).find((k) => k.hash === hash)).toEqual(rec);
        const revoked = { ...rec, revokedAt: '2026-11-23T01:00:00.000Z' };
        await other.keys.put(revoked);
        expect(await x.keys.get(hash)).toEqual(revoked);
        expect((await x.keys.list()).filter((k) => k.hash === hash)).toHaveLength(1);
        expect(await x.keys.get(freshHash())).toBeUndefined();
      } finally {
        stop();
      }
    });
  });
}
