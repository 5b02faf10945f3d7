import type { Bytes } from '@chainnode/core';
import { uncleText } from '../formatters/block.js';
import { JsonText } from '../json-text.js';
import type { JsonBlock } from '../formatters/block.js';
import { decodeArgs, decodeHash, decodeIndex } from '../params.js';
import type { MethodDef } from '../method.js';
import { uncleAt } from './uncle.js';

export interface GetUncleByHashParams {
  hash: Bytes;
  index: bigint;
}

export const eth_getUncleByBlockHashAndIndex: MethodDef<GetUncleByHashParams, JsonBlock | null> = {
  cost: 150,
  params: 'block hash, uncle index (hex quantity)',
  decode: (params) => decodeArgs(params, 2, (arg) => ({ hash: decodeHash(arg(0)), index: decodeIndex(arg(1)) })),
  async handle(ctx, p) {
    const uncle = await uncleAt(ctx, p.hash, p.index);
    return uncle === undefined ? null : new JsonText<JsonBlock>(uncleText(uncle));
  },
};
