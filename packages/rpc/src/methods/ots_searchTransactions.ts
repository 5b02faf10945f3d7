// Otterscan's address history (Erigon's ots API): ots_searchTransactionsBefore and
// ots_searchTransactionsAfter, the transactions an address touched as their sender, recipient,
// created contract or log emitter, or that their recorded call frames name, a page at a time,
// newest first, each with its receipt and its block's timestamp. Answered from the store's address-appearance index: one seek into the
// address's posting lists, then the page's transactions and their receipts. A page reads about
// as much as eth_getBlockReceipts and is priced as it (1,000 credits).
import { ServerError } from '@chainnode/core';
import type { AppearancePage, Bytes, TxWithLocation } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import type { JsonReceipt } from '../formatters/receipt.js';
import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { transactionText } from '../formatters/transaction-text.js';
import { JsonText } from '../json-text.js';
import type { MethodDef } from '../method.js';
import { OTS_MAX_PAGE_SIZE } from '../ots.js';
import { decodeAddress, decodeArgs, decodeGoUint } from '../params.js';
import { locate, selectBlock, transactionReceipt } from '../reads.js';

export interface SearchParams {
  address: Bytes;
  block: number;
  pageSize: number;
}

export interface JsonSearchPage {
  txs: JsonAnyTransaction[];
  receipts: (JsonReceipt & { timestamp: number })[];
  firstPage: boolean;
  lastPage: boolean;
}

export const NO_INDEX_MESSAGE =
  "this datadir's address-appearance index does not cover its whole chain (it was written before the index existed): run `node-cli db convert` on it to search it";

/**
 * The page's transactions and receipts as JSON texts (Erigon's: the receipt with its block's
 * timestamp last, a number), spliced into the answer as they are.
 */
async function pageOf(ctx: HandlerContext, page: AppearancePage): Promise<{ txs: string[]; receipts: string[] }> {
  const txs: string[] = [];
  const receipts: string[] = [];
  for (const p of page.positions) {
    // The one transaction and its receipt, each read alone: a page's blocks are not decoded whole.
    const loc = await transactionAt(ctx, p.number, p.index);
    const receipt = loc === undefined ? undefined : await transactionReceipt(ctx, loc);
    if (loc === undefined || receipt === undefined)
      throw new ServerError(`transaction ${p.index} of block #${p.number} not found`);
    txs.push(transactionText(loc));
    // { ...receipt, timestamp }: a receipt's JSON has no field of that name.
    receipts.push(`${receipt.text.slice(0, -1)},"timestamp":${Number(loc.blockTimestamp)}}`);
  }
  return { txs, receipts };
}

/** The page's answer as text, the fields in Erigon's order. */
function pageText(txs: string[], receipts: string[], firstPage: boolean, lastPage: boolean): JsonText<JsonSearchPage> {
  return new JsonText<JsonSearchPage>(
    `{"txs":[${txs.join(',')}],"receipts":[${receipts.join(',')}],"firstPage":${firstPage},"lastPage":${lastPage}}`,
  );
}

/** Transaction `index` of canonical block `number`, from the store's transactionAt, else the block. */
async function transactionAt(ctx: HandlerContext, number: bigint, index: number): Promise<TxWithLocation | undefined> {
  const alone = await ctx.store.transactionAt?.(number, index);
  if (alone !== undefined) return alone;
  const block = await selectBlock(ctx, { kind: 'number', number });
  return block === undefined ? undefined : locate(block, index);
}

function searchMethod(direction: 'before' | 'after'): MethodDef<SearchParams, JsonSearchPage> {
  return {
    cost: 1000,
    params: `address, block number (a JSON number; 0: from the ${direction === 'before' ? 'newest' : 'oldest'} block), page size (a JSON number, at most ${OTS_MAX_PAGE_SIZE})`,
    errors: `-32000 \`max allowed page size: ${OTS_MAX_PAGE_SIZE}\`, \`${NO_INDEX_MESSAGE}\``,
    decode: (params) =>
      decodeArgs(params, 3, (arg) => ({
        address: decodeAddress(arg(0)),
        block: decodeGoUint(arg(1), 'block number', 64),
        pageSize: decodeGoUint(arg(2), 'page size', 16),
      })),
    async handle(ctx, p) {
      if (p.pageSize > OTS_MAX_PAGE_SIZE) throw new ServerError(`max allowed page size: ${OTS_MAX_PAGE_SIZE}`);
      const page = await ctx.store.appearances?.({
        address: p.address,
        direction,
        block: p.block === 0 ? undefined : BigInt(p.block),
        count: p.pageSize,
      });
      if (page === undefined) throw new ServerError(NO_INDEX_MESSAGE);
      const { txs, receipts } = await pageOf(ctx, page);
      // Erigon: pages are newest first either way; the edge the search started from is known.
      if (direction === 'before') return pageText(txs, receipts, p.block === 0, !page.more);
      return pageText(txs.reverse(), receipts.reverse(), !page.more, p.block === 0);
    },
  };
}

export const ots_searchTransactionsBefore = searchMethod('before');
export const ots_searchTransactionsAfter = searchMethod('after');
