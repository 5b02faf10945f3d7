import { rawBlockMethod } from './raw-block.js';

export const debug_getRawHeader = rawBlockMethod('header', (ctx, hash) => ctx.store.rawHeader(hash));
