import type { Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import type { JsonSubscriptionLog } from '../subscriptions/format.js';
import { decodeFilterId, FILTER_NOT_FOUND, filtersOf } from './filter-id.js';

/** What changed since the last poll (logs, or block or transaction hashes), each change once; extends the filter's life. */
export const eth_getFilterChanges: MethodDef<string, (JsonSubscriptionLog | Hex)[]> = {
  cost: 140,
  params: 'filter id',
  errors: FILTER_NOT_FOUND,
  decode: decodeFilterId,
  handle: (ctx, id) => filtersOf(ctx).changes(ctx, id),
};
