import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { suggestTipCap } from '../chain/fees.js';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

/** geth: the oracle's tip plus the head's base fee (from London on). */
export const eth_gasPrice: MethodDef<void, Hex> = {
  cost: 80,
  params: 'none',
  decode: noParams,
  async handle(ctx) {
    const tip = await suggestTipCap(ctx);
    const head = await ctx.store.head();
    const header = await ctx.store.header(head.hash);
    return toQuantity(tip + (header?.baseFeePerGas ?? 0n));
  },
};
