// CreditLedger on its own: exact reservations, journal-before-answer, a failed journal write
// undoing its charges, the UTC day roll with an injected clock, and replay by a new ledger (what
// a restarted server does). The black-box CLI tests drive the same code through HTTP.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreditLedger, readUsage, usagePath, utcDay } from '../src/ledger.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function datadir(): string {
  const d = mkdtempSync(join(tmpdir(), 'ledger-'));
  dirs.push(d);
  return d;
}

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

test('reservations are exact: 150 concurrent calls of 80 against a balance of 100 calls admit exactly 100', async () => {
  const dir = datadir();
  const ledger = new CreditLedger(dir);
  const admitted = Array.from({ length: 150 }, () => ledger.reserve(A, 80, 8000)).filter((r) => r !== undefined);
  expect(admitted).toHaveLength(100);
  expect(ledger.used(A)).toBe(8000);
  // Nothing is journaled before commit; all of it after the commits resolve.
  expect(journalSum(dir, utcDay(Date.now()), A)).toBe(0);
  await Promise.all(admitted.map((r) => ledger.commit(r)));
  expect(journalSum(dir, utcDay(Date.now()), A)).toBe(8000);
  expect(ledger.used(A)).toBe(8000);
  expect(ledger.reserve(A, 80, 8000)).toBeUndefined();
  // Another key has its own balance.
  expect(ledger.reserve(B, 80, 8000)).toBeDefined();
  ledger.close();
});

test('a released reservation costs nothing; a new ledger replays what was committed, once', async () => {
  const dir = datadir();
  const first = new CreditLedger(dir);
  const kept = first.reserve(A, 150, 1000);
  const failed = first.reserve(A, 255, 1000);
  expect(kept && failed).toBeDefined();
  first.release(failed!);
  expect(first.used(A)).toBe(150);
  await first.commit(kept!);
  first.close();
  const again = new CreditLedger(dir);
  expect(again.used(A)).toBe(150);
  expect(readUsage(dir, utcDay(Date.now())).get(A)).toBe(150);
  again.close();
});

test('a journal that cannot be written fails the commits of that turn and undoes their charges', async () => {
  const dir = datadir();
  const ledger = new CreditLedger(dir);
  // The day's journal path is a directory: opening it for append fails.
  mkdirSync(usagePath(dir, utcDay(Date.now())));
  const r1 = ledger.reserve(A, 80, 1000);
  const r2 = ledger.reserve(A, 80, 1000);
  const results = await Promise.allSettled([ledger.commit(r1!), ledger.commit(r2!)]);
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  expect(ledger.used(A)).toBe(0);
  expect(ledger.reserve(A, 1000, 1000)).toBeDefined();
  ledger.close();
});

test('the balance resets at 00:00 UTC; the old day stays in its own journal', async () => {
  const dir = datadir();
  let now = Date.UTC(2026, 10, 22, 23, 59, 59, 500);
  const ledger = new CreditLedger(dir, () => now);
  expect(ledger.resetsAt().toISOString()).toBe('2026-11-23T00:00:00.000Z');
  const r = ledger.reserve(A, 900, 1000);
  await ledger.commit(r!);
  expect(ledger.reserve(A, 200, 1000)).toBeUndefined();
  now = Date.UTC(2026, 10, 23, 0, 0, 0, 1);
  expect(ledger.used(A)).toBe(0);
  const r2 = ledger.reserve(A, 200, 1000);
  expect(r2).toBeDefined();
  await ledger.commit(r2!);
  expect(journalSum(dir, '2026-11-22', A)).toBe(900);
  expect(journalSum(dir, '2026-11-23', A)).toBe(200);
  expect(ledger.resetsAt().toISOString()).toBe('2026-11-24T00:00:00.000Z');
  ledger.close();
});
