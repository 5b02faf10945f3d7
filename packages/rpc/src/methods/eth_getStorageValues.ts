import { InvalidParamsError, toData } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import { resolveState } from '../context.js';
import type { MethodDef } from '../method.js';
import { storageAt } from '../reads.js';
import {
  decodeAddress,
  decodeArgs,
  decodeOptionalBlockSelector,
  decodeStorageKey,
  jsonType,
  ParamError,
} from '../params.js';
import type { BlockSelector } from '../params.js';

/** geth's maxGetStorageSlots: at most this many slots over all addresses of one call. */
export const MAX_STORAGE_VALUES = 1024;

export interface GetStorageValuesParams {
  requests: { address: Bytes; key: Hex; slots: Bytes[] }[];
  block: BlockSelector;
}

export const eth_getStorageValues: MethodDef<GetStorageValuesParams, Record<Hex, Hex[]>> = {
  cost: 80,
  params: `{ address: [storage keys] } (at most ${MAX_STORAGE_VALUES} keys in all), block (number, tag, hash or EIP-1898 object; default latest)`,
  errors: '-32602 `empty request`, `too many slots (max 1024)`; -32000 `header not found`, `header for hash not found`',
  decode: (params) =>
    decodeArgs(
      params,
      2,
      (arg) => {
        const raw = arg(0);
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
          throw new ParamError(`expected an object of address to storage keys, got ${jsonType(raw)}`);
        let total = 0;
        const requests = Object.entries(raw as Record<string, unknown>).map(([addr, keys]) => {
          const address = decodeAddress(addr);
          if (!Array.isArray(keys))
            throw new ParamError(`${addr}: expected an array of storage keys, got ${jsonType(keys)}`);
          total += keys.length;
          return { address, key: toData(address), slots: keys.map((k) => decodeStorageKey(k).slot) };
        });
        const block = decodeOptionalBlockSelector(arg(1));
        if (requests.length === 0) throw new InvalidParamsError('empty request');
        if (total > MAX_STORAGE_VALUES) throw new InvalidParamsError(`too many slots (max ${MAX_STORAGE_VALUES})`);
        return { requests, block };
      },
      1,
    ),
  async handle(ctx, p) {
    const state = await resolveState(ctx, p.block);
    const out: Record<Hex, Hex[]> = {};
    for (const r of p.requests) {
      const values: Hex[] = [];
      for (const slot of r.slots) {
        const v = await storageAt(ctx, state, r.address, slot);
        const padded = new Uint8Array(32);
        padded.set(v.subarray(Math.max(0, v.length - 32)), 32 - Math.min(32, v.length));
        values.push(toData(padded));
      }
      out[r.key] = values;
    }
    return out;
  },
};
