// eth_subscribe's engine: every live subscription of the process, fed by ChainCommits (published
// after the batch is durable), producing eth_subscription notifications per connection.
//
// - newHeads: one notification per block that became canonical (every block of a reorg's new
//   branch too, like reth; geth after the merge sends only the new head), the header read from
//   the store (already durable, so a client can read block N as soon as it hears of it).
// - logs: on a reorg first the dropped blocks' matching logs with removed:true, oldest dropped
//   block first and log-index order within a block (geth's order), then the new blocks' logs.
//   Matching goes through LogFilterIndex: O(candidates) per log, never a scan of all filters.
// - newPendingTransactions: the hashes of the pending-transaction journal (the transactions this
//   node forwarded and the upstream's; rpc's filters keep it, shared like them), read every
//   PENDING_POLL_MS while a subscription of that kind lives; a hash journaled before the
//   subscription is not sent.
// - Credits (Infura's model; amounts: EVENT_CREDITS): newHeads per notification; logs per block
//   with at least one matching log, charged once per subscription and block (on its first
//   notification for that block), nothing when nothing matched; newPendingTransactions once per
//   subscription and journal read that found hashes (Infura charges it at about one-second
//   intervals). The transport charges them (Notification.credits).
// - Per connection, in order: removed logs, then per new block its head, then its logs.
// - A subscription is inactive until the reply carrying its id was handed to the transport
//   (geth's Notifier.activate): notifications before that are held and then sent first.
import { randomBytes } from 'node:crypto';
import { LimitExceededError } from '@chainnode/core';
import type {
  ChainCommit,
  ChainEvents,
  ChainStore,
  CommittedBlock,
  HeaderRecord,
  Hex,
  LogRecord,
} from '@chainnode/core';
import { LogFilterIndex, logKeys } from './log-filter-index.js';
import type { LogMatchFilter } from './log-filter-index.js';
import { formatNewHead, formatSubscriptionLog, notificationText } from './format.js';

export type SubscriptionKind = 'newHeads' | 'logs' | 'newPendingTransactions';

export type SubscriptionRequest =
  | { kind: 'newHeads' }
  | { kind: 'newPendingTransactions' }
  | {
      kind: 'logs';
      filter: LogMatchFilter;
      /** Only blocks numbered >= fromBlock / <= toBlock (geth's subscription ranges); unbounded when absent. */
      fromBlock?: bigint;
      toBlock?: bigint;
    };

/** Credits of one charged event (Infura's "Subscription events" table): the one definition. */
export const EVENT_CREDITS: Readonly<Record<SubscriptionKind, number>> = {
  newHeads: 50,
  logs: 300,
  newPendingTransactions: 200,
};

/** How often the pending-transaction journal is read while a newPendingTransactions subscription lives. */
export const PENDING_POLL_MS = 1000;

/** The pending-transaction journal (rpc's FilterStateStore has it). */
export interface PendingJournal {
  /** The journal's hashes after `seq`, oldest first, and its last sequence number. */
  pendingSince(seq: number): Promise<{ seq: number; hashes: Hex[] }>;
}

export interface Notification {
  subscription: string;
  kind: SubscriptionKind;
  /** The whole JSON-RPC message. */
  text: string;
  /** Credits this notification costs (0 for a log after the first of its block). */
  credits: number;
}

/** Where a connection's notifications go (the transport: charges, backpressure, send). */
export interface NotificationSink {
  /** Called in order; a batch is what one commit (or one activation) produced for this connection. */
  deliver(batch: readonly Notification[]): void;
}

/** What eth_subscribe / eth_unsubscribe handlers use (one per message of a connection). */
export interface SubscriptionScope {
  /** Creates an inactive subscription; throws LimitExceededError past a limit. */
  subscribe(req: SubscriptionRequest): string;
  /** Removes one of this connection's subscriptions; false when it has no such id. */
  unsubscribe(id: string): boolean;
}

/** A SubscriptionScope that remembers what one message created (calls of a message run in order). */
export interface MessageSubscriptions extends SubscriptionScope {
  /** How many subscriptions this message created so far. */
  mark(): number;
  /** Drops the ones created after `mark` (their call ended in an error: the id never reached the client). */
  rollback(mark: number): void;
  /** The reply was handed to the transport: the message's subscriptions start delivering. */
  activate(): void;
}

export interface SubscriptionConnection {
  forMessage(): MessageSubscriptions;
  /** Frees every subscription of the connection at once. Idempotent. */
  close(): void;
  readonly count: number;
}

export interface SubscriptionLimits {
  /** Most subscriptions one connection may hold. */
  perConnection: number;
  /** Most subscriptions one owner (API key) may hold over all its connections. */
  perKey: number;
}

export const DEFAULT_SUBSCRIPTION_LIMITS: SubscriptionLimits = { perConnection: 100, perKey: 1000 };

/** Notifications held for a subscription whose id has not been sent yet; more are dropped. */
const MAX_HELD = 4096;

interface Sub {
  readonly id: string;
  readonly conn: Conn;
  readonly req: SubscriptionRequest;
  active: boolean;
  held: Notification[];
}

/** geth's rpc.encodeID: 0x + hex of 16 random bytes, leading zeros trimmed ("0x0" if all zero). */
export function newSubscriptionId(): string {
  const id = randomBytes(16).toString('hex').replace(/^0+/, '');
  return `0x${id === '' ? '0' : id}`;
}

class Conn implements SubscriptionConnection {
  readonly subs = new Map<string, Sub>();
  closed = false;
  constructor(
    readonly hub: SubscriptionHub,
    readonly owner: string,
    readonly sink: NotificationSink,
  ) {}

  get count(): number {
    return this.subs.size;
  }

  forMessage(): MessageSubscriptions {
    const created: Sub[] = [];
    return {
      subscribe: (req) => {
        const sub = this.hub.add(this, req);
        created.push(sub);
        return sub.id;
      },
      unsubscribe: (id) => {
        const sub = this.subs.get(id);
        if (sub === undefined) return false;
        this.hub.drop(sub);
        return true;
      },
      mark: () => created.length,
      rollback: (mark) => {
        for (const sub of created.splice(mark)) this.hub.drop(sub);
      },
      activate: () => {
        for (const sub of created.splice(0)) this.hub.activate(sub);
      },
    };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const sub of [...this.subs.values()]) this.hub.drop(sub);
  }
}

export interface SubscriptionHubOptions {
  limits?: Partial<SubscriptionLimits>;
  /** Operational messages (a failed header read, …). */
  log?: (line: string) => void;
  /** Where newPendingTransactions come from; absent: such subscriptions are never notified. */
  pending?: PendingJournal;
  /** How often the journal is read (default PENDING_POLL_MS). */
  pendingPollMs?: number;
}

export class SubscriptionHub {
  readonly limits: SubscriptionLimits;
  private readonly all = new Map<string, Sub>();
  private readonly heads = new Set<Sub>();
  private readonly pendingSubs = new Set<Sub>();
  private pendingPoll: { timer: NodeJS.Timeout; seq: number | undefined; busy: boolean } | undefined;
  private readonly pendingJournal: PendingJournal | undefined;
  private readonly pendingPollMs: number;
  private readonly logs = new LogFilterIndex<Sub>();
  private readonly perOwner = new Map<string, number>();
  private tail: Promise<void> = Promise.resolve();
  private readonly log: (line: string) => void;

  constructor(
    private readonly store: ChainStore,
    options: SubscriptionHubOptions = {},
  ) {
    this.limits = { ...DEFAULT_SUBSCRIPTION_LIMITS, ...options.limits };
    this.log = options.log ?? (() => {});
    this.pendingJournal = options.pending;
    this.pendingPollMs = options.pendingPollMs ?? PENDING_POLL_MS;
  }

  /** Live subscriptions in the process. */
  get size(): number {
    return this.all.size;
  }

  /** Live subscriptions of one owner. */
  countFor(owner: string): number {
    return this.perOwner.get(owner) ?? 0;
  }

  /** Number of filters in the log index and of its buckets (0 and 0 once every subscription is gone). */
  indexStats(): { filters: number; buckets: number; heads: number; pending: number } {
    return {
      filters: this.logs.size,
      buckets: this.logs.bucketCount(),
      heads: this.heads.size,
      pending: this.pendingSubs.size,
    };
  }

  connect(owner: string, sink: NotificationSink): SubscriptionConnection {
    return new Conn(this, owner, sink);
  }

  /** Follows `events`; returns the function that stops following. */
  attach(events: ChainEvents): () => void {
    return events.subscribe((commit) => {
      void this.publish(commit);
    });
  }

  /** Queues one commit; commits are dispatched strictly in the order they were published. */
  publish(commit: ChainCommit): Promise<void> {
    const run = this.tail.then(() => this.dispatch(commit));
    this.tail = run.catch((err: unknown) =>
      this.log(`subscriptions: a commit could not be dispatched: ${(err as Error).message}`),
    );
    return this.tail;
  }

  /** @internal */
  add(conn: Conn, req: SubscriptionRequest): Sub {
    if (conn.closed) throw new LimitExceededError('connection closed');
    if (conn.subs.size >= this.limits.perConnection) {
      throw new LimitExceededError(`too many subscriptions on this connection: at most ${this.limits.perConnection}`, {
        limit: this.limits.perConnection,
      });
    }
    const owned = this.countFor(conn.owner);
    if (owned >= this.limits.perKey) {
      throw new LimitExceededError(`too many subscriptions for this API key: at most ${this.limits.perKey}`, {
        limit: this.limits.perKey,
      });
    }
    let id = newSubscriptionId();
    while (this.all.has(id)) id = newSubscriptionId();
    const sub: Sub = { id, conn, req, active: false, held: [] };
    this.all.set(id, sub);
    conn.subs.set(id, sub);
    this.perOwner.set(conn.owner, owned + 1);
    if (req.kind === 'newHeads') this.heads.add(sub);
    else if (req.kind === 'newPendingTransactions') this.addPending(sub);
    else this.logs.add(sub, req.filter);
    return sub;
  }

  /** @internal */
  drop(sub: Sub): void {
    if (this.all.get(sub.id) !== sub) return;
    this.all.delete(sub.id);
    sub.conn.subs.delete(sub.id);
    sub.held = [];
    const left = this.countFor(sub.conn.owner) - 1;
    if (left > 0) this.perOwner.set(sub.conn.owner, left);
    else this.perOwner.delete(sub.conn.owner);
    if (sub.req.kind === 'newHeads') this.heads.delete(sub);
    else if (sub.req.kind === 'newPendingTransactions') this.dropPending(sub);
    else this.logs.remove(sub);
  }

  /** @internal */
  activate(sub: Sub): void {
    if (this.all.get(sub.id) !== sub || sub.active) return;
    sub.active = true;
    const held = sub.held;
    sub.held = [];
    if (held.length > 0) sub.conn.sink.deliver(held);
  }

  private async dispatch(commit: ChainCommit): Promise<void> {
    // Header reads first (the only await): everything after runs in one go against the
    // subscriptions alive at that moment.
    const headers: (HeaderRecord | undefined)[] = [];
    if (this.heads.size > 0) {
      for (const b of commit.added) {
        try {
          headers.push(await this.store.header(b.hash));
        } catch (err) {
          this.log(`subscriptions: header of block ${b.number} unreadable: ${(err as Error).message}`);
          headers.push(undefined);
        }
      }
    }
    const { push, send } = this.batches();
    for (const block of commit.removed) this.blockLogs(block, true, push);
    commit.added.forEach((block, i) => {
      const header = headers[i];
      if (header !== undefined && this.heads.size > 0) {
        const result = JSON.stringify(formatNewHead(header));
        for (const sub of this.heads) {
          push(sub, {
            subscription: sub.id,
            kind: 'newHeads',
            text: notificationText(sub.id, result),
            credits: EVENT_CREDITS.newHeads,
          });
        }
      }
      this.blockLogs(block, false, push);
    });
    send();
  }

  /** Collects notifications per connection (held for an inactive subscription), then sends them. */
  private batches(): { push: (sub: Sub, n: Notification) => void; send: () => void } {
    const out = new Map<Conn, Notification[]>();
    return {
      push: (sub, n) => {
        if (!sub.active) {
          if (sub.held.length < MAX_HELD) sub.held.push(n);
          return;
        }
        let batch = out.get(sub.conn);
        if (batch === undefined) out.set(sub.conn, (batch = []));
        batch.push(n);
      },
      send: () => {
        for (const [conn, batch] of out) if (!conn.closed) conn.sink.deliver(batch);
      },
    };
  }

  private addPending(sub: Sub): void {
    this.pendingSubs.add(sub);
    if (this.pendingPoll !== undefined || this.pendingJournal === undefined) return;
    const timer = setInterval(() => void this.pollPending(), this.pendingPollMs);
    timer.unref();
    this.pendingPoll = { timer, seq: undefined, busy: false };
    void this.pollPending(); // where the journal stands now: only later hashes are sent
  }

  private dropPending(sub: Sub): void {
    this.pendingSubs.delete(sub);
    if (this.pendingSubs.size > 0 || this.pendingPoll === undefined) return;
    clearInterval(this.pendingPoll.timer);
    this.pendingPoll = undefined;
  }

  /** One read of the journal: its new hashes to every newPendingTransactions subscription. */
  private async pollPending(): Promise<void> {
    const poll = this.pendingPoll;
    if (poll === undefined || poll.busy || this.pendingJournal === undefined) return;
    poll.busy = true;
    try {
      const from = poll.seq;
      const { seq, hashes } = await this.pendingJournal.pendingSince(from ?? Number.MAX_SAFE_INTEGER);
      poll.seq = seq;
      if (from === undefined || hashes.length === 0 || this.pendingPoll !== poll) return;
      const { push, send } = this.batches();
      for (const sub of this.pendingSubs) {
        hashes.forEach((hash, i) => {
          push(sub, {
            subscription: sub.id,
            kind: 'newPendingTransactions',
            text: notificationText(sub.id, JSON.stringify(hash)),
            credits: i === 0 ? EVENT_CREDITS.newPendingTransactions : 0,
          });
        });
      }
      send();
    } catch (err) {
      this.log(`subscriptions: the pending-transaction journal could not be read: ${(err as Error).message}`);
    } finally {
      poll.busy = false;
    }
  }

  private blockLogs(block: CommittedBlock, removed: boolean, push: (sub: Sub, n: Notification) => void): void {
    if (this.logs.size === 0 || block.logs.length === 0) return;
    const charged = new Set<Sub>();
    for (const log of block.logs) {
      let text: string | undefined;
      this.logs.forEachMatch(logKeys(log), (sub) => {
        const req = sub.req as Extract<SubscriptionRequest, { kind: 'logs' }>;
        if (
          (req.fromBlock !== undefined && block.number < req.fromBlock) ||
          (req.toBlock !== undefined && block.number > req.toBlock)
        )
          return;
        text ??= JSON.stringify(formatSubscriptionLog(log as LogRecord, removed));
        const first = !charged.has(sub);
        if (first) charged.add(sub);
        push(sub, {
          subscription: sub.id,
          kind: 'logs',
          text: notificationText(sub.id, text),
          credits: first ? EVENT_CREDITS.logs : 0,
        });
      });
    }
  }
}
