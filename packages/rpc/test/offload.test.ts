// eth_getLogs through the offload executor (worker threads) answers byte for byte what inline
// execution answers, results and errors alike; the pool bounds its queue, keeps deadlines on
// the main thread, survives crashed and stuck workers, and closes only after the calls it
// holds are answered. The worker script (offload-worker.ts) serves the FakeStore, whose
// logs() is a plain scan, so the inline answers are themselves checked by methods.test.ts.
import { BroadcastChannel, MessageChannel } from 'node:worker_threads';
import { RpcError, StoreUnavailableError } from '@chainnode/core';
import { createRpcService, OffloadPool, serveOffloadedCalls, TOO_MANY_OFFLOADED } from '../src/index.js';
import type { CallMiddleware, OffloadPoolOptions, OffloadReply, RpcConfig } from '../src/index.js';
import { FakeStore, blocks } from './fake-store.js';
import { CRASH, GATE_CHANNEL, GATED, STUCK, addressFor } from './offload-gate.js';

const script = new URL('./offload-worker.js', import.meta.url);
const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;
const A = `0x${'aa'.repeat(20)}`;
const B = `0x${'bb'.repeat(20)}`;
const T0 = `0x${'10'.repeat(32)}`;
const T1 = `0x${'11'.repeat(32)}`;

const pools: OffloadPool[] = [];
const channels: BroadcastChannel[] = [];
afterEach(async () => {
  while (pools.length > 0) await pools.pop()?.close();
  while (channels.length > 0) channels.pop()?.close();
});

async function pool(o: Partial<OffloadPoolOptions> & { workerData?: unknown } = {}): Promise<OffloadPool> {
  const p = await OffloadPool.start({ script, size: 1, queueLimit: 16, timeoutMs: 10_000, ...o });
  pools.push(p);
  return p;
}

function gate(): { started: () => Promise<void>; release: () => void; closed: () => Promise<void> } {
  const ch = new BroadcastChannel(GATE_CHANNEL);
  channels.push(ch);
  const seen: string[] = [];
  const waiters: { what: string; resolve: () => void }[] = [];
  ch.onmessage = (e: unknown) => {
    const what = (e as { data: string }).data;
    const i = waiters.findIndex((w) => w.what === what);
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve();
    else seen.push(what);
  };
  const wait = (what: string): Promise<void> => {
    const i = seen.indexOf(what);
    if (i >= 0) {
      seen.splice(i, 1);
      return Promise.resolve();
    }
    return new Promise((resolve) => waiters.push({ what, resolve }));
  };
  return {
    started: () => wait('started'),
    release: () => ch.postMessage('release'),
    closed: () => wait('store closed'),
  };
}

const body = (params: unknown, id: unknown = 1): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'eth_getLogs', params });
const filter = (f: Record<string, unknown>): string => body([f]);

/** Every eth_getLogs outcome the FakeStore can give under `config` (see the cases' comments). */
const BODIES: string[] = [
  filter({}), // latest..latest
  filter({ fromBlock: '0x0', toBlock: 'latest' }),
  filter({ fromBlock: 'earliest', toBlock: 'pending', address: A }),
  filter({ fromBlock: '0x1', address: [A, B] }),
  filter({ fromBlock: '0x0', topics: [T0] }),
  filter({ fromBlock: '0x0', topics: [null, T0] }),
  filter({ fromBlock: '0x0', topics: [[T0, T1]] }),
  filter({ fromBlock: '0x0', topics: [null] }),
  filter({ fromBlock: '0x0', topics: [[], [T0, null]] }),
  filter({ fromBlock: '0x0', address: `0x${'cc'.repeat(20)}` }), // no match: []
  filter({ blockHash: hex(blocks[1]!.header.hash) }),
  filter({ blockHash: hex(blocks[2]!.header.hash), address: A, topics: [T1] }),
  filter({ blockHash: `0x${'00'.repeat(32)}` }), // -32000 unknown block
  filter({ blockHash: hex(blocks[1]!.header.hash), fromBlock: '0x1' }), // -32602 both
  filter({ fromBlock: '0x2', toBlock: '0x1' }), // invalid block range params
  filter({ toBlock: '0x5' }), // beyond the head
  filter({ topics: [T0, T0, T0, T0, T0] }), // exceed max topics
  filter({ address: 'xyz' }),
  filter({ address: [A, 7] }),
  filter({ fromBlock: '0x01' }), // leading zero digits
  filter({ topics: [`0x${'1'.repeat(63)}`] }), // odd length
  filter({ address: [A, B], topics: [T0, T1] }), // 4 filter parameters: over maxFilterParams 3
  body([]), // missing value for required argument 0
  body([{}, {}]), // too many arguments
  body(['latest']), // filter: expected an object
  body([{}], 12345678901234567890n.toString()), // string id
  `{"jsonrpc":"2.0","id":12345678901234567890,"method":"eth_getLogs","params":[{"fromBlock":"0x0"}]}`, // raw numeric id echoed
  JSON.stringify([
    { jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [{ fromBlock: '0x0', address: B }] },
    { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] },
    { jsonrpc: '2.0', id: 3, method: 'eth_getLogs', params: [{ fromBlock: '0x0' }] },
    { jsonrpc: '2.0', method: 'eth_getLogs', params: [{}] }, // notification
    { jsonrpc: '2.0', id: 4, method: 'eth_getLogs', params: { fromBlock: '0x0' } }, // non-array params
    { jsonrpc: '2.0', id: 5, method: 'eth_getLogs', params: [{ toBlock: '0x9' }] },
  ]),
];

async function compare(config: Partial<RpcConfig>, bodies: string[]): Promise<string[]> {
  const inline = createRpcService(new FakeStore(), config);
  const p = await pool({ workerData: { config } });
  // inlineCostLimit -1: every call goes to the worker (cheap ones would run inline by default).
  const offloaded = createRpcService(
    new FakeStore({ failWith: new Error('the main-thread store must not answer eth_getLogs') }),
    config,
    { offload: p, inlineCostLimit: -1 },
  );
  const out: string[] = [];
  for (const b of bodies) {
    const want = (await inline.handle(b)).body;
    const got = (await offloaded.handle(b)).body;
    expect({ body: b, reply: got }).toEqual({ body: b, reply: want });
    out.push(want ?? '');
  }
  return out;
}

describe('eth_getLogs through worker threads', () => {
  test('answers and errors are byte-identical to inline execution', async () => {
    const config: Partial<RpcConfig> = { logs: { maxResults: 2, maxFilterParams: 3, timeoutMs: 10_000 } };
    const replies = await compare(config, BODIES);
    // The set covers what it claims: results, the cap error with its suggested range, and the
    // parameter errors (the inline answers are checked against geth's texts in methods.test.ts).
    const all = replies.join('\n');
    expect(all).toContain('"result":[{"address":"0xaaaa');
    expect(all).toContain('"result":[]');
    expect(all).toContain(
      '"error":{"code":-32005,"message":"query returned more than 2 results. Try with this block range [0x0, 0x1].","data":{"from":"0x0","to":"0x1","limit":2}}',
    );
    expect(all).toContain('{"code":-32000,"message":"unknown block"}');
    expect(all).toContain('"message":"exceed max topics"');
    expect(all).toContain('"message":"too many filter parameters: 4 addresses and topics given, at most 3 allowed"');
    expect(all).toContain('"message":"missing value for required argument 0"');
    expect(all).toContain('"id":12345678901234567890,');
    // With a cap of 1 even the first block does not fit: the error without a range.
    const [capped] = await compare({ logs: { maxResults: 1, maxFilterParams: 5_000, timeoutMs: 10_000 } }, [
      filter({ fromBlock: '0x1' }),
    ]);
    expect(capped).toBe(
      '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"query returned more than 1 results","data":{"limit":1}}}',
    );
  });

  test('store failures: -32603 without internals, and middleware still sees a StoreUnavailableError', async () => {
    for (const [failWith, err] of [
      ['unavailable', new StoreUnavailableError('closed')],
      ['bug', new Error('EIO: /secret/path/000123.ldb')],
    ] as const) {
      const seen: unknown[] = [];
      const mw: CallMiddleware = async (_call, next) => {
        try {
          return await next();
        } catch (e) {
          seen.push(e instanceof StoreUnavailableError);
          throw e;
        }
      };
      const inline = createRpcService(new FakeStore({ failWith: err }));
      const p = await pool({ workerData: { failWith } });
      const offloaded = createRpcService(new FakeStore(), undefined, { offload: p, inlineCostLimit: -1 });
      const want = (await inline.handle(filter({}), mw)).body;
      expect(want).toBe('{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}');
      expect((await offloaded.handle(filter({}), mw)).body).toBe(want);
      expect(seen).toEqual([failWith === 'unavailable', failWith === 'unavailable']);
    }
  });

  test('middleware wraps offloaded calls exactly as inline ones (cost from the table, result it returns)', async () => {
    const p = await pool();
    const calls: string[] = [];
    const mw: CallMiddleware = async (call, next) => {
      calls.push(`${call.method}:${call.cost}:${call.inBatch}`);
      return next();
    };
    const svc = createRpcService(new FakeStore(), undefined, { offload: p, inlineCostLimit: -1 });
    const reply = await svc.handle(filter({ fromBlock: '0x0', address: B }), mw);
    expect(JSON.parse(reply.body ?? '')).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: [expect.objectContaining({ address: B, blockNumber: '0x1', logIndex: '0x1', topics: [T0, T1] })],
    });
    expect(calls).toEqual(['eth_getLogs:255:false']);
  });
});

describe('the worker side', () => {
  test('uses the deadline it is given, refuses methods that are not offloadable, closes after answering', async () => {
    const store = new FakeStore();
    const { port1, port2 } = new MessageChannel();
    const next = (): Promise<OffloadReply> => new Promise((r) => port1.once('message', (m: OffloadReply) => r(m)));
    const ready = next();
    const served = serveOffloadedCalls(port2, store);
    expect(await ready).toEqual({ type: 'ready' });
    const deadline = Date.now() + 1_234;
    port1.postMessage({
      type: 'call',
      id: 7,
      method: 'eth_getLogs',
      params: [{ fromBlock: '0x0', address: B }],
      deadline,
    });
    const r7 = await next();
    expect(r7).toMatchObject({ type: 'result', id: 7 });
    expect(store.lastLogOptions?.deadline).toBe(deadline); // not now + 10 s
    port1.postMessage({ type: 'call', id: 8, method: 'eth_getBlockByNumber', params: ['0x1', false], deadline });
    expect(await next()).toEqual({
      type: 'error',
      id: 8,
      error: { code: -32603, message: 'internal error' },
      unavailable: false,
    });
    port1.postMessage({ type: 'call', id: 9, method: 'eth_nope', params: [], deadline });
    expect(await next()).toEqual({
      type: 'error',
      id: 9,
      error: { code: -32601, message: 'the method eth_nope does not exist/is not available' },
      unavailable: false,
    });
    port1.postMessage({ type: 'close' });
    await served; // resolves once closed and idle
    port1.close();
  });
});

describe('the pool', () => {
  const getLogs = (p: OffloadPool, first?: number): Promise<string> =>
    p
      .run('eth_getLogs', [first === undefined ? { fromBlock: '0x0', address: B } : { address: addressFor(first) }])
      .then((t) => t.text);
  const normalAnswer = async (): Promise<string> =>
    (await createRpcService(new FakeStore()).handle(filter({ fromBlock: '0x0', address: B }))).body ?? '';
  const wire = (e: unknown): unknown =>
    e instanceof RpcError ? { code: e.code, message: e.message, data: e.data } : String(e);
  /** A one-worker pool with room for two: the first call held in the worker, the second queued behind it. */
  async function fullQueue() {
    const p = await pool({ perWorker: 1, queueLimit: 2 });
    const g = gate();
    const first = getLogs(p, GATED);
    await g.started();
    const second = getLogs(p);
    return { p, g, first, second };
  }

  test('a worker that fails to start fails the pool start with its error', async () => {
    await expect(
      OffloadPool.start({ script, workerData: { failStart: true }, size: 1, queueLimit: 1, timeoutMs: 1_000 }),
    ).rejects.toThrow('cannot open the store (test)');
  });

  test('launched without waiting: calls sent before the workers are ready are answered once they are', async () => {
    const p = OffloadPool.launch({ script, size: 2, queueLimit: 16, timeoutMs: 10_000 });
    pools.push(p);
    const early = await Promise.all([getLogs(p), getLogs(p), getLogs(p)]);
    await p.started;
    const expected = await normalAnswer();
    for (const text of early) expect(`{"jsonrpc":"2.0","id":1,"result":${text}}`).toBe(expected);
  });

  test('launched, a worker that cannot start: started rejects with its error, the waiting calls get -32603 at once', async () => {
    const t0 = performance.now();
    const p = OffloadPool.launch({
      script,
      workerData: { failStart: true },
      size: 1,
      queueLimit: 4,
      timeoutMs: 30_000,
    });
    const waiting = getLogs(p).catch(wire);
    await expect(p.started).rejects.toThrow('cannot open the store (test)');
    expect(await waiting).toEqual({ code: -32603, message: 'internal error', data: undefined });
    // Long before the call's 30 s deadline; the pool is closed (new calls refused).
    expect(performance.now() - t0).toBeLessThan(20_000);
    expect(await getLogs(p).catch(wire)).toEqual({ code: -32603, message: 'server is shutting down', data: undefined });
    expect(p.load).toBe(0);
  });

  test('launched and closed before its workers were ready: started resolves, nothing is reported', async () => {
    const p = OffloadPool.launch({ script, size: 1, queueLimit: 4, timeoutMs: 10_000 });
    await p.close();
    await expect(p.started).resolves.toBeUndefined();
  });

  test('a crashed worker: its calls get -32603, it is restarted, later calls are answered', async () => {
    const lines: string[] = [];
    const p = await pool({ log: (l) => lines.push(l) });
    const g = gate();
    const held = getLogs(p, GATED).catch(wire);
    await g.started();
    const crashed = await getLogs(p, CRASH).catch(wire);
    expect(crashed).toEqual({ code: -32603, message: 'internal error', data: undefined });
    expect(await held).toEqual({ code: -32603, message: 'internal error', data: undefined });
    expect(lines.join('\n')).toMatch(/offload worker 0 exited with code 1; restarting it/);
    const text = await getLogs(p);
    expect(`{"jsonrpc":"2.0","id":1,"result":${text}}`).toBe(await normalAnswer());
    expect(p.load).toBe(0);
  });

  test('a stuck worker: the caller gets the timeout at its deadline; the worker is replaced', async () => {
    const lines: string[] = [];
    // 10 s, not less: the call after the stuck one waits (within its own deadline) for the
    // replacement worker to start, which takes seconds on a loaded machine.
    // Replaced 2 s past the deadline: long enough for the load to be read before that.
    const p = await pool({ timeoutMs: 10_000, stuckAfterMs: 2_000, log: (l) => lines.push(l) });
    expect(await getLogs(p, STUCK).catch(wire)).toEqual({
      code: -32005,
      message: 'query timeout exceeded',
      data: undefined,
    });
    expect(p.load).toBe(1); // still counted until the stuck worker is gone; new calls wait for its successor
    const text = await getLogs(p);
    expect(`{"jsonrpc":"2.0","id":1,"result":${text}}`).toBe(await normalAnswer());
    expect(lines.join('\n')).toMatch(
      /offload worker 0 has not answered a call 2000 ms past its deadline; restarting it/,
    );
  });

  /** One worker taking one call, 300 ms deadlines: a gated call in it and a second queued at once behind it. */
  async function heldAndQueued() {
    const p = await pool({ perWorker: 1, timeoutMs: 300, stuckAfterMs: 60_000 });
    const g = gate();
    const held = getLogs(p, GATED).catch(wire);
    const queued = getLogs(p).catch(wire);
    await g.started();
    return { p, g, held, queued };
  }

  test('a call waiting in the queue past its deadline gets the timeout without running', async () => {
    // Both deadlines fall together. The worker gives up on the held call 250 ms past that
    // deadline, the instant the pool answers both callers: whichever thread comes first, the
    // queued call never runs (a worker freed after its deadline is not handed it).
    const { p, g, held, queued } = await heldAndQueued();
    expect(await queued).toEqual({ code: -32005, message: 'query timeout exceeded', data: undefined });
    expect(await held).toEqual({ code: -32005, message: 'query timeout exceeded', data: undefined });
    // Whether the worker still holds the held call here is that race: no assertion on the load.
    g.release();
    await getLogs(p); // answered once the worker is free again
    expect(p.load).toBe(0);
  });

  test('a queued call whose deadline passed before a worker was free gets the timeout, not a run', async () => {
    const { p, g, held, queued } = await heldAndQueued();
    // Past both calls' deadlines (300 ms), before their callers' timers (a grace later): the worker
    // comes free with the queued call's deadline behind it.
    await new Promise((r) => setTimeout(r, 400));
    g.release();
    expect(await queued).toEqual({ code: -32005, message: 'query timeout exceeded', data: undefined });
    await held;
    await getLogs(p); // the worker serves the next call
    expect(p.load).toBe(0);
  });

  test('the queue is bounded: past queueLimit calls are refused at once with -32005', async () => {
    const { p, g, first, second } = await fullQueue();
    expect(await getLogs(p).catch(wire)).toEqual({ code: -32005, message: TOO_MANY_OFFLOADED, data: { limit: 2 } });
    const svc = createRpcService(new FakeStore(), undefined, { offload: p, inlineCostLimit: -1 });
    expect((await svc.handle(filter({}))).body).toBe(
      `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"too many concurrent offloaded queries","data":{"limit":2}}}`,
    );
    g.release();
    expect(await first).toBe('[]');
    expect(`{"jsonrpc":"2.0","id":1,"result":${await second}}`).toBe(await normalAnswer());
    expect(p.load).toBe(0);
  });

  test('admission by cost: with the queue full of expensive calls, cheap ones are answered inline, expensive ones shed', async () => {
    const { p, g, first, second } = await fullQueue();
    // Limit 10: one address over one block (cost 1) is cheap; no address from block 0 (10 per block) is not.
    const svc = createRpcService(new FakeStore(), undefined, { offload: p, inlineCostLimit: 10 });
    const inline = createRpcService(new FakeStore());
    const cheap = [
      filter({ fromBlock: '0x1', toBlock: '0x1', address: B }),
      filter({ blockHash: hex(blocks[1]!.header.hash) }),
    ];
    for (const b of cheap) {
      const got = (await svc.handle(b)).body;
      expect(got).toBe((await inline.handle(b)).body);
      expect(got).toContain('"result":[');
    }
    expect((await svc.handle(filter({ fromBlock: '0x0' }))).body).toBe(
      `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"too many concurrent offloaded queries","data":{"limit":2}}}`,
    );
    g.release();
    expect(await first).toBe('[]');
    await second;
    expect(p.load).toBe(0);
  });

  test('close: a call in flight is answered first, then the worker closes its store and exits; new calls are refused', async () => {
    const p = await OffloadPool.start({ script, size: 2, queueLimit: 4, timeoutMs: 10_000 });
    const g = gate();
    const events: string[] = [];
    const held = getLogs(p, GATED).then((t) => {
      events.push(`answered ${t}`);
    });
    await g.started();
    const storesClosed = Promise.all([g.closed(), g.closed()]);
    const closing = p.close().then(() => events.push('closed'));
    expect(await p.run('eth_getLogs', [{}]).catch(wire)).toEqual({
      code: -32603,
      message: 'server is shutting down',
      data: undefined,
    });
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    expect(events).toEqual([]);
    g.release();
    await closing;
    await held;
    expect(events).toEqual(['answered []', 'closed']);
    await storesClosed; // both workers closed their stores before exiting
  });
});
