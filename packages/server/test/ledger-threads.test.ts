// The shared ledger of `serve --threads` (ledger-threads.ts) in real worker threads: many app-side
// ledgers reserving against one balance at once admit exactly what it covers, commits reach the
// one journal, the journal seeds a new host, and a new UTC day starts from zero.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { SharedLedgerHost, ThreadCreditLedger } from '../src/ledger-threads.js';
import { readUsage, utcDay } from '../src/ledger.js';

const HASH = 'ab'.repeat(32);
const OTHER = 'cd'.repeat(32);

// Each thread reserves `tries` times as fast as it can, commits what it got, reports the count.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
import(workerData.module).then(async ({ ThreadCreditLedger }) => {
  const l = new ThreadCreditLedger(workerData.link);
  const got = [];
  for (let i = 0; i < workerData.tries; i++) { const r = l.reserve(workerData.hash, 80, workerData.limit); if (r) got.push(r); }
  await Promise.all(got.map((r) => l.commit(r)));
  l.close();
  parentPort.postMessage(got.length);
});
`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ledger-threads-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('4 threads racing 150 reservations each against a 100-call balance: exactly 100 admitted and journaled', async () => {
  const host = new SharedLedgerHost(dir);
  const module = new URL('../src/ledger-threads.js', import.meta.url).href;
  const counts = await Promise.all(
    Array.from({ length: 4 }, () => {
      const link = host.link();
      const w = new Worker(THREAD, { eval: true, workerData: { module, link, hash: HASH, tries: 150, limit: 8000 }, transferList: [link.port] });
      return new Promise<number>((resolve, reject) => {
        w.once('message', (n: number) => resolve(n));
        w.once('error', reject);
      });
    }),
  );
  expect(counts.reduce((a, b) => a + b, 0)).toBe(100);
  host.close();
  expect(readUsage(dir, utcDay(Date.now())).get(HASH)).toBe(8000);
  // A new host (a restart) starts from the journal: nothing left today.
  const again = new SharedLedgerHost(dir);
  const l = new ThreadCreditLedger(again.link());
  expect(l.used(HASH)).toBe(8000);
  expect(l.reserve(HASH, 80, 8000)).toBeUndefined();
  expect(l.reserve(OTHER, 80, 8000)).toBeDefined();
  l.close();
  again.close();
});

test('release gives credits back; a new UTC day starts from zero', async () => {
  let now = Date.UTC(2026, 0, 1, 23, 59, 59);
  const host = new SharedLedgerHost(dir, () => now);
  const l = new ThreadCreditLedger(host.link(), () => now);
  const a = l.reserve(HASH, 60, 100);
  expect(a).toBeDefined();
  expect(l.reserve(HASH, 60, 100)).toBeUndefined();
  l.release(a!);
  const b = l.reserve(HASH, 60, 100)!;
  await l.commit(b);
  expect(l.used(HASH)).toBe(60);
  now += 2_000; // 00:00:01 the next day
  expect(l.used(HASH)).toBe(0);
  expect(l.reserve(HASH, 100, 100)).toBeDefined();
  l.close();
  host.close();
  expect(readUsage(dir, '2026-01-01').get(HASH)).toBe(60);
});
