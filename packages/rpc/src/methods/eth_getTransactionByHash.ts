import type { Bytes } from '@chainnode/core';
import { transactionText } from '../formatters/transaction-text.js';
import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { decodeArgs, decodeHash } from '../params.js';
import type { MethodDef } from '../method.js';

export interface GetTransactionByHashParams {
  hash: Bytes;
}

export const eth_getTransactionByHash: MethodDef<GetTransactionByHashParams, JsonAnyTransaction | null> = {
  cost: 80,
  params: 'transaction hash',
  decode: (params) => decodeArgs(params, 1, (arg) => ({ hash: decodeHash(arg(0)) })),
  async handle(ctx, p) {
    const found = await ctx.store.transaction(p.hash);
    return found === undefined ? null : ctx.memo.transactions.text(found, '', transactionText);
  },
};
