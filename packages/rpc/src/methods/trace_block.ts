// reth's trace_block: every transaction of a stored block re-executed on its parent's state, as
// Parity's flat traces with the block and transaction around each entry, then the block's
// rewards (a block of proof of work only: reth gives none after the merge).
import type { HeaderRecord } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import { selectBlockHash } from '../reads.js';
import { TRACE_COST } from '../trace.js';
import { PARITY_TRACE_CREDITS, PARITY_TRACE_ERRORS, blockFlatTraces, blockNotFound } from '../trace-parity.js';
import type { JsonLocalizedTrace } from '../trace-parity.js';

/** The stored block a trace_* call names, or reth's -32001 `block not found: …`. */
export async function parityBlockHeader(ctx: HandlerContext, sel: BlockSelector): Promise<HeaderRecord> {
  const hash = await selectBlockHash(ctx, sel);
  const header = hash === undefined ? undefined : await ctx.store.header(hash);
  if (header !== undefined) return header;
  throw blockNotFound(sel.kind === 'hash' ? { hash: sel.hash } : sel.kind === 'tag' ? { tag: sel.tag } : sel);
}

export const trace_block: MethodDef<BlockSelector, JsonLocalizedTrace[]> = {
  cost: PARITY_TRACE_CREDITS,
  params: 'block number, tag or hash',
  errors: `-32001 \`block not found: …\`; ${PARITY_TRACE_ERRORS}`,
  decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockSelector(arg(0))),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, sel) {
    return blockFlatTraces(ctx, await parityBlockHeader(ctx, sel));
  },
};
