import type { JsonBlock } from '../formatters/block.js';
import { blockIndexMethod } from './block-lookup.js';
import { uncleJson } from './uncle.js';

export const eth_getUncleByBlockHashAndIndex = blockIndexMethod<JsonBlock>('hash', 'uncle index', uncleJson);
