import type { JsonReceipt } from '../formatters/receipt.js';
import type { MethodDef } from '../method.js';
import { transactionReceipt } from '../reads.js';
import { decodeTransactionHash, type TransactionHashParams } from './eth_getTransactionByHash.js';

export const eth_getTransactionReceipt: MethodDef<TransactionHashParams, JsonReceipt | null> = {
  cost: 80,
  params: 'transaction hash',
  decode: decodeTransactionHash,
  async handle(ctx, p) {
    const loc = await ctx.store.transaction(p.hash);
    if (loc === undefined) return null;
    return (await transactionReceipt(ctx, loc)) ?? null;
  },
};
