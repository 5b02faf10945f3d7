import { toData } from '@chainnode/core';
import { accountMethod } from './account.js';

export const eth_getCode = accountMethod(async (ctx, account) => {
  if (account === null) return '0x';
  const code = await ctx.store.code(account.codeHash);
  if (code === undefined) throw new Error('code missing from the store');
  return toData(code);
});
