// The JSON-RPC 2.0 envelope: exact reply bodies for every error class, batches, ids and
// middleware, over the hand-built store.
import { LimitExceededError, StoreUnavailableError } from '@chainnode/core';
import { createRpcService, METHODS, methodCosts, methodTransports } from '../src/index.js';
import type { CallInfo, CallMiddleware, MethodName } from '../src/index.js';
import { FakeStore } from './fake-store.js';

const svc = createRpcService(new FakeStore());

async function body(text: string, mw?: CallMiddleware): Promise<string | undefined> {
  return (await svc.handle(text, mw)).body;
}

describe('envelope', () => {
  test('single call: jsonrpc, id, result', async () => {
    expect(await body('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}')).toBe(
      '{"jsonrpc":"2.0","id":1,"result":"0x539"}',
    );
  });

  test('ids echoed as given: string, null, zero, fraction', async () => {
    for (const id of ['"abc"', 'null', '0', '1.5', '"0x1"']) {
      expect(await body(`{"jsonrpc":"2.0","id":${id},"method":"net_version","params":[]}`)).toBe(
        `{"jsonrpc":"2.0","id":${id},"result":"1337"}`,
      );
    }
  });

  test('answers written as bytes (memoised, or formatted so) also come as their UTF-8 bytes; others only as text', async () => {
    // A non-ASCII string id: the byte length of the prefix differs from its length in chars.
    const block = await svc.handle(
      '{"jsonrpc":"2.0","id":"bl\u00f6ck \u2603","method":"eth_getBlockByNumber","params":["0x1",false]}',
    );
    expect(block.body).toMatch(/^\{"jsonrpc":"2.0","id":"blöck ☃","result":\{"/);
    expect(block.encode).toBeDefined();
    expect(Buffer.from(block.encode!((n) => Buffer.alloc(n))).toString('utf8')).toBe(block.body);
    const plain = await svc.handle('{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x1",false]}');
    expect((JSON.parse(block.body as string) as { result: unknown }).result).toEqual(
      (JSON.parse(plain.body as string) as { result: unknown }).result,
    );
    expect(Buffer.from(plain.encode!((n) => Buffer.alloc(n))).toString('utf8')).toBe(plain.body);
    const logs = await svc.handle(
      '{"jsonrpc":"2.0","id":2,"method":"eth_getLogs","params":[{"fromBlock":"0x0","toBlock":"0x2"}]}',
    );
    expect(logs.body).toMatch(/^\{"jsonrpc":"2.0","id":2,"result":\[/);
    // getLogs from the log rows: its text written as bytes by the formatter, handed on as they are.
    expect(Buffer.from(logs.encode!((n) => Buffer.alloc(n))).toString('utf8')).toBe(logs.body);
    expect((await svc.handle('{"jsonrpc":"2.0","id":3,"method":"eth_chainId"}')).encode).toBeUndefined();
  });

  test('params may be omitted for a method without arguments', async () => {
    expect(await body('{"jsonrpc":"2.0","id":7,"method":"eth_blockNumber"}')).toBe(
      '{"jsonrpc":"2.0","id":7,"result":"0x2"}',
    );
  });

  test('parse error -32700 with id null', async () => {
    const reply = await svc.handle('{"jsonrpc":"2.0",');
    expect(reply).toEqual({
      body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}',
      batch: false,
    });
  });

  test('invalid requests -32600', async () => {
    expect(await body('42')).toBe(
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: expected a JSON object"}}',
    );
    expect(await body('{"jsonrpc":"1.0","id":3,"method":"eth_chainId"}')).toBe(
      '{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \\"2.0\\""}}',
    );
    expect(await body('{"jsonrpc":"2.0","id":3}')).toBe(
      '{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: method must be a non-empty string"}}',
    );
    expect(await body('{"jsonrpc":"2.0","id":{"a":1},"method":"eth_chainId"}')).toBe(
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: id must be a number, a string or null"}}',
    );
  });

  test('unknown method -32601 with geth wording', async () => {
    expect(await body('{"jsonrpc":"2.0","id":1,"method":"eth_sendTransaction","params":[]}')).toBe(
      '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method eth_sendTransaction does not exist/is not available"}}',
    );
    // Object.prototype names are not methods.
    expect(await body('{"jsonrpc":"2.0","id":1,"method":"toString","params":[]}')).toContain('-32601');
  });

  test('non-array params -32602', async () => {
    expect(await body('{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":{"a":1}}')).toBe(
      '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"non-array args: params must be a JSON array of positional arguments"}}',
    );
  });

  test('internal errors are -32603 without internals', async () => {
    const broken = createRpcService(new FakeStore({ failWith: new Error('EIO: /secret/path/000123.ldb') }));
    const b = (await broken.handle('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}')).body;
    expect(b).toBe('{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}');
    const down = createRpcService(new FakeStore({ failWith: new StoreUnavailableError('closed') }));
    expect((await down.handle('{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber","params":[]}')).body).toBe(
      '{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"internal error"}}',
    );
  });

  test('notification (no id) gets no reply', async () => {
    expect(await svc.handle('{"jsonrpc":"2.0","method":"eth_chainId","params":[]}')).toEqual({
      body: undefined,
      batch: false,
    });
  });
});

describe('batches', () => {
  test('each member answered in order with its own id; errors per member', async () => {
    const reply = await svc.handle(
      JSON.stringify([
        { jsonrpc: '2.0', id: 'a', method: 'eth_chainId', params: [] },
        { jsonrpc: '2.0', id: 2, method: 'nope', params: [] },
        5,
        { jsonrpc: '2.0', method: 'eth_chainId', params: [] },
        { jsonrpc: '2.0', id: null, method: 'eth_getBlockByNumber', params: ['0x1'] },
      ]),
    );
    expect(reply.batch).toBe(true);
    expect(JSON.parse(reply.body!)).toEqual([
      { jsonrpc: '2.0', id: 'a', result: '0x539' },
      { jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'the method nope does not exist/is not available' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'invalid request: expected a JSON object' } },
      { jsonrpc: '2.0', id: null, error: { code: -32602, message: 'missing value for required argument 1' } },
    ]);
  });

  test('empty batch -32600', async () => {
    expect(await svc.handle('[]')).toEqual({
      body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"empty batch"}}',
      batch: true,
    });
  });

  test('batch over the cap: one error carrying the first id, like geth', async () => {
    const small = createRpcService(new FakeStore(), { maxBatchSize: 2 });
    const calls = [1, 2, 3].map((id) => ({ jsonrpc: '2.0', id, method: 'eth_chainId', params: [] }));
    expect((await small.handle(JSON.stringify(calls))).body).toBe(
      '[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"batch too large"}}]',
    );
    expect(JSON.parse((await small.handle(JSON.stringify(calls.slice(0, 2)))).body!)).toHaveLength(2);
  });

  test('a batch of notifications only has no reply', async () => {
    expect(await svc.handle('[{"jsonrpc":"2.0","method":"eth_chainId"}]')).toEqual({ body: undefined, batch: true });
  });
});

describe('batch answer limits', () => {
  const blocks = (ids: unknown[]) =>
    JSON.stringify(
      ids.map((id, i) => ({
        jsonrpc: '2.0',
        ...(id === undefined ? {} : { id }),
        method: 'eth_getBlockByNumber',
        params: [`0x${(i % 3).toString(16)}`, true],
      })),
    );

  test('answers past maxBatchResponseBytes are not run: -32003 "response too large" each, like geth', async () => {
    const full = JSON.parse((await createRpcService(new FakeStore()).handle(blocks([1, 2, 3, 4, 5]))).body!) as {
      result: unknown;
    }[];
    const one = JSON.stringify(full[0]).length;
    const small = createRpcService(new FakeStore(), { maxBatchResponseBytes: one + 10 });
    const ran: unknown[] = [];
    const mw: CallMiddleware = (call, next) => {
      ran.push(call.id);
      return next();
    };
    // The first answer fits, the second passes the limit: the calls after it (3, a notification, 'x') do not run.
    const out = JSON.parse((await small.handle(blocks([1, 2, 3, undefined, 'x']), mw)).body!) as unknown[];
    expect(ran).toEqual([1, 2]);
    expect(out).toEqual([
      full[0],
      full[1],
      { jsonrpc: '2.0', id: 3, error: { code: -32003, message: 'response too large' } },
      { jsonrpc: '2.0', id: 'x', error: { code: -32003, message: 'response too large' } },
    ]);
    // Under the limit nothing changes.
    expect(
      (await createRpcService(new FakeStore(), { maxBatchResponseBytes: 10 * one }).handle(blocks([1, 2, 3, 4, 5])))
        .body,
    ).toBe(JSON.stringify(full));
  });

  test('maxConcurrentBatches: batches beyond it wait and are answered whole, in arrival order', async () => {
    const one = createRpcService(new FakeStore(), { maxConcurrentBatches: 1 });
    const order: string[] = [];
    const mw =
      (tag: string): CallMiddleware =>
      async (call, next) => {
        order.push(`${tag}${String(call.id)}`);
        await new Promise((r) => setTimeout(r, 1));
        return next();
      };
    await Promise.all(['a', 'b', 'c'].map((tag) => one.handle(blocks([1, 2, 3]), mw(tag))));
    expect(order).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'b3', 'c1', 'c2', 'c3']);
    // Without the limit (here 3 lanes) the same batches interleave.
    const three = createRpcService(new FakeStore(), { maxConcurrentBatches: 3 });
    order.length = 0;
    await Promise.all(['a', 'b', 'c'].map((tag) => three.handle(blocks([1, 2, 3]), mw(tag))));
    expect(order.slice(0, 3).sort()).toEqual(['a1', 'b1', 'c1']);
  });
});

describe('middleware', () => {
  test('sees every known call with its cost; not unknown methods or invalid requests', async () => {
    const seen: CallInfo[] = [];
    const mw: CallMiddleware = async (call, next) => {
      seen.push(call);
      return next();
    };
    await svc.handle(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['latest', false] },
        { jsonrpc: '2.0', id: 2, method: 'eth_foo', params: [] },
        { jsonrpc: '2.0', id: 3, method: 'eth_getLogs', params: ['bad'] },
        { jsonrpc: '1.0', id: 4, method: 'eth_chainId' },
      ]),
      mw,
    );
    expect(seen).toEqual([
      { method: 'eth_getBlockByNumber', cost: 80, id: 1, params: ['latest', false], inBatch: true },
      { method: 'eth_getLogs', cost: 255, id: 3, params: ['bad'], inBatch: true },
    ]);
  });

  test('can reject with a typed error or substitute a result', async () => {
    const reject: CallMiddleware = async () => {
      throw new LimitExceededError('daily credit limit exceeded');
    };
    expect(await body('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}', reject)).toBe(
      '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"daily credit limit exceeded"}}',
    );
    const substitute: CallMiddleware = async () => ({ from: 'partner' });
    expect(await body('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}', substitute)).toBe(
      '{"jsonrpc":"2.0","id":1,"result":{"from":"partner"}}',
    );
  });

  test('sees store failures from next() (failover hook)', async () => {
    const down = createRpcService(new FakeStore({ failWith: new StoreUnavailableError() }));
    let caught: unknown;
    const mw: CallMiddleware = async (_c, next) => {
      try {
        return await next();
      } catch (err) {
        caught = err;
        throw err;
      }
    };
    await down.handle('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}', mw);
    expect(caught).toBeInstanceOf(StoreUnavailableError);
  });
});

describe('method table', () => {
  test('costs: the spec eight keep spec 8.1; every entry of the table has a whole, non-negative cost', () => {
    const costs = methodCosts();
    const spec = {
      eth_getStorageAt: 80,
      eth_getLogs: 255,
      eth_getBlockByHash: 80,
      eth_getBlockByNumber: 80,
      eth_getUncleByBlockHashAndIndex: 150,
      eth_getUncleByBlockNumberAndIndex: 150,
      eth_getTransactionByHash: 80,
      eth_getProof: 150,
    };
    expect(Object.fromEntries(Object.keys(spec).map((m) => [m, costs[m as keyof typeof spec]]))).toEqual(spec);
    expect(Object.keys(costs)).toEqual(Object.keys(METHODS));
    for (const [method, cost] of Object.entries(costs))
      expect({ method, whole: Number.isSafeInteger(cost) && cost >= 0 }).toEqual({ method, whole: true });
  });

  test('transports: a WebSocket-only method never succeeds on a service without notifications (HTTP)', async () => {
    // Well-formed params for each WebSocket-only method, so the answer is the transport's refusal.
    const valid: Partial<Record<MethodName, unknown[]>> = { eth_subscribe: ['newHeads'], eth_unsubscribe: ['0x1'] };
    const wsOnly = (Object.keys(METHODS) as MethodName[]).filter((m) => !methodTransports(m).includes('http'));
    expect(wsOnly).toEqual(Object.keys(valid));
    const svc = createRpcService(new FakeStore());
    for (const method of wsOnly) {
      const out = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: valid[method] }));
      const reply = JSON.parse(out.body as string) as { result?: unknown; error?: { code: number } };
      expect({ method, refused: reply.error !== undefined && reply.result === undefined }).toEqual({
        method,
        refused: true,
      });
    }
    for (const m of Object.keys(METHODS) as MethodName[]) {
      expect(methodTransports(m).length).toBeGreaterThan(0);
      expect(METHODS[m].params.length).toBeGreaterThan(0);
    }
  });
});
