import type { JsonReceipt } from '../formatters/receipt.js';
import { transactionReceipt } from '../reads.js';
import { transactionHashMethod } from './transaction-lookup.js';

export const eth_getTransactionReceipt = transactionHashMethod<JsonReceipt>(
  async (ctx, loc) => (await transactionReceipt(ctx, loc)) ?? null,
);
