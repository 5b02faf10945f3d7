import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { blockIndexMethod, transactionAtIndex } from './block-lookup.js';

export const eth_getTransactionByBlockHashAndIndex = blockIndexMethod<JsonAnyTransaction>(
  'hash',
  'index',
  transactionAtIndex,
);
