// chainnode_getStateDiff: the whole state change of one canonical block, read from the state
// history where the block's import recorded its state changes (recorded-state-diff.ts), else a
// diff of the parent's state trie and the block's in this node's trie: what a replica applies to
// its own parent state and checks against the header's stateRoot (docs/json-rpc.md, "Replication").
import { ServerError } from '@chainnode/core';
import type { Bytes, HeaderRecord, StateDiffLimits } from '@chainnode/core';
import { resolveBlockNumber } from '../context.js';
import type { HandlerContext } from '../context.js';
import { formatStateDiff } from '../formatters/state-diff.js';
import type { JsonStateDiff } from '../formatters/state-diff.js';
import { decodeArgs, decodeBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import type { MethodDef } from '../method.js';
import { recordedStateDiff } from '../recorded-state-diff.js';
import { prunedOr, requireTrie } from '../trie-window.js';

export const chainnode_getStateDiff: MethodDef<BlockSelector, JsonStateDiff> = {
  // Priced as Infura prices a block's state changes by tracing (debug_traceBlockByNumber, 1,000).
  cost: 1000,
  params: 'block (number, tag, hash or EIP-1898 object)',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockSelector(arg(0))),
  // A walk of every changed path of the state (thousands of nodes on a busy block): with log
  // workers configured it never runs on the event loop that answers everything else.
  offload: true,
  async handle(ctx, sel) {
    const hash = await blockHash(ctx, sel);
    const header = await ctx.store.header(hash);
    if (header === undefined) throw notFound(sel);
    // The same time budget as a log query (from the call's submission when offloaded), and the
    // batch answer's size limit for this one answer.
    const deadline = Math.min(Date.now() + ctx.config.logs.timeoutMs, ctx.deadline ?? Number.POSITIVE_INFINITY);
    return blockStateDiff(ctx, header, { deadline, maxBytes: ctx.config.maxBatchResponseBytes });
  },
};

/** The state change of the stored block of `header`, as chainnode_getStateDiff answers it. */
export async function blockStateDiff(
  ctx: HandlerContext,
  header: HeaderRecord,
  limits: StateDiffLimits,
): Promise<JsonStateDiff> {
  if (header.number === 0n) throw new ServerError('genesis has no parent state diff');
  // The parent's trie too: below the state trie's window either may be pruned.
  requireTrie(ctx, header.number - 1n);
  const parentStateRoot = await stateRootOf(ctx, header.parentHash);
  const diff =
    (await recordedStateDiff(ctx, header, limits)) ??
    (await ctx.store.stateDiff(parentStateRoot, header.stateRoot, limits).catch((err: unknown) => {
      throw prunedOr(ctx, header.number - 1n, err);
    }));
  return formatStateDiff(
    { hash: header.hash, number: header.number, parentStateRoot, stateRoot: header.stateRoot },
    diff,
  );
}

function notFound(sel: BlockSelector): ServerError {
  return new ServerError(sel.kind === 'hash' ? 'header for hash not found' : 'header not found');
}

async function blockHash(ctx: HandlerContext, sel: BlockSelector): Promise<Bytes> {
  if (sel.kind === 'hash') return sel.hash;
  const number = sel.kind === 'number' ? sel.number : await resolveBlockNumber(ctx, sel);
  const hash = await ctx.store.canonicalHash(number);
  if (hash === undefined) throw notFound(sel);
  return hash;
}

async function stateRootOf(ctx: HandlerContext, hash: Bytes): Promise<Bytes> {
  const root =
    ctx.store.stateRoot !== undefined ? await ctx.store.stateRoot(hash) : (await ctx.store.header(hash))?.stateRoot;
  // The parent left the canonical chain between the two reads (a reorg under a follower).
  if (root === undefined) throw new ServerError('parent header not found');
  return root;
}
