// Handshake method (costs: the method table, see `cost`).
import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { noParams } from '../params.js';
import type { MethodDef } from '../method.js';

/** Chain id of the genesis config, as a quantity. */
export const eth_chainId: MethodDef<void, Hex> = {
  // Free, like net_version and web3_clientVersion: a constant answer, so a client's network
  // detection never drains a balance.
  cost: 0,
  params: 'none',
  decode: noParams,
  handle: async (ctx) => toQuantity(ctx.store.info().chainId),
};
