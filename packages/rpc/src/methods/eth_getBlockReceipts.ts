import type { JsonReceipt } from '../formatters/receipt.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';
import { blockReceipts, selectBlockHash } from '../reads.js';

export interface GetBlockReceiptsParams {
  block: BlockSelector;
}

export const eth_getBlockReceipts: MethodDef<GetBlockReceiptsParams, JsonReceipt[] | null> = {
  cost: 1000,
  params: 'block (number, tag, hash or EIP-1898 object)',
  decode: (params) => decodeArgs(params, 1, (arg) => ({ block: decodeBlockSelector(arg(0)) })),
  async handle(ctx, p) {
    const hash = await selectBlockHash(ctx, p.block);
    return hash === undefined ? null : ((await blockReceipts(ctx, hash)) ?? null);
  },
};
