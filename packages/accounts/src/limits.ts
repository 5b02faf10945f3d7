// The limits of a key, computed here once for the serving middleware, the WebSocket notifier and
// the key manager alike: its plan's figures, its operator overrides, its own lower limits.
import type { KeyRecord } from './keys/record.js';
import type { Limits } from './ledger/api.js';
import type { PlansOf } from './plans.js';

/** The daily balance of a key: its override, else its plan's. */
export function dailyLimit(config: PlansOf, key: KeyRecord): number {
  return key.dailyCredits ?? config.plans[key.plan].dailyCredits;
}

/** Both limits of a key: its overrides, else its plan's. */
export function limitsOf(config: PlansOf, key: KeyRecord): Limits {
  const plan = config.plans[key.plan];
  return { daily: key.dailyCredits ?? plan.dailyCredits, perSecond: key.creditsPerSecond ?? plan.creditsPerSecond };
}

/**
 * The limits a debit checks: the plan's (or the key's operator overrides) and the key's own
 * user-defined limits, the smaller of each pair; `own*` says whether the key's own limit is the
 * binding one (its refusal is then 429 -33400 / -33300 instead of 402 / 429 -33200).
 */
export function effectiveLimits(
  config: PlansOf,
  key: KeyRecord,
): Limits & { ownDaily: boolean; ownPerSecond: boolean } {
  const base = limitsOf(config, key);
  const d = key.limits?.creditsPerDay;
  const s = key.limits?.creditsPerSecond;
  const ownDaily = d !== undefined && d > 0 && d < base.daily;
  const ownPerSecond = s !== undefined && s > 0 && (base.perSecond === 0 || s < base.perSecond);
  return {
    daily: ownDaily ? (d as number) : base.daily,
    perSecond: ownPerSecond ? (s as number) : base.perSecond,
    ownDaily,
    ownPerSecond,
  };
}
