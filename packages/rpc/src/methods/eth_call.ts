import { toData } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import type { AccountOverride, BlockOverrides, CallArgs } from '@chainnode/exec';
import {
  callBlockHash,
  callHeader,
  callResult,
  decodeBlockOverrides,
  decodeCallArgs,
  decodeStateOverrides,
  runCall,
} from '../call.js';
import { canonicalParams } from '../call-cache.js';
import type { PinnedCall } from '../call-cache.js';
import { INLINE_COST_LIMIT } from '../config.js';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeOptionalBlockSelector } from '../params.js';
import type { BlockSelector } from '../params.js';

export interface CallParams {
  call: CallArgs;
  block: BlockSelector;
  state?: Map<string, AccountOverride> | undefined;
  blockOverrides?: BlockOverrides | undefined;
}

export function decodeCallParams(params: unknown[]): CallParams {
  return decodeArgs(
    params,
    4,
    (arg) => ({
      call: decodeCallArgs(arg(0)),
      block: decodeOptionalBlockSelector(arg(1)),
      state: decodeStateOverrides(arg(2)),
      blockOverrides: decodeBlockOverrides(arg(3)),
    }),
    1,
  );
}

/**
 * A call of `method` pinned to the hash of the block it names (MethodDef.remember): the key is
 * the method, that hash and the decoded transaction and overrides (however they were spelled).
 */
export async function pinCall(
  method: string,
  ctx: HandlerContext,
  p: CallParams,
  raw: unknown[],
): Promise<PinnedCall<CallParams>> {
  const hash = await callBlockHash(ctx, p.block);
  const hex = toData(hash);
  const pinned = [...raw];
  pinned[1] = hex;
  return {
    key: `${method} ${hex} ${canonicalParams([p.call, p.state, p.blockOverrides])}`,
    params: { ...p, block: { kind: 'hash', hash, requireCanonical: false } },
    raw: pinned,
  };
}

/**
 * Admission by cost: gas a call may burn, in units of 1M gas (a token balanceOf, ~30k gas, is far
 * below the inline limit; a 50M-gas call is 50 times it); heavy calls go to the offload workers.
 */
export function callCost(gas: bigint | undefined, cap: number): number {
  const g = gas === undefined || gas > BigInt(cap) ? BigInt(cap) : gas;
  return Number(g / 1_000_000n) * (INLINE_COST_LIMIT / 10);
}

export const eth_call: MethodDef<CallParams, Hex> = {
  cost: 80,
  params:
    'transaction object (from, to, gas, gasPrice | maxFeePerGas + maxPriorityFeePerGas, value, input, accessList, blobVersionedHashes, authorizationList), block (default latest), state overrides, block overrides',
  errors:
    '3 `execution reverted[: reason]` with the revert data; -32000 `out of gas`, `invalid opcode`…, `insufficient funds for gas * price + value`, `execution aborted (timeout = 5s)`, `header not found`',
  decode: decodeCallParams,
  offload: true,
  interruptible: true,
  estimateCost: async (ctx, p) => callCost(p.call.gas, ctx.config.callGasCap),
  remember: (ctx, p, raw) => pinCall('eth_call', ctx, p, raw),
  async handle(ctx, p) {
    const header = await callHeader(ctx, p.block);
    const opts: Parameters<typeof runCall>[3] = {};
    if (p.state !== undefined) opts.state = p.state;
    if (p.blockOverrides !== undefined) opts.block = p.blockOverrides;
    return toData(callResult(await runCall(ctx, header, p.call, opts)));
  },
};
