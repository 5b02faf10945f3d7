import { encodeReceipt, toData } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { decodeArgs, decodeBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import type { MethodDef } from '../method.js';
import { rawBlockHash } from './raw-block.js';

export const debug_getRawReceipts: MethodDef<BlockSelector, Hex[] | null> = {
  cost: 80,
  params: 'block (number, tag, hash or EIP-1898 object)',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockSelector(arg(0))),
  async handle(ctx, sel) {
    const at = await rawBlockHash(ctx, sel);
    // geth: a number past the head or an unknown hash answers null (no receipts, no error).
    const receipts = at === undefined ? undefined : await ctx.store.receipts(at.hash);
    return receipts === undefined ? null : receipts.map((r) => toData(encodeReceipt(r)));
  },
};
