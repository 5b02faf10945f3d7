import { blockCountMethod, transactionCount } from './block-lookup.js';

export const eth_getBlockTransactionCountByHash = blockCountMethod('hash', transactionCount);
