import { toQuantity } from '@chainnode/core';
import { accountMethod } from './account.js';

export const eth_getBalance = accountMethod((_ctx, account) => toQuantity(account?.balance ?? 0n));
