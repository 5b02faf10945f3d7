import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { suggestTipCap } from '../chain/fees.js';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

export const eth_maxPriorityFeePerGas: MethodDef<void, Hex> = {
  cost: 80,
  params: 'none',
  decode: noParams,
  handle: async (ctx) => toQuantity(await suggestTipCap(ctx)),
};
