// What the by-hash and by-number twins of the block methods share: how a block hash names a
// block, the count methods, a transaction by its index, a block or its header as JSON.
import { headerJson, toQuantity } from '@chainnode/core';
import type { BlockRecord, Bytes, Hex } from '@chainnode/core';
import { resolveBlockNumber } from '../context.js';
import type { HandlerContext } from '../context.js';
import { blockText, uncleText } from '../formatters/block.js';
import type { JsonBlock, JsonHeaderFields } from '../formatters/block.js';
import { blockWithTransactionsWriter, transactionText } from '../formatters/transaction-text.js';
import type { JsonAnyTransaction } from '../formatters/transaction.js';
import { JsonText } from '../json-text.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockNumber, decodeBool, decodeHash, decodeIndex } from '../params.js';
import type { BlockSelector } from '../params.js';
import { locate, selectBlock } from '../reads.js';

/** A block hash argument: any stored block, canonical or not. */
export function decodeBlockHashSelector(value: unknown): BlockSelector {
  return { kind: 'hash', hash: decodeHash(value), requireCanonical: false };
}

/** The number of transactions of a block. */
export function transactionCount(block: BlockRecord): number {
  return block.transactionHashes?.length ?? block.transactions.length;
}

/** How the twins name their block: by its hash, or by a block number or tag. */
export type BlockKey = 'hash' | 'number';

const BLOCK_KEY_PARAM: Record<BlockKey, string> = { hash: 'block hash', number: 'block number or tag' };

function decodeBlockKey(by: BlockKey, value: unknown): BlockSelector {
  return by === 'hash' ? decodeBlockHashSelector(value) : decodeBlockNumber(value);
}

/** The hash of the block `sel` names (a given hash as it is; a number's canonical block), if any. */
export async function blockHashOf(ctx: HandlerContext, sel: BlockSelector): Promise<Bytes | undefined> {
  return sel.kind === 'hash' ? sel.hash : ctx.store.canonicalHash(await resolveBlockNumber(ctx, sel));
}

/** A method counting something in the block named by a block hash or by a block number or tag. */
export function blockCountMethod(
  by: BlockKey,
  count: (block: BlockRecord) => number,
): MethodDef<BlockSelector, Hex | null> {
  return {
    cost: 150,
    params: BLOCK_KEY_PARAM[by],
    decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockKey(by, arg(0))),
    async handle(ctx, sel) {
      const block = await selectBlock(ctx, sel);
      return block === undefined ? null : toQuantity(count(block));
    },
  };
}

/** Answers with the thing at `index` of the block `sel` names, as JSON; null when there is none. */
export type IndexedAnswer<R> = (ctx: HandlerContext, sel: BlockSelector, index: bigint) => Promise<JsonText<R> | null>;

export const transactionAtIndex: IndexedAnswer<JsonAnyTransaction> = async (ctx, sel, index) => {
  const block = await selectBlock(ctx, sel);
  if (block === undefined || index >= BigInt(transactionCount(block))) return null;
  const loc = locate(block, Number(index));
  return loc === undefined ? null : new JsonText<JsonAnyTransaction>(transactionText(loc));
};

/** An index past any possible uncle list is simply not found. */
export const uncleAtIndex: IndexedAnswer<JsonBlock> = async (ctx, sel, index) => {
  const hash = await blockHashOf(ctx, sel);
  if (hash === undefined || index > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const uncle = await ctx.store.uncle(hash, Number(index));
  return uncle === undefined ? null : new JsonText<JsonBlock>(uncleText(uncle));
};

/** The block stored under `hash` as JSON, with transaction hashes or full transactions; null if unknown. */
export async function blockJson(
  ctx: HandlerContext,
  hash: Bytes,
  fullTransactions: boolean,
): Promise<JsonBlock | JsonText<JsonBlock> | null> {
  if (!fullTransactions && ctx.store.readyBlockJson !== undefined) {
    const ready = await ctx.store.readyBlockJson(hash);
    if (ready !== undefined) return ctx.memo.ready.ascii(ready, 'hashes', (r) => r.ascii);
  }
  const block = await ctx.store.block(hash);
  if (block === undefined) return null;
  if (fullTransactions) return ctx.memo.blocks.writer(block, 'full', blockWithTransactionsWriter);
  return ctx.memo.blocks.text(block, 'hashes', (b) => blockText(b, false));
}

export interface BlockIndexParams {
  block: BlockSelector;
  index: bigint;
}

/** A method answering with the `what` (transaction, uncle) at an index of a block. */
export function blockIndexMethod<R>(
  by: BlockKey,
  what: string,
  answer: IndexedAnswer<R>,
): MethodDef<BlockIndexParams, R | null> {
  return {
    cost: 150,
    params: `${BLOCK_KEY_PARAM[by]}, ${what} (hex quantity)`,
    decode: (params) =>
      decodeArgs(params, 2, (arg) => ({ block: decodeBlockKey(by, arg(0)), index: decodeIndex(arg(1)) })),
    handle: (ctx, p) => answer(ctx, p.block, p.index),
  };
}

export interface BlockParams {
  block: BlockSelector;
  fullTransactions: boolean;
}

/** eth_getBlockByHash and eth_getBlockByNumber. */
export function blockMethod(by: BlockKey): MethodDef<BlockParams, JsonBlock | null> {
  return {
    cost: 80,
    params: `${BLOCK_KEY_PARAM[by]}, full transaction objects (boolean)`,
    decode: (params) =>
      decodeArgs(params, 2, (arg) => ({ block: decodeBlockKey(by, arg(0)), fullTransactions: decodeBool(arg(1)) })),
    async handle(ctx, p) {
      const hash = await blockHashOf(ctx, p.block);
      return hash === undefined ? null : blockJson(ctx, hash, p.fullTransactions);
    },
  };
}

/**
 * eth_getHeaderByHash and eth_getHeaderByNumber (geth): the header alone, as geth's
 * RPCMarshalHeader writes it (no size, totalDifficulty, transactions, uncles or withdrawals);
 * null for an unknown block.
 */
export function headerMethod(by: BlockKey): MethodDef<BlockSelector, JsonHeaderFields | null> {
  return {
    // Not in Infura's table: one header read, priced like the block methods.
    cost: 80,
    params: BLOCK_KEY_PARAM[by],
    decode: (params) => decodeArgs(params, 1, (arg) => decodeBlockKey(by, arg(0))),
    async handle(ctx, sel) {
      const hash = await blockHashOf(ctx, sel);
      const header = hash === undefined ? undefined : await ctx.store.header(hash);
      return header === undefined ? null : new JsonText<JsonHeaderFields>(headerJson(header));
    },
  };
}
