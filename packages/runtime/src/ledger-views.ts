// The Redis ledger's state for the gauges of /metrics, as each thread that debits knows it: with
// --threads the main thread owns the ledger and every app thread has its own Redis connection.
import { RedisLedger } from '@chainnode/accounts';
import type { CreditLedger, LedgerFailureMode, OpenLedger } from '@chainnode/accounts';
import type { LedgerView } from '@chainnode/server';

/** The Redis ledger's state for its gauges; undefined with the embedded ledger. */
export function ledgerView(ledger: OpenLedger, failure: LedgerFailureMode): LedgerView | undefined {
  if (ledger.engine !== 'redis') return undefined;
  return creditsView(ledger.ledger(), failure);
}

/** One Redis ledger's state (a thread's own connection, or the main thread's). */
export function creditsView(l: CreditLedger, failure: LedgerFailureMode): LedgerView | undefined {
  if (!(l instanceof RedisLedger)) return undefined;
  return { failure, degraded: l.isDegraded, journalCharges: l.journalLength };
}

/**
 * The ledger's state over every connection that debits (with --threads each app thread has its
 * own): degraded when any is, the journals' charges summed.
 */
export function combineLedgerViews(views: readonly (LedgerView | undefined)[]): LedgerView | undefined {
  const present = views.filter((v): v is LedgerView => v !== undefined);
  const first = present[0];
  if (first === undefined) return undefined;
  return {
    failure: first.failure,
    degraded: present.some((v) => v.degraded),
    journalCharges: present.reduce((n, v) => n + v.journalCharges, 0),
  };
}
