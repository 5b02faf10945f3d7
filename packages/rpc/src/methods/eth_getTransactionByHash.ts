import { transactionText } from '../formatters/transaction-text.js';
import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { transactionHashMethod } from './transaction-lookup.js';

export const eth_getTransactionByHash = transactionHashMethod<JsonAnyTransaction>((ctx, loc) =>
  ctx.memo.transactions.text(loc, '', transactionText),
);
