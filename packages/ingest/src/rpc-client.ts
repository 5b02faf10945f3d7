// A minimal JSON-RPC 2.0 client for an upstream node over HTTP(S) or WebSocket. Every reply is
// validated (envelope, id, size); failures are UpstreamErrors whose messages never carry the
// URL's path or query (an upstream URL may hold an API key, e.g. http://host/v3/<KEY>).
import WebSocket from 'ws';
import { UpstreamError } from './errors.js';

export interface RpcClientOptions {
  /** Per-call timeout (default 10 s). */
  timeoutMs?: number;
  /** Largest reply accepted, bytes (default 128 MiB). */
  maxReplyBytes?: number;
}

export interface RpcClient {
  /** The upstream's origin (scheme, host, port): what logs may show. */
  readonly origin: string;
  call(method: string, params: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

/** Remote JSON-RPC error (the upstream answered, with an error object). */
export class UpstreamRpcError extends UpstreamError {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamRpcError';
  }
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '<invalid url>';
  }
}

export function createRpcClient(url: string, options: RpcClientOptions = {}): RpcClient {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UpstreamError(`upstream URL is not a URL`);
  }
  if (u.protocol === 'http:' || u.protocol === 'https:') return new HttpRpcClient(url, options);
  if (u.protocol === 'ws:' || u.protocol === 'wss:') return new WsRpcClient(url, options);
  throw new UpstreamError(`upstream URL must be http(s):// or ws(s)://, got ${u.protocol}`);
}

function parseReply(text: string, id: number, origin: string): unknown {
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch {
    throw new UpstreamError(`${origin}: reply is not JSON`);
  }
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply))
    throw new UpstreamError(`${origin}: reply is not a JSON-RPC object`);
  const r = reply as { id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } };
  if (r.id !== id) throw new UpstreamError(`${origin}: reply id does not match the request`);
  if (r.error !== undefined && r.error !== null) {
    const code = typeof r.error.code === 'number' ? r.error.code : 0;
    const msg = typeof r.error.message === 'string' ? r.error.message.slice(0, 200) : 'error';
    throw new UpstreamRpcError(code, `${origin}: ${code} ${msg}`);
  }
  if (!('result' in r)) throw new UpstreamError(`${origin}: reply has neither result nor error`);
  return r.result;
}

class HttpRpcClient implements RpcClient {
  readonly origin: string;
  private nextId = 1;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  constructor(
    private readonly url: string,
    options: RpcClientOptions,
  ) {
    this.origin = redactUrl(url);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxBytes = options.maxReplyBytes ?? 128 * 2 ** 20;
  }

  async call(method: string, params: unknown[]): Promise<unknown> {
    const id = this.nextId++;
    let text: string;
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const len = Number(res.headers.get('content-length') ?? '0');
      if (len > this.maxBytes) throw new UpstreamError(`${this.origin}: reply of ${len} bytes is over the limit`);
      if (res.body === null) throw new UpstreamError(`${this.origin}: HTTP ${res.status} without a body`);
      const chunks: Uint8Array[] = [];
      let total = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        total += chunk.length;
        if (total > this.maxBytes) throw new UpstreamError(`${this.origin}: reply over ${this.maxBytes} bytes`);
        chunks.push(chunk);
      }
      text = Buffer.concat(chunks).toString('utf8');
      if (res.status !== 200 && !text.startsWith('{')) throw new UpstreamError(`${this.origin}: HTTP ${res.status}`);
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      const e = err as Error;
      throw new UpstreamError(
        `${this.origin}: ${e.name === 'TimeoutError' ? `no reply within ${this.timeoutMs} ms` : `request failed (${(e.cause as Error | undefined)?.message ?? e.message})`}`,
      );
    }
    return parseReply(text, id, this.origin);
  }

  async close(): Promise<void> {}
}

class WsRpcClient implements RpcClient {
  readonly origin: string;
  private nextId = 1;
  private socket: WebSocket | undefined;
  private opening: Promise<WebSocket> | undefined;
  private readonly pending = new Map<
    number,
    { resolve: (text: string) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }
  >();
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private closed = false;
  constructor(
    private readonly url: string,
    options: RpcClientOptions,
  ) {
    this.origin = redactUrl(url);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxBytes = options.maxReplyBytes ?? 128 * 2 ** 20;
  }

  private connect(): Promise<WebSocket> {
    if (this.socket?.readyState === WebSocket.OPEN) return Promise.resolve(this.socket);
    this.opening ??= new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(this.url, { maxPayload: this.maxBytes, handshakeTimeout: this.timeoutMs });
      const fail = (err: Error) => {
        this.opening = undefined;
        ws.removeAllListeners();
        ws.on('error', () => undefined);
        ws.terminate();
        reject(new UpstreamError(`${this.origin}: cannot connect (${err.message})`));
      };
      ws.once('error', fail);
      ws.once('unexpected-response', (_req, res) => fail(new Error(`HTTP ${res.statusCode}`)));
      ws.once('open', () => {
        ws.removeAllListeners();
        this.opening = undefined;
        this.socket = ws;
        ws.on('message', (data: Buffer) => this.onMessage(data.toString('utf8')));
        const drop = (why: string) => {
          if (this.socket === ws) this.socket = undefined;
          for (const [, p] of this.pending) {
            clearTimeout(p.timer);
            p.reject(new UpstreamError(`${this.origin}: connection ${why}`));
          }
          this.pending.clear();
        };
        ws.on('close', () => drop('closed'));
        ws.on('error', (err) => {
          drop(`failed (${err.message})`);
          ws.terminate();
        });
        resolve(ws);
      });
    });
    return this.opening;
  }

  private onMessage(text: string): void {
    let id: unknown;
    try {
      id = (JSON.parse(text) as { id?: unknown }).id;
    } catch {
      return;
    }
    if (typeof id !== 'number') return; // notifications and garbage are not replies
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(text);
  }

  async call(method: string, params: unknown[]): Promise<unknown> {
    if (this.closed) throw new UpstreamError(`${this.origin}: client closed`);
    const ws = await this.connect();
    const id = this.nextId++;
    const text = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new UpstreamError(`${this.origin}: no reply within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }), (err) => {
        if (err === undefined || err === null) return;
        const p = this.pending.get(id);
        if (p === undefined) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        reject(new UpstreamError(`${this.origin}: send failed (${err.message})`));
      });
    });
    return parseReply(text, id, this.origin);
  }

  async close(): Promise<void> {
    this.closed = true;
    const ws = this.socket;
    this.socket = undefined;
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new UpstreamError(`${this.origin}: client closed`));
    }
    this.pending.clear();
    if (ws !== undefined) ws.terminate();
  }
}
