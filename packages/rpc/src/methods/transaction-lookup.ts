// The methods that look a transaction up by its hash: one params shape, one decoder, one lookup.
import type { Bytes, TxWithLocation } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import type { JsonText } from '../json-text.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeHash } from '../params.js';

export interface TransactionHashParams {
  hash: Bytes;
}

/** A method answering from the transaction stored under a hash; null when there is none. */
export function transactionHashMethod<R>(
  answer: (ctx: HandlerContext, loc: TxWithLocation) => R | JsonText<R> | Promise<R | JsonText<R> | null>,
): MethodDef<TransactionHashParams, R | null> {
  return {
    cost: 80,
    params: 'transaction hash',
    decode: (params) => decodeArgs(params, 1, (arg) => ({ hash: decodeHash(arg(0)) })),
    async handle(ctx, p) {
      const loc = await ctx.store.transaction(p.hash);
      return loc === undefined ? null : answer(ctx, loc);
    },
  };
}
