// A block trace's timeout is each transaction's, as geth's traceTx starts a transaction's deadline
// with the transaction: a block whose transactions together run longer than the timeout is
// traced, a transaction that runs longer is stopped (ExecutionTimeout), and the call's own
// deadline bounds them all. The clock is the test's: each traced transaction's start moves it by
// what the test says that transaction took, so the answer does not depend on the machine's speed.
import { jest } from '@jest/globals';
import type { ChainStore, HeaderRecord } from '@chainnode/core';
import { openChainStore } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';
import { ExecutionTimeout, Executor, StoreStateManager } from '../src/index.js';
import { TraceEngine } from '../src/trace/index.js';
import type { Tracer } from '../src/trace/index.js';

let store: ChainStore;
let cleanup: () => Promise<void>;
let engine: TraceEngine;
/** A block of the fixture chain with at least five transactions, its RLP and its parent. */
let target: { raw: Uint8Array; parent: HeaderRecord; txs: number };

beforeAll(async () => {
  const copy = await datadirCopy('fixtures');
  cleanup = copy.cleanup;
  store = await openChainStore(copy.dir);
  const executor = new Executor(store.info(), store.stateReader(), (n) => store.canonicalHash(n));
  engine = new TraceEngine(executor, store.stateReader(), (n) => store.canonicalHash(n));
  for (let n = (await store.head()).number; n > 0n; n--) {
    const hash = (await store.canonicalHash(n)) as Uint8Array;
    const block = await store.block(hash);
    if (block === undefined || block.transactions.length < 5) continue;
    const header = (await store.header(hash)) as HeaderRecord;
    const parent = (await store.header(header.parentHash)) as HeaderRecord;
    target = { raw: (await store.rawBlock(hash)) as Uint8Array, parent, txs: block.transactions.length };
    return;
  }
  throw new Error('no block of five transactions in the fixture chain');
});

afterAll(async () => {
  await store?.close();
  await cleanup?.();
});

afterEach(() => jest.restoreAllMocks());

/** Date.now as the test sets it; `tracer(ms)` moves it by `ms` when a traced transaction starts. */
function testClock(): { tracer: (ms: number) => Tracer } {
  let now = 1_000_000;
  jest.spyOn(Date, 'now').mockImplementation(() => now);
  return {
    tracer: (ms) => ({
      onTxStart: () => {
        now += ms;
      },
      result: () => null,
    }),
  };
}

test('each transaction within the timeout: the whole block is traced, though it runs longer', async () => {
  const clock = testClock();
  // 60 ms a transaction, a 100 ms timeout: five or more transactions take 300 ms or more.
  const traces = await engine.block(target.raw, target.parent, {
    tracerFor: () => clock.tracer(60),
    deadline: Number.POSITIVE_INFINITY,
    txTimeoutMs: 100,
  });
  expect(traces.map((t) => t.index)).toEqual(Array.from({ length: target.txs }, (_, i) => i));
  // The same block under one deadline for all of it (the call's own) stops within it.
  const whole = engine.block(target.raw, target.parent, {
    tracerFor: () => clock.tracer(60),
    deadline: Date.now() + 100,
    txTimeoutMs: 100,
  });
  await expect(whole).rejects.toBeInstanceOf(ExecutionTimeout);
});

test('a transaction past the timeout stops the trace with ExecutionTimeout', async () => {
  const clock = testClock();
  const traced = engine.block(target.raw, target.parent, {
    tracerFor: () => clock.tracer(150),
    deadline: Number.POSITIVE_INFINITY,
    txTimeoutMs: 100,
  });
  await expect(traced).rejects.toBeInstanceOf(ExecutionTimeout);
});

test("recording a block's rows: each transaction under its own limit as well", async () => {
  // Recording feeds no tracer: the clock moves by `step` ms at each transaction's first state read.
  let now = 1_000_000;
  jest.spyOn(Date, 'now').mockImplementation(() => now);
  let step = 60;
  let started = false;
  const begin = StoreStateManager.prototype.beginTransaction;
  jest.spyOn(StoreStateManager.prototype, 'beginTransaction').mockImplementation(function (this: StoreStateManager) {
    started = true;
    return begin.call(this);
  });
  const read = StoreStateManager.prototype.getAccount;
  jest.spyOn(StoreStateManager.prototype, 'getAccount').mockImplementation(function (
    this: StoreStateManager,
    address: Parameters<typeof read>[0],
  ) {
    if (started) {
      started = false;
      now += step;
    }
    return read.call(this, address);
  });
  const rows = await engine.recordBlock(target.raw, target.parent, {
    deadline: Number.POSITIVE_INFINITY,
    txTimeoutMs: 100,
  });
  expect(rows?.frames.length).toBeGreaterThan(0);
  expect(now).toBeGreaterThanOrEqual(1_000_000 + 60 * target.txs);
  // One deadline for the whole block stops it at its second transaction.
  const whole = engine.recordBlock(target.raw, target.parent, { deadline: now + 100, txTimeoutMs: 100 });
  await expect(whole).rejects.toBeInstanceOf(ExecutionTimeout);
  // A transaction that takes 150 ms is stopped at its timeout.
  step = 150;
  const slow = engine.recordBlock(target.raw, target.parent, { deadline: Number.POSITIVE_INFINITY, txTimeoutMs: 100 });
  await expect(slow).rejects.toBeInstanceOf(ExecutionTimeout);
});
