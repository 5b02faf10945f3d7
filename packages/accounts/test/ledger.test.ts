// The shared ledger suite against both engines, then what is particular to each: the embedded
// journal (journal-before-answer, a failed write undoing its charges, the UTC day roll with an
// injected clock) and the Redis engine (idempotent replays of commands whose reply was lost,
// fail-open with a local journal replayed when Redis returns, fail-closed refusing).
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { createClient } from '@redis/client';
import { NO_REDIS, redisServerPath, startRedis } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import {
  EmbeddedLedger,
  FileKeyStore,
  LedgerUnavailableError,
  PortLedger,
  SharedTally,
  sharedTallyBuffer,
  serveLedgerOverPort,
  RedisKeyStore,
  RedisLedger,
  connectRedis,
  hashKey,
  readUsage,
  readUsageByNetwork,
  usagePath,
  utcDay,
} from '../src/index.js';
import type { Limits } from '../src/index.js';
import { ledgerSuite } from './ledger-suite.js';

const A = 'a'.repeat(64);
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function datadir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ledger-'));
  dirs.push(d);
  return d;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const HAVE_REDIS = redisServerPath() !== undefined;
if (!HAVE_REDIS) console.log(NO_REDIS);

ledgerSuite('embedded', async () => {
  const dir = datadir();
  const ledger = new EmbeddedLedger(dir);
  const keys = new FileKeyStore(dir);
  return {
    ledger,
    keys,
    another: async () => ({ ledger: new EmbeddedLedger(dir), keys: new FileKeyStore(dir) }),
    close: () => ledger.close(),
  };
});

// What a worker thread of `serve --threads` uses: the embedded engine of the main thread, every
// call structured-cloned over a MessagePort.
ledgerSuite('embedded through a MessagePort (threads)', async () => {
  const dir = datadir();
  const owner = new EmbeddedLedger(dir);
  const { port1, port2 } = new MessageChannel();
  const stop = serveLedgerOverPort(owner, port1);
  const ledger = new PortLedger(port2);
  return {
    ledger,
    keys: new FileKeyStore(dir),
    another: async () => ({ ledger: new EmbeddedLedger(dir), keys: new FileKeyStore(dir) }),
    close: async () => {
      await ledger.close();
      stop();
      port1.close();
      await owner.close();
    },
  };
});

// What the app threads of `serve --threads` use with the embedded engine: each thread its own
// ledger on counts in shared memory; `another` is another thread's ledger on the same memory.
ledgerSuite('embedded, counts shared between threads (SharedTally)', async () => {
  const dir = datadir();
  const tally = sharedTallyBuffer(1024);
  const ledger = new EmbeddedLedger(dir, Date.now, new SharedTally(tally));
  const others: EmbeddedLedger[] = [];
  return {
    ledger,
    keys: new FileKeyStore(dir),
    another: async () => {
      const other = new EmbeddedLedger(dir, Date.now, new SharedTally(tally));
      others.push(other);
      return { ledger: other, keys: new FileKeyStore(dir) };
    },
    close: async () => {
      for (const o of others) await o.close();
      await ledger.close();
    },
  };
});

let shared: RedisProcess | undefined;
ledgerSuite(
  'redis',
  async () => {
    if (!HAVE_REDIS) return undefined;
    shared = await startRedis();
    const redis = shared;
    const dir = datadir();
    const clients: { close(): Promise<unknown> }[] = [];
    const make = async (): Promise<{ ledger: RedisLedger; keys: RedisKeyStore }> => {
      // A generous timeout: this suite checks exactness with Redis up; on a heavily loaded machine a
      // reply can take more than the default second, which the engine (rightly) treats as Redis away.
      const client = await connectRedis({ url: redis.url, commandTimeoutMs: 10_000 });
      clients.push(client);
      return {
        ledger: new RedisLedger({
          client,
          failure: 'open',
          journalDir: join(dir, `j${clients.length}`),
          commandTimeoutMs: 10_000,
        }),
        keys: new RedisKeyStore(client),
      };
    };
    const first = await make();
    return {
      ...first,
      another: make,
      close: async () => {
        for (const c of clients) await c.close();
        await redis.stop();
        await redis.cleanup();
      },
    };
  },
  HAVE_REDIS,
);

/** Sums the journal lines of `day` for `hash`, parsed here independently of readUsage. */
function journalSum(dir: string, day: string, hash: string): number {
  let text = '';
  try {
    text = readFileSync(usagePath(dir, day), 'utf8');
  } catch {
    return 0;
  }
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${hash} `))
    .reduce((n, l) => n + Number(l.slice(65)), 0);
}

const L: Limits = { daily: 1000, perSecond: 0 };

describe('embedded engine specifics', () => {
  test('a charge is journaled before settle resolves; nothing before', async () => {
    const dir = datadir();
    const ledger = new EmbeddedLedger(dir);
    const d = await ledger.debit(A, 80, L);
    if (!d.ok) throw new Error('refused');
    expect(journalSum(dir, utcDay(Date.now()), A)).toBe(0);
    await ledger.settle(d.debit, 80);
    expect(journalSum(dir, utcDay(Date.now()), A)).toBe(80);
    expect(readUsage(dir, utcDay(Date.now())).get(A)).toBe(80);
    await ledger.close();
  });

  test('a journal that cannot be written fails the settles of that turn and undoes their charges', async () => {
    const dir = datadir();
    const ledger = new EmbeddedLedger(dir);
    mkdirSync(usagePath(dir, utcDay(Date.now()))); // the day's journal path is a directory
    const r1 = await ledger.debit(A, 80, L);
    const r2 = await ledger.debit(A, 80, L);
    if (!r1.ok || !r2.ok) throw new Error('refused');
    const results = await Promise.allSettled([ledger.settle(r1.debit, 80), ledger.settle(r2.debit, 80)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(ledger.used(A)).toBe(0);
    expect((await ledger.debit(A, 1000, L)).ok).toBe(true);
    await ledger.close();
  });

  test('the balance resets at 00:00 UTC; the old day stays in its own journal', async () => {
    const dir = datadir();
    let now = Date.UTC(2026, 10, 22, 23, 59, 59, 500);
    const ledger = new EmbeddedLedger(dir, () => now);
    const r = await ledger.debit(A, 900, L);
    if (!r.ok) throw new Error('refused');
    await ledger.settle(r.debit, 900);
    const refused = await ledger.debit(A, 200, L);
    expect(refused).toEqual({ ok: false, reason: 'daily', resetsAt: '2026-11-23T00:00:00.000Z' });
    now = Date.UTC(2026, 10, 23, 0, 0, 0, 1);
    expect(ledger.used(A)).toBe(0);
    const r2 = await ledger.debit(A, 200, L);
    if (!r2.ok) throw new Error('refused');
    await ledger.settle(r2.debit, 200);
    expect(journalSum(dir, '2026-11-22', A)).toBe(900);
    expect(journalSum(dir, '2026-11-23', A)).toBe(200);
    expect(await ledger.usage(A)).toEqual({ used: 200, resetsAt: '2026-11-24T00:00:00.000Z', byNetwork: { '': 200 } });
    await ledger.close();
  });
});

describe('embedded engine, counts shared between threads', () => {
  test('two ledgers on one SharedTally: one balance, both journals in the day file, byNetwork from it', async () => {
    const dir = datadir();
    const tally = sharedTallyBuffer(64);
    const a = new EmbeddedLedger(dir, Date.now, new SharedTally(tally));
    const b = new EmbeddedLedger(dir, Date.now, new SharedTally(tally));
    const ra = await a.debit(A, 600, L, 'mainnet');
    expect((await b.debit(A, 600, L, 'sepolia')).ok).toBe(false); // 600 + 600 > 1000 across both
    const rb = await b.debit(A, 400, L, 'sepolia');
    if (!ra.ok || !rb.ok) throw new Error('refused');
    expect(a.used(A)).toBe(1000);
    await Promise.all([a.settle(ra.debit, 600), b.settle(rb.debit, 5)]); // b's call was a request error
    expect(b.used(A)).toBe(605);
    expect(readUsage(dir, utcDay(Date.now())).get(A)).toBe(605);
    expect(await a.usage(A)).toMatchObject({ used: 605, byNetwork: { mainnet: 600, sepolia: 5 } });
    const rc = await b.debit(A, 100, L, 'sepolia');
    if (!rc.ok) throw new Error('refused');
    await b.settle(rc.debit, 100);
    expect((await a.usage(A)).byNetwork).toEqual({ mainnet: 600, sepolia: 105 }); // read on from where it stopped
    // A restart (a new buffer) starts from the file.
    const again = new EmbeddedLedger(dir, Date.now, new SharedTally(sharedTallyBuffer(64)));
    expect(again.used(A)).toBe(705);
    await Promise.all([a.close(), b.close(), again.close()]);
  });

  test('a failed journal write undoes the charge in the shared counts', async () => {
    const dir = datadir();
    const tally = sharedTallyBuffer(64);
    const a = new EmbeddedLedger(dir, Date.now, new SharedTally(tally));
    const b = new EmbeddedLedger(dir, Date.now, new SharedTally(tally));
    mkdirSync(usagePath(dir, utcDay(Date.now())));
    const r = await a.debit(A, 800, L);
    if (!r.ok) throw new Error('refused');
    await expect(a.settle(r.debit, 800)).rejects.toThrow();
    expect(b.used(A)).toBe(0);
    expect((await b.debit(A, 1000, L)).ok).toBe(true);
    await Promise.all([a.close(), b.close()]);
  });

  test("midnight: the first thread to cross it moves the counts; the other's old debit leaves the new day alone", async () => {
    const dir = datadir();
    const tally = sharedTallyBuffer(64);
    let nowA = Date.UTC(2026, 10, 22, 23, 59, 59, 900);
    let nowB = nowA;
    const a = new EmbeddedLedger(dir, () => nowA, new SharedTally(tally));
    const b = new EmbeddedLedger(dir, () => nowB, new SharedTally(tally));
    const old = await b.debit(A, 900, L);
    if (!old.ok) throw new Error('refused');
    nowA = Date.UTC(2026, 10, 23, 0, 0, 0, 5);
    expect(a.used(A)).toBe(0); // a crossed midnight: a new day, nothing used
    nowB = Date.UTC(2026, 10, 23, 0, 0, 0, 6);
    await b.settle(old.debit, 900); // yesterday's call: its charge goes to yesterday's journal
    expect(journalSum(dir, '2026-11-22', A)).toBe(900);
    expect(a.used(A)).toBe(0);
    expect((await b.debit(A, 1000, L)).ok).toBe(true); // today's balance is whole
    // A thread whose clock is still before midnight when the counts moved: its debit moves them back
    // to its day (read from that day's journal), as one ledger does when its clock is set back.
    const c = new EmbeddedLedger(dir, () => Date.UTC(2026, 10, 22, 23, 59, 59, 999), new SharedTally(tally));
    const r = await c.debit(A, 200, L);
    expect(r).toEqual({ ok: false, reason: 'daily', resetsAt: '2026-11-23T00:00:00.000Z' }); // 900 journaled + 200 > 1000
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  test('a full table refuses further keys as unavailable, never a wrong balance', async () => {
    const dir = datadir();
    const a = new EmbeddedLedger(dir, Date.now, new SharedTally(sharedTallyBuffer(8)));
    const hashes = Array.from({ length: 7 }, (_, i) => String(i).repeat(64));
    const results = await Promise.allSettled(hashes.map((h) => a.debit(h, 1, L)));
    expect(results.slice(0, 6).every((r) => r.status === 'fulfilled' && r.value.ok)).toBe(true); // 3/4 of 8
    expect(results[6]?.status).toBe('rejected');
    expect(results[6]?.status === 'rejected' && results[6].reason).toBeInstanceOf(LedgerUnavailableError);
    expect((await a.debit(hashes[0] as string, 1, L)).ok).toBe(true); // known keys still count
    await a.close();
    // A restart whose journal of the day names more keys than fit: it starts, and the key left
    // out is refused, not served against a count without its journaled credits.
    const full = Array.from({ length: 7 }, (_, i) => String(i + 1).repeat(64));
    const dir2 = datadir();
    const b = new EmbeddedLedger(dir2);
    for (const h of full) {
      const r = await b.debit(h, 1000, L);
      if (!r.ok) throw new Error('refused');
      await b.settle(r.debit, 1000);
    }
    await b.close();
    const c = new EmbeddedLedger(dir2, Date.now, new SharedTally(sharedTallyBuffer(8)));
    const again = await Promise.allSettled(full.map((h) => c.debit(h, 1, L)));
    expect(again.filter((r) => r.status === 'fulfilled' && !r.value.ok && r.value.reason === 'daily')).toHaveLength(6);
    expect(again.filter((r) => r.status === 'rejected' && r.reason instanceof LedgerUnavailableError)).toHaveLength(1);
    await c.close();
  });
});

// The journal's compaction (src/ledger/embedded.ts): the same sums in one line per key and network,
// no line lost while other writers append, readers and restarts unchanged.
describe('embedded journal compaction', () => {
  const KEYS = ['1', '2', '3'].map((c) => c.repeat(64));
  const NETS = [undefined, 'mainnet', 'sepolia'];
  const lines = (dir: string): string[] =>
    readFileSync(usagePath(dir, utcDay(Date.now())), 'utf8')
      .split('\n')
      .filter((l) => l !== '');
  /** Expected sums, kept by the test as it charges (key -> network ('' for none) -> credits). */
  const add = (exp: Map<string, Map<string, number>>, hash: string, net: string | undefined, c: number): void => {
    const m = exp.get(hash) ?? new Map<string, number>();
    exp.set(hash, m);
    m.set(net ?? '', (m.get(net ?? '') ?? 0) + c);
  };
  const plain = (m: Map<string, Map<string, number>>): Record<string, Record<string, number>> =>
    Object.fromEntries([...m].map(([k, v]) => [k, Object.fromEntries([...v].sort())]));

  test('once the file reaches its size, the same sums as one line per key and network; usage, restarts and appends go on', async () => {
    const dir = datadir();
    const ledger = new EmbeddedLedger(dir, Date.now, undefined, { journalCompactMin: 4096 });
    const exp = new Map<string, Map<string, number>>();
    for (let i = 0; i < 400; i++) {
      const hash = KEYS[i % 3] as string;
      const net = NETS[(i >> 2) % 3];
      const r = await ledger.debit(hash, 7, { daily: 1e9, perSecond: 0 }, net);
      if (!r.ok) throw new Error('refused');
      await ledger.settle(r.debit, 1 + (i % 5)); // one turn each: a line each
      add(exp, hash, net, 1 + (i % 5));
      if (i === 150) expect(plain(readUsageByNetwork(dir, utcDay(Date.now())))).toEqual(plain(exp));
      await new Promise((r) => setImmediate(r)); // the compaction a flush schedules
    }
    // 400 lines of ~70 bytes would be ~28 KB: the file was rewritten on the way.
    expect(lines(dir).length).toBeLessThan(150);
    expect(plain(readUsageByNetwork(dir, utcDay(Date.now())))).toEqual(plain(exp));
    // usage() reads the journal on from where it stopped, across the swaps (another file each time).
    const total = (h: string): number =>
      [...(exp.get(h) ?? new Map<string, number>()).values()].reduce((a, b) => a + b, 0);
    const u = await ledger.usage(KEYS[0] as string);
    expect(u.used).toBe(total(KEYS[0] as string));
    expect(u.byNetwork).toEqual(Object.fromEntries(exp.get(KEYS[0] as string) ?? []));
    // An explicit compaction: exactly one line per key and network, in the journal's format.
    expect(ledger.compactJournal()).toBe(true);
    expect(lines(dir)).toHaveLength(9);
    for (const l of lines(dir)) expect(l).toMatch(/^[0-9a-f]{64} \d+( (mainnet|sepolia))?$/);
    expect(plain(readUsageByNetwork(dir, utcDay(Date.now())))).toEqual(plain(exp));
    // Compactions between two reads of usage(): each is a new file (a freed inode number may come
    // back), so the read starts over, never on at an offset of an older file.
    expect(ledger.compactJournal()).toBe(true);
    expect(ledger.compactJournal()).toBe(true);
    expect((await ledger.usage(KEYS[2] as string)).byNetwork).toEqual(
      Object.fromEntries(exp.get(KEYS[2] as string) ?? []),
    );
    // The writer reopens the new file: a charge after the swap lands in it.
    const r = await ledger.debit(KEYS[1] as string, 3, L, 'mainnet');
    if (!r.ok) throw new Error('refused');
    await ledger.settle(r.debit, 3);
    add(exp, KEYS[1] as string, 'mainnet', 3);
    expect(lines(dir)).toHaveLength(10);
    expect(plain(readUsageByNetwork(dir, utcDay(Date.now())))).toEqual(plain(exp));
    await ledger.close();
    // A restart starts from the compacted file.
    const again = new EmbeddedLedger(dir);
    for (const h of KEYS) expect(again.used(h)).toBe(total(h));
    await again.close();
  });

  test('two writers on one SharedTally: the other reopens after the swap, no line lost', async () => {
    const dir = datadir();
    const tally = sharedTallyBuffer(64);
    const a = new EmbeddedLedger(dir, Date.now, new SharedTally(tally), { journalCompactMin: 1 << 20 });
    const b = new EmbeddedLedger(dir, Date.now, new SharedTally(tally), { journalCompactMin: 1 << 20 });
    let sum = 0;
    for (let i = 0; i < 60; i++) {
      const w = i % 2 === 0 ? a : b;
      const r = await w.debit(A, 10, { daily: 1e9, perSecond: 0 });
      if (!r.ok) throw new Error('refused');
      await w.settle(r.debit, 10);
      sum += 10;
      if (i % 20 === 10) expect((i % 4 === 0 ? b : a).compactJournal()).toBe(true); // the one that did not just write
    }
    expect(readUsage(dir, utcDay(Date.now())).get(A)).toBe(sum);
    expect(new EmbeddedLedger(dir).used(A)).toBe(sum);
    await Promise.all([a.close(), b.close()]);
  });

  test('in real threads appending at once, with compactions among them: every charge is in the journal', async () => {
    const dir = datadir();
    const tally = sharedTallyBuffer(64);
    const module = new URL('../src/index.js', import.meta.url).href;
    // Each thread charges its own key 1..300 credits, one turn per charge (45,150 credits each).
    const src = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.module).then(async ({ EmbeddedLedger, SharedTally }) => {
        const l = new EmbeddedLedger(workerData.dir, Date.now, new SharedTally(workerData.tally), { journalCompactMin: 2048 });
        let compactions = 0;
        for (let i = 1; i <= 300; i++) {
          const r = await l.debit(workerData.hash, i, { daily: 1e12, perSecond: 0 });
          if (!r.ok) throw new Error('refused');
          await l.settle(r.debit, i);
          if (i % 50 === 0 && l.compactJournal()) compactions++;
        }
        await l.close();
        parentPort.postMessage(compactions);
      });`;
    const hashes = ['7', '8', '9'].map((c) => c.repeat(64));
    const compactions = await Promise.all(
      hashes.map((hash) => {
        const w = new Worker(src, { eval: true, workerData: { module, dir, tally, hash } });
        return new Promise<number>((resolve, reject) => {
          w.once('message', resolve);
          w.once('error', reject);
        });
      }),
    );
    expect(compactions.reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
    const sums = readUsage(dir, utcDay(Date.now()));
    for (const h of hashes) expect(sums.get(h)).toBe(45_150);
    expect(lines(dir).length).toBeLessThan(900); // 900 turns wrote a line each
  });

  test("a compaction temp a crashed process left is removed at start; this process's are not", async () => {
    const dir = datadir();
    mkdirSync(join(dir, 'usage'));
    const day = utcDay(Date.now());
    const stale = join(dir, 'usage', `${day}.log.999999.0badf00d.tmp`);
    const ours = join(dir, 'usage', `${day}.log.${process.pid}.0badf00d.tmp`);
    writeFileSync(stale, 'x');
    writeFileSync(ours, 'x');
    const l = new EmbeddedLedger(dir);
    const left = readdirSync(join(dir, 'usage'));
    expect(left).not.toContain(`${day}.log.999999.0badf00d.tmp`);
    expect(left).toContain(`${day}.log.${process.pid}.0badf00d.tmp`);
    await l.close();
  });

  test('a compaction that fails changes nothing and leaves no temp', async () => {
    const dir = datadir();
    const l = new EmbeddedLedger(dir);
    const day = utcDay(Date.now());
    mkdirSync(usagePath(dir, day)); // the day's journal cannot be read as a file
    expect(l.compactJournal()).toBe(false);
    expect(readdirSync(join(dir, 'usage')).sort()).toEqual([`${day}.log`]);
    await l.close();
  });
});

const redisTest = HAVE_REDIS ? test : test.skip;

/** What the Redis tests started (servers, clients, ledgers), stopped after each of them. */
const cleanups: (() => Promise<unknown>)[] = [];
/** A private redis-server, stopped after the test. */
async function redis(persist = false): Promise<RedisProcess> {
  const r = await startRedis({ persist });
  cleanups.push(async () => {
    await r.stop('SIGKILL');
    await r.cleanup();
  });
  return r;
}
/** A Redis ledger on `r` with its fail-open journal in a fresh datadir, closed after the test. */
async function ledgerOn(
  r: RedisProcess,
  failure: 'open' | 'closed',
  commandTimeoutMs = 1000,
): Promise<{ ledger: RedisLedger; dir: string }> {
  const client = await connectRedis({ url: r.url, commandTimeoutMs });
  const dir = datadir();
  const ledger = new RedisLedger({ client, failure, journalDir: dir, commandTimeoutMs });
  cleanups.push(async () => {
    await ledger.close();
    client.destroy();
  });
  return { ledger, dir };
}
/** Usage read straight from Redis, independently of the engine: HGET of the day field. */
async function rawUsed(r: RedisProcess, hash: string): Promise<number> {
  const c = createClient({ url: r.url });
  c.on('error', () => {});
  await c.connect();
  try {
    const t = (await c.sendCommand(['TIME'])) as string[];
    const v = await c.hGet(`cn:{${hash}}:d`, String(Math.floor(Number(t[0]) / 86400)));
    return v === null || v === undefined ? 0 : Number(v);
  } finally {
    c.destroy();
  }
}

/** Waits (5 s at most) until the ledger has its Redis back and its journal replayed. */
async function untilRecovered(ledger: RedisLedger): Promise<void> {
  const t0 = Date.now();
  while (ledger.isDegraded) {
    if (Date.now() - t0 > 15_000) throw new Error('never recovered');
    await sleep(50);
  }
}

/**
 * 30 debits of one event-loop turn across three keys go as one script call, applied in the order
 * asked (daily balances and a token bucket), and the settles of one turn as one call too.
 */
async function checkOneCallPerTurn(r: RedisProcess, ledger: RedisLedger): Promise<void> {
  const a = hashKey('batch a');
  const b = hashKey('batch b');
  const c = hashKey('batch c');
  await ledger.debit(c, 0, { daily: 1, perSecond: 0 }); // the script loaded, the connection up
  const calls0 = ledger.stats.redisCalls;
  // 30 debits in one turn: a has 5 calls of 80 left, b 3 calls of 50 (and a bucket of 150/s),
  // c plenty. Applied in the order asked: the first 5 of a and the first 3 of b pass.
  const asked: Array<{ h: string; cost: number; limits: Limits }> = [];
  for (let i = 0; i < 10; i++) {
    asked.push({ h: a, cost: 80, limits: { daily: 400, perSecond: 0 } });
    asked.push({ h: b, cost: 50, limits: { daily: 150, perSecond: 150 } });
    asked.push({ h: c, cost: 10, limits: { daily: 1_000_000, perSecond: 0 } });
  }
  const t0 = performance.now();
  const got = await Promise.all(asked.map((x) => ledger.debit(x.h, x.cost, x.limits)));
  // The bucket of b ran in the same call: its 150 credits taken, a full one is a second away
  // (unless the machine stalled that long since the batch was asked).
  const more = await ledger.debit(b, 150, { daily: 1_000_000, perSecond: 150 });
  const refilled = performance.now() - t0 >= 1000;
  if (!refilled) expect(more.ok ? 'ok' : more.reason).toBe('throughput');
  expect(ledger.stats.redisCalls - calls0).toBe(2);
  if (more.ok) await ledger.settle(more.debit, 0); // a stall refilled the bucket: give it back
  const passed = (h: string): boolean[] => got.filter((_, i) => asked[i]?.h === h).map((x) => x.ok);
  expect(passed(a)).toEqual([true, true, true, true, true, false, false, false, false, false]);
  expect(passed(b)).toEqual([true, true, true, false, false, false, false, false, false, false]);
  expect(passed(c).every((x) => x)).toBe(true);
  expect(got.filter((x) => !x.ok).map((x) => (x.ok ? '' : x.reason))).toEqual(Array(12).fill('daily'));
  expect([await rawUsed(r, a), await rawUsed(r, b), await rawUsed(r, c)]).toEqual([400, 150, 100]);
  // The settles of one turn: refunds of a and c go as one call too.
  const calls1 = ledger.stats.redisCalls;
  await Promise.all(
    got.map((x, i) => (x.ok ? ledger.settle(x.debit, asked[i]?.h === b ? x.debit.cost : 5) : undefined)),
  );
  expect(ledger.stats.redisCalls - calls1).toBe(1);
  expect([await rawUsed(r, a), await rawUsed(r, b), await rawUsed(r, c)]).toEqual([25, 150, 50]);
}

/**
 * Redis pauses: a batch of debits times out on our side (decided locally, journaled) while Redis
 * still runs it later; the replay finds every charge applied and skips it.
 */
async function checkReplayOfLostBatch(r: RedisProcess, ledger: RedisLedger): Promise<void> {
  const h = hashKey('idempotent');
  const limits = { daily: 1_000_000, perSecond: 0 };
  // Warm up (script loaded, connection up).
  const w = await ledger.debit(h, 10, limits);
  if (!w.ok) throw new Error('refused');
  await untilRecovered(ledger); // a stalled warm-up past the 150 ms timeout is replayed first
  // Redis stops answering for 3 s: every debit sent meanwhile times out on our side, but Redis
  // still runs them when the pause ends (they are queued on the connection). 3 s: the batch
  // below is sent within it even if this process stalls.
  const admin = createClient({ url: r.url });
  admin.on('error', () => {});
  await admin.connect();
  await admin.sendCommand(['CLIENT', 'PAUSE', '3000', 'ALL']);
  const h2 = hashKey('idempotent too');
  const calls0 = ledger.stats.redisCalls;
  const during = await Promise.all(Array.from({ length: 20 }, (_, i) => ledger.debit(i % 2 ? h : h2, 100, limits)));
  expect(ledger.stats.redisCalls - calls0).toBe(1); // one batch, its reply lost
  expect(during.every((x) => x.ok)).toBe(true); // fail-open: decided locally
  expect(ledger.isDegraded).toBe(true);
  await Promise.all(during.map((x) => (x.ok ? ledger.settle(x.debit, 100) : undefined)));
  admin.destroy();
  // Redis runs the queued originals, then the replay finds each applied and skips it.
  await untilRecovered(ledger);
  expect(ledger.stats.replayed).toBeGreaterThanOrEqual(20);
  expect(await rawUsed(r, h)).toBe(10 + 10 * 100);
  expect(await rawUsed(r, h2)).toBe(10 * 100);
  await ledger.settle(w.debit, 10);
  expect((await ledger.usage(h)).used).toBe(1010);
}

describe('redis engine specifics', () => {
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()?.();
  });

  redisTest("keys are in one Cluster slot per API key (hash tag) and the day is Redis's", async () => {
    const r = await redis();
    const { ledger } = await ledgerOn(r, 'open');
    const h = hashKey('slot test');
    const d = await ledger.debit(h, 80, { daily: 1000, perSecond: 100 });
    if (!d.ok) throw new Error('refused');
    const c = createClient({ url: r.url });
    c.on('error', () => {});
    await c.connect();
    const names = (await c.keys(`cn:*${h}*`)).sort();
    expect(names).toEqual([`cn:{${h}}:d`, `cn:{${h}}:q:${ledger.rid}`, `cn:{${h}}:tb`]);
    const slots = await Promise.all(
      names.map((k) => c.sendCommand(['CLUSTER', 'KEYSLOT', k]).catch(() => 'no cluster')),
    );
    // CLUSTER KEYSLOT needs cluster mode on some versions; when it answers, all slots agree.
    if (typeof slots[0] === 'number') expect(new Set(slots).size).toBe(1);
    c.destroy();
    expect(await rawUsed(r, h)).toBe(80);
  });

  redisTest(
    'the debits of one event-loop turn, across keys, go as one script call, applied in order and each answered',
    async () => {
      const r = await redis();
      const { ledger } = await ledgerOn(r, 'open');
      await checkOneCallPerTurn(r, ledger);
    },
  );

  redisTest(
    'a batch whose reply is lost (timeout) is journaled charge by charge and replayed once: never charged twice',
    async () => {
      const r = await redis();
      const { ledger } = await ledgerOn(r, 'open', 150);
      await checkReplayOfLostBatch(r, ledger);
    },
  );

  redisTest(
    'fail-open: Redis stopped -> calls decided locally and journaled on disk; restarted -> replayed, usage equals charges',
    async () => {
      const r = await redis(true);
      const { ledger, dir } = await ledgerOn(r, 'open', 300);
      const h = hashKey('outage');
      const limits = { daily: 100_000, perSecond: 0 };
      let charged = 0;
      const charge = async (cost: number, final = cost): Promise<boolean> => {
        const d = await ledger.debit(h, cost, limits);
        if (!d.ok) return false;
        await ledger.settle(d.debit, final);
        charged += final;
        return true;
      };
      for (let i = 0; i < 10; i++) expect(await charge(80)).toBe(true);
      await r.stop('SIGKILL');
      for (let i = 0; i < 30; i++) expect(await charge(80, i % 10 === 0 ? 5 : 80)).toBe(true);
      expect(ledger.isDegraded).toBe(true);
      // The journal is on disk before settle resolved (it survives a crash of this replica).
      const files = readdirSync(dir).filter((f) => f.endsWith('.log'));
      expect(files).toEqual([`${ledger.rid}.log`]);
      expect(
        readFileSync(join(dir, files[0] as string), 'utf8')
          .trim()
          .split('\n').length,
      ).toBeGreaterThanOrEqual(30);
      await r.restart();
      await untilRecovered(ledger);
      expect(await rawUsed(r, h)).toBe(charged);
      expect(readdirSync(dir).filter((f) => f.endsWith('.log'))).toEqual([]); // replayed: gone
      expect(await charge(80)).toBe(true);
      await untilRecovered(ledger); // a reply past the 300 ms timeout is journaled, then replayed
      expect(await rawUsed(r, h)).toBe(charged);
    },
  );

  redisTest('fail-open bound: while away a replica spends at most what it knew was left', async () => {
    const r = await redis();
    const { ledger } = await ledgerOn(r, 'open', 300);
    const h = hashKey('bound');
    const limits = { daily: 800, perSecond: 0 };
    const first = await ledger.debit(h, 400, limits);
    if (!first.ok) throw new Error('refused');
    await ledger.settle(first.debit, 400);
    await r.stop('SIGKILL');
    const during = [];
    for (let i = 0; i < 10; i++) during.push(await ledger.debit(h, 80, limits));
    expect(during.filter((d) => d.ok)).toHaveLength(5); // 400 known used + 5 x 80 = 800
  });

  redisTest('a journal left by a crashed replica is replayed by the next one on the same datadir', async () => {
    const r = await redis();
    const { ledger, dir } = await ledgerOn(r, 'open', 300);
    const h = hashKey('orphan');
    const limits = { daily: 100_000, perSecond: 0 };
    await r.stop('SIGKILL');
    for (let i = 0; i < 7; i++) {
      const d = await ledger.debit(h, 150, limits);
      if (!d.ok) throw new Error('refused');
      await ledger.settle(d.debit, 150);
    }
    // "Crash": the instance is abandoned with its journal on disk.
    await r.restart();
    const client = await connectRedis({ url: r.url });
    const next = new RedisLedger({ client, failure: 'open', journalDir: dir });
    cleanups.push(async () => {
      await next.close();
      client.destroy();
    });
    await untilRecovered(next);
    expect(await rawUsed(r, h)).toBe(7 * 150);
  });

  redisTest('fail-closed: Redis away -> paid calls refused (LedgerUnavailableError), nothing charged', async () => {
    const r = await redis(true);
    const { ledger } = await ledgerOn(r, 'closed'); // the default command timeout: a healthy Redis on a loaded machine answers within it
    const h = hashKey('closed');
    const limits = { daily: 100_000, perSecond: 0 };
    const ok = await ledger.debit(h, 80, limits);
    if (!ok.ok) throw new Error('refused');
    await ledger.settle(ok.debit, 80);
    await r.stop('SIGKILL');
    await expect(ledger.debit(h, 80, limits)).rejects.toBeInstanceOf(LedgerUnavailableError);
    await expect(ledger.debit(h, 80, limits)).rejects.toBeInstanceOf(LedgerUnavailableError);
    await r.restart();
    const t0 = Date.now();
    for (;;) {
      try {
        const d = await ledger.debit(h, 80, limits);
        if (d.ok) await ledger.settle(d.debit, 80);
        break;
      } catch (err) {
        if (!(err instanceof LedgerUnavailableError) || Date.now() - t0 > 5000) throw err;
        await sleep(50);
      }
    }
    expect(await rawUsed(r, h)).toBe(160);
  });
});

test('utcDay: the UTC date of any instant, across midnights, in any order of calls', () => {
  const midnight = Date.UTC(2026, 10, 23);
  const instants = [
    midnight,
    midnight - 1,
    midnight + 1,
    midnight + 86_399_999,
    midnight + 86_400_000,
    Date.UTC(2024, 1, 29, 12),
    midnight - 86_400_000,
    0,
    Date.UTC(2031, 0, 1) - 1,
  ];
  let seed = 3;
  for (let i = 0; i < 200; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    instants.push(midnight + Math.floor((seed / 2147483648 - 0.5) * 10 * 86_400_000));
  }
  for (const ms of [...instants, ...instants.reverse()])
    expect(utcDay(ms)).toBe(new Date(ms).toISOString().slice(0, 10));
});
