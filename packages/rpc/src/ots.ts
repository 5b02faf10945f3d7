// What Otterscan's ots_* methods share (Erigon's ots API level 8 is the reference): a stored
// transaction re-executed with one of Otterscan's tracers, a block's issuance (ethash rewards;
// none after the merge) and total fees, and a block as Erigon's delegateGetBlockByNumber shapes it.
import { ServerError, toData, toQuantity } from '@chainnode/core';
import type { BlockRecord, Bytes, HeaderRecord, TxWithLocation } from '@chainnode/core';
import type { TraceBudget, Tracer } from '@chainnode/exec';
import { forksOf } from './chain/forks.js';
import type { HandlerContext } from './context.js';
import { formatBlock } from './formatters/block.js';
import type { JsonBlock } from './formatters/block.js';
import type { JsonReceipt } from './formatters/receipt.js';
import { blockReceipts } from './reads.js';
import { decodeTraceConfig, replayStoredBlock, traceTime } from './trace.js';

/** Erigon's ots API level: what Otterscan checks before it uses the node. */
export const OTS_API_LEVEL = 8;

/** The largest page the searches serve (Erigon's default --otsearch.max.pagesize). */
export const OTS_MAX_PAGE_SIZE = 25;

/** The stored transaction `hash` with its block's header; Erigon's error when unknown. */
export async function otsTransaction(
  ctx: HandlerContext,
  hash: Bytes,
): Promise<{ loc: TxWithLocation; header: HeaderRecord }> {
  const loc = await ctx.store.transaction(hash);
  const header = loc === undefined ? undefined : await ctx.store.header(loc.blockHash);
  if (loc === undefined || header === undefined) throw new ServerError(`transaction ${toData(hash)} not found`);
  return { loc, header };
}

/**
 * Re-executes the stored block `header` (up to its transaction `only`, and only that one traced,
 * when given) with the tracers `make` builds, one per transaction; geth's default trace timeout
 * and the node's traceMaxBytes apply.
 */
export function replayWithOts(
  ctx: HandlerContext,
  header: HeaderRecord,
  make: (budget: TraceBudget) => Tracer,
  only?: number,
): Promise<{ hash: Bytes; result: unknown }[]> {
  return replayStoredBlock(ctx, header, make, traceTime(ctx, decodeTraceConfig(undefined)), only);
}

/** The stored transaction `loc` re-executed with the tracer `make` builds: the tracer's answer. */
export async function traceWithOts(
  ctx: HandlerContext,
  loc: TxWithLocation,
  header: HeaderRecord,
  make: (budget: TraceBudget) => Tracer,
): Promise<unknown> {
  const [trace] = await replayWithOts(ctx, header, make, loc.transactionIndex);
  if (trace === undefined) throw new ServerError(`transaction ${toData(loc.tx.hash)} not found`);
  return trace.result;
}

const ETHER = 10n ** 18n;

export interface JsonIssuance {
  blockReward: string;
  uncleReward: string;
  issuance: string;
}

/**
 * Erigon's delegateIssuance: the ethash rewards of a proof-of-work block (the miner's, with 1/32
 * of it per uncle included, and the uncles' miners'); nothing for a proof-of-stake block.
 */
export async function blockIssuance(ctx: HandlerContext, block: BlockRecord): Promise<JsonIssuance> {
  const h = block.header;
  let miner = 0n;
  let uncles = 0n;
  if (h.difficulty > 0n && h.number > 0n) {
    const forks = forksOf(ctx.store.info());
    const from = (key: 'byzantiumBlock' | 'constantinopleBlock') => {
      const at = forks.blockFork(key);
      return at !== undefined && h.number >= at;
    };
    const base = from('constantinopleBlock') ? 2n * ETHER : from('byzantiumBlock') ? 3n * ETHER : 5n * ETHER;
    miner = base;
    for (let i = 0; i < block.uncleHashes.length; i++) {
      const uncle = await ctx.store.uncle(h.hash, i);
      if (uncle === undefined) continue;
      uncles += ((uncle.header.number + 8n - h.number) * base) / 8n;
      miner += base / 32n;
    }
  }
  return { blockReward: toQuantity(miner), uncleReward: toQuantity(uncles), issuance: toQuantity(miner + uncles) };
}

/** The receipts of the stored block `block` as geth's JSON objects. */
export async function receiptsOf(ctx: HandlerContext, block: BlockRecord): Promise<JsonReceipt[]> {
  const receipts = await blockReceipts(ctx, block.header.hash);
  if (receipts === undefined) throw new ServerError(`block #${block.header.number} not found`);
  return JSON.parse(receipts.text) as JsonReceipt[];
}

/** Erigon's delegateBlockFees: each receipt's gas used times its effective gas price, summed. */
export function totalFees(receipts: JsonReceipt[]): string {
  let fees = 0n;
  for (const r of receipts) fees += BigInt(r.gasUsed) * BigInt(r.effectiveGasPrice);
  return toQuantity(fees);
}

/** Erigon's delegateGetBlockByNumber: the block JSON with its transaction count and no logs bloom. */
export function otsBlock(
  block: BlockRecord,
  fullTransactions: boolean,
): Omit<JsonBlock, 'logsBloom'> & { logsBloom: null; transactionCount: number } {
  const json = formatBlock(block, fullTransactions) as Partial<JsonBlock>;
  const count = block.transactionHashes?.length ?? block.transactions.length;
  if (!fullTransactions) delete json.transactions;
  return { ...(json as JsonBlock), transactionCount: count, logsBloom: null };
}
