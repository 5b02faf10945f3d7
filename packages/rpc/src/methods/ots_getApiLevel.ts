// Otterscan's ots_getApiLevel (the API level Otterscan requires, 8, as Erigon answers) and
// ots_hasCode (whether an address holds code at a block), and erigon_getHeaderByNumber, which
// Otterscan calls too: the header alone, as eth_getHeaderByNumber, with Erigon's error when the
// block is unknown.
import { ServerError } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import { resolveBlockNumber } from '../context.js';
import type { JsonHeaderFields } from '../formatters/block.js';
import type { JsonText } from '../json-text.js';
import type { MethodDef } from '../method.js';
import { OTS_API_LEVEL } from '../ots.js';
import { decodeArgs, decodeErigonBlockNumber, noParams } from '../params.js';
import type { BlockNumberParam, BlockSelector } from '../params.js';
import { accountCode, accountMethod } from './account.js';
import { headerMethod } from './block-lookup.js';

export const ots_getApiLevel: MethodDef<void, number> = {
  // A constant, like eth_chainId.
  cost: 0,
  params: 'none',
  decode: noParams,
  handle: async () => OTS_API_LEVEL,
};

/** eth_getCode's reads and price, answering whether the code is not empty. */
export const ots_hasCode = accountMethod<boolean>(async (ctx, account) => (await accountCode(ctx, account)) !== '0x');

const header = headerMethod('number');

export const erigon_getHeaderByNumber: MethodDef<BlockSelector, JsonHeaderFields> = {
  ...header,
  params: 'block number (a JSON number, hex quantity or tag)',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeErigonBlockNumber(arg(0))),
  errors: '-32000 `block header not found: N`',
  async handle(ctx: HandlerContext, sel: BlockSelector) {
    const answer = await header.handle(ctx, sel);
    if (answer !== null) return answer as JsonHeaderFields | JsonText<JsonHeaderFields>;
    throw new ServerError(`block header not found: ${await resolveBlockNumber(ctx, sel as BlockNumberParam)}`);
  },
};
