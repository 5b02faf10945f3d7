// A client handshake method. Costs of the four bootstrap methods (docs/keys-and-credits.md):
// eth_chainId, net_version and web3_clientVersion are free (constant answers, so client network
// detection never drains a balance); eth_blockNumber, which clients poll, costs 10.
import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { noParams } from '../params.js';
import type { MethodDef } from '../method.js';

/** Number of the newest fully imported block. */
export const eth_blockNumber: MethodDef<void, Hex> = {
  cost: 10,
  decode: noParams,
  handle: async (ctx) => toQuantity((await ctx.store.head()).number),
};
