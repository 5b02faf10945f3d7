import { toData, toQuantity, withProperty } from '@chainnode/core';
import type { Bytes, Hex } from '@chainnode/core';
import { callHeader, revertReason, runCall } from '../call.js';
import type { MethodDef } from '../method.js';
import { callCost, decodeCallParams, pinCall } from './eth_call.js';
import type { CallParams } from './eth_call.js';

export interface JsonAccessListResult {
  accessList: { address: Hex; storageKeys: Hex[] }[];
  error?: string;
  gasUsed: Hex;
}

/** geth: re-run with the list found until it stops changing (it can only grow). */
const MAX_ROUNDS = 8;

const canonical = (l: { address: Bytes; storageKeys: Bytes[] }[]): string =>
  l
    .map((e) => `${toData(e.address)}:${e.storageKeys.map(toData).sort().join(',')}`)
    .sort()
    .join(';');

export const eth_createAccessList: MethodDef<CallParams, JsonAccessListResult> = {
  cost: 80,
  params: 'transaction object (as eth_call), block (default latest), state overrides, block overrides',
  errors: "-32000 `insufficient funds for gas * price + value`, `header not found`; a revert is the answer's `error`",
  decode: (params) => decodeCallParams(params),
  offload: true,
  interruptible: true,
  estimateCost: async (ctx, p) => 2 * callCost(p.call.gas, ctx.config.callGasCap),
  remember: (ctx, p, raw) => pinCall('eth_createAccessList', ctx, p, raw),
  async handle(ctx, p) {
    const header = await callHeader(ctx, p.block);
    const opts: Parameters<typeof runCall>[3] = { accessList: true };
    if (p.state !== undefined) opts.state = p.state;
    if (p.blockOverrides !== undefined) opts.block = p.blockOverrides;
    let list = p.call.accessList ?? [];
    let seen = '';
    for (let round = 0; ; round++) {
      const out = await runCall(ctx, header, withProperty(p.call, 'accessList', list), opts);
      const found = out.accessList ?? [];
      const key = canonical(found);
      if (key === seen || round >= MAX_ROUNDS) {
        const res: JsonAccessListResult = {
          accessList: found.map((e) => ({ address: toData(e.address), storageKeys: e.storageKeys.map(toData) })),
          gasUsed: toQuantity(out.gasUsed),
        };
        if (out.kind !== 'success') {
          const reason = out.kind === 'revert' ? revertReason(out.returnValue) : undefined;
          res.error =
            out.kind === 'revert'
              ? reason === undefined
                ? 'execution reverted'
                : `execution reverted: ${reason}`
              : (out.error ?? 'execution failed');
          const { accessList, error, gasUsed } = res;
          return { accessList, error, gasUsed } as JsonAccessListResult;
        }
        return res;
      }
      seen = key;
      list = found;
    }
  },
};
