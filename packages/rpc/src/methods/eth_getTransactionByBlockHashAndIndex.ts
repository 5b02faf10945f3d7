import { transactionText } from '../formatters/transaction-text.js';
import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { JsonText } from '../json-text.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeIndex, decodeHash } from '../params.js';
import type { BlockSelector } from '../params.js';
import { locate, selectBlock } from '../reads.js';

export interface TxByBlockHashParams {
  block: BlockSelector;
  index: bigint;
}

export const eth_getTransactionByBlockHashAndIndex: MethodDef<TxByBlockHashParams, JsonAnyTransaction | null> = {
  cost: 150,
  params: 'block hash, index (hex quantity)',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({
      block: { kind: 'hash', hash: decodeHash(arg(0)), requireCanonical: false } as BlockSelector,
      index: decodeIndex(arg(1)),
    })),
  async handle(ctx, p) {
    const block = await selectBlock(ctx, p.block);
    if (block === undefined || p.index >= BigInt(block.transactionHashes?.length ?? block.transactions.length))
      return null;
    const loc = locate(block, Number(p.index));
    return loc === undefined ? null : new JsonText<JsonAnyTransaction>(transactionText(loc));
  },
};
