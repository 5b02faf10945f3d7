import { blockMethod } from './block-lookup.js';

export const eth_getBlockByNumber = blockMethod('number');
