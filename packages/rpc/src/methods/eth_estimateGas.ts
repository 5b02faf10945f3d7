import { ServerError, toQuantity, withProperty } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { callHeader, executorOf, revertError, runCall } from '../call.js';
import type { MethodDef } from '../method.js';
import { callCost, decodeCallParams, pinCall } from './eth_call.js';
import type { CallParams } from './eth_call.js';
import { accountIn, stateOfHeader } from '../reads.js';

/** geth's estimateGasErrorRatio: the search stops within 1.5% of the answer. */
const ERROR_RATIO = 0.015;
const TX_GAS = 21_000n;
const CALL_STIPEND = 2_300n;

export const eth_estimateGas: MethodDef<CallParams, Hex> = {
  cost: 300,
  params: 'transaction object (as eth_call), block (default latest), state overrides, block overrides',
  errors:
    '3 `execution reverted[: reason]` with the revert data; -32000 `gas required exceeds allowance (N)`, `insufficient funds for gas * price + value`, `header not found`',
  decode: (params) => decodeCallParams(params),
  offload: true,
  interruptible: true,
  estimateCost: async (ctx, p) => 8 * callCost(p.call.gas, ctx.config.callGasCap),
  remember: (ctx, p, raw) => pinCall('eth_estimateGas', ctx, p, raw),
  async handle(ctx, p) {
    const header = await callHeader(ctx, p.block);
    const opts: Parameters<typeof runCall>[3] = {};
    if (p.state !== undefined) opts.state = p.state;
    if (p.blockOverrides !== undefined) opts.block = p.blockOverrides;
    // geth: a plain transfer to an account without code costs exactly 21000.
    if (
      (p.call.input === undefined || p.call.input.length === 0) &&
      p.call.to !== undefined &&
      p.call.to !== null &&
      p.state === undefined
    ) {
      const code = await accountIn(ctx, stateOfHeader(header), p.call.to);
      const empty =
        code === null ||
        Buffer.from(code.codeHash).toString('hex') ===
          'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';
      if (empty && p.call.authorizationList === undefined && p.call.blobVersionedHashes === undefined) {
        const out = await runCall(ctx, header, p.call, withProperty(opts, 'gas', TX_GAS));
        if (out.kind === 'success') return toQuantity(TX_GAS);
      }
    }
    // The ceiling: the call's gas, else the block's gas limit, never above the cap (geth).
    const max = await (await executorOf(ctx)).maxGas(header);
    let hi = p.call.gas !== undefined && p.call.gas < max ? p.call.gas : max;
    const first = await runCall(ctx, header, p.call, withProperty(opts, 'gas', hi));
    if (first.kind === 'revert') throw revertError(first.returnValue);
    if (first.kind === 'halt') {
      if (first.error === 'out of gas') throw new ServerError(`gas required exceeds allowance (${hi})`);
      throw new ServerError(first.error ?? 'execution failed');
    }
    let lo = first.gasUsed - 1n;
    // geth's optimistic guess first: what the call used, plus the 63/64 rule's reserve.
    const optimistic = ((first.gasUsed + CALL_STIPEND) * 64n) / 63n;
    if (optimistic < hi) {
      const r = await runCall(ctx, header, p.call, withProperty(opts, 'gas', optimistic));
      if (r.kind === 'success') hi = optimistic;
      else lo = optimistic;
    }
    while (lo + 1n < hi) {
      if (Number(hi - lo) / Number(hi) < ERROR_RATIO) break;
      let mid = (hi + lo) / 2n;
      if (mid > lo * 2n) mid = lo * 2n; // geth: most calls need little, so try twice the floor first
      const r = await runCall(ctx, header, p.call, withProperty(opts, 'gas', mid));
      if (r.kind === 'success') hi = mid;
      else lo = mid;
    }
    return toQuantity(hi);
  },
};
