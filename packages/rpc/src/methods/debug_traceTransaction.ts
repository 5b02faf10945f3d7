// geth's debug_traceTransaction: the transaction re-executed on its block's parent state after
// the transactions before it, traced by the tracer the config names (the struct logger when none).
import { ServerError } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeHash } from '../params.js';
import { TRACE_CONFIG_PARAMS, TRACE_COST, TRACE_ERRORS, decodeTraceConfig, traceStoredBlock } from '../trace.js';
import type { TraceConfig } from '../trace.js';

export interface TraceTransactionParams {
  hash: Bytes;
  config: TraceConfig;
}

export const debug_traceTransaction: MethodDef<TraceTransactionParams, unknown> = {
  // Infura's price of every debug_* trace.
  cost: 1000,
  params: `transaction hash, ${TRACE_CONFIG_PARAMS}`,
  errors: `-32000 \`transaction not found\`; ${TRACE_ERRORS}`,
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ hash: decodeHash(arg(0)), config: decodeTraceConfig(arg(1)) }), 1),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    const loc = await ctx.store.transaction(p.hash);
    if (loc === undefined) throw new ServerError('transaction not found');
    const header = await ctx.store.header(loc.blockHash);
    if (header === undefined) throw new ServerError('transaction not found');
    const [trace] = await traceStoredBlock(ctx, header, p.config, loc.transactionIndex);
    if (trace === undefined) throw new ServerError('transaction not found');
    return trace.result;
  },
};
