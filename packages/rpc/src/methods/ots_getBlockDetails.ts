// Otterscan's block methods (Erigon's ots API): ots_getBlockDetails and ots_getBlockDetailsByHash
// (the block without its transactions, with its transaction count, its issuance and the fees its
// transactions paid) and ots_getBlockTransactions (a page of the block's transactions with their
// receipts, logs left out). They read the block and all its receipts, as eth_getBlockReceipts does,
// and are priced as it is (1,000 credits); no re-execution.
import type { JsonReceipt } from '../formatters/receipt.js';
import type { MethodDef } from '../method.js';
import { blockIssuance, otsBlock, receiptsOf, totalFees } from '../ots.js';
import type { JsonIssuance } from '../ots.js';
import { decodeArgs, decodeErigonBlockNumber, decodeGoUint } from '../params.js';
import type { BlockSelector } from '../params.js';
import { selectBlock } from '../reads.js';
import { decodeBlockHashSelector } from './block-lookup.js';

export interface JsonBlockDetails {
  block: ReturnType<typeof otsBlock>;
  issuance: JsonIssuance;
  totalFees: string;
}

function blockDetailsMethod(
  params: string,
  decode: (v: unknown) => BlockSelector,
): MethodDef<BlockSelector, JsonBlockDetails | null> {
  return {
    cost: 1000,
    params,
    decode: (p) => decodeArgs(p, 1, (arg) => decode(arg(0))),
    async handle(ctx, sel) {
      const block = await selectBlock(ctx, sel);
      if (block === undefined) return null;
      return {
        block: otsBlock(block, false),
        issuance: await blockIssuance(ctx, block),
        totalFees: totalFees(await receiptsOf(ctx, block)),
      };
    },
  };
}

export const ots_getBlockDetails = blockDetailsMethod(
  'block number (a JSON number, hex quantity or tag)',
  decodeErigonBlockNumber,
);
export const ots_getBlockDetailsByHash = blockDetailsMethod('block hash', decodeBlockHashSelector);

export interface BlockTransactionsParams {
  block: BlockSelector;
  page: number;
  pageSize: number;
}

export interface JsonBlockTransactions {
  fullblock: ReturnType<typeof otsBlock>;
  receipts: (Omit<JsonReceipt, 'logs' | 'logsBloom'> & { logs: null; logsBloom: null })[];
}

export const ots_getBlockTransactions: MethodDef<BlockTransactionsParams, JsonBlockTransactions | null> = {
  cost: 1000,
  params: 'block number (a JSON number, hex quantity or tag), page number (0: the last page), page size (at most 255)',
  decode: (params) =>
    decodeArgs(params, 3, (arg) => ({
      block: decodeErigonBlockNumber(arg(0)),
      page: decodeGoUint(arg(1), 'page number', 8),
      pageSize: decodeGoUint(arg(2), 'page size', 8),
    })),
  async handle(ctx, p) {
    const block = await selectBlock(ctx, p.block);
    if (block === undefined) return null;
    const full = otsBlock(block, true);
    // Erigon pages from the block's end: page 0 is its last pageSize transactions.
    const end = Math.max(0, full.transactionCount - p.page * p.pageSize);
    const start = Math.max(0, end - p.pageSize);
    const txs = (full.transactions ?? []) as { input?: string }[];
    // Erigon crops each transaction's input to its selector.
    for (const tx of txs) if (tx.input !== undefined && tx.input.length > 10) tx.input = tx.input.slice(0, 10);
    full.transactions = txs.slice(start, end) as never;
    const receipts = (await receiptsOf(ctx, block))
      .slice(start, end)
      .map((r) => ({ ...r, logs: null, logsBloom: null }));
    return { fullblock: full, receipts };
  },
};
