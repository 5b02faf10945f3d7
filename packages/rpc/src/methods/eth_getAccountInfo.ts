// reth's eth_getAccountInfo (served "for foundry support": its fork backend asks it first): an
// account's balance, nonce and code in one call, zeros and empty code when there is no account.
import { toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { accountCode, accountMethod } from './account.js';

export interface JsonAccountInfo {
  balance: Hex;
  nonce: Hex;
  code: Hex;
}

/** Not in Infura's table: an account and its code, the reads of eth_getCode, priced like it (80). */
export const eth_getAccountInfo = accountMethod<JsonAccountInfo>(
  async (ctx, account) => ({
    balance: toQuantity(account?.balance ?? 0n),
    nonce: toQuantity(account?.nonce ?? 0n),
    code: await accountCode(ctx, account),
  }),
  true,
);
