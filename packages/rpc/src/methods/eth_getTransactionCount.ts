import { toQuantity } from '@chainnode/core';
import { accountMethod } from './account.js';

export const eth_getTransactionCount = accountMethod((_ctx, account) => toQuantity(account?.nonce ?? 0n));
