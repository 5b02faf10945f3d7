// Delivery of eth_subscription notifications to one WebSocket: the transport half of
// subscriptions (the rpc package's SubscriptionHub decides what to send and what it costs).
//
// Per batch, in order: the key must still be valid and allowed on the socket's network (else the
// socket closes, 1008); a reader holding more than `wsMaxUnsentNotificationBytes` unsent is
// disconnected (1008), never buffered for; the batch's credits are debited from the key's daily
// balance, labelled with the network, and settled (made durable: journaled, or applied in Redis)
// through the one door to the ledger (Charges, @chainnode/accounts) BEFORE anything is sent (as
// for calls: a crash never refunds what was delivered). When the daily balance cannot cover a
// notification, what was paid is sent, then the same error object a call gets at the daily limit
// with id null (HTTP-less 402: code 402, event -33000, `data.resetsAt`; the key's own daily limit:
// 429 / -33400), and the socket is closed (1008); at the plan's daily limit every WebSocket of
// the key on this replica is closed, as after a call's 402 (Infura severs WebSockets at the limit).
// Notifications are not held to the per-second token bucket: they are pushed by the chain, not
// requested, and dropping one would leave a gap in the stream; their credits count for the day.
import type { Notification, NotificationSink } from '@chainnode/rpc';
import { toErrorObject } from '@chainnode/rpc';
import type { TransportConfig } from './config.js';
import type { ChargeNetwork, Charges, Taken } from '@chainnode/accounts';
import type { Metrics } from './metrics.js';
import { DailyLimitError, KeyLimitError } from './middleware.js';

/** What the notifier needs of its socket (uWS in the server, anything in tests). */
export interface NotifierSocket {
  /** Sends each text as one message, in order (one cork for all of them). */
  send(texts: readonly string[]): void;
  /** Bytes handed to the socket and not yet written to the network. */
  bufferedAmount(): number;
  closed(): boolean;
  end(code: number, reason: string): void;
  /**
   * The key's plan daily balance ran out while notifying: after this socket's error, the server
   * closes every WebSocket of the key on this replica (as after a call's 402). Optional.
   */
  dailyLimitReached?(): void;
}

export interface NotifierDeps {
  config: TransportConfig;
  /** The door to the ledger; each paid batch is recorded in the key's usage as `eth_subscription`. */
  charges: Charges;
  metrics: Metrics;
  log: (line: string) => void;
  /** The network of the socket: the key must be allowed on it, and it labels the charges. */
  network?: ChargeNetwork;
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
    const { charges, metrics } = this.deps;
    const payer = charges.admit(this.keyHash, this.deps.network);
    if (!payer.ok)
      return this.end(
        WS_POLICY_CLOSE,
        payer.reason === 'revoked' ? 'API key revoked' : 'API key does not have access to this network',
      );
    if (this.tooSlow()) return;
    const { limits } = payer;
    let taken: Taken;
    try {
      // perSecond 0: notifications count against the day, not the token bucket (see above).
      taken = await charges.debitEach(
        payer,
        batch.map((n) => n.credits),
        { daily: limits.daily, perSecond: 0 },
      );
    } catch {
      // Ledger away (`--ledger-failure closed`): nothing charged, so nothing delivered either.
      return this.end(1011, 'credit ledger unavailable');
    }
    const { debits, paid, credits, refused } = taken;
    if (debits.length > 0) {
      try {
        await Promise.all(debits.map((d) => charges.settle(d, d.cost)));
      } catch {
        // Not recorded, so not charged, and then not delivered either.
        return this.end(1011, 'could not record credit usage');
      }
      metrics.charged('eth_subscription', credits);
      charges.record(payer.key, 'eth_subscription', credits);
    }
    // In slices, so a reader falling behind is caught within one slice of the limit.
    for (let i = 0; i < paid; i += SEND_SLICE) {
      if (this.socket.closed()) return;
      if (this.tooSlow()) return;
      this.socket.send(batch.slice(i, Math.min(paid, i + SEND_SLICE)).map((n) => n.text));
    }
    if (refused !== undefined && !this.socket.closed()) {
      // The same error object a call gets at the limit (the one mapping, toErrorObject), id null:
      // it answers no request. A 'throughput' refusal cannot happen (perSecond 0 above).
      const own = limits.ownDaily;
      const err = own ? new KeyLimitError('daily', refused.resetsAt) : new DailyLimitError(refused.resetsAt);
      this.socket.send([JSON.stringify({ jsonrpc: '2.0', id: null, error: toErrorObject(err) })]);
      this.end(WS_POLICY_CLOSE, own ? "key's daily credit limit reached" : 'daily credit limit reached');
      if (!own) this.socket.dailyLimitReached?.();
    }
  }
}
