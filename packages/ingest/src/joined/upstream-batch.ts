// Calls to an upstream asked in the same run of callbacks (before its microtasks are done), sent
// together: one JSON-RPC batch per upstream and method (one HTTP request), a lone call as itself.
// What an execution missed (accounts, slots; asked at once) goes out in one request, and so do
// reads that reach the upstream together. Not held back for a later turn of the event loop: that
// would add its wait to every cold read. Each caller gets its own answer, or the error of the
// request that carried it.
import { UpstreamRpcError } from '@chainnode/core';
import type { UpstreamClient } from '@chainnode/core';

interface Ask {
  params: unknown[];
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class UpstreamBatcher {
  /** What was asked this turn, by upstream and method. */
  private queued = new Map<UpstreamClient, Map<string, Ask[]>>();

  /** `method(params)` of `upstream`, sent with whatever else is asked of it this turn. */
  call(upstream: UpstreamClient, method: string, params: unknown[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.queued.size === 0) queueMicrotask(() => this.send());
      let byMethod = this.queued.get(upstream);
      if (byMethod === undefined) this.queued.set(upstream, (byMethod = new Map()));
      let asks = byMethod.get(method);
      if (asks === undefined) byMethod.set(method, (asks = []));
      asks.push({ params, resolve, reject });
    });
  }

  private send(): void {
    const queued = this.queued;
    this.queued = new Map();
    for (const [upstream, byMethod] of queued)
      for (const [method, asks] of byMethod)
        for (let i = 0; i < asks.length; i += MAX_BATCH) void sendAsks(upstream, method, asks.slice(i, i + MAX_BATCH));
  }
}

/** Calls in one batch at most (providers bound their batches; an execution rarely misses more at once). */
const MAX_BATCH = 64;

async function sendAsks(upstream: UpstreamClient, method: string, asks: Ask[]): Promise<void> {
  if (asks.length === 1) {
    const a = asks[0] as Ask;
    upstream.call(method, a.params).then(a.resolve, a.reject);
    return;
  }
  let replies: unknown[];
  try {
    replies = await upstream.batch(
      method,
      asks.map((a) => a.params),
    );
  } catch (err) {
    // One call's error object fails the whole batch: each call again on its own, so that only
    // the calls that fail fail.
    if (err instanceof UpstreamRpcError)
      for (const a of asks) upstream.call(method, a.params).then(a.resolve, a.reject);
    else for (const a of asks) a.reject(err);
    return;
  }
  for (let i = 0; i < asks.length; i++) (asks[i] as Ask).resolve(replies[i]);
}
