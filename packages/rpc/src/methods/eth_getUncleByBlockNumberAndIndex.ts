import type { JsonBlock } from '../formatters/block.js';
import { blockIndexMethod, uncleAtIndex } from './block-lookup.js';

export const eth_getUncleByBlockNumberAndIndex = blockIndexMethod<JsonBlock>('number', 'uncle index', uncleAtIndex);
