// geth's debug_traceBlock: a block given as its RLP, re-executed on its parent's state (a block
// the store holds) and traced, as [{txHash, result}].
import { RLP } from '@ethereumjs/rlp';
import { ServerError, toData } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeHexData } from '../params.js';
import {
  TRACE_CONFIG_PARAMS,
  TRACE_COST,
  TRACE_ERRORS,
  blockTraces,
  decodeTraceConfig,
  traceRawBlock,
} from '../trace.js';
import type { JsonTxTrace, TraceConfig } from '../trace.js';

export interface TraceRawBlockParams {
  raw: Bytes;
  config: TraceConfig;
}

/** The parent hash and number of a block's RLP (geth: "could not decode block" otherwise). */
function headerOf(raw: Bytes): { parentHash: Bytes; number: bigint } {
  try {
    const block = RLP.decode(raw) as unknown as Uint8Array[][];
    const header = block[0] as Uint8Array[];
    const n = header[8] as Uint8Array;
    return { parentHash: header[0] as Uint8Array, number: n.length === 0 ? 0n : BigInt(toData(n)) };
  } catch (err) {
    throw new ServerError(`could not decode block: ${(err as Error).message}`);
  }
}

export const debug_traceBlock: MethodDef<TraceRawBlockParams, JsonTxTrace[]> = {
  // Infura's price of every debug_* trace.
  cost: 1000,
  params: `block RLP (hex), ${TRACE_CONFIG_PARAMS}`,
  errors: `-32000 \`could not decode block\`, \`parent … not found\`; ${TRACE_ERRORS}`,
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ raw: decodeHexData(arg(0)), config: decodeTraceConfig(arg(1)) }), 1),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, p) {
    const h = headerOf(p.raw);
    if (h.number === 0n) throw new ServerError('genesis is not traceable');
    const parent = await ctx.store.header(h.parentHash);
    if (parent === undefined) throw new ServerError(`parent ${toData(h.parentHash)} not found`);
    return blockTraces(await traceRawBlock(ctx, p.raw, parent, p.config, {}));
  },
};
