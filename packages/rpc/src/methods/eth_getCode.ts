import { accountCode, accountMethod } from './account.js';

export const eth_getCode = accountMethod(accountCode);
