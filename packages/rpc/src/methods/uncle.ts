// Shared by both uncle methods: an index past any possible uncle list is simply not found.
import type { Bytes, UncleRecord } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import { uncleText } from '../formatters/block.js';
import type { JsonBlock } from '../formatters/block.js';
import { JsonText } from '../json-text.js';
import type { BlockSelector } from '../params.js';
import { blockHashOf } from './block-lookup.js';

export async function uncleAt(ctx: HandlerContext, blockHash: Bytes, index: bigint): Promise<UncleRecord | undefined> {
  if (index > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  return ctx.store.uncle(blockHash, Number(index));
}

/** The uncle at `index` of the block `sel` names, as JSON; null when there is none. */
export async function uncleJson(
  ctx: HandlerContext,
  sel: BlockSelector,
  index: bigint,
): Promise<JsonText<JsonBlock> | null> {
  const hash = await blockHashOf(ctx, sel);
  if (hash === undefined) return null;
  const uncle = await uncleAt(ctx, hash, index);
  return uncle === undefined ? null : new JsonText<JsonBlock>(uncleText(uncle));
}
