import type { Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { decodeArgs } from '../params.js';
import { decodeFilter } from './eth_getLogs.js';
import type { LogFilter } from './eth_getLogs.js';
import { FILTER_LIMITS, filtersOf } from './filter-id.js';

/** A log filter polled with eth_getFilterChanges: the matching logs of blocks that became canonical since. */
export const eth_newFilter: MethodDef<LogFilter, Hex> = {
  cost: 80,
  params: 'filter object: address (one or a list), topics, and fromBlock/toBlock or blockHash',
  errors: `${FILTER_LIMITS}; -32602 \`pending logs are not supported\``,
  decode: (params) => decodeArgs(params, 1, (arg) => decodeFilter(arg(0))),
  handle: (ctx, filter) => filtersOf(ctx).newLogFilter(ctx, filter),
};
