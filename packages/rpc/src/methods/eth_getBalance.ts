import { toQuantity } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import type { MethodDef } from '../method.js';
import { decodeAddress, decodeArgs, decodeOptionalBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import { accountAt } from '../reads.js';

export interface AccountParams {
  address: Bytes;
  block: BlockSelector;
}

export const eth_getBalance: MethodDef<AccountParams, Hex> = {
  cost: 80,
  params: 'address, block (number, tag, hash or EIP-1898 object; default latest)',
  errors: '-32000 `header not found`, `header for hash not found`',
  decode: (params) =>
    decodeArgs(params, 2, (arg) => ({ address: decodeAddress(arg(0)), block: decodeOptionalBlockSelector(arg(1)) }), 1),
  async handle(ctx, p) {
    const account = await accountAt(ctx, p.address, p.block);
    return toQuantity(account?.balance ?? 0n);
  },
};
