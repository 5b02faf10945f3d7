// The filter-id argument of eth_getFilterChanges, eth_getFilterLogs and eth_uninstallFilter,
// and the filters of the calling key (every transport gets them: filters are polled).
import type { HandlerContext } from '../context.js';
import type { FilterScope } from '../filters/engine.js';
import { FilterNotFoundError } from '../filters/state.js';
import { decodeArgs, jsonType, ParamError } from '../params.js';

/** geth's rpc.ID: any string (an id it never made is "filter not found", not a params error). */
export function decodeFilterId(params: unknown[]): string {
  return decodeArgs(params, 1, (arg) => {
    const id = arg(0);
    if (typeof id !== 'string') throw new ParamError(`filter id: expected a string, got ${jsonType(id)}`);
    return id;
  });
}

/** The calling key's filters; a context without them (no caller known) holds none. */
export function filtersOf(ctx: HandlerContext): FilterScope {
  const f = keyFiltersOf(ctx);
  if (f === undefined) throw new FilterNotFoundError();
  return f;
}

/** The calling key's filters, or undefined (the context holds only a FilterScope there: envelope.ts). */
export function keyFiltersOf(ctx: HandlerContext): FilterScope | undefined {
  return ctx.filters as FilterScope | undefined;
}

/** The errors a poll of an id can answer with, for the generated reference. */
export const FILTER_NOT_FOUND =
  '-32000 `filter not found` (unknown id, uninstalled, unpolled for 5 minutes (filterTimeoutMs), or another key’s)';

/** The errors of a method that installs a filter, for the generated reference. */
export const FILTER_LIMITS =
  '-32005 `too many filters for this API key: at most N`, `too many filters on this node: at most N`, `filter too large: …`';
