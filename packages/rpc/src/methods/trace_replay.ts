// reth's trace_replayTransaction and trace_replayBlockTransactions: stored transactions
// re-executed on their block's parent state, each answered as TraceResults (its output, its flat
// trace and its state diff as asked for; vmTrace is not served).
import { RpcError, toData } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { JsonTraceResults, ParityTraceTypes } from '@chainnode/exec';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockSelector, decodeHash } from '../params.js';
import type { BlockSelector } from '../params.js';
import { selectBlockHash } from '../reads.js';
import { TRACE_COST } from '../trace.js';
import {
  PARITY_TRACE_CREDITS,
  PARITY_TRACE_ERRORS,
  TRACE_TYPES_PARAM,
  blockTraceResults,
  decodeTraceTypes,
} from '../trace-parity.js';

export interface ReplayTransactionParams {
  hash: Bytes;
  types: ParityTraceTypes;
}

export const trace_replayTransaction: MethodDef<ReplayTransactionParams, JsonTraceResults> = {
  cost: PARITY_TRACE_CREDITS,
  params: `transaction hash, ${TRACE_TYPES_PARAM}`,
  errors: `-32001 \`transaction not found\`; ${PARITY_TRACE_ERRORS}`,
  decode: (params) => decodeArgs(params, 2, (arg) => ({ hash: decodeHash(arg(0)), types: decodeTraceTypes(arg(1)) })),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    const loc = await ctx.store.transaction(p.hash);
    const header = loc === undefined ? undefined : await ctx.store.header(loc.blockHash);
    const notFound = new RpcError(-32001, 'transaction not found');
    if (loc === undefined || header === undefined) throw notFound;
    const [t] = await blockTraceResults(ctx, header, p.types, loc.transactionIndex);
    if (t === undefined) throw notFound;
    return t.result;
  },
};

export interface ReplayBlockParams {
  block: BlockSelector;
  types: ParityTraceTypes;
}

export type JsonTraceResultsWithHash = JsonTraceResults & { transactionHash: string };

export const trace_replayBlockTransactions: MethodDef<ReplayBlockParams, JsonTraceResultsWithHash[] | null> = {
  cost: PARITY_TRACE_CREDITS,
  params: `block number, tag or hash, ${TRACE_TYPES_PARAM}`,
  errors: PARITY_TRACE_ERRORS,
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ block: decodeBlockSelector(arg(0)), types: decodeTraceTypes(arg(1)) })),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    const hash = await selectBlockHash(ctx, p.block);
    const header = hash === undefined ? undefined : await ctx.store.header(hash);
    // reth: null for a block it does not hold.
    if (header === undefined) return null;
    const traces = await blockTraceResults(ctx, header, p.types);
    return traces.map((t) => ({ ...t.result, transactionHash: toData(t.hash) }));
  },
};
