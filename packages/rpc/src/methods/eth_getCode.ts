import { accountCodeText, accountMethod } from './account.js';

export const eth_getCode = accountMethod(accountCodeText);
