// A client handshake method. Costs of the four bootstrap methods (docs/keys-and-credits.md):
// eth_chainId, net_version and web3_clientVersion are free (constant answers, so client network
// detection never drains a balance); eth_blockNumber, which clients poll, costs 10.
import { noParams } from '../params.js';
import type { MethodDef } from '../method.js';

/** "chainnode/v0.1.0/<os>-<arch>/nodejs<major>" unless configured otherwise. */
export const web3_clientVersion: MethodDef<void, string> = {
  cost: 0,
  decode: noParams,
  handle: async (ctx) => ctx.config.clientVersion,
};
