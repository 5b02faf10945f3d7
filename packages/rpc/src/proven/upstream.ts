// The upstream a node that joined its chain fetches state proofs (and code) from: a minimal
// JSON-RPC client over fetch, bounded in concurrency (a queue of callers beyond it) and in time
// per call, with a bounded reply size. Nothing it returns is trusted: proofs are verified by the
// caller (proven/state.ts) against the node's own state roots.
import { Lanes } from '@chainnode/core';

export interface StateUpstream {
  /** The upstream's origin only (no path: it may hold a key), for messages and metrics. */
  readonly origin: string;
  call(method: string, params: unknown[]): Promise<unknown>;
}

export interface StateUpstreamOptions {
  /** Calls in flight at once; more wait in line (default 8). */
  concurrency?: number;
  /** Per call, queueing excluded (default 10 s). */
  timeoutMs?: number;
  /** Largest reply body accepted (default 16 MiB: a proof of many slots with code is far smaller). */
  maxReplyBytes?: number;
}

/** The upstream failed to answer (down, slow, an error object, not JSON): nothing to verify. */
export class StateUpstreamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateUpstreamError';
  }
}

/** An http(s):// JSON-RPC upstream for proofs. */
export function createStateUpstream(url: string, opts: StateUpstreamOptions = {}): StateUpstream {
  const u = new URL(url);
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new Error(`state upstream ${u.origin}: expected an http(s):// URL`);
  const origin = u.origin;
  const limit = Math.max(1, opts.concurrency ?? 8);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxBytes = opts.maxReplyBytes ?? 16 * 2 ** 20;
  const lanes = new Lanes(limit);
  let id = 0;
  return {
    origin,
    call: (method, params) =>
      lanes.run(async () => {
        let res: Response;
        try {
          res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
            signal: AbortSignal.timeout(timeoutMs),
          });
        } catch (err) {
          const e = err as Error;
          throw new StateUpstreamError(
            `${origin}: ${method}: ${e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : e.message}`,
          );
        }
        const length = Number(res.headers.get('content-length') ?? '0');
        if (length > maxBytes) throw new StateUpstreamError(`${origin}: ${method}: reply of ${length} bytes`);
        const text = await res.text();
        if (text.length > maxBytes) throw new StateUpstreamError(`${origin}: ${method}: reply of ${text.length} bytes`);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw new StateUpstreamError(`${origin}: ${method}: HTTP ${res.status}, not JSON`);
        }
        if (typeof body !== 'object' || body === null)
          throw new StateUpstreamError(`${origin}: ${method}: not a reply`);
        const o = body as { result?: unknown; error?: { message?: unknown } };
        if (o.error !== undefined)
          throw new StateUpstreamError(`${origin}: ${method}: ${String(o.error?.message ?? 'error').slice(0, 200)}`);
        if (!('result' in o)) throw new StateUpstreamError(`${origin}: ${method}: reply without a result`);
        return o.result;
      }),
  };
}
