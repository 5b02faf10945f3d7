// The one JSON-RPC 2.0 client for upstream nodes (a followed node, a history upstream, a failover
// partner, where signed transactions go), over HTTP(S) or WebSocket. An upstream is hostile until
// its answer is validated: every reply is bounded in time and size and checked (envelope, id)
// before its result is handed over, and what the result means is checked by the caller. Failures
// are UpstreamErrors of a kind (see UpstreamFailure) whose messages carry only the URL's origin
// (an upstream URL may hold an API key, e.g. http://host/v3/<KEY>). Calls may be bounded in
// flight (lanes, a queue of callers beyond them) and retried when the upstream did not answer.
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type WebSocket from 'ws';
import { Lanes } from './lanes.js';
import { loadWebSocket } from './ws-load.js';

/**
 * Why an upstream call failed: `unreachable` (no connection, a dropped one, an HTTP error
 * without a JSON body), `timeout` (no reply in time), `oversize` (a reply over the limit),
 * `invalid` (a reply that is not a JSON-RPC answer to the request), `rpc` (an error object).
 */
export type UpstreamFailure = 'unreachable' | 'timeout' | 'oversize' | 'invalid' | 'rpc';

/** The upstream node is unreachable or answers something that is not a valid reply. */
export class UpstreamError extends Error {
  readonly kind: UpstreamFailure;
  constructor(message: string, options?: { cause?: unknown; kind?: UpstreamFailure }) {
    super(message, options);
    this.name = 'UpstreamError';
    this.kind = options?.kind ?? 'invalid';
  }
}

/** The upstream answered with a JSON-RPC error object. */
export class UpstreamRpcError extends UpstreamError {
  constructor(
    origin: string,
    /** The error's code (-32603 when it names none). */
    readonly code: number,
    /** The error's message, at most 200 characters. */
    readonly remoteMessage: string,
  ) {
    super(`${origin}: ${code} ${remoteMessage}`, { kind: 'rpc' });
    this.name = 'UpstreamRpcError';
  }
}

export interface UpstreamClientOptions {
  /** Per call, waiting for a lane excluded (default 10 s). */
  timeoutMs?: number;
  /** Largest reply accepted, bytes (default 128 MiB). */
  maxReplyBytes?: number;
  /** Calls in flight at once; more wait in line (default: no bound). */
  concurrency?: number;
  /** Further attempts of a call the upstream did not answer (unreachable, timeout; default 0). */
  retries?: number;
  /** Wait before the first retry, doubled for each next one (default 250 ms). */
  retryDelayMs?: number;
  /** Only http(s):// URLs (a batch-capable upstream); `name` says whose URL in the refusal. */
  httpOnly?: { name: string };
  /**
   * HTTP(S) over node:http sockets kept open between calls instead of fetch: a small call on
   * loopback in about half the time (0.66-1.2 ms against 1.2-2.3 ms, eth_getProof of a chainnode
   * primary on a loaded 2-core machine), for callers whose calls are on an answer's path. Redirects
   * are not followed (an HTTP error). A call sent on a kept socket the upstream had closed is sent
   * once more on a new one: for calls that are safe to repeat (reads).
   */
  keepAlive?: boolean;
}

export interface UpstreamClient {
  /** The upstream's origin (scheme, host, port): what logs and messages may show. */
  readonly origin: string;
  call(method: string, params: unknown[]): Promise<unknown>;
  /** One request per params list (one JSON-RPC batch over HTTP); answers in order. */
  batch(method: string, params: unknown[][]): Promise<unknown[]>;
  close(): Promise<void>;
}

/** The URL's origin only: its path and query may hold a key. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '<invalid url>';
  }
}

export function createUpstreamClient(url: string, options: UpstreamClientOptions = {}): UpstreamClient {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UpstreamError(`${options.httpOnly?.name ?? 'upstream URL'} is not a URL`);
  }
  const http = u.protocol === 'http:' || u.protocol === 'https:';
  if (options.httpOnly !== undefined && !http)
    throw new UpstreamError(`${options.httpOnly.name} ${redactUrl(url)}: expected an http(s):// URL`);
  const limits = { timeoutMs: options.timeoutMs ?? 10_000, maxBytes: options.maxReplyBytes ?? 128 * 2 ** 20 };
  let transport: Transport;
  if (http) transport = options.keepAlive === true ? new KeepAliveTransport(u, limits) : new HttpTransport(url, limits);
  else if (u.protocol === 'ws:' || u.protocol === 'wss:') transport = new WsTransport(url, limits);
  else throw new UpstreamError(`upstream URL must be http(s):// or ws(s)://, got ${u.protocol}`);
  return new Client(transport, options);
}

interface Limits {
  timeoutMs: number;
  maxBytes: number;
}

/** Sends one request body and returns the reply's text (bounded); `id` is the (first) request id. */
interface Transport {
  readonly origin: string;
  readonly batches: boolean;
  exchange(body: string, id: number): Promise<string>;
  close(): Promise<void>;
}

type Envelope = { id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } | null };

class Client implements UpstreamClient {
  readonly origin: string;
  private nextId = 1;
  private readonly lanes: Lanes | undefined;
  private readonly retries: number;
  private readonly retryDelayMs: number;

  constructor(
    private readonly transport: Transport,
    options: UpstreamClientOptions,
  ) {
    this.origin = transport.origin;
    this.lanes = options.concurrency !== undefined ? new Lanes(Math.max(1, options.concurrency)) : undefined;
    this.retries = Math.max(0, options.retries ?? 0);
    this.retryDelayMs = options.retryDelayMs ?? 250;
  }

  call(method: string, params: unknown[]): Promise<unknown> {
    return this.attempts(async () => {
      const id = this.nextId++;
      const text = await this.transport.exchange(JSON.stringify({ jsonrpc: '2.0', id, method, params }), id);
      const reply = this.parse(text);
      if (typeof reply !== 'object' || reply === null || Array.isArray(reply))
        throw new UpstreamError(`${this.origin}: reply is not a JSON-RPC object`);
      const r = reply as Envelope;
      if (r.id !== id) throw new UpstreamError(`${this.origin}: reply id does not match the request`);
      return this.result(r, () => `${this.origin}: reply has neither result nor error`);
    });
  }

  batch(method: string, list: unknown[][]): Promise<unknown[]> {
    if (!this.transport.batches) return Promise.all(list.map((params) => this.call(method, params)));
    return this.attempts(async () => {
      const first = this.nextId;
      this.nextId += list.length;
      const body = JSON.stringify(list.map((params, i) => ({ jsonrpc: '2.0', id: first + i, method, params })));
      const reply = this.parse(await this.transport.exchange(body, first), `${method} batch: `);
      if (!Array.isArray(reply)) {
        const m = (reply as Envelope | null)?.error?.message;
        throw new UpstreamError(
          `${this.origin}: ${method} batch: ${typeof m === 'string' ? m.slice(0, 200) : 'not a batch reply'}`,
        );
      }
      const out = new Array<unknown>(list.length);
      const seen = new Array<boolean>(list.length).fill(false);
      for (const r of reply as (Envelope | null)[]) {
        const i = typeof r?.id === 'number' ? r.id - first : -1;
        if (r === null || i < 0 || i >= list.length || seen[i])
          throw new UpstreamError(`${this.origin}: ${method} batch: a reply id is not one asked`);
        seen[i] = true;
        out[i] = this.result(r, () => `${this.origin}: ${method} batch: an answer has neither result nor error`);
      }
      if (seen.some((s) => !s)) throw new UpstreamError(`${this.origin}: ${method} batch: answers missing`);
      return out;
    });
  }

  close(): Promise<void> {
    return this.transport.close();
  }

  private parse(text: string, what = ''): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw new UpstreamError(`${this.origin}: ${what}reply is not JSON`);
    }
  }

  /** The result of one answer, or its error object as an UpstreamRpcError. */
  private result(r: Envelope, missing: () => string): unknown {
    if (r.error !== undefined && r.error !== null) {
      const code = typeof r.error.code === 'number' ? r.error.code : -32603;
      const msg = typeof r.error.message === 'string' ? r.error.message.slice(0, 200) : 'error';
      throw new UpstreamRpcError(this.origin, code, msg);
    }
    if (!('result' in r)) throw new UpstreamError(missing());
    return r.result;
  }

  /** Runs `fn` in a lane, again after a pause when the upstream did not answer (up to `retries` times). */
  private async attempts<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await (this.lanes !== undefined ? this.lanes.run(fn) : fn());
      } catch (err) {
        const unanswered = err instanceof UpstreamError && (err.kind === 'unreachable' || err.kind === 'timeout');
        if (!unanswered || attempt >= this.retries) throw err;
        await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs * 2 ** attempt));
      }
    }
  }
}

class HttpTransport implements Transport {
  readonly origin: string;
  readonly batches = true;
  constructor(
    private readonly url: string,
    private readonly limits: Limits,
  ) {
    this.origin = redactUrl(url);
  }

  async exchange(body: string): Promise<string> {
    const { origin } = this;
    const { timeoutMs, maxBytes } = this.limits;
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const len = Number(res.headers.get('content-length') ?? '0');
      if (len > maxBytes) {
        await res.body?.cancel();
        throw new UpstreamError(`${origin}: reply of ${len} bytes is over the limit`, { kind: 'oversize' });
      }
      if (res.body === null)
        throw new UpstreamError(`${origin}: HTTP ${res.status} without a body`, { kind: 'unreachable' });
      const chunks: Uint8Array[] = [];
      let total = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        total += chunk.length;
        if (total > maxBytes) throw new UpstreamError(`${origin}: reply over ${maxBytes} bytes`, { kind: 'oversize' });
        chunks.push(chunk);
      }
      const text = Buffer.concat(chunks).toString('utf8');
      if (res.status !== 200 && !/^\s*[[{]/.test(text))
        throw new UpstreamError(`${origin}: HTTP ${res.status}`, { kind: 'unreachable' });
      return text;
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      const e = err as Error;
      if (e.name === 'TimeoutError')
        throw new UpstreamError(`${origin}: no reply within ${timeoutMs} ms`, { kind: 'timeout' });
      const why = (e.cause as Error | undefined)?.message ?? e.message;
      throw new UpstreamError(`${origin}: request failed (${why})`, { kind: 'unreachable' });
    }
  }

  async close(): Promise<void> {}
}

/** HttpTransport's exchange over node:http(s) with kept-alive sockets (UpstreamClientOptions.keepAlive). */
class KeepAliveTransport implements Transport {
  readonly origin: string;
  readonly batches = true;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;

  constructor(
    private readonly url: URL,
    private readonly limits: Limits,
  ) {
    this.origin = redactUrl(url.href);
    const https = url.protocol === 'https:';
    this.agent = https ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
    this.send = https ? (httpsRequest as typeof httpRequest) : httpRequest;
  }

  async exchange(body: string): Promise<string> {
    try {
      return await this.once(body);
    } catch (err) {
      // A kept socket the upstream closed while it was idle: once more, on a new one.
      if ((err as { reused?: boolean }).reused !== true) throw err;
      return this.once(body);
    }
  }

  private once(body: string): Promise<string> {
    const { origin } = this;
    const { timeoutMs, maxBytes } = this.limits;
    return new Promise<string>((resolve, reject) => {
      let req: ClientRequest | undefined;
      const fail = (e: Error): void => {
        clearTimeout(timer);
        req?.destroy();
        reject(e);
      };
      const timer = setTimeout(
        () => fail(new UpstreamError(`${origin}: no reply within ${timeoutMs} ms`, { kind: 'timeout' })),
        timeoutMs,
      );
      const onReply = (res: IncomingMessage): void => {
        const len = Number(res.headers['content-length'] ?? '0');
        if (len > maxBytes) {
          fail(new UpstreamError(`${origin}: reply of ${len} bytes is over the limit`, { kind: 'oversize' }));
          return;
        }
        const chunks: Buffer[] = [];
        let total = 0;
        res.on('data', (c: Buffer) => {
          total += c.length;
          if (total > maxBytes)
            fail(new UpstreamError(`${origin}: reply over ${maxBytes} bytes`, { kind: 'oversize' }));
          else chunks.push(c);
        });
        res.on('error', (e) =>
          fail(new UpstreamError(`${origin}: request failed (${e.message})`, { kind: 'unreachable' })),
        );
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200 && !/^\s*[[{]/.test(text))
            reject(new UpstreamError(`${origin}: HTTP ${res.statusCode}`, { kind: 'unreachable' }));
          else resolve(text);
        });
      };
      const r = this.send(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        onReply,
      );
      req = r;
      r.on('error', (e) => {
        const err = new UpstreamError(`${origin}: request failed (${e.message})`, { kind: 'unreachable' });
        if (r.reusedSocket && (e as NodeJS.ErrnoException).code === 'ECONNRESET') Object.assign(err, { reused: true });
        fail(err);
      });
      r.end(body);
    });
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }
}

type Pending = { resolve: (text: string) => void; reject: (err: Error) => void; timer: NodeJS.Timeout };

class WsTransport implements Transport {
  readonly origin: string;
  readonly batches = false;
  private socket: WebSocket | undefined;
  private opening: Promise<WebSocket> | undefined;
  private readonly pending = new Map<number, Pending>();
  private closed = false;
  constructor(
    private readonly url: string,
    private readonly limits: Limits,
  ) {
    this.origin = redactUrl(url);
  }

  private connect(): Promise<WebSocket> {
    if (this.socket !== undefined && this.socket.readyState === this.socket.OPEN) return Promise.resolve(this.socket);
    this.opening ??= loadWebSocket().then((Socket) => this.open(Socket));
    return this.opening;
  }

  private open(Socket: typeof WebSocket): Promise<WebSocket> {
    return new Promise<WebSocket>((resolve, reject) => {
      const ws = new Socket(this.url, { maxPayload: this.limits.maxBytes, handshakeTimeout: this.limits.timeoutMs });
      const fail = (err: Error) => {
        this.opening = undefined;
        ws.removeAllListeners();
        ws.on('error', () => undefined);
        ws.terminate();
        reject(new UpstreamError(`${this.origin}: cannot connect (${err.message})`, { kind: 'unreachable' }));
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
          this.rejectAll(`connection ${why}`);
        };
        ws.on('close', () => drop('closed'));
        ws.on('error', (err) => {
          drop(`failed (${err.message})`);
          ws.terminate();
        });
        resolve(ws);
      });
    });
  }

  private rejectAll(why: string): void {
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new UpstreamError(`${this.origin}: ${why}`, { kind: 'unreachable' }));
    }
    this.pending.clear();
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

  async exchange(body: string, id: number): Promise<string> {
    if (this.closed) throw new UpstreamError(`${this.origin}: client closed`, { kind: 'unreachable' });
    const ws = await this.connect();
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new UpstreamError(`${this.origin}: no reply within ${this.limits.timeoutMs} ms`, { kind: 'timeout' }));
      }, this.limits.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      ws.send(body, (err) => {
        if (err === undefined || err === null) return;
        const p = this.pending.get(id);
        if (p === undefined) return;
        this.pending.delete(id);
        clearTimeout(p.timer);
        reject(new UpstreamError(`${this.origin}: send failed (${err.message})`, { kind: 'unreachable' }));
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const ws = this.socket;
    this.socket = undefined;
    this.rejectAll('client closed');
    if (ws !== undefined) ws.terminate();
  }
}
