// geth's debug_traceCall: a call run as eth_call runs it (its block, state and block overrides,
// gas cap), traced by the tracer the config names.
import type { AccountOverride, BlockOverrides, CallArgs } from '@chainnode/exec';
import { decodeBlockOverrides, decodeCallArgs, decodeStateOverrides, loadExec } from '../call.js';
import { ServerError, toData } from '@chainnode/core';
import type { HeaderRecord } from '@chainnode/core';
import { resolveBlockNumber } from '../context.js';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { selectBlockHash } from '../reads.js';
import { decodeArgs, decodeOptionalBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import {
  TRACE_CONFIG_PARAMS,
  TRACE_COST,
  TRACE_ERRORS,
  decodeTraceConfig,
  mapTraceError,
  runTracedCall,
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
  // geth's txIndex (the state before the block's transaction at that index) is not served.
  if (o.txIndex !== undefined && o.txIndex !== null)
    throw new ServerError(
      'txIndex is not supported: trace on the state after a block, or use blockOverrides and stateOverrides',
    );
  return {
    config: decodeTraceConfig(v),
    state: decodeStateOverrides(o.stateOverrides),
    blockOverrides: decodeBlockOverrides(o.blockOverrides),
  };
}

/** The block a traced call runs on, with geth's errors (pending is refused). */
async function traceCallHeader(ctx: HandlerContext, sel: BlockSelector): Promise<HeaderRecord> {
  if (sel.kind === 'tag' && sel.tag === 'pending') throw new ServerError('tracing on top of pending is not supported');
  const hash = await selectBlockHash(ctx, sel);
  const header = hash === undefined ? undefined : await ctx.store.header(hash);
  if (header !== undefined) return header;
  if (sel.kind === 'hash') throw new ServerError(`block ${toData(sel.hash)} not found`);
  throw new ServerError(`block #${await resolveBlockNumber(ctx, sel)} not found`);
}

export const debug_traceCall: MethodDef<TraceCallParams, unknown> = {
  // Infura's price of every debug_* trace.
  cost: 1000,
  params: `transaction object (as eth_call), block, ${TRACE_CONFIG_PARAMS}, stateOverrides, blockOverrides`,
  errors: `eth_call's pre-check errors (-32000), \`tracing on top of pending is not supported\`, \`block … not found\`; ${TRACE_ERRORS}`,
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
    const header = await traceCallHeader(ctx, p.block);
    const deadline = traceDeadline(ctx, p.config);
    try {
      const tracer = exec.makeTracer(p.config, new exec.TraceBudget(ctx.config.traceMaxBytes));
      await runTracedCall(ctx, header, p.call, tracer, deadline, { state: p.state, block: p.blockOverrides });
      return tracer.result();
    } catch (err) {
      // eth_call's path words its timeout as eth_call does; a trace's is geth's "execution timeout".
      if (err instanceof ServerError && err.message.startsWith('execution aborted') && Date.now() >= deadline)
        throw new ServerError('execution timeout');
      throw mapTraceError(err, exec);
    }
  },
};
