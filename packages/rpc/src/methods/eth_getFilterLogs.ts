import type { JsonLog } from '../formatters/log.js';
import type { MethodDef } from '../method.js';
import { decodeFilterId, FILTER_NOT_FOUND, filtersOf } from './filter-id.js';

/** A log filter's criteria run as eth_getLogs (its range, eth_getLogs' limits and errors). */
export const eth_getFilterLogs: MethodDef<string, JsonLog[]> = {
  cost: 255,
  params: 'filter id (of a log filter)',
  errors: `${FILTER_NOT_FOUND}; eth_getLogs' errors`,
  decode: decodeFilterId,
  handle: (ctx, id) => filtersOf(ctx).logs(ctx, id) as Promise<JsonLog[]>,
};
