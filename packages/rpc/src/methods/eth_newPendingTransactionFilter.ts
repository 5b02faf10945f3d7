import { InvalidParamsError } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBool } from '../params.js';
import { FILTER_LIMITS, filtersOf } from './filter-id.js';

/**
 * A filter whose changes are the hashes of the transactions this node forwarded
 * (eth_sendRawTransaction) and of the upstream's pending transactions (a WebSocket upstream)
 * since the last poll, each once. geth's optional fullTx: true is refused, since
 * the node keeps no transaction pool to answer full transactions from.
 */
export const eth_newPendingTransactionFilter: MethodDef<boolean, Hex> = {
  // Infura's default price (its table lists eth_newFilter at 80).
  cost: 80,
  params: 'optional fullTx (only false: hashes)',
  errors: `${FILTER_LIMITS}; -32602 \`full pending transactions are not kept: ask for hashes\``,
  decode: (params) =>
    decodeArgs(
      params,
      1,
      (arg) => {
        const v = arg(0);
        return v === undefined || v === null ? false : decodeBool(v);
      },
      0,
    ),
  handle: (ctx, fullTx) => {
    if (fullTx) throw new InvalidParamsError('full pending transactions are not kept: ask for hashes');
    return filtersOf(ctx).newPendingFilter();
  },
};
