import type { Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';
import { FILTER_LIMITS, filtersOf } from './filter-id.js';

/** A filter whose changes are the hashes of the blocks that became canonical since the last poll. */
export const eth_newBlockFilter: MethodDef<void, Hex> = {
  // Infura's default price (its table lists eth_newFilter at 80).
  cost: 80,
  params: 'none',
  errors: FILTER_LIMITS,
  decode: noParams,
  handle: (ctx) => filtersOf(ctx).newBlockFilter(ctx),
};
