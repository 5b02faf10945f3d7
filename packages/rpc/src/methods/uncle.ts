// Shared by both uncle methods: an index past any possible uncle list is simply not found.
import type { Bytes, UncleRecord } from '@chainnode/core';
import type { HandlerContext } from '../context.js';

export async function uncleAt(ctx: HandlerContext, blockHash: Bytes, index: bigint): Promise<UncleRecord | undefined> {
  if (index > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  return ctx.store.uncle(blockHash, Number(index));
}
