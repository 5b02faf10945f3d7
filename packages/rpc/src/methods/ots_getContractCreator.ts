// Otterscan's account-history methods (Erigon's ots API), answered from the state the node keeps
// at every block: ots_getTransactionBySenderAndNonce (a binary search over the sender's nonce by
// block, then the block's transactions) and ots_getContractCreator (a binary search for the block
// where the address got its code, then that block re-executed to find the creating frame).
import { ServerError, keccak256, toData } from '@chainnode/core';
import type { AccountRecord, Bytes, Hex } from '@chainnode/core';
import { firstBlockOf } from '../context.js';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { loadExec } from '../call.js';
import { replayWithOts } from '../ots.js';
import { decodeAddress, decodeArgs, decodeGoUint } from '../params.js';
import { accountAt, selectBlock } from '../reads.js';
import { TRACE_COST } from '../trace.js';

const EMPTY_CODE_HASH = toData(keccak256(new Uint8Array(0)));

async function accountAtNumber(ctx: HandlerContext, address: Bytes, number: bigint): Promise<AccountRecord | null> {
  return accountAt(ctx, address, { kind: 'number', number });
}

/**
 * The lowest block in [first held, head] after which `holds` is true of the account, given that
 * it holds at the head and, once true, stays true; undefined when it already holds at the first.
 */
async function firstBlockWhere(
  ctx: HandlerContext,
  address: Bytes,
  holds: (a: AccountRecord | null) => boolean,
): Promise<bigint | undefined> {
  let lo = firstBlockOf(ctx);
  let hi = (await ctx.store.head()).number;
  if (holds(await accountAtNumber(ctx, address, lo))) return undefined;
  // holds(hi), !holds(lo)
  while (hi - lo > 1n) {
    const mid = (lo + hi) / 2n;
    if (holds(await accountAtNumber(ctx, address, mid))) hi = mid;
    else lo = mid;
  }
  return hi;
}

export interface SenderNonceParams {
  address: Bytes;
  nonce: number;
}

export const ots_getTransactionBySenderAndNonce: MethodDef<SenderNonceParams, Hex | null> = {
  // About log2(chain length) account reads (each the seek of an 80-credit eth_getTransactionCount)
  // and one block read.
  cost: 300,
  params: 'sender address, nonce (a JSON number)',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ address: decodeAddress(arg(0)), nonce: decodeGoUint(arg(1), 'nonce', 64) })),
  async handle(ctx, p) {
    const nonce = BigInt(p.nonce);
    const past = (a: AccountRecord | null) => (a?.nonce ?? 0n) > nonce;
    const head = (await ctx.store.head()).number;
    if (!past(await accountAtNumber(ctx, p.address, head))) return null;
    const number = await firstBlockWhere(ctx, p.address, past);
    if (number === undefined) return null;
    const block = await selectBlock(ctx, { kind: 'number', number });
    const hex = toData(p.address);
    const tx = block?.transactions.find((t) => t.nonce === nonce && toData(t.from) === hex);
    return tx === undefined ? null : toData(tx.hash);
  },
};

export interface JsonContractCreator {
  hash: Hex;
  creator: Hex;
}

export const ots_getContractCreator: MethodDef<Bytes, JsonContractCreator | null> = {
  // The binary search's account reads, then one block re-executed with a tracer (debug_trace*'s work).
  cost: 1000,
  params: 'contract address',
  errors: '-32000 `execution timeout`',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeAddress(arg(0))),
  offload: true,
  estimateCost: async () => TRACE_COST,
  async handle(ctx, address) {
    const hasCode = (a: AccountRecord | null) => a !== null && toData(a.codeHash) !== EMPTY_CODE_HASH;
    const head = (await ctx.store.head()).number;
    if (!hasCode(await accountAtNumber(ctx, address, head))) return null;
    const number = await firstBlockWhere(ctx, address, hasCode);
    if (number === undefined) return null;
    const hash = await ctx.store.canonicalHash(number);
    const header = hash === undefined ? undefined : await ctx.store.header(hash);
    if (header === undefined) throw new ServerError(`block #${number} not found`);
    const exec = await loadExec();
    const traces = await replayWithOts(ctx, header, () => new exec.OtsCreatorTracer(address));
    for (const t of traces) if (t.result !== null) return { hash: toData(t.hash), creator: t.result as Hex };
    return null;
  },
};
