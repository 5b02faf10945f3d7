// Shared lookups of the read methods (receipts, counts, state): block selectors to canonical
// blocks, a block's receipts as geth's JSON, and an account at a selected state.
import type {
  AccountRecord,
  BlockRecord,
  Bytes,
  HeaderRecord,
  ReceiptRecord,
  TxRecord,
  TxWithLocation,
} from '@chainnode/core';
import { forksOf } from './chain/forks.js';
import { resolveBlockNumber, resolveState } from './context.js';
import type { HandlerContext, SelectedState } from './context.js';
import { receiptText as writeReceiptText } from './formatters/receipt.js';
import type { JsonReceipt } from './formatters/receipt.js';
import { JsonText } from './json-text.js';
import type { BlockNumberParam, BlockSelector } from './params.js';

/** The canonical block a number, tag or hash selects; undefined when there is none. */
export async function selectBlock(ctx: HandlerContext, sel: BlockSelector): Promise<BlockRecord | undefined> {
  const hash = await selectBlockHash(ctx, sel);
  return hash === undefined ? undefined : ctx.store.block(hash);
}

export async function selectBlockHash(ctx: HandlerContext, sel: BlockSelector): Promise<Bytes | undefined> {
  if (sel.kind === 'hash') return (await ctx.store.blockNumber(sel.hash)) === undefined ? undefined : sel.hash;
  return ctx.store.canonicalHash(await resolveBlockNumber(ctx, sel as BlockNumberParam));
}

/**
 * The JSON text of receipt `i` of a block's receipts (geth's shape), remembered on the store's
 * receipt record (FormatMemo: the store's receipts cache hands out the same records until a reorg
 * replaces them), so a receipt asked again, alone or in its block, is formatted once.
 */
function receiptText(
  ctx: HandlerContext,
  header: HeaderRecord,
  tx: TxRecord,
  i: number,
  r: ReceiptRecord,
  previous: ReceiptRecord | undefined,
): JsonText<JsonReceipt> {
  return ctx.memo.receipts.text(r, 'json', () =>
    writeReceiptText({ header, forks: forksOf(ctx.store.info()) }, tx, i, r, previous),
  );
}

/**
 * The receipts of the canonical block `hash` as geth's JSON, in transaction order; undefined when
 * unknown. When every receipt's text is remembered already, the block itself is not read.
 */
export async function blockReceipts(ctx: HandlerContext, hash: Bytes): Promise<JsonText<JsonReceipt[]> | undefined> {
  const receipts = await ctx.store.receipts(hash);
  if (receipts === undefined) return undefined;
  const texts: string[] = [];
  for (const r of receipts) {
    const t = ctx.memo.receipts.peek(r, 'json');
    if (t === undefined) break;
    texts.push(t.text);
  }
  if (texts.length < receipts.length) {
    const block = await ctx.store.block(hash);
    if (block === undefined) return undefined;
    const txs = block.transactions;
    if (receipts.length !== txs.length)
      throw new Error(`block ${block.header.number}: ${receipts.length} receipts for ${txs.length} transactions`);
    for (let i = texts.length; i < receipts.length; i++)
      texts.push(
        receiptText(ctx, block.header, txs[i] as TxRecord, i, receipts[i] as ReceiptRecord, receipts[i - 1]).text,
      );
  }
  return new JsonText<JsonReceipt[]>(`[${texts.join(',')}]`);
}

/**
 * The receipt of one located transaction; undefined when its block is no longer canonical. Read
 * alone where the store can (receiptAt: the block's other receipts and their logs are not built),
 * else from the block's receipts (also when receiptAt has none: a joined node's store answers
 * blocks below its first from its history upstream through receipts() only).
 */
export async function transactionReceipt(
  ctx: HandlerContext,
  loc: TxWithLocation,
): Promise<JsonText<JsonReceipt> | undefined> {
  const i = loc.transactionIndex;
  const [one, header] = await Promise.all([ctx.store.receiptAt?.(loc.blockHash, i), ctx.store.header(loc.blockHash)]);
  if (header === undefined) return undefined;
  if (one !== undefined) return receiptText(ctx, header, loc.tx, i, one.receipt, one.previous);
  const receipts = await ctx.store.receipts(loc.blockHash);
  if (receipts === undefined) return undefined;
  if (receipts[i] === undefined) throw new Error(`block ${loc.blockNumber}: no receipt for transaction ${i}`);
  return receiptText(ctx, header, loc.tx, i, receipts[i] as ReceiptRecord, receipts[i - 1]);
}

/**
 * The account `address` at the selected state (geth's errors for unknown blocks); null when absent.
 * From the store's state history when it keeps one and the block is still canonical, else by a
 * walk of the block's state trie.
 */
export async function accountAt(
  ctx: HandlerContext,
  address: Bytes,
  sel: BlockSelector,
): Promise<AccountRecord | null> {
  return accountIn(ctx, await resolveState(ctx, sel), address);
}

/** The account `address` in `state` (null: absent), from the state history as accountAt, else the trie. */
export async function accountIn(
  ctx: HandlerContext,
  state: SelectedState,
  address: Bytes,
): Promise<AccountRecord | null> {
  const fromHistory = await ctx.store.accountAtBlock?.(state, address);
  return fromHistory !== undefined ? fromHistory : ctx.store.account(state.root, address);
}

/** The storage word `slot` of `address` in `state` (32 bytes), from the state history as accountAt, else the trie. */
export async function storageAt(
  ctx: HandlerContext,
  state: SelectedState,
  address: Bytes,
  slot: Bytes,
): Promise<Bytes> {
  const fromHistory = await ctx.store.storageAtBlock?.(state, address, slot);
  return fromHistory ?? ctx.store.storageAt(state.root, address, slot);
}

/** The state after the block `header` names, by block (an EVM's base state below the state trie's window). */
export function stateOfHeader(header: HeaderRecord): SelectedState {
  return { number: header.number, hash: header.hash, root: header.stateRoot };
}

/** A transaction of a block with its location (what formatTransaction shows). */
export function locate(block: BlockRecord, index: number): TxWithLocation | undefined {
  const tx = block.transactions[index];
  if (tx === undefined) return undefined;
  const out: TxWithLocation = {
    tx,
    blockHash: block.header.hash,
    blockNumber: block.header.number,
    transactionIndex: index,
    blockTimestamp: block.header.timestamp,
  };
  if (block.header.baseFeePerGas !== undefined) out.baseFeePerGas = block.header.baseFeePerGas;
  return out;
}
