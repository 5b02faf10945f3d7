// The methods that read one field of an account at a block (balance, nonce, code): one shape of
// params, one decoder, one way to find the account.
import type { AccountRecord, Bytes, Hex } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { decodeAddress, decodeArgs, decodeOptionalBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import { accountAt } from '../reads.js';

export interface AccountParams {
  address: Bytes;
  block: BlockSelector;
}

/** A method answering from the account at `address` in the state of `block` (null: none there). */
export function accountMethod(
  answer: (ctx: HandlerContext, account: AccountRecord | null) => Hex | Promise<Hex>,
): MethodDef<AccountParams, Hex> {
  return {
    cost: 80,
    params: 'address, block (number, tag, hash or EIP-1898 object; default latest)',
    errors: '-32000 `header not found`, `header for hash not found`',
    decode: (params) =>
      decodeArgs(
        params,
        2,
        (arg) => ({ address: decodeAddress(arg(0)), block: decodeOptionalBlockSelector(arg(1)) }),
        1,
      ),
    async handle(ctx, p) {
      return answer(ctx, await accountAt(ctx, p.address, p.block));
    },
  };
}
