// chainnode_getBlockRange: canonical blocks [from, to] as a replica takes them, in one answer:
// each block's raw RLP, raw receipts and whole state change (chainnode_getStateDiff's answer).
// Bounded by a block cap and a byte cap (the answer stops early; the replica asks for the rest),
// so a replica keeps a few of these in flight instead of three calls per block
// (docs/json-rpc.md, "Replication").
import { LimitExceededError, ResponseTooLargeError, ServerError, encodeReceipt, toData } from '@chainnode/core';
import type { Hex, StateDiffLimits } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import type { JsonStateDiff } from '../formatters/state-diff.js';
import type { MethodDef } from '../method.js';
import { ParamError, decodeArgs, decodeQuantity } from '../params.js';
import { blockStateDiff } from './chainnode_getStateDiff.js';

/** Blocks one answer holds at most. */
export const BLOCK_RANGE_MAX_BLOCKS = 64;

/** Estimated JSON bytes past which an answer takes no further block (its first is always whole). */
export const BLOCK_RANGE_MAX_BYTES = 8 * 2 ** 20;

export interface BlockRangeParams {
  from: bigint;
  to: bigint;
}

/** One block of the answer. */
export interface JsonRangeBlock {
  /** The block's RLP, as debug_getRawBlock. */
  block: Hex;
  /** The receipts' consensus encodings, as debug_getRawReceipts. */
  receipts: Hex[];
  /** The block's state change, as chainnode_getStateDiff. */
  stateDiff: JsonStateDiff;
}

export const chainnode_getBlockRange: MethodDef<BlockRangeParams, JsonRangeBlock[]> = {
  // As one chainnode_getStateDiff: the answer's blocks are bounded, and one call of the range
  // replaces three per block.
  cost: 1000,
  params: 'from (block number, not 0), to (block number)',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => {
      const from = decodeQuantity(arg(0), 'from', 64);
      if (from === 0n) throw new ParamError('from: genesis has no parent state diff');
      const to = decodeQuantity(arg(1), 'to', 64);
      return { from, to };
    }),
  // A trie walk per block: with offload workers it runs off the event loop, as chainnode_getStateDiff.
  offload: true,
  async handle(ctx, { from, to }) {
    const started = Date.now();
    const budget = Math.min(started + ctx.config.logs.timeoutMs, ctx.deadline ?? Number.POSITIVE_INFINITY);
    const maxBytes = Math.min(BLOCK_RANGE_MAX_BYTES, ctx.config.maxBatchResponseBytes);
    const last = from + BigInt(BLOCK_RANGE_MAX_BLOCKS) - 1n < to ? from + BigInt(BLOCK_RANGE_MAX_BLOCKS) - 1n : to;
    const out: JsonRangeBlock[] = [];
    let bytes = 0;
    for (let n = from; n <= last; n++) {
      // The first block has the whole budget, as chainnode_getStateDiff; a later one only what is
      // left of half the time and of the byte cap, and is left to the next call when it passes it.
      const first = out.length === 0;
      const limits: StateDiffLimits = first
        ? { deadline: budget, maxBytes: ctx.config.maxBatchResponseBytes }
        : { deadline: started + (budget - started) / 2, maxBytes: maxBytes - bytes };
      let entry: JsonRangeBlock | undefined;
      try {
        entry = await entryOf(ctx, n, limits);
      } catch (err) {
        if (!first && (err instanceof ResponseTooLargeError || err instanceof LimitExceededError)) break;
        throw err;
      }
      if (entry === undefined) break; // past the head
      const size = entrySize(entry);
      if (!first && bytes + size > maxBytes) break;
      out.push(entry);
      bytes += size;
    }
    return out;
  },
};

/** Canonical block `n` as the answer holds it; undefined past the head. */
async function entryOf(ctx: HandlerContext, n: bigint, limits: StateDiffLimits): Promise<JsonRangeBlock | undefined> {
  const hash = await ctx.store.canonicalHash(n);
  if (hash === undefined) return undefined;
  // All three by the block's hash: a reorg under a following primary cannot mix two blocks.
  const [header, raw, receipts] = await Promise.all([
    ctx.store.header(hash),
    ctx.store.rawBlock(hash),
    ctx.store.receipts(hash),
  ]);
  if (header === undefined || raw === undefined || receipts === undefined)
    throw new ServerError(`block ${n} not found`);
  const stateDiff = await blockStateDiff(ctx, header, limits);
  return { block: toData(raw), receipts: receipts.map((r) => toData(encodeReceipt(r))), stateDiff };
}

/** The entry's JSON size, estimated without serializing it. */
function entrySize(e: JsonRangeBlock): number {
  let n = e.block.length + 64;
  for (const r of e.receipts) n += r.length + 3;
  for (const a of e.stateDiff.accounts) {
    n += 300 + (a.code?.length ?? 0);
    for (const [k, v] of a.storage) n += k.length + (v?.length ?? 4) + 8;
  }
  return n;
}
