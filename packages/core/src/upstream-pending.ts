// The upstream's pending transactions: over a WebSocket upstream, its own socket subscribed to
// eth_subscribe("newPendingTransactions") (hashes), handing the hashes on in batches. Every
// notification is hostile: one that is not a 0x-prefixed 32-byte hex hash is dropped; at most
// MAX_PER_FLUSH hashes per flush interval are handed on (the rest dropped); a hash handed on in
// the last DEDUP_WINDOW is not handed on again. Drops are counted (stats()) and logged at most
// once a minute. An HTTP upstream, or one that refuses the subscription, offers none: that is
// logged once and nothing else happens. A dropped connection is reopened and resubscribed.
import type WebSocket from 'ws';
import type { Hex } from './hex.js';
import { redactUrl } from './upstream-client.js';
import { loadWebSocket } from './ws-load.js';

/** Most hashes handed on per flush interval (the pending-transaction journal's size). */
export const MAX_PER_FLUSH = 4096;

/** Hashes remembered to drop repeats. */
const DEDUP_WINDOW = 8192;

/** Largest message accepted from the upstream on this socket (a notification is ~200 bytes). */
const MAX_MESSAGE_BYTES = 64 * 1024;

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
  private readonly origin: string;
  private socket: WebSocket | undefined;
  private subscription: string | undefined;
  private batch: Hex[] = [];
  private readonly seen = new Set<Hex>();
  private readonly counts: UpstreamPendingStats = { delivered: 0, invalid: 0, overflow: 0, repeated: 0 };
  private reported = 0;
  private lastReport = 0;
  private stopped = false;
  private retryMs: number;
  private readonly flushTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: UpstreamPendingOptions) {
    this.origin = redactUrl(o.url);
    this.retryMs = o.retryMs ?? 1000;
    if (!/^wss?:/i.test(o.url)) {
      this.stopped = true;
      o.log(`upstream pending transactions: none (${this.origin} is not a WebSocket upstream)`);
      return;
    }
    this.flushTimer = setInterval(() => this.flush(), o.flushMs ?? 200);
    this.flushTimer.unref();
    this.open();
  }

  stats(): UpstreamPendingStats {
    return { ...this.counts };
  }

  stop(): void {
    if (this.flushTimer !== undefined) clearInterval(this.flushTimer);
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.stopped = true;
    this.socket?.terminate();
    this.socket = undefined;
  }

  private open(): void {
    if (this.stopped) return;
    void loadWebSocket().then((Socket) => this.openWith(Socket));
  }

  private openWith(Socket: typeof WebSocket): void {
    if (this.stopped) return;
    const ws = new Socket(this.o.url, { maxPayload: MAX_MESSAGE_BYTES, handshakeTimeout: 10_000 });
    this.socket = ws;
    this.subscription = undefined;
    ws.on('open', () => {
      this.retryMs = this.o.retryMs ?? 1000;
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newPendingTransactions'] }));
    });
    ws.on('message', (data: Buffer) => this.onMessage(data.toString('utf8')));
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      if (this.socket !== ws || this.stopped) return;
      this.socket = undefined;
      this.retryTimer = setTimeout(() => this.open(), this.retryMs);
      this.retryTimer.unref();
      this.retryMs = Math.min(this.retryMs * 2, 30_000);
    });
  }

  private onMessage(text: string): void {
    let m: { id?: unknown; result?: unknown; error?: unknown; method?: unknown; params?: unknown };
    try {
      m = JSON.parse(text);
    } catch {
      this.counts.invalid++;
      return;
    }
    if (typeof m !== 'object' || m === null) {
      this.counts.invalid++;
    } else if (m.id === 1 && this.subscription === undefined) {
      this.onSubscribed(m.result, m.error);
    } else if (m.method === 'eth_subscription') {
      const p = m.params as { subscription?: unknown; result?: unknown } | null;
      if (typeof p !== 'object' || p === null || p.subscription !== this.subscription) this.counts.invalid++;
      else this.take(p.result);
    } else {
      this.counts.invalid++;
    }
  }

  private onSubscribed(result: unknown, error: unknown): void {
    if (typeof result === 'string' && result.length > 0 && result.length <= 130) {
      this.subscription = result;
      return;
    }
    const e = error as { message?: unknown } | null | undefined;
    const why = typeof e?.message === 'string' ? e.message.slice(0, 200) : 'no subscription id';
    this.o.log(`upstream pending transactions: none (${this.origin} refused newPendingTransactions: ${why})`);
    this.stop();
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
