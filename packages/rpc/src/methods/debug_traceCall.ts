// geth's debug_traceCall: a call run as eth_call runs it (its block, state and block overrides,
// gas cap), traced by the tracer the config names.
import type { AccountOverride, BlockOverrides, CallArgs, CallObserver } from '@chainnode/exec';
import { callHeader, decodeBlockOverrides, decodeCallArgs, decodeStateOverrides, loadExec, runCall } from '../call.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeOptionalBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import {
  TRACE_CONFIG_PARAMS,
  TRACE_COST,
  TRACE_ERRORS,
  decodeTraceConfig,
  mapTraceError,
  traceDeadline,
} from '../trace.js';
import type { TraceConfig } from '../trace.js';

export interface TraceCallParams {
  call: CallArgs;
  block: BlockSelector;
  config: TraceConfig;
  state?: Map<string, AccountOverride> | undefined;
  blockOverrides?: BlockOverrides | undefined;
}

/** geth's TraceCallConfig: a TraceConfig with stateOverrides and blockOverrides. */
function decodeTraceCallConfig(v: unknown): Pick<TraceCallParams, 'config' | 'state' | 'blockOverrides'> {
  const o = (typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {}) as Record<string, unknown>;
  return {
    config: decodeTraceConfig(v),
    state: decodeStateOverrides(o.stateOverrides),
    blockOverrides: decodeBlockOverrides(o.blockOverrides),
  };
}

export const debug_traceCall: MethodDef<TraceCallParams, unknown> = {
  // Infura's price of every debug_* trace.
  cost: 1000,
  params: `transaction object (as eth_call), block, ${TRACE_CONFIG_PARAMS}, stateOverrides, blockOverrides`,
  errors: `eth_call's pre-check errors (-32000); ${TRACE_ERRORS}`,
  decode: (params) =>
    decodeArgs(
      params,
      3,
      (arg) => ({
        call: decodeCallArgs(arg(0)),
        block: decodeOptionalBlockSelector(arg(1)),
        ...decodeTraceCallConfig(arg(2)),
      }),
      1,
    ),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    const exec = await loadExec();
    const header = await callHeader(ctx, p.block);
    const deadline = traceDeadline(ctx, p.config);
    try {
      const tracer = exec.makeTracer(p.config, new exec.TraceBudget(ctx.config.traceMaxBytes));
      const observe: CallObserver = (on, run) =>
        exec.traceTx(on.vm, on.state, on.tx, on.block, tracer, { logsBefore: 0, deadline }, run);
      const opts: Parameters<typeof runCall>[3] = { observe, deadline };
      if (p.state !== undefined) opts.state = p.state;
      if (p.blockOverrides !== undefined) opts.block = p.blockOverrides;
      await runCall(ctx, header, p.call, opts);
      return tracer.result();
    } catch (err) {
      throw mapTraceError(err, exec);
    }
  },
};
