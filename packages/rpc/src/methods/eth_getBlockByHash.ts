import type { Bytes } from '@chainnode/core';
import { blockText } from '../formatters/block.js';
import { blockWithTransactionsWriter } from '../formatters/transaction-text.js';
import type { JsonBlock } from '../formatters/block.js';
import { decodeArgs, decodeBool, decodeHash } from '../params.js';
import type { MethodDef } from '../method.js';

export interface GetBlockByHashParams {
  hash: Bytes;
  fullTransactions: boolean;
}

export const eth_getBlockByHash: MethodDef<GetBlockByHashParams, JsonBlock | null> = {
  cost: 80,
  params: 'block hash, full transaction objects (boolean)',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ hash: decodeHash(arg(0)), fullTransactions: decodeBool(arg(1)) })),
  async handle(ctx, p) {
    if (!p.fullTransactions && ctx.store.readyBlockJson !== undefined) {
      const ready = await ctx.store.readyBlockJson(p.hash);
      if (ready !== undefined) return ctx.memo.ready.ascii(ready, 'hashes', (r) => r.ascii);
    }
    const block = await ctx.store.block(p.hash);
    if (block === undefined) return null;
    if (p.fullTransactions) return ctx.memo.blocks.writer(block, 'full', blockWithTransactionsWriter);
    return ctx.memo.blocks.text(block, 'hashes', (b) => blockText(b, false));
  },
};
