import { rawBlockMethod } from './raw-block.js';

export const debug_getRawBlock = rawBlockMethod('block', (ctx, hash) => ctx.store.rawBlock(hash));
