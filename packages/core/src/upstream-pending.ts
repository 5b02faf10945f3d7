// The upstream's pending transactions: over a WebSocket upstream, eth_subscribe
// ("newPendingTransactions") on a socket of its own (upstream-subscription.ts), handing the hashes
// on in batches. Every notification is hostile: one that is not a 0x-prefixed 32-byte hex hash is
// dropped; at most MAX_PER_FLUSH hashes per flush interval are handed on (the rest dropped); a
// hash handed on in the last DEDUP_WINDOW is not handed on again. Drops are counted (stats()) and
// logged at most once a minute. An HTTP upstream, or one that refuses the subscription, offers
// none: that is logged once and nothing else happens. A dropped connection is reopened and
// resubscribed.
import type { Hex } from './hex.js';
import { UpstreamSubscription } from './upstream-subscription.js';

/** Most hashes handed on per flush interval (the pending-transaction journal's size). */
export const MAX_PER_FLUSH = 4096;

/** Hashes remembered to drop repeats. */
const DEDUP_WINDOW = 8192;

const HASH = /^0x[0-9a-fA-F]{64}$/;

export interface UpstreamPendingOptions {
  /** The followed upstream's URL; only ws(s):// offers pending transactions. */
  url: string;
  /** Receives each flush's new hashes (lowercase), in the order the upstream sent them. */
  onHashes: (hashes: Hex[]) => void;
  log: (line: string) => void;
  /** Flush interval (default 200 ms). */
  flushMs?: number;
  /** First reconnect delay, doubled up to 30 s (default 1 s). */
  retryMs?: number;
}

export interface UpstreamPendingStats {
  /** Hashes handed on. */
  delivered: number;
  /** Notifications that were not a hash. */
  invalid: number;
  /** Hashes beyond MAX_PER_FLUSH in one interval. */
  overflow: number;
  /** Hashes seen recently. */
  repeated: number;
}

/** Follows the upstream's pending transactions until stop(); see the top of this file. */
export class UpstreamPendingFeed {
  private batch: Hex[] = [];
  private readonly seen = new Set<Hex>();
  private readonly counts: UpstreamPendingStats = { delivered: 0, invalid: 0, overflow: 0, repeated: 0 };
  private reported = 0;
  private lastReport = 0;
  private readonly flushTimer: NodeJS.Timeout | undefined;
  private readonly sub: UpstreamSubscription;

  constructor(private readonly o: UpstreamPendingOptions) {
    this.sub = new UpstreamSubscription({
      url: o.url,
      params: ['newPendingTransactions'],
      onResult: (hash) => this.take(hash),
      onInvalid: () => this.counts.invalid++,
      onNone: (why) => {
        if (this.flushTimer !== undefined) clearInterval(this.flushTimer);
        o.log(`upstream pending transactions: none (${why})`);
      },
      ...(o.retryMs !== undefined ? { retryMs: o.retryMs } : {}),
    });
    if (!this.sub.active) return;
    this.flushTimer = setInterval(() => this.flush(), o.flushMs ?? 200);
    this.flushTimer.unref();
  }

  stats(): UpstreamPendingStats {
    return { ...this.counts };
  }

  stop(): void {
    if (this.flushTimer !== undefined) clearInterval(this.flushTimer);
    this.sub.stop();
  }

  private take(hash: unknown): void {
    if (typeof hash !== 'string' || !HASH.test(hash)) {
      this.counts.invalid++;
      return;
    }
    const h = hash.toLowerCase() as Hex;
    if (this.seen.has(h)) {
      this.counts.repeated++;
      return;
    }
    if (this.batch.length >= MAX_PER_FLUSH) {
      this.counts.overflow++;
      return;
    }
    this.seen.add(h);
    if (this.seen.size > DEDUP_WINDOW) this.seen.delete(this.seen.values().next().value as Hex);
    this.batch.push(h);
  }

  private flush(): void {
    if (this.batch.length > 0) {
      const out = this.batch;
      this.batch = [];
      this.counts.delivered += out.length;
      this.o.onHashes(out);
    }
    const dropped = this.counts.invalid + this.counts.overflow;
    const now = Date.now();
    if (dropped > this.reported && now - this.lastReport >= 60_000) {
      this.o.log(
        `upstream pending transactions: dropped ${dropped - this.reported} (${this.counts.invalid} not a hash, ${this.counts.overflow} over ${MAX_PER_FLUSH} per interval, in all)`,
      );
      this.reported = dropped;
      this.lastReport = now;
    }
  }
}
