// One eth_subscribe on a WebSocket upstream, on a socket of its own: what the upstream sends for
// it is handed to `onResult` unchecked (the caller validates it: every notification is hostile);
// messages that are not its notifications are counted as invalid. An HTTP upstream, or one that
// refuses the subscription, offers none: `onNone` is told why, once, and nothing else happens. A
// dropped connection is reopened (after 1 s, doubled up to 30 s) and subscribed again.
import type WebSocket from 'ws';
import { redactUrl } from './upstream-client.js';
import { loadWebSocket } from './ws-load.js';

/** Largest message accepted from the upstream on such a socket (a notification is a few hundred bytes). */
const MAX_MESSAGE_BYTES = 64 * 1024;

export interface UpstreamSubscriptionOptions {
  /** The upstream's URL; only ws(s):// offers subscriptions. */
  url: string;
  /** eth_subscribe's parameters, e.g. ["newHeads"]. */
  params: unknown[];
  onResult: (result: unknown) => void;
  /** Messages that are not this subscription's notifications. */
  onInvalid: () => void;
  /** The subscription is not offered (an HTTP upstream, or a refusal): why, with the upstream's origin. */
  onNone: (why: string) => void;
  /** First reconnect delay, doubled up to 30 s (default 1 s). */
  retryMs?: number;
}

/** See the top of this file; stop() ends it. */
export class UpstreamSubscription {
  readonly origin: string;
  private socket: WebSocket | undefined;
  private subscription: string | undefined;
  private stopped = false;
  private retryMs: number;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: UpstreamSubscriptionOptions) {
    this.origin = redactUrl(o.url);
    this.retryMs = o.retryMs ?? 1000;
    if (!/^wss?:/i.test(o.url)) {
      this.stopped = true;
      o.onNone(`${this.origin} is not a WebSocket upstream`);
      return;
    }
    this.open();
  }

  /** Whether it is (or will again be) subscribed. */
  get active(): boolean {
    return !this.stopped;
  }

  stop(): void {
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
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: this.o.params }));
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
      this.o.onInvalid();
      return;
    }
    if (typeof m !== 'object' || m === null) {
      this.o.onInvalid();
    } else if (m.id === 1 && this.subscription === undefined) {
      this.onSubscribed(m.result, m.error);
    } else if (m.method === 'eth_subscription') {
      const p = m.params as { subscription?: unknown; result?: unknown } | null;
      if (typeof p !== 'object' || p === null || p.subscription !== this.subscription) this.o.onInvalid();
      else this.o.onResult(p.result);
    } else {
      this.o.onInvalid();
    }
  }

  private onSubscribed(result: unknown, error: unknown): void {
    if (typeof result === 'string' && result.length > 0 && result.length <= 130) {
      this.subscription = result;
      return;
    }
    const e = error as { message?: unknown } | null | undefined;
    const why = typeof e?.message === 'string' ? e.message.slice(0, 200) : 'no subscription id';
    this.stop();
    this.o.onNone(`${this.origin} refused ${String(this.o.params[0])}: ${why}`);
  }
}
