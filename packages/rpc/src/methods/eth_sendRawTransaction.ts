import { RpcError, ServerError, toData } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import type { CheckedTransaction } from '@chainnode/exec';
import { loadExec } from '../call.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, jsonType, ParamError } from '../params.js';
import { keyFiltersOf } from './filter-id.js';

export interface SendRawParams {
  raw: Bytes;
  hex: Hex;
}

/** Longest upstream error message relayed (an upstream's answer is untrusted input). */
const MAX_UPSTREAM_MESSAGE = 256;

/**
 * Checked here, then forwarded to the upstream this node follows (never kept: there is no pool).
 * Without an upstream the node refuses, since nothing here could ever mine the transaction.
 */
export const eth_sendRawTransaction: MethodDef<SendRawParams, Hex> = {
  cost: 80,
  params: 'signed transaction (hex; a blob transaction in its network form)',
  errors:
    "-32000 `transactions are not accepted: this node follows no upstream`, `typed transaction too short`, `invalid transaction: <why it does not decode>`, `invalid sender`, `invalid chain id`, `only replay-protected (EIP-155) transactions allowed over RPC`, `nonce too low`, `insufficient funds for gas * price + value`; the upstream's own refusal, relayed",
  decode: (params) =>
    decodeArgs(params, 1, (arg) => {
      const v = arg(0);
      if (typeof v !== 'string' || !/^0[xX]([0-9a-fA-F]{2})*$/.test(v))
        throw new ParamError(`expected a hex string of the signed transaction, got ${jsonType(v)}`);
      return { raw: Uint8Array.from(Buffer.from(v.slice(2), 'hex')), hex: v.toLowerCase() as Hex };
    }),
  async handle(ctx, p) {
    const forward = ctx.forward;
    if (forward === undefined) throw new ServerError('transactions are not accepted: this node follows no upstream');
    const head = await ctx.store.head();
    const header = await ctx.store.header(head.hash);
    if (header === undefined) throw new Error('head header missing');
    const { checkRawTransaction, TxRefusedError } = await loadExec();
    let tx: CheckedTransaction;
    try {
      tx = await checkRawTransaction(ctx.store.info(), p.raw, header);
    } catch (err) {
      if (err instanceof TxRefusedError) throw new ServerError(err.message);
      throw err;
    }
    const account = await ctx.store.account(header.stateRoot, tx.from);
    const nonce = account?.nonce ?? 0n;
    const balance = account?.balance ?? 0n;
    if (tx.nonce < nonce)
      throw new ServerError(`nonce too low: address ${toData(tx.from)}, tx: ${tx.nonce} state: ${nonce}`);
    if (balance < tx.maxCost)
      throw new ServerError(
        `insufficient funds for gas * price + value: address ${toData(tx.from)} have ${balance} want ${tx.maxCost}`,
      );
    const hash = toData(tx.hash);
    let answer: unknown;
    try {
      answer = await forward(p.hex);
    } catch (err) {
      const e = err as { code?: unknown; message?: unknown };
      if (typeof e.code === 'number' && Number.isSafeInteger(e.code) && typeof e.message === 'string')
        throw new RpcError(e.code, e.message.slice(0, MAX_UPSTREAM_MESSAGE).replace(/[^\x20-\x7e]/g, '?'));
      throw new ServerError('the upstream did not take the transaction');
    }
    // The upstream's answer is checked, not trusted: it must name this very transaction.
    if (typeof answer !== 'string' || answer.toLowerCase() !== hash)
      throw new ServerError('the upstream answered with another transaction hash');
    await keyFiltersOf(ctx)?.forwarded(hash);
    return hash;
  },
};
