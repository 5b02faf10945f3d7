import type { AccountProofRecord, Bytes } from '@chainnode/core';
import { resolveState, resolveStateRoot } from '../context.js';
import type { HandlerContext } from '../context.js';
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
import { prunedOr, requireTrie } from '../trie-window.js';

export interface GetProofParams {
  address: Bytes;
  keys: { slot: Bytes; inputLength: number }[];
  block: BlockSelector;
}

export const eth_getProof: MethodDef<GetProofParams, JsonAccountProof> = {
  cost: 150,
  params: 'address, storage keys (array), block (number, tag, hash or EIP-1898 object; default latest)',
  errors:
    "-32000 `header not found`, `header for hash not found`, `state trie for block N pruned: …` (below the state trie's window)",
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
    const record = await proofAt(ctx, p);
    if (record.storageProof.length !== p.keys.length) {
      throw new Error('store returned a proof with the wrong number of storage entries');
    }
    // The echoed keys depend on how the caller spelled them (their byte lengths).
    const lengths = p.keys.map((k) => k.inputLength);
    return ctx.memo.proofs.writer(record, lengths.join(','), (r) => proofWriter(r, lengths));
  },
};

/** The store's proof at the selected block; below the state trie's window, PrunedTrieError. */
async function proofAt(ctx: HandlerContext, p: GetProofParams): Promise<AccountProofRecord> {
  const slots = p.keys.map((k) => k.slot);
  if (ctx.store.stateTrie?.().mode !== 'window')
    return ctx.store.proof(await resolveStateRoot(ctx, p.block), p.address, slots);
  const state = await resolveState(ctx, p.block);
  requireTrie(ctx, state.number);
  try {
    return await ctx.store.proof(state.root, p.address, slots);
  } catch (err) {
    throw prunedOr(ctx, state.number, err);
  }
}
