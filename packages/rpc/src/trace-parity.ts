// What the trace_* methods (Parity's trace module, as reth serves it) share: the trace types
// decoder, the localized entry (block, transaction and position around a flat trace entry), a
// stored block's flat traces with its rewards, one transaction's TraceResults by re-execution,
// their credits and their errors.
import { KECCAK256_RLP, KECCAK256_RLP_ARRAY } from '@ethereumjs/util';
import { RpcError, bytesEqual, toData } from '@chainnode/core';
import type { BlockRecord, Bytes, HeaderRecord } from '@chainnode/core';
import type { JsonFlatTrace, JsonTraceResults, ParityTraceTypes, TraceBudget } from '@chainnode/exec';
import { executorOf, loadExec } from './call.js';
import type { HandlerContext } from './context.js';
import { ParamError, jsonType } from './params.js';
import { replayStoredBlock } from './trace.js';
import type { TxPick } from './trace.js';

/** Infura's price of every trace_* method. */
export const PARITY_TRACE_CREDITS = 300;

export const TRACE_TYPES_PARAM = 'trace types (["trace"], ["stateDiff"] or both; "vmTrace" is refused)';

export const PARITY_TRACE_ERRORS =
  '-32602 for an unknown trace type and for `vmTrace`; -32000 `execution timeout`; -32003 `response too large` past traceMaxBytes';

/** reth's trace types: "trace", "stateDiff"; "vmTrace" is not served. */
export function decodeTraceTypes(v: unknown): ParityTraceTypes {
  if (!Array.isArray(v)) throw new ParamError(`trace types: expected an array, got ${jsonType(v)}`);
  const out: ParityTraceTypes = { trace: false, stateDiff: false };
  for (const t of v) {
    if (t === 'trace') out.trace = true;
    else if (t === 'stateDiff') out.stateDiff = true;
    else if (t === 'vmTrace')
      throw new ParamError('vmTrace is not supported by this node; ask for "trace" and "stateDiff"');
    else
      throw new ParamError(`unknown variant \`${String(t)}\`, expected one of \`trace\`, \`vmTrace\`, \`stateDiff\``);
  }
  return out;
}

/** A flat trace entry with its block and transaction (alloy's LocalizedTransactionTrace, in its field order). */
export interface JsonLocalizedTrace {
  action: JsonFlatTrace['action'];
  blockHash: string;
  blockNumber: number;
  error?: string;
  result: JsonFlatTrace['result'];
  subtraces: number;
  traceAddress: number[];
  transactionHash?: string;
  transactionPosition?: number;
  type: JsonFlatTrace['type'];
}

export function localize(
  t: JsonFlatTrace,
  block: { hash: string; number: number },
  tx?: { hash: string; index: number },
): JsonLocalizedTrace {
  // In the order reth writes them.
  return {
    action: t.action,
    blockHash: block.hash,
    blockNumber: block.number,
    ...(t.error === undefined ? {} : { error: t.error }),
    result: t.result,
    subtraces: t.subtraces,
    traceAddress: t.traceAddress,
    ...(tx === undefined ? {} : { transactionHash: tx.hash, transactionPosition: tx.index }),
    type: t.type,
  };
}

/**
 * The bound of a trace_* call: the log query timeout (what an offloaded call gets), and the call's
 * own deadline.
 */
export function parityDeadline(ctx: HandlerContext): number {
  return Math.min(Date.now() + ctx.config.logs.timeoutMs, ctx.deadline ?? Number.POSITIVE_INFINITY);
}

/**
 * A stored block's flat traces, localized, every transaction's (only the one at `only` when
 * given) then, for a block of proof of work, its rewards.
 */
export async function blockFlatTraces(
  ctx: HandlerContext,
  header: HeaderRecord,
  opts: { only?: number; deadline?: number; budget?: TraceBudget; pick?: TxPick } = {},
): Promise<JsonLocalizedTrace[]> {
  const exec = await loadExec();
  const out: JsonLocalizedTrace[] = [];
  const at = { hash: toData(header.hash), number: Number(header.number) };
  if (header.number > 0n && hasTransactions(header)) {
    const traces = await replayStoredBlock(
      ctx,
      header,
      (budget) => new exec.FlatTracer(budget),
      { deadline: opts.deadline ?? parityDeadline(ctx) },
      opts.only,
      opts.budget,
      opts.pick,
    );
    for (const t of traces) {
      const tx = { hash: toData(t.hash), index: t.index };
      for (const e of t.result as JsonFlatTrace[]) out.push(localize(e, at, tx));
    }
  }
  // Rewards: blocks of proof of work only (a block of difficulty 0 has none).
  if (opts.only !== undefined || header.number === 0n || header.difficulty === 0n) return out;
  const common = await (await executorOf(ctx)).chainCommon();
  // A block without uncles: its header holds all its reward needs; else its uncles from the block.
  if (bytesEqual(header.uncleHash, KECCAK256_RLP_ARRAY)) {
    for (const r of exec.blockRewardTraces(common, header, [])) out.push(localize(r, at));
    return out;
  }
  const raw = await ctx.store.rawBlock(header.hash);
  if (raw === undefined) return out;
  for (const r of exec.rewardTraces(common, raw)) out.push(localize(r, at));
  return out;
}

/** TraceResults of a stored block's transactions (only the one at `only` when given), re-executed. */
export async function blockTraceResults(
  ctx: HandlerContext,
  header: HeaderRecord,
  types: ParityTraceTypes,
  only?: number,
): Promise<{ hash: Bytes; result: JsonTraceResults }[]> {
  const exec = await loadExec();
  const block = await ctx.store.block(header.hash);
  if (header.number === 0n || txCount(block) === 0) return [];
  const make = (budget: TraceBudget) => new exec.ParityTracer(types, budget);
  const traces = await replayStoredBlock(ctx, header, make, { deadline: parityDeadline(ctx) }, only);
  return traces.map((t) => ({ hash: t.hash, result: t.result as JsonTraceResults }));
}

/** Whether a block has transactions: its transactions root is not the empty trie's. */
export function hasTransactions(header: HeaderRecord): boolean {
  return !bytesEqual(header.transactionsRoot, KECCAK256_RLP);
}

/** A block's transaction count, without decoding its transactions when the store has their hashes. */
function txCount(block: BlockRecord | undefined): number {
  return block === undefined ? 0 : (block.transactionHashes?.length ?? block.transactions.length);
}

/** reth's "block not found: …" (-32001) for a block id. */
export function blockNotFound(id: { number: bigint } | { hash: Bytes } | { tag: string }): RpcError {
  const s = 'number' in id ? `0x${id.number.toString(16)}` : 'hash' in id ? `hash ${toData(id.hash)}` : id.tag;
  return new RpcError(-32001, `block not found: ${s}`);
}
