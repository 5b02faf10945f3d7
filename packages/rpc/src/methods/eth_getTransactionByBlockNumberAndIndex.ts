import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { blockIndexMethod, transactionAtIndex } from './block-lookup.js';

export const eth_getTransactionByBlockNumberAndIndex = blockIndexMethod<JsonAnyTransaction>(
  'number',
  'index',
  transactionAtIndex,
);
