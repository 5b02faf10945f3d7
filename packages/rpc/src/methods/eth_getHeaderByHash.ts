import { headerMethod } from './block-lookup.js';

export const eth_getHeaderByHash = headerMethod('hash');
