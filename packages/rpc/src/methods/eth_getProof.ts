import type { Bytes } from '@chainnode/core';
import { resolveStateRoot } from '../context.js';
import { proofWriter } from '../formatters/proof.js';
import type { JsonAccountProof } from '../formatters/proof.js';
import {
  decodeAddress,
  decodeArgs,
  decodeOptionalBlockSelector,
  decodeStorageKey,
  jsonType,
  ParamError,
} from '../params.js';
import type { BlockSelector } from '../params.js';
import type { MethodDef } from '../method.js';

export interface GetProofParams {
  address: Bytes;
  keys: { slot: Bytes; inputLength: number }[];
  block: BlockSelector;
}

export const eth_getProof: MethodDef<GetProofParams, JsonAccountProof> = {
  cost: 150,
  params: 'address, storage keys (array), block (number, tag, hash or EIP-1898 object; default latest)',
  errors: '-32000 `header not found`, `header for hash not found`',
  decode: (params) =>
    decodeArgs(
      params,
      3,
      (arg) => {
        const address = decodeAddress(arg(0));
        const rawKeys = arg(1);
        if (!Array.isArray(rawKeys)) throw new ParamError(`storageKeys: expected an array, got ${jsonType(rawKeys)}`);
        const keys = rawKeys.map((k: unknown, i: number) => {
          try {
            return decodeStorageKey(k);
          } catch (err) {
            if (err instanceof ParamError) throw new ParamError(`storageKeys[${i}]: ${err.message}`);
            throw err;
          }
        });
        return { address, keys, block: decodeOptionalBlockSelector(arg(2)) };
      },
      2,
    ),
  async handle(ctx, p) {
    const stateRoot = await resolveStateRoot(ctx, p.block);
    const record = await ctx.store.proof(
      stateRoot,
      p.address,
      p.keys.map((k) => k.slot),
    );
    if (record.storageProof.length !== p.keys.length) {
      throw new Error('store returned a proof with the wrong number of storage entries');
    }
    // The echoed keys depend on how the caller spelled them (their byte lengths).
    const lengths = p.keys.map((k) => k.inputLength);
    return ctx.memo.proofs.writer(record, lengths.join(','), (r) => proofWriter(r, lengths));
  },
};
