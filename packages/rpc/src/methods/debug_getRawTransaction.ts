import { toData } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import { decodeArgs, decodeGoHash } from '../params.js';
import type { MethodDef } from '../method.js';

export const debug_getRawTransaction: MethodDef<Bytes, Hex> = {
  cost: 80,
  params: 'transaction hash',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeGoHash(arg(0))),
  async handle(ctx, hash) {
    const raw = await ctx.store.rawTransaction(hash);
    // geth: an unknown transaction is an empty answer, not an error (nor null).
    return raw === undefined ? '0x' : toData(raw);
  },
};
