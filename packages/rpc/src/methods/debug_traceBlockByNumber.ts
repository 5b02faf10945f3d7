// geth's debug_traceBlockByNumber and debug_traceBlockByHash: every transaction of a stored block
// re-executed on its parent's state and traced, as [{txHash, result}].
import { ServerError, toData } from '@chainnode/core';
import type { Bytes, HeaderRecord } from '@chainnode/core';
import { resolveBlockNumber } from '../context.js';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockNumber, decodeHash } from '../params.js';
import type { BlockNumberParam } from '../params.js';
import {
  TRACE_CONFIG_PARAMS,
  TRACE_COST,
  TRACE_ERRORS,
  blockTraces,
  decodeTraceConfig,
  traceStoredBlock,
} from '../trace.js';
import type { JsonTxTrace, TraceConfig } from '../trace.js';

export interface TraceBlockParams<B> {
  block: B;
  config: TraceConfig;
}

/** A block-tracing method over the block its first argument names (`find`: its header or geth's error). */
function traceBlockMethod<B>(
  what: string,
  decodeBlock: (v: unknown) => B,
  find: (ctx: HandlerContext, b: B) => Promise<HeaderRecord>,
): MethodDef<TraceBlockParams<B>, JsonTxTrace[]> {
  return {
    // Infura's price of every debug_* trace.
    cost: 1000,
    params: `${what}, ${TRACE_CONFIG_PARAMS}`,
    errors: `-32000 \`block … not found\`; ${TRACE_ERRORS}`,
    decode: (params) =>
      decodeArgs(params, 2, (arg) => ({ block: decodeBlock(arg(0)), config: decodeTraceConfig(arg(1)) }), 1),
    offload: true,
    estimateCost: async () => TRACE_COST,
    async handle(ctx, p) {
      return blockTraces(await traceStoredBlock(ctx, await find(ctx, p.block), p.config));
    },
  };
}

export const debug_traceBlockByNumber = traceBlockMethod<BlockNumberParam>(
  'block number or tag',
  decodeBlockNumber,
  async (ctx, b) => {
    const number = await resolveBlockNumber(ctx, b);
    const hash = await ctx.store.canonicalHash(number);
    const header = hash === undefined ? undefined : await ctx.store.header(hash);
    if (header === undefined) throw new ServerError(`block #${number} not found`);
    return header;
  },
);

export const debug_traceBlockByHash = traceBlockMethod<Bytes>('block hash', decodeHash, async (ctx, hash) => {
  const header = await ctx.store.header(hash);
  if (header === undefined) throw new ServerError(`block ${toData(hash)} not found`);
  return header;
});
