import { resolveBlockNumber } from '../context.js';
import { blockText } from '../formatters/block.js';
import { blockWithTransactionsWriter } from '../formatters/transaction-text.js';
import type { JsonBlock } from '../formatters/block.js';
import { decodeArgs, decodeBlockNumber, decodeBool } from '../params.js';
import type { BlockNumberParam } from '../params.js';
import type { MethodDef } from '../method.js';

export interface GetBlockByNumberParams {
  block: BlockNumberParam;
  fullTransactions: boolean;
}

export const eth_getBlockByNumber: MethodDef<GetBlockByNumberParams, JsonBlock | null> = {
  cost: 80,
  params: 'block number or tag, full transaction objects (boolean)',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ block: decodeBlockNumber(arg(0)), fullTransactions: decodeBool(arg(1)) })),
  async handle(ctx, p) {
    const number = await resolveBlockNumber(ctx, p.block);
    const hash = await ctx.store.canonicalHash(number);
    if (hash === undefined) return null;
    if (!p.fullTransactions && ctx.store.readyBlockJson !== undefined) {
      const ready = await ctx.store.readyBlockJson(hash);
      if (ready !== undefined) return ctx.memo.ready.ascii(ready, 'hashes', (r) => r.ascii);
    }
    const block = await ctx.store.block(hash);
    if (block === undefined) return null;
    if (p.fullTransactions) return ctx.memo.blocks.writer(block, 'full', blockWithTransactionsWriter);
    return ctx.memo.blocks.text(block, 'hashes', (b) => blockText(b, false));
  },
};
