// The fee methods that answer one fee derived from the head's header (null where the fork that
// defines it is not in force).
import { toQuantity } from '@chainnode/core';
import type { HeaderRecord, Hex } from '@chainnode/core';
import { forksOf } from '../chain/forks.js';
import type { ForkSchedule } from '../chain/forks.js';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

export function headFeeMethod(
  cost: number,
  fee: (forks: ForkSchedule, head: HeaderRecord) => bigint | undefined,
): MethodDef<void, Hex | null> {
  return {
    cost,
    params: 'none',
    decode: noParams,
    async handle(ctx) {
      const head = await ctx.store.head();
      const header = await ctx.store.header(head.hash);
      const value = header === undefined ? undefined : fee(forksOf(ctx.store.info()), header);
      return value === undefined ? null : toQuantity(value);
    },
  };
}
