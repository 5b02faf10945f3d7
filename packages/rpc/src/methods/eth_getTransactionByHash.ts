import type { Bytes } from '@chainnode/core';
import { transactionText } from '../formatters/transaction-text.js';
import type { JsonAnyTransaction } from '../formatters/transaction.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeHash } from '../params.js';

/** The params of the methods that look a transaction up by its hash. */
export interface TransactionHashParams {
  hash: Bytes;
}

export function decodeTransactionHash(params: unknown[]): TransactionHashParams {
  return decodeArgs(params, 1, (arg) => ({ hash: decodeHash(arg(0)) }));
}

export const eth_getTransactionByHash: MethodDef<TransactionHashParams, JsonAnyTransaction | null> = {
  cost: 80,
  params: 'transaction hash',
  decode: decodeTransactionHash,
  async handle(ctx, p) {
    const found = await ctx.store.transaction(p.hash);
    return found === undefined ? null : ctx.memo.transactions.text(found, '', transactionText);
  },
};
