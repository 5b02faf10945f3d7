import { transactionText } from '../formatters/transaction-text.js';
import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { JsonText } from '../json-text.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeIndex, decodeBlockNumber } from '../params.js';
import type { BlockSelector } from '../params.js';
import { locate, selectBlock } from '../reads.js';

export interface TxByBlockNumberParams {
  block: BlockSelector;
  index: bigint;
}

export const eth_getTransactionByBlockNumberAndIndex: MethodDef<TxByBlockNumberParams, JsonAnyTransaction | null> = {
  cost: 150,
  params: 'block number or tag, index (hex quantity)',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ block: decodeBlockNumber(arg(0)), index: decodeIndex(arg(1)) })),
  async handle(ctx, p) {
    const block = await selectBlock(ctx, p.block);
    if (block === undefined || p.index >= BigInt(block.transactionHashes?.length ?? block.transactions.length))
      return null;
    const loc = locate(block, Number(p.index));
    return loc === undefined ? null : new JsonText<JsonAnyTransaction>(transactionText(loc));
  },
};
