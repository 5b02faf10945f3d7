import { blockCountMethod } from './block-lookup.js';

export const eth_getUncleCountByBlockHash = blockCountMethod('hash', (block) => block.uncleHashes.length);
