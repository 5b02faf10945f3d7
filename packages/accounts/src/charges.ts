// The one door to the credit ledger for every way a key spends credits: a call (the serving
// middleware), the request errors of a request (5 credits each) and a batch of subscription
// notifications (the WebSocket notifier). Each asks the same things, in the same order: admit
// (the key is known, not revoked, allowed on the network; its limits), debit (both limits checked
// and the cost taken, labelled with the network), settle (the final cost made durable) and record
// (the call in the key's usage). What a refusal answers and what the metrics count stay with the
// caller: this module knows credits, not the wire.
import { chargeHash, keyAllowsNetwork } from './keys/keys.js';
import type { KeyRegistry } from './keys/keys.js';
import type { KeyRecord } from './keys/record.js';
import type { CreditLedger, Debit, DebitResult, Limits } from './ledger/api.js';
import { effectiveLimits } from './limits.js';
import type { PlansOf } from './plans.js';
import type { ErrorClass, UsageRecord } from './usage/record.js';

/**
 * The network a charge is made on: its name (checked against the key's networks) and whether it
 * is the one implicit network of a server without networks (its charges carry no label).
 */
export interface ChargeNetwork {
  readonly name: string;
  readonly implicit: boolean;
}

/** A key admitted to spend: what its debits need. */
export interface Payer {
  readonly ok: true;
  readonly key: KeyRecord;
  /** Its limits (effectiveLimits): the plan's or overrides, and its own lower ones. */
  readonly limits: ReturnType<typeof effectiveLimits>;
  /** The ledger's label of its charges; undefined on a server without networks. */
  readonly network: string | undefined;
}

/** A key that may not spend: unknown or revoked, or not allowed on the network (`key` when known). */
export interface Refused {
  readonly ok: false;
  readonly reason: 'revoked' | 'network';
  readonly key: KeyRecord | undefined;
}

/** A debit refused by a limit. */
export type LimitRefusal = Extract<DebitResult, { ok: false }>;

/** What debitEach took: the debits, how many leading costs they pay, their credits, and why not the next. */
export interface Taken {
  debits: Debit[];
  paid: number;
  credits: number;
  refused?: LimitRefusal;
}

export interface ChargesOptions {
  /** The plans (limits per plan). */
  config: PlansOf;
  keys: KeyRegistry;
  ledger: CreditLedger;
  /** The per-key usage record (dashboard); absent: nothing is recorded. */
  usage?: UsageRecord;
}

export class Charges {
  constructor(private readonly o: ChargesOptions) {}

  /** The key behind `keyHash` if it may spend on `network` now. */
  admit(keyHash: string, network?: ChargeNetwork): Payer | Refused {
    const key = this.o.keys.byKeyHash(keyHash);
    if (!key || key.revokedAt !== undefined) return { ok: false, reason: 'revoked', key };
    if (network !== undefined && !keyAllowsNetwork(key, network.name)) return { ok: false, reason: 'network', key };
    const label = network === undefined || network.implicit ? undefined : network.name;
    return { ok: true, key, limits: effectiveLimits(this.o.config, key), network: label };
  }

  /**
   * Checks `limits` (the payer's by default) and takes `cost` credits, labelled with the payer's
   * network. Rejects with LedgerUnavailableError when the ledger cannot decide.
   */
  debit(payer: Payer, cost: number, limits: Limits = payer.limits): Promise<DebitResult> {
    return this.o.ledger.debit(chargeHash(payer.key), cost, limits, payer.network);
  }

  /**
   * Takes `costs` in order: one debit for all when they fit, else one per cost to find how many
   * can be paid (`paid` leading costs; `refused` says why the next was not).
   */
  async debitEach(payer: Payer, costs: readonly number[], limits: Limits = payer.limits): Promise<Taken> {
    const total = costs.reduce((sum, c) => sum + c, 0);
    if (total === 0) return { debits: [], paid: costs.length, credits: 0 };
    const all = await this.debit(payer, total, limits);
    if (all.ok) return { debits: [all.debit], paid: costs.length, credits: total };
    const debits: Debit[] = [];
    let credits = 0;
    for (let i = 0; i < costs.length; i++) {
      const cost = costs[i] as number;
      if (cost === 0) continue;
      const d = await this.debit(payer, cost, limits);
      if (!d.ok) return { debits, paid: i, credits, refused: d };
      debits.push(d.debit);
      credits += cost;
    }
    return { debits, paid: costs.length, credits }; // the balance moved between the two looks
  }

  /** Charges `finalCost` of an admitted debit (durable when this resolves) and gives the rest back. */
  settle(debit: Debit, finalCost: number): Promise<void> {
    return this.o.ledger.settle(debit, finalCost);
  }

  /** Records one call of `key` in its usage: `credits` charged, and its error class if it failed. */
  record(key: KeyRecord, method: string, credits: number, error?: ErrorClass): void {
    this.o.usage?.record(
      error === undefined ? { key: key.id, method, credits } : { key: key.id, method, credits, error },
    );
  }

  /**
   * The whole door for a cost known in advance: debit, settle, record under `method`. Resolves
   * true once charged, false when a limit refused it (nothing charged, nothing recorded).
   */
  async charge(payer: Payer, method: string, cost: number, error?: ErrorClass): Promise<boolean> {
    const d = await this.debit(payer, cost);
    if (!d.ok) return false;
    await this.settle(d.debit, cost);
    this.record(payer.key, method, cost, error);
    return true;
  }
}
