import { headerMethod } from './block-lookup.js';

export const eth_getHeaderByNumber = headerMethod('number');
