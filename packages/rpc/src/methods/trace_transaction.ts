// reth's trace_transaction and trace_get: a stored transaction re-executed on its block's parent
// state after the transactions before it, as Parity's flat traces (null for an unknown
// transaction); trace_get picks one entry by its position in that list (null unless exactly one
// index is given, as reth and Erigon).
import type { Bytes } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { ParamError, decodeArgs, decodeHash, decodeIndex } from '../params.js';
import { TRACE_COST } from '../trace.js';
import { PARITY_TRACE_CREDITS, PARITY_TRACE_ERRORS, blockFlatTraces } from '../trace-parity.js';
import type { JsonLocalizedTrace } from '../trace-parity.js';

async function transactionTraces(ctx: HandlerContext, hash: Bytes): Promise<JsonLocalizedTrace[] | null> {
  const loc = await ctx.store.transaction(hash);
  const header = loc === undefined ? undefined : await ctx.store.header(loc.blockHash);
  if (loc === undefined || header === undefined) return null;
  return blockFlatTraces(ctx, header, { only: loc.transactionIndex });
}

export const trace_transaction: MethodDef<Bytes, JsonLocalizedTrace[] | null> = {
  cost: PARITY_TRACE_CREDITS,
  params: 'transaction hash',
  errors: PARITY_TRACE_ERRORS,
  decode: (params) => decodeArgs(params, 1, (arg) => decodeHash(arg(0))),
  offload: true,
  estimateCost: async () => TRACE_COST,
  handle: (ctx, hash) => transactionTraces(ctx, hash),
};

export interface TraceGetParams {
  hash: Bytes;
  indices: bigint[];
}

export const trace_get: MethodDef<TraceGetParams, JsonLocalizedTrace | null> = {
  cost: PARITY_TRACE_CREDITS,
  params: 'transaction hash, trace indices (one: the position in trace_transaction’s list)',
  errors: PARITY_TRACE_ERRORS,
  decode: (params) =>
    decodeArgs(params, 2, (arg) => {
      const v = arg(1);
      if (!Array.isArray(v)) throw new ParamError('indices: expected an array');
      return {
        hash: decodeHash(arg(0)),
        indices: v.map((i) =>
          typeof i === 'number' && Number.isSafeInteger(i) && i >= 0 ? BigInt(i) : decodeIndex(i),
        ),
      };
    }),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    if (p.indices.length !== 1) return null;
    const traces = await transactionTraces(ctx, p.hash);
    return traces?.[Number(p.indices[0])] ?? null;
  },
};
