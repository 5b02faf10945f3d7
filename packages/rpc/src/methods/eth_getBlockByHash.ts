import { blockMethod } from './block-lookup.js';

export const eth_getBlockByHash = blockMethod('hash');
