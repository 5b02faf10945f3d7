import { InvalidParamsError, toQuantity } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { feeRow } from '../chain/fees.js';
import type { FeeRow } from '../chain/fees.js';
import { firstBlockOf, resolveBlockNumber } from '../context.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBlockNumber, decodeQuantity, jsonType, ParamError } from '../params.js';
import type { BlockNumberParam } from '../params.js';

/** geth's maxBlockFetchers cap on blockCount (maxHeaderHistory / maxBlockHistory: 1024). */
export const MAX_FEE_HISTORY_BLOCKS = 1024;
/** geth's maxQueryLimit on the number of reward percentiles. */
export const MAX_FEE_HISTORY_PERCENTILES = 100;

export interface FeeHistoryParams {
  blockCount: bigint;
  newest: BlockNumberParam;
  percentiles?: number[];
}

export interface JsonFeeHistory {
  oldestBlock: Hex;
  reward?: Hex[][];
  baseFeePerGas: Hex[];
  gasUsedRatio: number[];
  baseFeePerBlobGas: Hex[];
  blobGasUsedRatio: number[];
}

export const eth_feeHistory: MethodDef<FeeHistoryParams, JsonFeeHistory> = {
  cost: 80,
  params: `block count (quantity, at most ${MAX_FEE_HISTORY_BLOCKS} are answered), newest block (number or tag), reward percentiles (ascending numbers 0..100; optional)`,
  errors: '-32602 `invalid reward percentile`, `request beyond head block`',
  decode: (params) =>
    decodeArgs(
      params,
      3,
      (arg) => {
        // geth takes the count as a hex quantity or a plain number.
        const c = arg(0);
        const blockCount =
          typeof c === 'number' && Number.isSafeInteger(c) && c >= 0 ? BigInt(c) : decodeQuantity(c, 'block count', 64);
        const newest = decodeBlockNumber(arg(1));
        const raw = arg(2);
        const out: FeeHistoryParams = { blockCount, newest };
        if (raw !== undefined && raw !== null) {
          if (!Array.isArray(raw)) throw new ParamError(`reward percentiles: expected an array, got ${jsonType(raw)}`);
          if (raw.length > MAX_FEE_HISTORY_PERCENTILES)
            throw new InvalidParamsError(`too many percentiles (max ${MAX_FEE_HISTORY_PERCENTILES})`);
          const ps = raw.map((p: unknown) => {
            if (typeof p !== 'number' || !Number.isFinite(p))
              throw new ParamError('reward percentiles: expected numbers');
            return p;
          });
          ps.forEach((p, i) => {
            if (p < 0 || p > 100) throw new InvalidParamsError(`invalid reward percentile: ${p}`);
            if (i > 0 && p < (ps[i - 1] as number))
              throw new InvalidParamsError(`invalid reward percentile: #${i - 1}:${ps[i - 1]} >= #${i}:${p}`);
          });
          out.percentiles = ps;
        }
        return out;
      },
      2,
    ),
  async handle(ctx, p) {
    const head = (await ctx.store.head()).number;
    let newest = await resolveBlockNumber(ctx, p.newest);
    if (newest > head) {
      if (p.newest.kind === 'number')
        throw new InvalidParamsError(`request beyond head block: requested ${newest}, head ${head}`);
      newest = head;
    }
    let count = p.blockCount > BigInt(MAX_FEE_HISTORY_BLOCKS) ? BigInt(MAX_FEE_HISTORY_BLOCKS) : p.blockCount;
    const first = firstBlockOf(ctx);
    if (count > newest + 1n - first) count = newest + 1n - first;
    if (count === 0n)
      return { oldestBlock: '0x0', baseFeePerGas: [], gasUsedRatio: [], baseFeePerBlobGas: [], blobGasUsedRatio: [] };
    const oldest = newest + 1n - count;
    const rows: FeeRow[] = [];
    for (let n = oldest; n <= newest; n++) {
      const hash = await ctx.store.canonicalHash(n);
      const block = hash === undefined ? undefined : await ctx.store.block(hash);
      if (block === undefined || hash === undefined) break;
      const nextHash = n < head ? await ctx.store.canonicalHash(n + 1n) : undefined;
      const next = nextHash === undefined ? undefined : await ctx.store.header(nextHash);
      const receipts = p.percentiles === undefined ? undefined : await ctx.store.receipts(hash);
      rows.push(feeRow(ctx, block, next, receipts, p.percentiles));
    }
    const last = rows[rows.length - 1];
    const out: JsonFeeHistory = {
      oldestBlock: toQuantity(oldest),
      baseFeePerGas: [...rows.map((r) => toQuantity(r.baseFee)), toQuantity(last?.nextBaseFee ?? 0n)],
      gasUsedRatio: rows.map((r) => r.gasUsedRatio),
      baseFeePerBlobGas: [...rows.map((r) => toQuantity(r.blobBaseFee)), toQuantity(last?.nextBlobBaseFee ?? 0n)],
      blobGasUsedRatio: rows.map((r) => r.blobGasUsedRatio),
    };
    if (p.percentiles !== undefined) {
      const rewards = rows.map((r) => (r.rewards ?? []).map(toQuantity));
      const { oldestBlock, ...rest } = out;
      return { oldestBlock, reward: rewards, ...rest };
    }
    return out;
  },
};
