import type { JsonBlock } from '../formatters/block.js';
import { blockIndexMethod, uncleAtIndex } from './block-lookup.js';

export const eth_getUncleByBlockHashAndIndex = blockIndexMethod<JsonBlock>('hash', 'uncle index', uncleAtIndex);
