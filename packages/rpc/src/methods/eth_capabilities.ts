// execution-apis eth_capabilities: what a router needs to know to send a historical query here.
// The store is an archive that deletes nothing, so every resource reaches back to the first block
// it holds (0, or the block a joined node started from) and none has a delete strategy.
import { toData, toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { firstBlockOf } from '../context.js';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

export interface JsonCapability {
  disabled: boolean;
  oldestBlock: Hex;
}

/** The resources the spec's EthCapabilities names, in its order. */
const RESOURCES = ['state', 'tx', 'logs', 'receipts', 'blocks', 'stateproofs'] as const;

export type JsonCapabilities = { head: { number: Hex; hash: Hex } } & Record<
  (typeof RESOURCES)[number],
  JsonCapability
>;

export const eth_capabilities: MethodDef<void, JsonCapabilities> = {
  // Not in Infura's table: one head read, priced like eth_blockNumber.
  cost: 10,
  params: 'none',
  decode: noParams,
  async handle(ctx) {
    const head = await ctx.store.head();
    const held: JsonCapability = { disabled: false, oldestBlock: toQuantity(firstBlockOf(ctx)) };
    const out = { head: { number: toQuantity(head.number), hash: toData(head.hash) } } as JsonCapabilities;
    for (const r of RESOURCES) out[r] = { ...held };
    return out;
  },
};
