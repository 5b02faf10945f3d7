// Delivery of eth_subscription notifications to one WebSocket: the transport half of
// subscriptions (the rpc package's SubscriptionHub decides what to send and what it costs).
//
// Per batch, in order: the key must still be valid (a revoked key closes the socket); a reader
// holding more than `wsMaxUnsentNotificationBytes` unsent is disconnected (1008), never
// buffered for; the batch's credits are debited from the key's daily balance and settled (made
// durable: journaled, or applied in Redis) through the CreditLedger BEFORE anything is sent (as
// for calls: a crash never refunds what was delivered). When the daily balance cannot cover a
// notification, what was paid is sent, then the same error object a call gets at the daily limit
// with id null (HTTP-less 402: code 402, event -33000, `data.resetsAt`; the key's own daily limit:
// 429 / -33400), and the socket is closed (1008); at the plan's daily limit every WebSocket of
// the key on this replica is closed, as after a call's 402 (Infura severs WebSockets at the limit).
// Notifications are not held to the per-second token bucket: they are pushed by the chain, not
// requested, and dropping one would leave a gap in the stream; their credits count for the day.
import type { Notification, NotificationSink } from '@chainnode/rpc';
import { toErrorObject } from '@chainnode/rpc';
import type { ServerConfig } from './config.js';
import { chargeHash, effectiveLimits } from '@chainnode/accounts';
import type { CreditLedger, Debit, DebitResult, KeyRegistry, Limits, UsageRecord } from '@chainnode/accounts';
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
  config: ServerConfig;
  keys: KeyRegistry;
  ledger: CreditLedger;
  metrics: Metrics;
  log: (line: string) => void;
  /** The per-key usage record (dashboard): each paid batch is recorded as `eth_subscription`. */
  usage?: UsageRecord;
  /** The network of the socket (labels its charges); undefined on a server without networks. */
  network?: string;
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

  /**
   * Takes the credits of `batch` (in order) from the key's daily balance: one debit for the whole
   * batch when it fits, else one per notification to find how many can be paid. `paid` is the
   * number of leading notifications paid for; `refused` says why the next one was not.
   */
  private async debitBatch(
    hash: string,
    batch: readonly Notification[],
    limits: Limits,
  ): Promise<{ debits: Debit[]; paid: number; credits: number; refused?: Extract<DebitResult, { ok: false }> }> {
    const { ledger, network } = this.deps;
    const total = batch.reduce((sum, n) => sum + n.credits, 0);
    if (total === 0) return { debits: [], paid: batch.length, credits: 0 };
    const all = await ledger.debit(hash, total, limits, network);
    if (all.ok) return { debits: [all.debit], paid: batch.length, credits: total };
    const debits: Debit[] = [];
    let credits = 0;
    for (let i = 0; i < batch.length; i++) {
      const n = batch[i] as Notification;
      if (n.credits === 0) continue;
      const d = await ledger.debit(hash, n.credits, limits, network);
      if (!d.ok) return { debits, paid: i, credits, refused: d };
      debits.push(d.debit);
      credits += n.credits;
    }
    return { debits, paid: batch.length, credits }; // the balance moved between the two looks
  }

  private async run(batch: readonly Notification[]): Promise<void> {
    if (this.ended || this.socket.closed()) return;
    const { config, keys, ledger, metrics, usage } = this.deps;
    const key = keys.byKeyHash(this.keyHash);
    if (!key || key.revokedAt !== undefined) return this.end(WS_POLICY_CLOSE, 'API key revoked');
    if (this.tooSlow()) return;
    const limits = effectiveLimits(config, key);
    let taken: Awaited<ReturnType<WsNotifier['debitBatch']>>;
    try {
      // perSecond 0: notifications count against the day, not the token bucket (see above).
      taken = await this.debitBatch(chargeHash(key), batch, { daily: limits.daily, perSecond: 0 });
    } catch {
      // Ledger away (`--ledger-failure closed`): nothing charged, so nothing delivered either.
      return this.end(1011, 'credit ledger unavailable');
    }
    const { debits, paid, credits, refused } = taken;
    if (debits.length > 0) {
      try {
        await Promise.all(debits.map((d) => ledger.settle(d, d.cost)));
      } catch {
        // Not recorded, so not charged, and then not delivered either.
        return this.end(1011, 'could not record credit usage');
      }
      metrics.charged('eth_subscription', credits);
      usage?.record({ key: key.id, method: 'eth_subscription', credits });
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
