// reth's eth_getAccount: the account as the state trie holds it (alloy's TrieAccount: nonce,
// balance, storage root, code hash), or null when the state has no such account.
import { toData, toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { accountMethod } from './account.js';

export interface JsonTrieAccount {
  nonce: Hex;
  balance: Hex;
  storageRoot: Hex;
  codeHash: Hex;
}

/** Not in Infura's table: one account read, priced like eth_getBalance (80). */
export const eth_getAccount = accountMethod<JsonTrieAccount | null>(
  (_ctx, account) =>
    account === null
      ? null
      : {
          nonce: toQuantity(account.nonce),
          balance: toQuantity(account.balance),
          storageRoot: toData(account.storageRoot),
          codeHash: toData(account.codeHash),
        },
  true,
);
