// Handshake method (costs: the method table, see `cost`).
import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { noParams } from '../params.js';
import type { MethodDef } from '../method.js';

/** Number of the newest fully imported block. */
export const eth_blockNumber: MethodDef<void, Hex> = {
  // Charged, unlike the constant handshake answers: clients poll it.
  cost: 10,
  params: 'none',
  decode: noParams,
  handle: async (ctx) => toQuantity((await ctx.store.head()).number),
};
