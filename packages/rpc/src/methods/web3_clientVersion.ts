// Handshake method (costs: the method table, see `cost`).
import { noParams } from '../params.js';
import type { MethodDef } from '../method.js';

/** "chainnode/v0.1.0/<os>-<arch>/nodejs<major>" unless configured otherwise. */
export const web3_clientVersion: MethodDef<void, string> = {
  // Free: a constant answer (see eth_chainId).
  cost: 0,
  params: 'none',
  decode: noParams,
  handle: async (ctx) => ctx.config.clientVersion,
};
