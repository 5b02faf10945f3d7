// What handlers get: the store, the config, and block-parameter resolution shared by all
// methods (tags -> numbers, EIP-1898 selectors -> headers).
import { PrunedHistoryError, ServerError } from '@chainnode/core';
import type { InlineBudget } from '@chainnode/exec';
import type {
  AccountProofRecord,
  BlockRecord,
  BlockRef,
  Bytes,
  ChainStore,
  Hex,
  ReadyJson,
  TxWithLocation,
  ReceiptRecord,
} from '@chainnode/core';
import type { AnswerCache } from './call-cache.js';
import type { JsonBlock } from './formatters/block.js';
import type { JsonReceipt } from './formatters/receipt.js';
import type { JsonAccountProof } from './formatters/proof.js';
import type { JsonAnyTransaction } from './formatters/transaction.js';
import { FormatMemo } from './json-text.js';
import type { RpcConfig } from './config.js';
import type { BlockNumberParam, BlockSelector, BlockTag } from './params.js';
import type { MessageSubscriptions } from './subscriptions/hub.js';

export interface HandlerContext {
  store: ChainStore;
  config: RpcConfig;
  /** JSON text of formatted records, per record object (see json-text.ts). */
  memo: FormatMemos;
  /**
   * Absolute time (Date.now() scale) by which the caller stops waiting for this call: set by
   * the offload executor (the deadline of an offloaded call runs from its submission on the
   * main thread, not from when a worker picks it up). Query limits never reach past it.
   */
  deadline?: number;
  /**
   * The work a call run inline on the serving thread may do (opcodes and state reads, shared by
   * its runs) before it stops with InlineTimeUp (call.ts), to be run again on the offload
   * executor (envelope.ts dispatch, INLINE_TRY_WORK); absent: the call runs to its end (or its
   * deadline).
   */
  inline?: InlineBudget;
  /**
   * The subscriptions of the connection this call came on (eth_subscribe / eth_unsubscribe);
   * absent on transports without notifications (HTTP).
   */
  subscriptions?: MessageSubscriptions;
  /**
   * Where eth_sendRawTransaction hands a checked transaction (the upstream a following node
   * follows): resolves to the upstream's answer, rejects with its error ({code, message}).
   */
  forward?: TxForwarder;
  /**
   * The filters of the key that made this call (eth_newFilter and the rest; a filters/engine.ts
   * FilterScope, which methods/filter-id.ts `filtersOf` gives typed: the engine's methods take
   * this context, so the context names only its owner); absent: it holds none.
   */
  filters?: KeyFilters;
  /**
   * The service's kept answers (call-cache.ts): consulted by the envelope for the methods that
   * have MethodDef.remember; absent when callCacheBytes is 0 and in offload workers.
   */
  answers?: AnswerCache;
}

/** What the context knows of the calling key's filters (filters/engine.ts FilterScope). */
export interface KeyFilters {
  readonly owner: string;
}

/** Sends a signed transaction (hex) to the upstream; resolves to what the upstream answered. */
export type TxForwarder = (rawHex: Hex) => Promise<unknown>;

export interface FormatMemos {
  blocks: FormatMemo<BlockRecord, JsonBlock>;
  /** The store's ready-to-serve block answers (ChainStore.readyBlockJson). */
  ready: FormatMemo<ReadyJson, JsonBlock>;
  transactions: FormatMemo<TxWithLocation, JsonAnyTransaction>;
  proofs: FormatMemo<AccountProofRecord, JsonAccountProof>;
  /** Receipts, on the store's receipt records (reads.ts). */
  receipts: FormatMemo<ReceiptRecord, JsonReceipt>;
}

export function createFormatMemos(): FormatMemos {
  return {
    blocks: new FormatMemo(),
    ready: new FormatMemo(),
    transactions: new FormatMemo(),
    proofs: new FormatMemo(),
    receipts: new FormatMemo(),
  };
}

/** The first block the store holds: 0, or N for a node that joined its chain at block N. */
export function firstBlockOf(ctx: HandlerContext): bigint {
  return ctx.store.info().firstBlock ?? 0n;
}

/** Throws geth's 4444 "pruned history unavailable" for a block below the first the store holds. */
export function requireHeld(ctx: HandlerContext, number: bigint): void {
  const first = firstBlockOf(ctx);
  if (number < first) throw new PrunedHistoryError(first);
}

/**
 * Tag or number -> block number. Numbers past the head are returned as they are; a number below
 * the first block the store holds throws PrunedHistoryError; `earliest` is that first block.
 */
export async function resolveBlockNumber(ctx: HandlerContext, p: BlockNumberParam): Promise<bigint> {
  if (p.kind === 'number') {
    requireHeld(ctx, p.number);
    return p.number;
  }
  if (p.tag === 'earliest') return firstBlockOf(ctx);
  return tagToNumber(p.tag, (await ctx.store.head()).number, ctx.config, firstBlockOf(ctx));
}

/**
 * Resolution against a head already read (one consistent head for a whole query); `first` is the
 * first block the store holds (what `earliest` names). Callers check the range against it.
 */
export function numberAgainstHead(p: BlockNumberParam, head: bigint, config: RpcConfig, first = 0n): bigint {
  return p.kind === 'number' ? p.number : tagToNumber(p.tag, head, config, first);
}

/** pending = latest; safe/finalized = configured depths below the head (no consensus client). */
function tagToNumber(tag: BlockTag, head: bigint, config: RpcConfig, first: bigint): bigint {
  switch (tag) {
    case 'earliest':
      return first;
    case 'latest':
    case 'pending':
      return head;
    case 'safe':
      return below(head, config.safeDepth);
    case 'finalized':
      return below(head, config.finalizedDepth);
  }
}

function below(head: bigint, depth: number): bigint {
  const n = head - BigInt(depth);
  return n < 0n ? 0n : n;
}

/**
 * State root of the block a storage/proof query reads, with geth's errors: -32000 "header not
 * found" for a number past the head, "header for hash not found" for an unknown hash. Only
 * canonical blocks are stored, so requireCanonical holds for every hash that resolves.
 */
export async function resolveStateRoot(ctx: HandlerContext, sel: BlockSelector): Promise<Bytes> {
  if (sel.kind === 'hash') {
    const root = await rootOf(ctx, sel.hash);
    if (root === undefined) throw new ServerError('header for hash not found');
    return root;
  }
  const number = await resolveBlockNumber(ctx, sel);
  let root: Bytes | undefined;
  if (ctx.store.canonicalStateRoot !== undefined) root = await ctx.store.canonicalStateRoot(number);
  else {
    const hash = await ctx.store.canonicalHash(number);
    root = hash === undefined ? undefined : await rootOf(ctx, hash);
  }
  if (root === undefined) throw new ServerError('header not found');
  return root;
}

async function rootOf(ctx: HandlerContext, hash: Bytes): Promise<Bytes | undefined> {
  return ctx.store.stateRoot !== undefined ? ctx.store.stateRoot(hash) : (await ctx.store.header(hash))?.stateRoot;
}

/** The canonical block a state read selects, and its state root. */
export interface SelectedState extends BlockRef {
  readonly root: Bytes;
}

/**
 * The block and state root a state read selects, with resolveStateRoot's errors: what a read from
 * the store's state history needs (the block) and what its fallback, the trie walk, needs (the root).
 */
export async function resolveState(ctx: HandlerContext, sel: BlockSelector): Promise<SelectedState> {
  const byHash = sel.kind === 'hash';
  const number = byHash ? await ctx.store.blockNumber(sel.hash) : await resolveBlockNumber(ctx, sel);
  const hash = number === undefined ? undefined : byHash ? sel.hash : await ctx.store.canonicalHash(number);
  const root = hash === undefined ? undefined : await rootOf(ctx, hash);
  if (number === undefined || hash === undefined || root === undefined)
    throw new ServerError(byHash ? 'header for hash not found' : 'header not found');
  return { number, hash, root };
}
