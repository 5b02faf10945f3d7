import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import type { BlockSelector } from '../params.js';
import { decodeArgs, decodeHash } from '../params.js';
import { selectBlock } from '../reads.js';

export const eth_getUncleCountByBlockHash: MethodDef<BlockSelector, Hex | null> = {
  cost: 150,
  params: 'block hash',
  decode: (params) =>
    decodeArgs(params, 1, (arg) => ({ kind: 'hash', hash: decodeHash(arg(0)), requireCanonical: false })),
  async handle(ctx, sel) {
    const block = await selectBlock(ctx, sel);
    if (block === undefined) return null;
    return toQuantity(block.uncleHashes.length);
  },
};
