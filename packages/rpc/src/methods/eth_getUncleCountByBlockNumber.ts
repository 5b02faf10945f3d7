import { blockCountMethod } from './block-lookup.js';

export const eth_getUncleCountByBlockNumber = blockCountMethod('number', (block) => block.uncleHashes.length);
