import { ServerError, toData } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { decodeArgs, decodeBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import type { MethodDef } from '../method.js';
import { goDecimalHash, rawBlockHash } from './raw-block.js';

export const debug_getRawHeader: MethodDef<BlockSelector, Hex> = {
  cost: 80,
  params: 'block (number, tag, hash or EIP-1898 object)',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockSelector(arg(0))),
  async handle(ctx, sel) {
    const at = await rawBlockHash(ctx, sel);
    if (at === undefined) return '0x'; // geth: a number past the head is an empty answer
    const raw = await ctx.store.rawHeader(at.hash);
    if (raw === undefined) throw new ServerError(`header #${goDecimalHash(at.hash)} not found`);
    return toData(raw);
  },
};
