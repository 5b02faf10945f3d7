// The one credit-ledger interface (the key-store interface is in keys/record.ts). Two engines
// implement both:
//   - embedded (embedded.ts, keys/file-store.ts): keys in <datadir>/keys.json, usage journal per
//     UTC day in <datadir>/usage/, throughput in process memory. The default for one process.
//   - Redis (redis.ts, keys/redis-store.ts, `--ledger redis://host:port[/db]`): keys, usage and
//     throughput state shared by every replica; the debits of a replica go to Redis in batches,
//     one Lua script call checking and debiting both limits of each, in order, atomically on
//     Redis's clock.
// and threads.ts / port.ts carry either to the app threads of `serve --threads`. The server's
// middleware and the `keys` CLI speak only these interfaces; one shared test suite
// (test/ledger-suite.ts) runs against every engine.
//
// Every method is asynchronous and an engine instance may live in any thread (one instance per
// thread, each with its own connection): exactness across threads and processes is the engine's
// job (Redis: the server applies one script at a time; embedded: one instance per datadir).

/** The limits a debit is checked against (the key's overrides, else its plan's). */
export interface Limits {
  /** Credits per UTC day. */
  daily: number;
  /** Credits per second (token bucket, docs/keys-and-credits.md); 0: no throughput limit. */
  perSecond: number;
}

/** An admitted debit, to be settled once the call has an outcome. */
export interface Debit {
  readonly hash: string;
  /** The network the call went to (labels the charge); undefined on a server without networks. */
  readonly network?: string;
  /** Credits taken at admission (the method's cost). */
  readonly cost: number;
  /** Engine bookkeeping (charge id, day). */
  readonly token: unknown;
}

export type DebitResult =
  | { ok: true; debit: Debit }
  | {
      ok: false;
      /** `daily`: HTTP 402, event -33000. `throughput`: HTTP 429, event -33200. */
      reason: 'daily' | 'throughput';
      /** Next 00:00 UTC (by the ledger's clock), ISO 8601. */
      resetsAt: string;
    };

export interface Usage {
  /** Credits charged today (UTC, by the ledger's clock): one balance across every network. */
  used: number;
  /**
   * Today's credits split by the network the calls went to (`serve --network`); NO_NETWORK ("")
   * holds charges of a server without networks. Absent when the engine could not tell.
   */
  byNetwork?: Record<string, number>;
  /** Next 00:00 UTC, ISO 8601. */
  resetsAt: string;
}

/**
 * Credits. A call is admitted by debit() (both limits checked and its full cost taken in one
 * atomic step), runs, and is then settled at its final cost (the charging rules: the full cost,
 * 5 credits for a request error, 0 for a server error). settle() resolves once the final charge
 * is durable (embedded: journaled; Redis: applied, or journaled locally while Redis is away);
 * the answer is released only after that, so an answered call is always charged. Debits are
 * idempotent: a retried or replayed command never charges twice.
 */
export interface CreditLedger {
  /**
   * Checks `limits` and takes `cost` credits from key `hash`, atomically. The balance is the key's
   * across all networks; `network` (a multi-network server's network of the call) only labels
   * the charge, so usage can be split by network (Usage.byNetwork).
   */
  debit(hash: string, cost: number, limits: Limits, network?: string): Promise<DebitResult>;
  /** Charges `finalCost` (0 <= finalCost <= debit.cost) for an admitted debit; gives the rest back. */
  settle(debit: Debit, finalCost: number): Promise<void>;
  /** Today's usage of key `hash`. */
  usage(hash: string): Promise<Usage>;
  /** Writes out what is pending and releases files/connections. */
  close(): Promise<void>;
}

/** Thrown by a ledger that cannot decide (Redis unreachable with `--ledger-failure closed`). */
export class LedgerUnavailableError extends Error {
  constructor(message = 'credit ledger unavailable') {
    super(message);
    this.name = 'LedgerUnavailableError';
  }
}

/** The network label of charges made by a server without networks (in Usage.byNetwork). */
export const NO_NETWORK = '';

/** What to do while the shared ledger is unreachable. */
export type LedgerFailureMode = 'open' | 'closed';

/** `YYYY-MM-DD` of a UTC instant. */
export function utcDay(ms: number): string {
  // Asked on every request: the day's text is made once per day, not a Date and an ISO string per call.
  if (ms >= dayCache.start && ms < dayCache.start + DAY_MS) return dayCache.text;
  const start = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
  const text = new Date(ms).toISOString().slice(0, 10);
  dayCache = { start, text };
  return text;
}

const DAY_MS = 86_400_000;
let dayCache = { start: Number.NaN, text: '' };

/** The next 00:00 UTC after `ms`. */
export function nextUtcMidnight(ms: number): Date {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1));
}
