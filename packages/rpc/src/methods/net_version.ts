// A client handshake method. Costs of the four bootstrap methods (docs/keys-and-credits.md):
// eth_chainId, net_version and web3_clientVersion are free (constant answers, so client network
// detection never drains a balance); eth_blockNumber, which clients poll, costs 10.
import { noParams } from '../params.js';
import type { MethodDef } from '../method.js';

/** Network id as a decimal string, as geth answers it. */
export const net_version: MethodDef<void, string> = {
  cost: 0,
  decode: noParams,
  handle: async (ctx) => ctx.store.info().networkId.toString(10),
};
