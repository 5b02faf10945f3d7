import { ServerError } from '@chainnode/core';
import { forksOf } from '../chain/forks.js';
import type { JsonForkConfig } from '../chain/forks.js';
import type { MethodDef } from '../method.js';
import { noParams } from '../params.js';

export interface JsonChainConfig {
  current: JsonForkConfig;
  next: JsonForkConfig | null;
  last: JsonForkConfig | null;
}

/** EIP-7910: the fork in force at the head, the next scheduled one and the last scheduled one. */
export const eth_config: MethodDef<void, JsonChainConfig> = {
  cost: 80,
  params: 'none',
  errors: '-32000 when no fork from Cancun on is active at the head',
  decode: noParams,
  async handle(ctx) {
    const forks = forksOf(ctx.store.info());
    const head = await ctx.store.head();
    const header = await ctx.store.header(head.hash);
    if (header === undefined) throw new Error('head header missing');
    const current = forks.timeForkAt(header.timestamp);
    if (current === undefined || current.blob === undefined)
      throw new ServerError('eth_config: no fork from Cancun on is active');
    const later = forks.timeForks.filter((f) => f.time > header.timestamp);
    const next = later[0];
    const last = later[later.length - 1];
    return {
      current: forks.configAt(current, header),
      next: next === undefined ? null : forks.configAt(next, header),
      last: last === undefined ? null : forks.configAt(last, header),
    };
  },
};
