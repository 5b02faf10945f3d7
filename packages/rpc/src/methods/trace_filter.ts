// reth's trace_filter: the flat traces (rewards included) of the blocks fromBlock..toBlock whose
// action is from one of fromAddress and to one of toAddress (alloy's TraceFilterMatcher, `mode`
// union or intersection), then `after` matching entries skipped and at most `count` given
// (Erigon's and reth's paging). The blocks and transactions traced are those the frame blooms and
// the address-appearance index cannot rule out (blocksToTrace); the range is bounded by
// traceFilterMaxBlocks.
import { KECCAK256_RLP_ARRAY } from '@ethereumjs/util';
import { InvalidParamsError, bytesEqual, toData } from '@chainnode/core';
import type { HeaderRecord } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import { resolveBlockNumber } from '../context.js';
import type { MethodDef } from '../method.js';
import { ParamError, decodeAddress, decodeArgs, decodeBlockNumber, jsonType } from '../params.js';
import type { BlockNumberParam } from '../params.js';
import { TRACE_COST } from '../trace.js';
import {
  PARITY_TRACE_CREDITS,
  PARITY_TRACE_ERRORS,
  blockFlatTraces,
  blockNotFound,
  hasTransactions,
  parityDeadline,
} from '../trace-parity.js';
import type { JsonLocalizedTrace } from '../trace-parity.js';
import type { TxPick } from '../trace.js';
import { loadExec } from '../call.js';

export interface TraceFilter {
  fromBlock?: BlockNumberParam;
  toBlock?: BlockNumberParam;
  fromAddress: Set<string>;
  toAddress: Set<string>;
  intersection: boolean;
  after?: number;
  count?: number;
}

function addresses(v: unknown, what: string): Set<string> {
  if (v === undefined || v === null) return new Set();
  if (!Array.isArray(v)) throw new ParamError(`${what}: expected an array of addresses, got ${jsonType(v)}`);
  return new Set(v.map((a) => toData(decodeAddress(a))));
}

function count(v: unknown, what: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
  throw new ParamError(`${what}: expected a non-negative integer, got ${jsonType(v)}`);
}

const FIELDS = new Set(['fromBlock', 'toBlock', 'fromAddress', 'toAddress', 'mode', 'after', 'count']);

export function decodeTraceFilter(v: unknown): TraceFilter {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new ParamError(`trace filter: expected an object, got ${jsonType(v)}`);
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!FIELDS.has(k)) throw new ParamError(`unknown field \`${k}\``);
  if (o.mode !== undefined && o.mode !== null && o.mode !== 'union' && o.mode !== 'intersection')
    throw new ParamError(`unknown variant \`${String(o.mode)}\`, expected \`union\` or \`intersection\``);
  const f: TraceFilter = {
    fromAddress: addresses(o.fromAddress, 'fromAddress'),
    toAddress: addresses(o.toAddress, 'toAddress'),
    intersection: o.mode === 'intersection',
  };
  if (o.fromBlock !== undefined && o.fromBlock !== null) f.fromBlock = decodeBlockNumber(o.fromBlock);
  if (o.toBlock !== undefined && o.toBlock !== null) f.toBlock = decodeBlockNumber(o.toBlock);
  const after = count(o.after, 'after');
  const n = count(o.count, 'count');
  if (after !== undefined) f.after = after;
  if (n !== undefined) f.count = n;
  return f;
}

/** alloy's TraceFilterMatcher: whether an entry's action is from and to the filter's addresses. */
export function matches(f: TraceFilter, t: JsonLocalizedTrace): boolean {
  const a = t.action as unknown as Record<string, string>;
  const fromIn = (x: string | undefined) => f.fromAddress.size === 0 || (x !== undefined && f.fromAddress.has(x));
  const toIn = (x: string | undefined) => f.toAddress.size === 0 || (x !== undefined && f.toAddress.has(x));
  let from: boolean;
  let to: boolean;
  if (t.type === 'call') [from, to] = [fromIn(a.from), toIn(a.to)];
  else if (t.type === 'create')
    [from, to] = [
      fromIn(a.from),
      t.result !== null && 'address' in t.result ? toIn(t.result.address) : f.toAddress.size === 0,
    ];
  else if (t.type === 'suicide') [from, to] = [fromIn(a.address), toIn(a.refundAddress)];
  else [from, to] = [f.fromAddress.size === 0, toIn(a.author)];
  if (f.intersection) return from && to;
  if (f.fromAddress.size === 0) return to;
  if (f.toAddress.size === 0) return from;
  return from || to;
}

/** A block trace_filter traces, and which of its transactions (undefined: every one). */
interface BlockToTrace {
  header: HeaderRecord;
  pick: TxPick | undefined;
}

/**
 * The blocks of `from`..`to` whose traces may match `filter`, each with the transactions worth
 * tracing. Where the address-appearance index holds the blocks' recorded frames and the blocks
 * are past the merge (no rewards to name anyone), the index alone says which blocks and
 * transactions: every transaction whose frames name one of the addresses (indexScan). Before
 * that, a block whose frames were recorded is skipped when its frame bloom (every address its
 * frames name, its senders, its rewards' authors; exec's frameBloom) holds none of the filter's
 * addresses; when the index holds its frames too, only the transactions it lists are traced, and
 * the block is skipped when it lists none and its rewards cannot name an address. Any other
 * recorded block traces the transactions whose rows may name an address (txPick); a block without
 * recorded frames, all of them.
 */
export async function* blocksToTrace(
  ctx: HandlerContext,
  from: bigint,
  to: bigint,
  filter: TraceFilter,
): AsyncGenerator<BlockToTrace> {
  const exec = await loadExec();
  const addresses = filterAddresses(filter);
  const recorded = addresses.length > 0 && ctx.store.frameBlooms !== undefined;
  const indexed = recorded ? await indexedTxs(ctx, addresses, from, to) : undefined;
  const bytesPick = txPick(exec, filter);
  const split =
    indexed === undefined || ctx.store.frameIndexedBlocks === undefined
      ? to + 1n
      : await firstWithoutRewards(ctx, indexed.framesFrom > from ? indexed.framesFrom : from, to);
  if (split > from) {
    const blooms = recorded ? await ctx.store.frameBlooms?.(from, split - 1n) : undefined;
    const probes = addresses.map((a) => exec.bloomProbe(a));
    for (let n = from; n < split; n++) {
      const bloom = blooms?.[Number(n - from)];
      if (bloom !== undefined && !probes.some((mayHold) => mayHold(bloom))) continue;
      const header = await headerAt(ctx, n);
      if (bloom !== undefined && indexed !== undefined && n >= indexed.framesFrom) {
        const txs = indexed.byBlock.get(n);
        // No transaction names an address: only a proof-of-work block's rewards can match.
        if (txs === undefined && !rewardsMayMatch(header, addresses)) continue;
        yield { header, pick: { indexes: txs ?? new Set() } };
      } else yield { header, pick: bytesPick?.(header) };
    }
  }
  if (split <= to && indexed !== undefined) yield* indexScan(ctx, split, to, indexed.byBlock, bytesPick);
}

/**
 * The blocks of `from`..`to` (all past the merge) the index lists a transaction of, each with
 * those transactions; a block with transactions whose frames the index does not hold (imported
 * with recording off) with every transaction its rows may name an address in.
 */
async function* indexScan(
  ctx: HandlerContext,
  from: bigint,
  to: bigint,
  byBlock: Map<bigint, Set<number>>,
  bytesPick: ((header: HeaderRecord) => TxPick) | undefined,
): AsyncGenerator<BlockToTrace> {
  const held = new Set(await ctx.store.frameIndexedBlocks?.(from, to));
  for (let n = from; n <= to; n++) {
    if (!held.has(n)) {
      const header = await headerAt(ctx, n);
      // A block without transactions has nothing to trace past the merge (an import records no
      // frames for it either).
      if (hasTransactions(header)) yield { header, pick: bytesPick?.(header) };
      continue;
    }
    const txs = byBlock.get(n);
    if (txs !== undefined) yield { header: await headerAt(ctx, n), pick: { indexes: txs } };
  }
}

/**
 * The first block of `from`..`to` from which on every block is past the merge (difficulty 0: no
 * block or uncle rewards); `to` + 1 when `to` is not. A chain's difficulty is 0 from its merge on
 * (EIP-3675), so a binary search over the range's headers finds it.
 */
async function firstWithoutRewards(ctx: HandlerContext, from: bigint, to: bigint): Promise<bigint> {
  if (from > to || (await headerAt(ctx, to)).difficulty !== 0n) return to + 1n;
  let [lo, hi] = [from, to];
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if ((await headerAt(ctx, mid)).difficulty === 0n) hi = mid;
    else lo = mid + 1n;
  }
  return lo;
}

async function headerAt(ctx: HandlerContext, n: bigint): Promise<HeaderRecord> {
  const hash = await ctx.store.canonicalHash(n);
  const header = hash === undefined ? undefined : await ctx.store.header(hash);
  if (header === undefined) throw blockNotFound({ number: n });
  return header;
}

/**
 * The transactions of `from`..`to` where one of `addresses` appears, by block, from the
 * address-appearance index; undefined when it does not cover the range or holds no recorded frames.
 */
async function indexedTxs(
  ctx: HandlerContext,
  addresses: Uint8Array[],
  from: bigint,
  to: bigint,
): Promise<{ framesFrom: bigint; byBlock: Map<bigint, Set<number>> } | undefined> {
  if (ctx.store.appearanceRange === undefined) return undefined;
  const byBlock = new Map<bigint, Set<number>>();
  let framesFrom = 0n;
  for (const a of addresses) {
    const r = await ctx.store.appearanceRange(a, from, to);
    if (r?.framesFrom === undefined) return undefined;
    if (r.framesFrom > framesFrom) framesFrom = r.framesFrom;
    for (const p of r.positions) {
      let txs = byBlock.get(p.number);
      if (txs === undefined) byBlock.set(p.number, (txs = new Set()));
      txs.add(p.index);
    }
  }
  return { framesFrom, byBlock };
}

/**
 * Whether a block's reward entries may name one of `addresses`: a block of proof of work whose
 * miner is one of them, or that has uncles (their miners are in its body).
 */
function rewardsMayMatch(header: HeaderRecord, addresses: Uint8Array[]): boolean {
  if (header.difficulty === 0n) return false;
  if (!bytesEqual(header.uncleHash, KECCAK256_RLP_ARRAY)) return true;
  return addresses.some((a) => Buffer.from(a).equals(header.coinbase));
}

function filterAddresses(filter: TraceFilter): Uint8Array[] {
  return [...filter.fromAddress, ...filter.toAddress].map((a) => new Uint8Array(Buffer.from(a.slice(2), 'hex')));
}

/**
 * The transactions of a recorded block worth tracing for `filter`: those one of its addresses sent
 * or whose frames may hold one (framesMayHold, per transaction); undefined: every one.
 */
function txPick(
  exec: Awaited<ReturnType<typeof loadExec>>,
  filter: TraceFilter,
): ((header: HeaderRecord) => TxPick) | undefined {
  const addresses = filterAddresses(filter);
  if (addresses.length === 0) return undefined;
  return (header) => ({
    mayHold: (index, sender, rows) =>
      addresses.some((a) => Buffer.from(a).equals(sender) || exec.txFramesMayHold(rows, header.hash, index, a)),
  });
}

export const trace_filter: MethodDef<TraceFilter, JsonLocalizedTrace[]> = {
  cost: PARITY_TRACE_CREDITS,
  params: 'filter (fromBlock, toBlock, fromAddress, toAddress, mode, after, count)',
  errors: `-32602 \`invalid parameters: fromBlock cannot be greater than toBlock\`, \`Block range too large; currently limited to N blocks\` (traceFilterMaxBlocks); -32001 \`block not found: …\`; ${PARITY_TRACE_ERRORS}`,
  decode: (params) => decodeArgs(params, 1, (arg) => decodeTraceFilter(arg(0))),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, f) {
    const head = (await ctx.store.head()).number;
    const start = f.fromBlock === undefined ? 0n : await resolveBlockNumber(ctx, f.fromBlock);
    const end = f.toBlock === undefined ? head : await resolveBlockNumber(ctx, f.toBlock);
    if (start > head) throw blockNotFound({ number: start });
    if (end > head) throw blockNotFound({ number: end });
    if (start > end) throw new InvalidParamsError('invalid parameters: fromBlock cannot be greater than toBlock');
    const cap = ctx.config.traceFilterMaxBlocks;
    if (end - start + 1n > BigInt(cap))
      throw new InvalidParamsError(`Block range too large; currently limited to ${cap} blocks`);
    const exec = await loadExec();
    const budget = new exec.TraceBudget(ctx.config.traceMaxBytes);
    const deadline = parityDeadline(ctx);
    let skip = f.after ?? 0;
    const out: JsonLocalizedTrace[] = [];
    for await (const { header, pick } of blocksToTrace(ctx, start, end, f)) {
      const opts = { deadline, budget, ...(pick === undefined ? {} : { pick }) };
      for (const t of await blockFlatTraces(ctx, header, opts)) {
        if (!matches(f, t)) continue;
        if (skip > 0) {
          skip--;
          continue;
        }
        if (f.count !== undefined && out.length >= f.count) return out;
        out.push(t);
      }
    }
    return out;
  },
};
