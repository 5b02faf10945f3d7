// The upstream client against a tiny local HTTP (and WebSocket) server whose answers each test
// scripts: results, batches, error mapping, timeouts, oversize replies, retries, lanes, and no
// URL path (a key) in any message.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { UpstreamError, UpstreamRpcError, createUpstreamClient, redactUrl } from '../src/upstream-client.js';
import type { UpstreamClientOptions } from '../src/upstream-client.js';

type Handler = (req: { id: unknown; method: string; body: unknown }, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler;
let requests = 0;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown; method?: string };
      handler({ id: body.id, method: body.method ?? '', body }, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  requests = 0;
});

const json = (res: ServerResponse, v: unknown, status = 200): void => {
  const body = JSON.stringify(v);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
};
const KEY = 'secret-key-123';

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as Error).message).not.toContain(KEY);
    return err as UpstreamError;
  }
  throw new Error('expected a failure');
}

/** The HTTP tests, over fetch and over kept-alive node:http sockets (UpstreamClientOptions.keepAlive). */
let keepAlive = false;
const httpClient = (url: string, options: UpstreamClientOptions = {}) =>
  createUpstreamClient(url, keepAlive ? { ...options, keepAlive } : options);

describe.each([false, true])('HTTP (keepAlive: %s)', (kept) => {
  beforeAll(() => {
    keepAlive = kept;
  });

  test('a result, and the origin without the path', async () => {
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: r.id, result: `${r.method}!` });
    const c = httpClient(`${base}/v3/${KEY}`);
    expect(c.origin).toBe(base);
    expect(redactUrl(`${base}/v3/${KEY}?x=1`)).toBe(base);
    expect(await c.call('eth_chainId', [])).toBe('eth_chainId!');
    await c.close();
  });

  test('error mapping: an error object, garbage, a wrong id, an HTTP error page, no server', async () => {
    const c = httpClient(`${base}/${KEY}`);
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: r.id, error: { code: -32000, message: 'nope' } });
    const rpc = await failure(c.call('x', []));
    expect(rpc).toBeInstanceOf(UpstreamRpcError);
    expect([rpc.kind, (rpc as UpstreamRpcError).code, (rpc as UpstreamRpcError).remoteMessage]).toEqual([
      'rpc',
      -32000,
      'nope',
    ]);
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: r.id, error: { message: 'x'.repeat(500) } });
    const long = (await failure(c.call('x', []))) as UpstreamRpcError;
    expect([long.code, long.remoteMessage.length]).toEqual([-32603, 200]);
    handler = (_r, res) => res.end('not json');
    expect((await failure(c.call('x', []))).message).toMatch(/reply is not JSON/);
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: Number(r.id) + 1, result: 1 });
    expect((await failure(c.call('x', []))).message).toMatch(/reply id does not match/);
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: r.id });
    expect((await failure(c.call('x', []))).message).toMatch(/neither result nor error/);
    handler = (_r, res) => {
      res.writeHead(502);
      res.end('<html>bad gateway</html>');
    };
    const page = await failure(c.call('x', []));
    expect([page.kind, page.message]).toEqual(['unreachable', `${base}: HTTP 502`]);
    // A JSON error body on a non-200 status is the upstream's answer.
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: r.id, error: { code: 429, message: 'slow down' } }, 429);
    expect(((await failure(c.call('x', []))) as UpstreamRpcError).code).toBe(429);
    const closed = httpClient(`http://127.0.0.1:1/${KEY}`);
    expect((await failure(closed.call('x', []))).kind).toBe('unreachable');
  });

  test('no reply within the timeout', async () => {
    handler = () => undefined; // never answers
    const c = httpClient(`${base}/${KEY}`, { timeoutMs: 200 });
    const e = await failure(c.call('x', []));
    expect([e.kind, e.message]).toEqual(['timeout', `${base}: no reply within 200 ms`]);
  });

  test('an oversize reply is refused, declared or streamed', async () => {
    const c = httpClient(base, { maxReplyBytes: 1000 });
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: r.id, result: 'x'.repeat(2000) });
    const declared = await failure(c.call('x', []));
    expect([declared.kind, declared.message]).toEqual(['oversize', expect.stringMatching(/over the limit/)]);
    handler = (r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no content-length
      res.write(`{"jsonrpc":"2.0","id":${String(r.id)},"result":"`);
      res.write('x'.repeat(1500));
      res.end('"}');
    };
    const streamed = await failure(c.call('x', []));
    expect([streamed.kind, streamed.message]).toEqual(['oversize', `${base}: reply over 1000 bytes`]);
  });

  test('retries: an unanswered call again after a pause; an error answer never', async () => {
    let calls = 0;
    handler = (r, res) => {
      calls++;
      if (calls < 3) {
        res.writeHead(503);
        res.end('busy');
      } else json(res, { jsonrpc: '2.0', id: r.id, result: calls });
    };
    const c = httpClient(base, { retries: 2, retryDelayMs: 10 });
    expect(await c.call('x', [])).toBe(3);
    calls = 0;
    const once = httpClient(base, { retries: 1, retryDelayMs: 10 });
    expect((await failure(once.call('x', []))).kind).toBe('unreachable');
    expect(calls).toBe(2);
    handler = (r, res) => json(res, { jsonrpc: '2.0', id: r.id, error: { code: 3, message: 'reverted' } });
    await failure(c.call('x', []));
    expect(requests).toBe(3 + 2 + 1);
  });

  test('a batch: answers in the order asked, whatever order they come in', async () => {
    handler = (r, res) => {
      const list = r.body as { id: number; params: unknown[] }[];
      json(
        res,
        [...list].reverse().map((q) => ({ jsonrpc: '2.0', id: q.id, result: q.params[0] })),
      );
    };
    const c = httpClient(base, { httpOnly: { name: '--history-upstream' } });
    expect(await c.batch('eth_getBlockByNumber', [['0x1'], ['0x2'], ['0x3']])).toEqual(['0x1', '0x2', '0x3']);
    handler = (r, res) => {
      const list = r.body as { id: number }[];
      json(
        res,
        list.slice(1).map((q) => ({ jsonrpc: '2.0', id: q.id, result: 1 })),
      );
    };
    expect((await failure(c.batch('m', [[], []]))).message).toMatch(/m batch: answers missing/);
    expect(() => createUpstreamClient(`ws://127.0.0.1/${KEY}`, { httpOnly: { name: '--history-upstream' } })).toThrow(
      '--history-upstream ws://127.0.0.1: expected an http(s):// URL',
    );
  });

  test('lanes: at most `concurrency` calls in flight, the others wait in line', async () => {
    let active = 0;
    let peak = 0;
    handler = (r, res) => {
      active++;
      peak = Math.max(peak, active);
      setTimeout(() => {
        active--;
        json(res, { jsonrpc: '2.0', id: r.id, result: r.id });
      }, 20);
    };
    const c = httpClient(base, { concurrency: 2 });
    const answers = await Promise.all(Array.from({ length: 6 }, () => c.call('x', [])));
    expect(answers.sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(peak).toBe(2);
  });
});

test('WebSocket: calls by id, batches as calls, notifications ignored, a dropped connection fails its calls', async () => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/${KEY}`;
  wss.on('connection', (ws) =>
    ws.on('message', (data: Buffer) => {
      const q = JSON.parse(data.toString('utf8')) as { id: number; method: string; params: unknown[] };
      if (q.method === 'drop') return ws.terminate();
      ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: {} }));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: q.id, result: q.params[0] ?? q.method }));
    }),
  );
  const c = createUpstreamClient(url, { timeoutMs: 1000 });
  try {
    expect(await c.call('eth_chainId', [])).toBe('eth_chainId');
    expect(await c.batch('m', [['a'], ['b']])).toEqual(['a', 'b']);
    const dropped = await failure(c.call('drop', []));
    expect(dropped.kind).toBe('unreachable');
    expect(await c.call('again', [])).toBe('again'); // reconnects
  } finally {
    await c.close();
    for (const ws of wss.clients) ws.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  }
});
