import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockNumber } from '../params.js';
import type { BlockSelector } from '../params.js';
import { selectBlock } from '../reads.js';

export const eth_getBlockTransactionCountByNumber: MethodDef<BlockSelector, Hex | null> = {
  cost: 150,
  params: 'block number or tag',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockNumber(arg(0))),
  async handle(ctx, sel) {
    const block = await selectBlock(ctx, sel);
    if (block === undefined) return null;
    return toQuantity(block.transactionHashes?.length ?? block.transactions.length);
  },
};
