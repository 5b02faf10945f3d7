// Subscriptions without a transport: the log filter index against an independent matcher, the
// hub's notification order / credits / limits / activation, and eth_subscribe / eth_unsubscribe
// through the envelope (errors as geth gives them).
import { toData } from '@chainnode/core';
import type { Bytes, ChainCommit, CommittedBlock, LogRecord } from '@chainnode/core';
import {
  createRpcService,
  EVENT_CREDITS,
  LogFilterIndex,
  logKeys,
  MemoryFilterStore,
  newSubscriptionId,
  SubscriptionHub,
} from '../src/index.js';
import type { CallMiddleware, LogMatchFilter, Notification, NotificationSink } from '../src/index.js';
import { seededRandom } from '@chainnode/testkit';
import { FakeStore, filled, header } from './fake-store.js';

const ADDRS = Array.from({ length: 6 }, (_, i) => filled(0x10 + i, 20));
const TOPICS = Array.from({ length: 6 }, (_, i) => filled(0x80 + i, 32));

/** The rule written out independently: hex strings, any-of addresses, positional topics. */
interface RefFilter {
  addresses: string[];
  topics: (string[] | null)[];
}
const refFilter = (f: LogMatchFilter): RefFilter => ({
  addresses: f.addresses.map((a) => toData(a)),
  topics: f.topics.map((alts) => (alts === null || alts.length === 0 ? null : alts.map((t) => toData(t)))),
});
function reference(f: RefFilter, log: { address: string; topics: string[] }): boolean {
  if (f.addresses.length > 0 && !f.addresses.includes(log.address)) return false;
  if (f.topics.length > log.topics.length) return false;
  return f.topics.every((alts, i) => alts === null || alts.includes(log.topics[i] as string));
}

function randomFilter(r: () => number): LogMatchFilter {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const addresses = r() < 0.5 ? [] : Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(ADDRS));
  const topics = Array.from({ length: Math.floor(r() * 4) }, () =>
    r() < 0.4 ? null : Array.from({ length: 1 + Math.floor(r() * 2) }, () => pick(TOPICS)),
  );
  return { addresses, topics };
}

function randomLog(r: () => number): { address: Bytes; topics: Bytes[] } {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)] as T;
  return { address: pick(ADDRS), topics: Array.from({ length: Math.floor(r() * 5) }, () => pick(TOPICS)) };
}

describe('LogFilterIndex', () => {
  test('matches exactly what the reference rule matches (1,000 random filters x 1,000 random logs)', () => {
    const r = seededRandom(7);
    const index = new LogFilterIndex<number>();
    const filters = Array.from({ length: 1000 }, () => randomFilter(r));
    filters.forEach((f, i) => {
      index.add(i, f);
    });
    const refs = filters.map(refFilter);
    let total = 0;
    for (let n = 0; n < 1000; n++) {
      const log = randomLog(r);
      const got: number[] = [];
      index.forEachMatch(logKeys(log), (i) => got.push(i));
      const refLog = { address: toData(log.address), topics: log.topics.map((t) => toData(t)) };
      const want = refs.flatMap((f, i) => (reference(f, refLog) ? [i] : []));
      expect(got.sort((a, b) => a - b)).toEqual(want);
      total += want.length;
    }
    expect(total).toBeGreaterThan(5_000); // the random mix does match a lot
  });

  test('a log only costs its candidates: 10,000 filters on distinct addresses, one checked per log', () => {
    const index = new LogFilterIndex<number>();
    const addr = (i: number): Bytes => {
      const b = new Uint8Array(20);
      new DataView(b.buffer).setUint32(16, i);
      return b;
    };
    for (let i = 0; i < 10_000; i++) index.add(i, { addresses: [addr(i)], topics: [[filled(1, 32)]] });
    index.checked = 0;
    for (let i = 0; i < 1000; i++) {
      const got: number[] = [];
      index.forEachMatch(logKeys({ address: addr(i * 7), topics: [filled(1, 32)] }), (x) => got.push(x));
      expect(got).toEqual([i * 7]);
    }
    expect(index.checked).toBe(1000);
    // Filters without address are filed under their most selective topic position.
    const byTopic = new LogFilterIndex<number>();
    for (let i = 0; i < 5000; i++) byTopic.add(i, { addresses: [], topics: [null, [filled(i % 250, 32)]] });
    byTopic.checked = 0;
    byTopic.forEachMatch(logKeys({ address: addr(1), topics: [filled(9, 32), filled(3, 32)] }), () => undefined);
    expect(byTopic.checked).toBe(20);
  });

  test('remove and re-add leave no bucket behind', () => {
    const r = seededRandom(11);
    const index = new LogFilterIndex<number>();
    for (let i = 0; i < 500; i++) index.add(i, randomFilter(r));
    for (let i = 0; i < 500; i += 2) index.add(i, randomFilter(r)); // re-file half
    for (let i = 0; i < 500; i++) expect(index.remove(i)).toBe(true);
    expect(index.remove(3)).toBe(false);
    expect(index.size).toBe(0);
    expect(index.bucketCount()).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------

class Capture implements NotificationSink {
  readonly got: Notification[] = [];
  deliver(batch: readonly Notification[]): void {
    this.got.push(...batch);
  }
  results(): { sub: string; result: Record<string, unknown> }[] {
    return this.got.map((n) => {
      const m = JSON.parse(n.text) as {
        jsonrpc: string;
        method: string;
        params: { subscription: string; result: Record<string, unknown> };
      };
      expect(m.jsonrpc).toBe('2.0');
      expect(m.method).toBe('eth_subscription');
      expect(m.params.subscription).toBe(n.subscription);
      return { sub: m.params.subscription, result: m.params.result };
    });
  }
}

const A = filled(0xaa, 20);
const B = filled(0xbb, 20);
const T = filled(0x71, 32);
const U = filled(0x72, 32);

function mkLog(block: bigint, blockHash: Bytes, logIndex: number, address: Bytes, topics: Bytes[]): LogRecord {
  return {
    address,
    topics,
    data: new Uint8Array([logIndex]),
    blockNumber: block,
    blockHash,
    blockTimestamp: 1000n + block * 12n,
    transactionHash: filled(0x40 + logIndex, 32),
    transactionIndex: logIndex,
    logIndex,
  };
}

function mkBlock(number: bigint, hash: Bytes, logs: [Bytes, Bytes[]][]): CommittedBlock {
  return { number, hash, logs: logs.map(([a, t], i) => mkLog(number, hash, i, a, t)) };
}

/** The hashes of FakeStore's blocks 0..2. */
const h = (n: number): Bytes => filled(0xa0 + n, 32);

/**
 * A head per added block (geth's header JSON), each log to each matching subscription in log
 * order, one charged event per block and subscription.
 */
async function checkHeadsAndLogs(store: FakeStore): Promise<void> {
  const hub = new SubscriptionHub(store);
  const sink = new Capture();
  const conn = hub.connect('key1', sink);
  const m = conn.forMessage();
  const heads = m.subscribe({ kind: 'newHeads' });
  const logsA = m.subscribe({ kind: 'logs', filter: { addresses: [A], topics: [] } });
  const logsT = m.subscribe({ kind: 'logs', filter: { addresses: [], topics: [null, [U]] } });
  m.activate();
  const b1 = mkBlock(1n, h(1), [
    [A, [T]],
    [B, [T, U]],
    [A, [T, U]],
  ]);
  const b2 = mkBlock(2n, h(2), [[B, [T]]]);
  await hub.publish({ removed: [], added: [b1, b2], head: { number: 2n, hash: h(2) } });
  const got = sink.results();
  // Block 1: head, then its logs in log order (each log to each matching subscription), block 2: head only.
  expect(got.map((g) => [g.sub, g.result.number ?? g.result.logIndex])).toEqual([
    [heads, '0x1'],
    [logsA, '0x0'],
    [logsT, '0x1'],
    [logsA, '0x2'],
    [logsT, '0x2'],
    [heads, '0x2'],
  ]);
  const head = got[0]?.result as Record<string, unknown>;
  expect(Object.keys(head)).toEqual([
    'parentHash',
    'sha3Uncles',
    'miner',
    'stateRoot',
    'transactionsRoot',
    'receiptsRoot',
    'logsBloom',
    'difficulty',
    'number',
    'gasLimit',
    'gasUsed',
    'timestamp',
    'extraData',
    'mixHash',
    'nonce',
    'baseFeePerGas',
    'withdrawalsRoot',
    'blobGasUsed',
    'excessBlobGas',
    'parentBeaconBlockRoot',
    'requestsHash',
    'hash',
  ]);
  const want = header(1n);
  expect(head.hash).toBe(toData(want.hash));
  expect(head.parentHash).toBe(toData(want.parentHash));
  expect(head.baseFeePerGas).toBeNull();
  const log = got[1]?.result as Record<string, unknown>;
  expect(log).toEqual({
    address: toData(A),
    topics: [toData(T)],
    data: '0x00',
    blockNumber: '0x1',
    transactionHash: toData(filled(0x40, 32)),
    transactionIndex: '0x0',
    blockHash: toData(h(1)),
    blockTimestamp: '0x3f4',
    logIndex: '0x0',
    removed: false,
  });
  // 2 heads; logsA: block 1 once (its second log free); logsT: block 1 once.
  const { newHeads: H, logs: L } = EVENT_CREDITS;
  expect(sink.got.map((n) => n.credits)).toEqual([H, L, L, 0, 0, H]);
  conn.close();
  expect(hub.size).toBe(0);
}

describe('SubscriptionHub', () => {
  const store = new FakeStore();

  test('ids as geth makes them', () => {
    for (let i = 0; i < 200; i++) expect(newSubscriptionId()).toMatch(/^0x([1-9a-f][0-9a-f]{0,31}|0)$/);
  });

  test('newHeads: geth header JSON per added block; logs: filtered, log order; credits per event', () =>
    checkHeadsAndLogs(store));

  test('reorg: removed logs first (oldest dropped block first, log order), then the new branch; a head per new block', async () => {
    const hub = new SubscriptionHub(store);
    const sink = new Capture();
    const conn = hub.connect('k', sink);
    const m = conn.forMessage();
    const logs = m.subscribe({ kind: 'logs', filter: { addresses: [A], topics: [] } });
    const heads = m.subscribe({ kind: 'newHeads' });
    m.activate();
    const old1 = mkBlock(1n, filled(0x01, 32), [
      [A, [T]],
      [B, []],
      [A, []],
    ]);
    const old2 = mkBlock(2n, filled(0x02, 32), [[A, [U]]]);
    const new1 = mkBlock(1n, h(1), [[A, [U]]]);
    const new2 = mkBlock(2n, h(2), [
      [B, []],
      [A, [T]],
    ]);
    const commit: ChainCommit = { removed: [old1, old2], added: [new1, new2], head: { number: 2n, hash: h(2) } };
    await hub.publish(commit);
    const got = sink
      .results()
      .map(
        (g) =>
          `${g.sub === logs ? 'log' : 'head'} ${String(g.result.blockHash ?? g.result.hash).slice(0, 6)} ${String(g.result.logIndex ?? g.result.number)} ${String(g.result.removed ?? '')}`,
      );
    expect(got).toEqual([
      'log 0x0101 0x0 true',
      'log 0x0101 0x2 true',
      'log 0x0202 0x0 true',
      'head 0xa1a1 0x1 ',
      'log 0xa1a1 0x0 false',
      'head 0xa2a2 0x2 ',
      'log 0xa2a2 0x1 false',
    ]);
    expect(heads).not.toBe(logs);
    // Each block with a match is one charged event: old1, old2, new1, new2 + 2 heads.
    expect(sink.got.reduce((s, n) => s + n.credits, 0)).toBe(4 * EVENT_CREDITS.logs + 2 * EVENT_CREDITS.newHeads);
  });

  test('ranges bound the blocks a log subscription hears of', async () => {
    const hub = new SubscriptionHub(store);
    const sink = new Capture();
    const m = hub.connect('k', sink).forMessage();
    m.subscribe({ kind: 'logs', filter: { addresses: [], topics: [] }, fromBlock: 2n });
    m.subscribe({ kind: 'logs', filter: { addresses: [], topics: [] }, toBlock: 1n });
    m.activate();
    await hub.publish({
      removed: [],
      added: [mkBlock(1n, h(1), [[A, []]]), mkBlock(2n, h(2), [[A, []]])],
      head: { number: 2n, hash: h(2) },
    });
    expect(sink.results().map((g) => g.result.blockNumber)).toEqual(['0x1', '0x2']);
  });

  test('inactive until the reply is sent: held notifications come first, in order; a rolled-back subscription never speaks', async () => {
    const hub = new SubscriptionHub(store);
    const sink = new Capture();
    const conn = hub.connect('k', sink);
    const m = conn.forMessage();
    const id = m.subscribe({ kind: 'newHeads' });
    const mark = m.mark();
    m.subscribe({ kind: 'newHeads' });
    m.rollback(mark);
    expect(conn.count).toBe(1);
    await hub.publish({ removed: [], added: [mkBlock(1n, h(1), [])], head: { number: 1n, hash: h(1) } });
    expect(sink.got).toEqual([]);
    m.activate();
    await hub.publish({ removed: [], added: [mkBlock(2n, h(2), [])], head: { number: 2n, hash: h(2) } });
    expect(sink.results().map((g) => [g.sub, g.result.number])).toEqual([
      [id, '0x1'],
      [id, '0x2'],
    ]);
  });

  test('newPendingTransactions: the journal hashes noted after the subscription, each once; credits once per read that found any', async () => {
    const journal = new MemoryFilterStore();
    const hub = new SubscriptionHub(store, { pending: journal, pendingPollMs: 20 });
    const sink = new Capture();
    const conn = hub.connect('k', sink);
    const tx = (i: number) => toData(filled(i, 32));
    await journal.notePending([tx(1)]); // before the subscription: not sent
    const m = conn.forMessage();
    const id = m.subscribe({ kind: 'newPendingTransactions' });
    m.activate();
    await new Promise((r) => setTimeout(r, 60));
    await journal.notePending([tx(2), tx(3), tx(2)]); // the second tx(2): already journaled
    for (let i = 0; i < 50 && sink.got.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(sink.results().map((g) => [g.sub, g.result])).toEqual([
      [id, tx(2)],
      [id, tx(3)],
    ]);
    expect(sink.got.map((n) => [n.kind, n.credits])).toEqual([
      ['newPendingTransactions', EVENT_CREDITS.newPendingTransactions],
      ['newPendingTransactions', 0],
    ]);
    expect(hub.indexStats().pending).toBe(1);
    conn.close();
    expect(hub.indexStats().pending).toBe(0);
  });

  test('limits per connection and per key; close frees everything at once', () => {
    const hub = new SubscriptionHub(store, { limits: { perConnection: 3, perKey: 5 } });
    const c1 = hub.connect('k', new Capture());
    const c2 = hub.connect('k', new Capture());
    const other = hub.connect('other', new Capture());
    const m1 = c1.forMessage();
    for (let i = 0; i < 3; i++) m1.subscribe({ kind: 'newHeads' });
    expect(() => m1.subscribe({ kind: 'newHeads' })).toThrow('too many subscriptions on this connection: at most 3');
    const m2 = c2.forMessage();
    m2.subscribe({ kind: 'logs', filter: { addresses: [A], topics: [] } });
    m2.subscribe({ kind: 'newHeads' });
    expect(() => m2.subscribe({ kind: 'newHeads' })).toThrow('too many subscriptions for this API key: at most 5');
    other.forMessage().subscribe({ kind: 'newHeads' });
    expect(hub.countFor('k')).toBe(5);
    c1.close();
    expect(hub.countFor('k')).toBe(2);
    c2.close();
    other.close();
    expect(hub.size).toBe(0);
    expect(hub.indexStats()).toEqual({ filters: 0, buckets: 0, heads: 0, pending: 0 });
    expect(() => c1.forMessage().subscribe({ kind: 'newHeads' })).toThrow();
  });

  test("unsubscribe only reaches the connection's own subscriptions", () => {
    const hub = new SubscriptionHub(store);
    const c1 = hub.connect('k', new Capture());
    const c2 = hub.connect('k', new Capture());
    const id = c1.forMessage().subscribe({ kind: 'newHeads' });
    expect(c2.forMessage().unsubscribe(id)).toBe(false);
    expect(c1.forMessage().unsubscribe(id)).toBe(true);
    expect(c1.forMessage().unsubscribe(id)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------

describe('eth_subscribe / eth_unsubscribe through the envelope', () => {
  const store = new FakeStore();
  const svc = createRpcService(store);
  const call = (method: string, params: unknown[]): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
  const err = (code: number, message: string): string =>
    `{"jsonrpc":"2.0","id":1,"error":${JSON.stringify({ code, message })}}`;

  test("without a connection (HTTP): geth's answers, before any argument is looked at", async () => {
    for (const params of [['newHeads'], ['nope'], [], [1], ['logs', { address: 'zz' }]]) {
      expect((await svc.handle(call('eth_subscribe', params))).body).toBe(err(-32601, 'notifications not supported'));
    }
    expect((await svc.handle(call('eth_unsubscribe', ['0x1']))).body).toBe(err(-32000, 'subscription not found'));
  });

  test('on a connection: ids, unknown names, bad names and arguments, unknown ids', async () => {
    const hub = new SubscriptionHub(store);
    const conn = svc.connect!(hub.connect('k', new Capture()));
    const reply = await conn.handle(call('eth_subscribe', ['newHeads']));
    const id = (JSON.parse(reply.body as string) as { result: string }).result;
    expect(id).toMatch(/^0x[0-9a-f]+$/);
    reply.sent?.();
    expect(hub.size).toBe(1);
    for (const name of ['syncing', 'newheads', 'Logs', 'newPendingTransactionsX']) {
      expect((await conn.handle(call('eth_subscribe', [name]))).body).toBe(
        err(-32601, `no "${name}" subscription in eth namespace`),
      );
    }
    expect((await conn.handle(call('eth_subscribe', []))).body).toBe(
      err(-32602, 'expected subscription name as first argument'),
    );
    expect((await conn.handle(call('eth_subscribe', [7]))).body).toBe(
      err(-32602, 'expected subscription name as first argument'),
    );
    expect((await conn.handle(call('eth_subscribe', ['newHeads', {}]))).body).toBe(
      err(-32602, 'too many arguments, want at most 1'),
    );
    expect((await conn.handle(call('eth_subscribe', ['logs']))).body).toBe(
      err(-32602, 'missing value for required argument 1'),
    );
    const pending = JSON.parse((await conn.handle(call('eth_subscribe', ['newPendingTransactions']))).body as string);
    expect(pending.result).toMatch(/^0x[0-9a-f]+$/);
    await conn.handle(call('eth_unsubscribe', [pending.result]));
    expect((await conn.handle(call('eth_subscribe', ['newPendingTransactions', true]))).body).toBe(
      err(-32602, 'full pending transactions are not kept: ask for hashes'),
    );
    expect((await conn.handle(call('eth_unsubscribe', ['0xdead']))).body).toBe(err(-32000, 'subscription not found'));
    expect((await conn.handle(call('eth_unsubscribe', [5]))).body).toBe(
      err(-32602, 'invalid argument 0: subscription id: expected a string, got number'),
    );
    expect((await conn.handle(call('eth_unsubscribe', [id]))).body).toBe('{"jsonrpc":"2.0","id":1,"result":true}');
    expect((await conn.handle(call('eth_unsubscribe', [id]))).body).toBe(err(-32000, 'subscription not found'));
    expect(hub.size).toBe(0);
  });

  test('malformed filters: the same -32602 texts as eth_getLogs', async () => {
    const hub = new SubscriptionHub(store);
    const conn = svc.connect!(hub.connect('k', new Capture()));
    const bad: unknown[] = [
      { address: '0x12' },
      { address: 5 },
      { address: [`0x${'aa'.repeat(20)}`, 7] },
      { topics: 'x' },
      { topics: [null, null, null, null, null] },
      { topics: [`0x${'zz'.repeat(32)}`] },
      { topics: [['0x12']] },
      { fromBlock: '0x1', blockHash: `0x${'11'.repeat(32)}` },
      { fromBlock: 'earliestish' },
      { address: Array.from({ length: 5001 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`) },
      'not an object',
    ];
    for (const f of bad) {
      const fromLogs = JSON.parse((await svc.handle(call('eth_getLogs', [f]))).body as string) as {
        error: { code: number; message: string };
      };
      const fromSub = JSON.parse((await conn.handle(call('eth_subscribe', ['logs', f]))).body as string) as {
        error: { code: number; message: string };
      };
      expect(fromLogs.error.code).toBe(-32602);
      // eth_getLogs' filter is argument 0, the subscription's argument 1.
      expect(fromSub.error).toEqual({
        code: -32602,
        message: fromLogs.error.message.replace(/^invalid argument 0:/, 'invalid argument 1:'),
      });
    }
    expect((await conn.handle(call('eth_subscribe', ['logs', { fromBlock: '0x5', toBlock: '0x2' }]))).body).toBe(
      err(-32602, 'invalid block range params'),
    );
    expect(hub.size).toBe(0);
  });

  test('a subscribe whose call fails in the middleware leaves nothing behind', async () => {
    const hub = new SubscriptionHub(store);
    const conn = svc.connect!(hub.connect('k', new Capture()));
    const failing: CallMiddleware = async (_call, next) => {
      await next();
      throw new Error('journal write failed');
    };
    const reply = await conn.handle(
      `[${call('eth_subscribe', ['newHeads'])},${call('eth_subscribe', ['newHeads'])}]`,
      failing,
    );
    expect(reply.body).toBe(`[${err(-32603, 'internal error')},${err(-32603, 'internal error')}]`);
    expect(hub.size).toBe(0);
  });
});
