import { toData } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import { resolveState } from '../context.js';
import { decodeAddress, decodeArgs, decodeOptionalBlockSelector, decodeStorageKey } from '../params.js';
import type { BlockSelector } from '../params.js';
import type { MethodDef } from '../method.js';
import { storageAt } from '../reads.js';

export interface GetStorageAtParams {
  address: Bytes;
  slot: Bytes;
  block: BlockSelector;
}

export const eth_getStorageAt: MethodDef<GetStorageAtParams, Hex> = {
  cost: 80,
  params:
    'address, position (hex quantity, up to 32 bytes), block (number, tag, hash or EIP-1898 object; default latest)',
  errors: '-32000 `header not found` (number past the head), `header for hash not found`',
  decode: (params) =>
    decodeArgs(
      params,
      3,
      (arg) => ({
        address: decodeAddress(arg(0)),
        slot: decodeStorageKey(arg(1)).slot,
        block: decodeOptionalBlockSelector(arg(2)),
      }),
      2,
    ),
  async handle(ctx, p) {
    const value = await storageAt(ctx, await resolveState(ctx, p.block), p.address, p.slot);
    // Always 32 bytes on the wire, whatever length the store hands back.
    const padded = new Uint8Array(32);
    padded.set(value.subarray(Math.max(0, value.length - 32)), 32 - Math.min(32, value.length));
    return toData(padded);
  },
};
