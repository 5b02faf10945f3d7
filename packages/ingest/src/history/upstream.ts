// The history upstream's client: JSON-RPC over HTTP(S), single calls and batches, bounded in
// concurrency (a queue of callers beyond it), in time per call and in reply size. It trusts
// nothing: every answer is verified by the caller (history/store.ts) against the node's own
// headers. Its failures are UpstreamErrors whose messages carry only the URL's origin.
import { Lanes } from '@chainnode/core';
import { UpstreamError } from '../errors.js';
import { createRpcClient, redactUrl, UpstreamRpcError } from '../rpc-client.js';
import type { RpcClient } from '../rpc-client.js';

export interface HistoryClientOptions {
  /** Requests in flight at once; more wait in line (default 8). */
  concurrency?: number;
  /** Per request, queueing excluded (default 10 s). */
  timeoutMs?: number;
  /** Largest reply accepted (default 32 MiB: a block with its receipts, or a batch of headers). */
  maxReplyBytes?: number;
}

/** A bounded client: `call` as RpcClient's, `batch` one JSON-RPC array of the same method. */
export interface HistoryClient extends RpcClient {
  /** One request per params list, in one HTTP batch; answers in order (null for a missing one). */
  batch(method: string, params: unknown[][]): Promise<unknown[]>;
}

export function createHistoryClient(url: string, opts: HistoryClientOptions = {}): HistoryClient {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new UpstreamError(`--history-upstream ${redactUrl(url)}: expected an http(s):// URL`);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxBytes = opts.maxReplyBytes ?? 32 * 2 ** 20;
  const inner = createRpcClient(url, { timeoutMs, maxReplyBytes: maxBytes });
  const origin = inner.origin;
  const limit = Math.max(1, opts.concurrency ?? 8);
  const lanes = new Lanes(limit);
  const bounded = <T>(fn: () => Promise<T>): Promise<T> => lanes.run(fn);
  let nextId = 1;
  return {
    origin,
    call: (method, params) => bounded(() => inner.call(method, params)),
    close: () => inner.close(),
    batch: (method, list) =>
      bounded(async () => {
        const first = nextId;
        nextId += list.length;
        const body = JSON.stringify(list.map((params, i) => ({ jsonrpc: '2.0', id: first + i, method, params })));
        let text: string;
        try {
          const res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
            signal: AbortSignal.timeout(timeoutMs),
          });
          const len = Number(res.headers.get('content-length') ?? '0');
          if (len > maxBytes) throw new UpstreamError(`${origin}: reply of ${len} bytes is over the limit`);
          text = await res.text();
          if (text.length > maxBytes) throw new UpstreamError(`${origin}: reply over ${maxBytes} bytes`);
        } catch (err) {
          if (err instanceof UpstreamError) throw err;
          const e = err as Error;
          throw new UpstreamError(
            `${origin}: ${e.name === 'TimeoutError' ? `no reply within ${timeoutMs} ms` : `request failed (${e.message})`}`,
          );
        }
        let reply: unknown;
        try {
          reply = JSON.parse(text);
        } catch {
          throw new UpstreamError(`${origin}: ${method} batch: reply is not JSON`);
        }
        if (!Array.isArray(reply)) {
          const m = (reply as { error?: { message?: unknown } } | null)?.error?.message;
          throw new UpstreamError(
            `${origin}: ${method} batch: ${typeof m === 'string' ? m.slice(0, 200) : 'not a batch reply'}`,
          );
        }
        const out = new Array<unknown>(list.length);
        const seen = new Array<boolean>(list.length).fill(false);
        for (const r of reply as { id?: unknown; result?: unknown; error?: { code?: unknown; message?: unknown } }[]) {
          const i = typeof r?.id === 'number' ? r.id - first : -1;
          if (i < 0 || i >= list.length || seen[i])
            throw new UpstreamError(`${origin}: ${method} batch: a reply id is not one asked`);
          seen[i] = true;
          if (r.error !== undefined && r.error !== null) {
            const code = typeof r.error.code === 'number' ? r.error.code : 0;
            const msg = typeof r.error.message === 'string' ? r.error.message.slice(0, 200) : 'error';
            throw new UpstreamRpcError(code, `${origin}: ${code} ${msg}`);
          }
          out[i] = r.result;
        }
        if (seen.some((s) => !s)) throw new UpstreamError(`${origin}: ${method} batch: answers missing`);
        return out;
      }),
  };
}
