// Calls to an upstream asked in the same run of callbacks (before its microtasks are done), sent
// together: one JSON-RPC batch per upstream and method (one HTTP request), a lone call as itself.
// What an execution missed (accounts, slots; asked at once) goes out in one request, and so do
// reads that reach the upstream together. Not held back for a later turn of the event loop: that
// would add its wait to every cold read. Each caller gets its own answer, or the error of the
// request that carried it.
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
      for (const [method, asks] of byMethod) void sendAsks(upstream, method, asks);
  }
}

async function sendAsks(upstream: UpstreamClient, method: string, asks: Ask[]): Promise<void> {
  try {
    if (asks.length === 1) {
      const a = asks[0] as Ask;
      a.resolve(await upstream.call(method, a.params));
      return;
    }
    const replies = await upstream.batch(
      method,
      asks.map((a) => a.params),
    );
    for (let i = 0; i < asks.length; i++) (asks[i] as Ask).resolve(replies[i]);
  } catch (err) {
    for (const a of asks) a.reject(err);
  }
}
