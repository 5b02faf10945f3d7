import { resolveBlockNumber } from '../context.js';
import { uncleText } from '../formatters/block.js';
import { JsonText } from '../json-text.js';
import type { JsonBlock } from '../formatters/block.js';
import { decodeArgs, decodeBlockNumber, decodeIndex } from '../params.js';
import type { BlockNumberParam } from '../params.js';
import type { MethodDef } from '../method.js';
import { uncleAt } from './uncle.js';

export interface GetUncleByNumberParams {
  block: BlockNumberParam;
  index: bigint;
}

export const eth_getUncleByBlockNumberAndIndex: MethodDef<GetUncleByNumberParams, JsonBlock | null> = {
  cost: 150,
  params: 'block number or tag, uncle index (hex quantity)',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ block: decodeBlockNumber(arg(0)), index: decodeIndex(arg(1)) })),
  async handle(ctx, p) {
    const hash = await ctx.store.canonicalHash(await resolveBlockNumber(ctx, p.block));
    if (hash === undefined) return null;
    const uncle = await uncleAt(ctx, hash, p.index);
    return uncle === undefined ? null : new JsonText<JsonBlock>(uncleText(uncle));
  },
};
