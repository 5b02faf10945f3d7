// The ledger of `serve --threads` (src/ledger/threads.ts) in real worker threads: the main thread owns
// the embedded engine; app threads debiting against one balance at once admit exactly what it
// covers, their settles reach the one journal (durable across a restart), a partial settle gives
// credits back, and keys and usage records cross the link both ways.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  EmbeddedLedger,
  EmbeddedUsage,
  FileKeyStore,
  SharedTally,
  ThreadLedgerHost,
  linkPorts,
  openThreadLedger,
  readUsage,
  sharedTallyBuffer,
  utcDay,
} from '../src/index.js';
import type { KeyRecord, SharedCredits } from '../src/index.js';

const HASH = 'ab'.repeat(32);
const OTHER = 'cd'.repeat(32);
const LIMITS = { daily: 8000, perSecond: 0 };

// Each thread debits `tries` times at once, settles what it got at full cost, reports the count.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.module).then(async ({ openThreadLedger }) => {
  const l = await openThreadLedger(workerData.link);
  const results = await Promise.all(Array.from({ length: workerData.tries }, () => l.credits.debit(workerData.hash, 80, workerData.limits)));
  const got = results.filter((r) => r.ok);
  const refused = results.filter((r) => !r.ok && r.reason === 'daily').length;
  await Promise.all(got.map((r) => l.credits.settle(r.debit, 80)));
  // One usage event per call, as the middleware records them (the link sums a turn's alike ones).
  for (const r of results) l.usage.record(r.ok ? { key: 'k1', method: 'eth_blockNumber', credits: 80 } : { key: 'k1', method: 'eth_blockNumber', credits: 0, error: '4xx' });
  await l.close();
  parentPort.postMessage({ got: got.length, refused });
});
`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ledger-threads-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

// The embedded engine reaches the threads two ways: the counts in shared memory, each thread
// with its own ledger on them (what `serve --threads` does), and the main thread's ledger over a
// port (what the Redis engine does).
test.each(['shared counts', 'a port to the main thread'])(
  '4 threads racing 150 debits each against a 100-call balance (%s): exactly 100 admitted, journaled, usage recorded',
  async (mode) => {
    const shared: SharedCredits = { datadir: dir, tally: sharedTallyBuffer(1024) };
    const credits =
      mode === 'shared counts'
        ? new EmbeddedLedger(dir, Date.now, new SharedTally(shared.tally))
        : new EmbeddedLedger(dir);
    const keys = new FileKeyStore(dir);
    const usage = new EmbeddedUsage(dir).start();
    const host = new ThreadLedgerHost({ credits: mode === 'shared counts' ? shared : credits, keys, usage });
    const module = new URL('../src/ledger/threads.js', import.meta.url).href;
    const counts = await Promise.all(
      Array.from({ length: 4 }, () => {
        const link = host.link();
        const w = new Worker(THREAD, {
          eval: true,
          workerData: { module, link, hash: HASH, tries: 150, limits: LIMITS },
          transferList: linkPorts(link),
        });
        return new Promise<{ got: number; refused: number }>((resolve, reject) => {
          w.once('message', resolve);
          w.once('error', reject);
        });
      }),
    );
    expect(counts.reduce((a, c) => a + c.got, 0)).toBe(100);
    expect(counts.reduce((a, c) => a + c.refused, 0)).toBe(500);
    expect((await credits.usage(HASH)).used).toBe(8000);
    // Each thread's journal lines are whole: the day's file sums to the charges, line by line.
    expect(readUsage(dir, utcDay(Date.now())).get(HASH)).toBe(8000);
    expect((await credits.usage(HASH)).byNetwork).toEqual({ '': 8000 });
    // The usage records of every thread reached the main thread's record.
    const days = await usage.days('k1', 1);
    expect(days[days.length - 1]?.credits).toBe(8000);
    expect(days[days.length - 1]?.calls).toBe(600);
    expect(days[days.length - 1]?.e4xx).toBe(500);
    host.close();
    await usage.close();
    await credits.close();
    expect(readUsage(dir, utcDay(Date.now())).get(HASH)).toBe(8000);
    // A restart starts from the journal: nothing left today for that key, another key is untouched.
    const again = new EmbeddedLedger(dir);
    const host2 = new ThreadLedgerHost({ credits: again, keys, usage: new EmbeddedUsage(dir) });
    const l = await openThreadLedger(host2.link());
    expect((await l.credits.usage(HASH)).used).toBe(8000);
    const refused = await l.credits.debit(HASH, 80, LIMITS);
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.reason).toBe('daily');
    expect((await l.credits.debit(OTHER, 80, LIMITS)).ok).toBe(true);
    await l.credits.close();
    await l.keys.close();
    host2.close();
    await again.close();
  },
);

test('a partial settle gives credits back across the link; key changes reach an app thread', async () => {
  const credits = new EmbeddedLedger(dir);
  const keys = new FileKeyStore(dir);
  const usage = new EmbeddedUsage(dir);
  const host = new ThreadLedgerHost({ credits, keys, usage });
  const l = await openThreadLedger(host.link());
  const d = await l.credits.debit(HASH, 60, { daily: 100, perSecond: 0 });
  expect(d.ok).toBe(true);
  expect((await l.credits.debit(HASH, 60, { daily: 100, perSecond: 0 })).ok).toBe(false);
  if (d.ok) await l.credits.settle(d.debit, 5); // a request error: 5 credits
  expect((await credits.usage(HASH)).used).toBe(5);
  expect((await l.credits.debit(HASH, 95, { daily: 100, perSecond: 0 })).ok).toBe(true);

  let changed = 0;
  const stop = l.keys.watch(() => changed++);
  const rec: KeyRecord = {
    id: HASH.slice(0, 12),
    hash: HASH,
    plan: 'core',
    createdAt: new Date(0).toISOString(),
    name: 'from a thread',
  };
  await l.keys.put(rec); // written by the main thread's store
  expect((await keys.get(HASH))?.['name']).toBe('from a thread');
  expect((await l.keys.get(HASH))?.hash).toBe(HASH);
  expect((await l.keys.list()).map((k) => k.hash)).toEqual([HASH]);
  for (let i = 0; i < 40 && changed === 0; i++) await new Promise((r) => setTimeout(r, 100));
  expect(changed).toBeGreaterThan(0);
  stop();
  await l.credits.close();
  await l.keys.close();
  host.close();
  await credits.close();
});
