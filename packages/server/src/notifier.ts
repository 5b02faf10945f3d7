// Delivery of eth_subscription notifications to one WebSocket: the transport half of
// subscriptions (the rpc package's SubscriptionHub decides what to send and what it costs).
//
// Per batch, in order: the key must still be valid (a revoked key closes the socket); a reader
// holding more than `wsMaxUnsentNotificationBytes` unsent is disconnected (1008), never
// buffered for; the batch's credits are reserved and journaled BEFORE anything is sent (as for
// calls: a crash never refunds what was delivered). When the daily balance cannot cover a
// notification, what was paid is sent, then a JSON-RPC error (id null, -32005 with `resetsAt`)
// and the socket is closed (1008), as Infura severs WebSockets at the daily limit.
import type { Notification, NotificationSink } from '@chainnode/rpc';
import { toErrorObject } from '@chainnode/rpc';
import type { ServerConfig } from './config.js';
import type { KeyRegistry } from './keys.js';
import type { CreditLedger, Reservation } from './ledger.js';
import type { Metrics } from './metrics.js';
import { CreditLimitError, dailyLimit } from './middleware.js';

/** What the notifier needs of its socket (uWS in the server, anything in tests). */
export interface NotifierSocket {
  /** Sends each text as one message, in order (one cork for all of them). */
  send(texts: readonly string[]): void;
  /** Bytes handed to the socket and not yet written to the network. */
  bufferedAmount(): number;
  closed(): boolean;
  end(code: number, reason: string): void;
}

export interface NotifierDeps {
  config: ServerConfig;
  keys: KeyRegistry;
  ledger: CreditLedger;
  metrics: Metrics;
  log: (line: string) => void;
}

/** Close code for a subscriber cut off by policy (too slow, out of credits, key revoked). */
export const WS_POLICY_CLOSE = 1008;

/** Notifications handed to the socket between two checks of its unsent bytes. */
const SEND_SLICE = 64;

export class WsNotifier implements NotificationSink {
  private tail: Promise<void> = Promise.resolve();
  private ended = false;

  constructor(
    private readonly socket: NotifierSocket,
    private readonly keyHash: string,
    private readonly deps: NotifierDeps,
  ) {}

  deliver(batch: readonly Notification[]): void {
    if (this.ended || batch.length === 0) return;
    this.tail = this.tail
      .then(() => this.run(batch))
      .catch((err: unknown) => {
        this.deps.log(`subscriptions: delivery failed: ${(err as Error).message}`);
        this.end(1011, 'internal error');
      });
  }

  private end(code: number, reason: string): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.socket.closed()) this.socket.end(code, reason);
  }

  private tooSlow(): boolean {
    const max = this.deps.config.wsMaxUnsentNotificationBytes;
    if (this.socket.bufferedAmount() <= max) return false;
    this.end(WS_POLICY_CLOSE, `too slow: more than ${max} bytes of notifications unsent`);
    return true;
  }

  private async run(batch: readonly Notification[]): Promise<void> {
    if (this.ended || this.socket.closed()) return;
    const { config, keys, ledger, metrics } = this.deps;
    const key = keys.byKeyHash(this.keyHash);
    if (!key || key.revokedAt !== undefined) return this.end(WS_POLICY_CLOSE, 'API key revoked');
    if (this.tooSlow()) return;
    const limit = dailyLimit(config, key);
    const reservations: Reservation[] = [];
    let paid = batch.length;
    let credits = 0;
    let refused: Notification | undefined;
    for (let i = 0; i < batch.length; i++) {
      const n = batch[i] as Notification;
      if (n.credits === 0) continue;
      const r = ledger.reserve(key.hash, n.credits, limit);
      if (r === undefined) {
        paid = i;
        refused = n;
        break;
      }
      reservations.push(r);
      credits += n.credits;
    }
    if (reservations.length > 0) {
      try {
        await Promise.all(reservations.map((r) => ledger.commit(r)));
      } catch {
        // Not journaled, so not charged, and then not delivered either.
        return this.end(1011, 'could not record credit usage');
      }
      metrics.charged('eth_subscription', credits);
    }
    // In slices, so a reader falling behind is caught within one slice of the limit.
    for (let i = 0; i < paid; i += SEND_SLICE) {
      if (this.socket.closed()) return;
      if (this.tooSlow()) return;
      this.socket.send(batch.slice(i, Math.min(paid, i + SEND_SLICE)).map((n) => n.text));
    }
    if (refused !== undefined && !this.socket.closed()) {
      const resetsAt = ledger.resetsAt().toISOString();
      const left = Math.max(0, limit - ledger.used(key.hash));
      const err = new CreditLimitError(
        `daily credit limit reached: a ${refused.kind} notification costs ${refused.credits} credits, ${left} of ${limit} left today; ` +
          `subscription ${refused.subscription} ended and the connection is closed; the balance resets at ${resetsAt}`,
        resetsAt,
      );
      this.socket.send([JSON.stringify({ jsonrpc: '2.0', id: null, error: toErrorObject(err) })]);
      this.end(WS_POLICY_CLOSE, 'daily credit limit reached');
    }
  }
}
