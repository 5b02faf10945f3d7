import type { Bytes } from '@chainnode/core';
import type { JsonReceipt } from '../formatters/receipt.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeHash } from '../params.js';
import { transactionReceipt } from '../reads.js';

export interface GetTransactionReceiptParams {
  hash: Bytes;
}

export const eth_getTransactionReceipt: MethodDef<GetTransactionReceiptParams, JsonReceipt | null> = {
  cost: 80,
  params: 'transaction hash',
  decode: (params) => decodeArgs(params, 1, (arg) => ({ hash: decodeHash(arg(0)) })),
  async handle(ctx, p) {
    const loc = await ctx.store.transaction(p.hash);
    if (loc === undefined) return null;
    return (await transactionReceipt(ctx, loc)) ?? null;
  },
};
