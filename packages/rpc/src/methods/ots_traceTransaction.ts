// Otterscan's per-transaction methods that re-execute (Erigon's ots API): ots_traceTransaction
// (the call tree as a flat list with depths), ots_getInternalOperations (value transfers,
// creations and self-destructs inside the transaction) and ots_getTransactionError (the
// transaction's revert data). Each re-executes the transaction's block up to it, the work of a
// debug_traceTransaction, and is priced as one (Infura's debug_* 1,000 credits).
import type { Bytes } from '@chainnode/core';
import type { JsonInternalOperation, JsonTraceEntry, TraceBudget, Tracer } from '@chainnode/exec';
import { loadExec } from '../call.js';
import type { MethodDef } from '../method.js';
import { otsTransaction, traceWithOts } from '../ots.js';
import { decodeArgs, decodeHash } from '../params.js';
import { TRACE_COST } from '../trace.js';

type Exec = Awaited<ReturnType<typeof loadExec>>;

const ERRORS =
  '-32000 `transaction 0x… not found`, `execution timeout`; -32003 `response too large` past traceMaxBytes';

function otsTraceMethod<R>(make: (exec: Exec, budget: TraceBudget) => Tracer): MethodDef<Bytes, R> {
  return {
    cost: 1000,
    params: 'transaction hash',
    errors: ERRORS,
    decode: (params) => decodeArgs(params, 1, (arg) => decodeHash(arg(0))),
    offload: true,
    estimateCost: async () => TRACE_COST,
    async handle(ctx, hash) {
      const { loc, header } = await otsTransaction(ctx, hash);
      const exec = await loadExec();
      return (await traceWithOts(ctx, loc, header, (budget) => make(exec, budget))) as R;
    },
  };
}

export const ots_traceTransaction = otsTraceMethod<JsonTraceEntry[]>(
  (exec, budget) => new exec.OtsTransactionTracer(budget),
);

export const ots_getInternalOperations = otsTraceMethod<JsonInternalOperation[]>(
  (exec, budget) => new exec.OtsOperationsTracer(budget),
);

const revertTrace = otsTraceMethod<string>((exec) => new exec.OtsRevertTracer());

export const ots_getTransactionError: MethodDef<Bytes, string> = {
  ...revertTrace,
  // A successful transaction has no revert data: its receipt says so without a re-execution.
  async handle(ctx, hash) {
    const { loc, header } = await otsTransaction(ctx, hash);
    const receipts = await ctx.store.receipts(loc.blockHash);
    const status = receipts?.[loc.transactionIndex]?.statusOrState;
    if (status !== undefined && status.length === 1 && status[0] === 1) return '0x';
    const exec = await loadExec();
    return (await traceWithOts(ctx, loc, header, () => new exec.OtsRevertTracer())) as string;
  },
};
