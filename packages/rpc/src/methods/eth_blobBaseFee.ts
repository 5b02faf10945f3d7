import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { forksOf } from '../chain/forks.js';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

/** geth: the blob base fee of the head block (null before Cancun). */
export const eth_blobBaseFee: MethodDef<void, Hex | null> = {
  cost: 300,
  params: 'none',
  decode: noParams,
  async handle(ctx) {
    const head = await ctx.store.head();
    const header = await ctx.store.header(head.hash);
    const fee = header === undefined ? undefined : forksOf(ctx.store.info()).blobGasPrice(header);
    return fee === undefined ? null : toQuantity(fee);
  },
};
