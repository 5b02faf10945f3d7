// Handshake method (costs: the method table, see `cost`).
import { noParams } from '../params.js';
import type { MethodDef } from '../method.js';

/** Network id as a decimal string, as geth answers it. */
export const net_version: MethodDef<void, string> = {
  // Free: a constant answer (see eth_chainId).
  cost: 0,
  params: 'none',
  decode: noParams,
  handle: async (ctx) => ctx.store.info().networkId.toString(10),
};
