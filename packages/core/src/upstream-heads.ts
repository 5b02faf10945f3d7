// The upstream's new heads, as a wake-up: over a WebSocket upstream, eth_subscribe("newHeads") on a
// socket of its own (upstream-subscription.ts); each notification that looks like a header (an
// object with a hex `number`) calls `onHead`, which only tells a follower to ask the upstream now
// rather than at its next poll: nothing in the notification is used, so a lying upstream gains
// nothing, and a flood of them asks no more than one step of the follower at a time. An HTTP
// upstream, or one that refuses the subscription, offers none: logged once, the poll stays.
import { UpstreamSubscription } from './upstream-subscription.js';

const QUANTITY = /^0x[0-9a-fA-F]{1,16}$/;

export interface UpstreamHeadsOptions {
  /** The followed upstream's URL; only ws(s):// offers new heads. */
  url: string;
  onHead: () => void;
  log: (line: string) => void;
  /** First reconnect delay, doubled up to 30 s (default 1 s). */
  retryMs?: number;
}

/** See the top of this file; stop() ends it. */
export class UpstreamHeadsFeed {
  /** Notifications that were not a header. */
  invalid = 0;
  private readonly sub: UpstreamSubscription;

  constructor(o: UpstreamHeadsOptions) {
    this.sub = new UpstreamSubscription({
      url: o.url,
      params: ['newHeads'],
      onResult: (head) => {
        const n = (head as { number?: unknown } | null)?.number;
        if (typeof head === 'object' && typeof n === 'string' && QUANTITY.test(n)) o.onHead();
        else this.invalid++;
      },
      onInvalid: () => this.invalid++,
      onNone: (why) => o.log(`upstream new heads: none (${why}); polling`),
      ...(o.retryMs !== undefined ? { retryMs: o.retryMs } : {}),
    });
  }

  stop(): void {
    this.sub.stop();
  }
}
