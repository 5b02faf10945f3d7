// The filters' limits and their defaults, on their own: the settings schema reads them without
// the filters' code (a command that only reads or checks settings loads no more).

/** geth's filter timeout: a filter not polled with eth_getFilterChanges for this long is gone (the default of FilterLimits.timeoutMs). */
export const FILTER_TIMEOUT_MS = 5 * 60_000;

export interface FilterLimits {
  /** Most live filters one API key may hold (on this network). */
  perKey: number;
  /** Most live filters in all (on this network). */
  total: number;
  /** A filter's life after its creation and after each eth_getFilterChanges; default FILTER_TIMEOUT_MS. */
  timeoutMs?: number;
}

export const DEFAULT_FILTER_LIMITS: FilterLimits = { perKey: 100, total: 10_000, timeoutMs: FILTER_TIMEOUT_MS };

/** How long a filter lives without a poll under `limits`. */
export function filterTimeoutOf(limits: FilterLimits): number {
  return limits.timeoutMs ?? FILTER_TIMEOUT_MS;
}
