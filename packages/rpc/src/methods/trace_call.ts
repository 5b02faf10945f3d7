// reth's trace_call, trace_callMany and trace_rawTransaction: calls run as eth_call runs them (on
// the state after the block named, latest by default, its block context, the gas cap), each
// answered as TraceResults. trace_callMany runs its calls one after another, each on the state
// the ones before it left; trace_rawTransaction runs a signed transaction as a call from its
// signer.
import { InvalidParamsError } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { AccountOverride, BlockOverrides, CallArgs } from '@chainnode/exec';
import type { JsonAccountDiff, JsonDelta, JsonTraceResults, ParityTraceTypes } from '@chainnode/exec';
import { callHeader, decodeCallArgs, executorOf, loadExec } from '../call.js';
import { decodeBlockOverrides, decodeStateOverrides } from '../call.js';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { ParamError, decodeArgs, decodeHexData, decodeOptionalBlockSelector, jsonType } from '../params.js';
import type { BlockSelector } from '../params.js';
import { TRACE_COST, mapTraceError, runTracedCall } from '../trace.js';
import {
  PARITY_TRACE_CREDITS,
  PARITY_TRACE_ERRORS,
  TRACE_TYPES_PARAM,
  decodeTraceTypes,
  parityDeadline,
} from '../trace-parity.js';

export interface TraceCallParams {
  call: CallArgs;
  types: ParityTraceTypes;
  block: BlockSelector;
  state?: Map<string, AccountOverride> | undefined;
  blockOverrides?: BlockOverrides | undefined;
}

/** Runs `call` on the state after `block` (with overrides) and traces it. */
async function traceCall(ctx: HandlerContext, p: TraceCallParams): Promise<JsonTraceResults> {
  const exec = await loadExec();
  const header = await callHeader(ctx, p.block);
  const deadline = parityDeadline(ctx);
  try {
    const tracer = new exec.ParityTracer(p.types, new exec.TraceBudget(ctx.config.traceMaxBytes));
    await runTracedCall(ctx, header, p.call, tracer, deadline, { state: p.state, block: p.blockOverrides });
    return tracer.result();
  } catch (err) {
    throw mapTraceError(err, exec);
  }
}

const CALL_ERRORS = `eth_call's pre-check errors (-32000), \`header not found\`; ${PARITY_TRACE_ERRORS}`;

export const trace_call: MethodDef<TraceCallParams, JsonTraceResults> = {
  cost: PARITY_TRACE_CREDITS,
  params: `transaction object (as eth_call), ${TRACE_TYPES_PARAM}, block (latest by default), stateOverrides, blockOverrides`,
  errors: CALL_ERRORS,
  decode: (params) =>
    decodeArgs(
      params,
      5,
      (arg) => ({
        call: decodeCallArgs(arg(0)),
        types: decodeTraceTypes(arg(1)),
        block: decodeOptionalBlockSelector(arg(2)),
        state: decodeStateOverrides(arg(3)),
        blockOverrides: decodeBlockOverrides(arg(4)),
      }),
      2,
    ),
  offload: true,
  estimateCost: async () => TRACE_COST,
  handle: traceCall,
};

export interface TraceRawParams {
  raw: Bytes;
  types: ParityTraceTypes;
  block: BlockSelector;
}

export const trace_rawTransaction: MethodDef<TraceRawParams, JsonTraceResults> = {
  cost: PARITY_TRACE_CREDITS,
  params: `signed transaction (hex), ${TRACE_TYPES_PARAM}, block (latest by default)`,
  errors: `-32602 \`failed to decode signed transaction\`; ${CALL_ERRORS}`,
  decode: (params) =>
    decodeArgs(
      params,
      3,
      (arg) => ({
        raw: decodeHexData(arg(0)),
        types: decodeTraceTypes(arg(1)),
        block: decodeOptionalBlockSelector(arg(2)),
      }),
      2,
    ),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    const exec = await loadExec();
    const header = await callHeader(ctx, p.block);
    const common = (await (await executorOf(ctx)).chainCommon()).copy();
    common.setHardforkBy({ blockNumber: header.number, timestamp: header.timestamp });
    let call: CallArgs;
    try {
      call = exec.rawTxCallArgs(common, p.raw);
    } catch {
      throw new InvalidParamsError('failed to decode signed transaction');
    }
    return traceCall(ctx, { call, types: p.types, block: p.block });
  },
};

export interface TraceCallManyParams {
  calls: { call: CallArgs; types: ParityTraceTypes }[];
  block: BlockSelector;
}

const latin1 = (hex: string): string => Buffer.from(hex.slice(2), 'hex').toString('latin1');
const bytes = (hex: string): Bytes => Uint8Array.from(Buffer.from(hex.slice(2), 'hex'));

/** The value a state diff's entry leaves (undefined: unchanged). */
function after(d: JsonDelta<string>): string | undefined {
  if (d === '=' || '-' in d) return undefined;
  return '+' in d ? d['+'] : d['*'].to;
}

/** Folds a call's state diff into the state overrides the next call runs with. */
function carry(state: Map<string, AccountOverride>, diff: Record<string, JsonAccountDiff>): void {
  for (const [address, d] of Object.entries(diff)) {
    const k = latin1(address);
    const o = state.get(k) ?? {};
    const balance = after(d.balance);
    const nonce = after(d.nonce);
    const code = after(d.code);
    if (balance !== undefined) o.balance = BigInt(balance);
    if (nonce !== undefined) o.nonce = BigInt(nonce);
    if (code !== undefined) o.code = bytes(code);
    for (const [slot, v] of Object.entries(d.storage)) {
      const now = after(v);
      if (now === undefined) continue;
      o.stateDiff ??= new Map();
      o.stateDiff.set(latin1(slot), bytes(now));
    }
    state.set(k, o);
  }
}

export const trace_callMany: MethodDef<TraceCallManyParams, JsonTraceResults[]> = {
  cost: PARITY_TRACE_CREDITS,
  params: `[[transaction object, ${TRACE_TYPES_PARAM}], …], block (latest by default)`,
  errors: CALL_ERRORS,
  decode: (params) =>
    decodeArgs(
      params,
      2,
      (arg) => {
        const v = arg(0);
        if (!Array.isArray(v)) throw new ParamError(`calls: expected an array, got ${jsonType(v)}`);
        const calls = v.map((c) => {
          if (!Array.isArray(c) || c.length !== 2)
            throw new ParamError('calls: expected [transaction object, trace types] pairs');
          return { call: decodeCallArgs(c[0]), types: decodeTraceTypes(c[1]) };
        });
        return { calls, block: decodeOptionalBlockSelector(arg(1)) };
      },
      1,
    ),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    // Each call runs on the state the ones before it left: their state diffs carried as overrides.
    const state = new Map<string, AccountOverride>();
    const out: JsonTraceResults[] = [];
    for (const [i, c] of p.calls.entries()) {
      const types = { ...c.types, stateDiff: c.types.stateDiff || i < p.calls.length - 1 };
      const r = await traceCall(ctx, { call: c.call, types, block: p.block, state: new Map(state) });
      if (r.stateDiff !== null) carry(state, r.stateDiff);
      out.push(c.types.stateDiff ? r : { ...r, stateDiff: null });
    }
    return out;
  },
};
