import { blockCountMethod, transactionCount } from './block-lookup.js';

export const eth_getBlockTransactionCountByNumber = blockCountMethod('number', transactionCount);
