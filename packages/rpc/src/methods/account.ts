// The methods that read an account at a block (its balance, nonce or code; reth's account info and
// trie account): one shape of params, one decoder, one way to find the account.
import type { AccountRecord, Bytes, Hex } from '@chainnode/core';
import { bytesEqual, toData } from '@chainnode/core';
import { KECCAK256_NULL } from '@ethereumjs/util';
import { CodeTexts } from '../code-texts.js';
import type { HandlerContext } from '../context.js';
import type { JsonText } from '../json-text.js';
import type { MethodDef } from '../method.js';
import { decodeAddress, decodeArgs, decodeOptionalBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import { accountAt } from '../reads.js';

export interface AccountParams {
  address: Bytes;
  block: BlockSelector;
}

/**
 * A method answering from the account at `address` in the state of `block` (null: none there).
 * `blockRequired`: the block cannot be left out (reth's and anvil's eth_getAccount/AccountInfo);
 * otherwise it defaults to latest.
 */
export function accountMethod<R = Hex>(
  answer: (ctx: HandlerContext, account: AccountRecord | null) => R | JsonText<R> | Promise<R | JsonText<R>>,
  blockRequired = false,
): MethodDef<AccountParams, R> {
  return {
    cost: 80,
    params: `address, block (number, tag, hash or EIP-1898 object; ${blockRequired ? 'required' : 'default latest'})`,
    errors: '-32000 `header not found`, `header for hash not found`',
    decode: (params) =>
      decodeArgs(
        params,
        2,
        (arg) => ({ address: decodeAddress(arg(0)), block: decodeOptionalBlockSelector(arg(1)) }),
        blockRequired ? 2 : 1,
      ),
    async handle(ctx, p) {
      return answer(ctx, await accountAt(ctx, p.address, p.block));
    },
  };
}

/** The code of `account` (empty when there is no account). */
export async function accountCode(ctx: HandlerContext, account: AccountRecord | null): Promise<Hex> {
  if (account === null) return '0x';
  return toData(await storedCode(ctx, account.codeHash));
}

async function storedCode(ctx: HandlerContext, codeHash: Bytes): Promise<Bytes> {
  const code = await ctx.store.code(codeHash);
  if (code === undefined) throw new Error('code missing from the store');
  return code;
}

const codeTexts = new CodeTexts();

/** accountCode as JSON text, kept by code hash (code-texts.ts): eth_getCode's answer. */
export async function accountCodeText(
  ctx: HandlerContext,
  account: AccountRecord | null,
): Promise<Hex | JsonText<Hex>> {
  if (account === null || bytesEqual(account.codeHash, KECCAK256_NULL)) return '0x';
  return codeTexts.get(account.codeHash, () => storedCode(ctx, account.codeHash));
}
