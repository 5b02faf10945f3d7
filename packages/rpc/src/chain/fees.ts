// Fee answers from stored blocks and receipts: geth's gas price oracle (eth/gasprice) for
// eth_gasPrice / eth_maxPriorityFeePerGas, and eth_feeHistory's per-block rows.
import type { BlockRecord, HeaderRecord, ReceiptRecord, TxRecord } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import { forksOf, GAS_PER_BLOB } from './forks.js';

/** geth's FullNodeGPO: 20 blocks, 60th percentile, 3 samples per block, 500 gwei cap, 2 wei floor. */
export const ORACLE = {
  blocks: 20,
  percentile: 60,
  samplesPerBlock: 3,
  maxPrice: 500_000_000_000n,
  ignorePrice: 2n,
  /** What the oracle answers when the recent blocks hold no sample (geth starts from 1 gwei). */
  defaultTip: 1_000_000_000n,
} as const;

/** The tip a transaction pays above `baseFee` (geth's EffectiveGasTip; the whole price before London). */
export function effectiveTip(tx: TxRecord, baseFee: bigint | undefined): bigint {
  if (tx.type >= 2) {
    const cap = tx.maxFeePerGas ?? 0n;
    const tip = tx.maxPriorityFeePerGas ?? 0n;
    if (baseFee === undefined) return tip;
    return cap - baseFee < tip ? cap - baseFee : tip;
  }
  const price = tx.gasPrice ?? 0n;
  return baseFee === undefined ? price : price - baseFee;
}

/**
 * geth's SuggestTipCap: the lowest `samplesPerBlock` tips of each of the last `blocks` blocks (tips
 * under ignorePrice and the coinbase's own transactions left out), their `percentile`-th value, capped.
 */
export async function suggestTipCap(ctx: HandlerContext): Promise<bigint> {
  const head = await ctx.store.head();
  const samples: bigint[] = [];
  for (let n = head.number, i = 0; n >= 0n && i < ORACLE.blocks; n--, i++) {
    const hash = await ctx.store.canonicalHash(n);
    const block = hash === undefined ? undefined : await ctx.store.block(hash);
    if (block === undefined) break;
    const base = block.header.baseFeePerGas;
    const tips = block.transactions
      .filter((tx) => !bytesEq(tx.from, block.header.coinbase))
      .map((tx) => effectiveTip(tx, base))
      .filter((t) => t >= ORACLE.ignorePrice)
      .sort(cmp);
    samples.push(...tips.slice(0, ORACLE.samplesPerBlock));
  }
  if (samples.length === 0) return ORACLE.defaultTip;
  samples.sort(cmp);
  const tip = samples[Math.floor(((samples.length - 1) * ORACLE.percentile) / 100)] as bigint;
  return tip > ORACLE.maxPrice ? ORACLE.maxPrice : tip;
}

const cmp = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);

function bytesEq(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One block's row of eth_feeHistory. */
export interface FeeRow {
  baseFee: bigint;
  nextBaseFee: bigint;
  blobBaseFee: bigint;
  nextBlobBaseFee: bigint;
  gasUsedRatio: number;
  blobGasUsedRatio: number;
  rewards?: bigint[];
}

/** geth's processBlock (eth/gasprice/feehistory.go) for one block. */
export function feeRow(
  ctx: HandlerContext,
  block: BlockRecord,
  next: HeaderRecord | undefined,
  receipts: ReceiptRecord[] | undefined,
  percentiles: number[] | undefined,
): FeeRow {
  const h = block.header;
  const forks = forksOf(ctx.store.info());
  const nextBaseFee = next?.baseFeePerGas ?? forks.nextBaseFee(h) ?? 0n;
  const blobBaseFee = forks.blobGasPrice(h) ?? 0n;
  let nextBlobBaseFee = 0n;
  if (next !== undefined) nextBlobBaseFee = forks.blobGasPrice(next) ?? 0n;
  else {
    // The block after the head: its time is unknown; geth assumes the parent's time.
    const excess = forks.nextExcessBlobGas(h, h.timestamp);
    if (excess !== undefined) nextBlobBaseFee = forks.blobGasPrice({ ...h, excessBlobGas: excess }) ?? 0n;
  }
  const params = forks.blobParams(h.timestamp);
  const row: FeeRow = {
    baseFee: h.baseFeePerGas ?? 0n,
    nextBaseFee,
    blobBaseFee,
    nextBlobBaseFee,
    gasUsedRatio: h.gasLimit === 0n ? 0 : Number(h.gasUsed) / Number(h.gasLimit),
    blobGasUsedRatio:
      params === undefined || h.blobGasUsed === undefined
        ? 0
        : Number(h.blobGasUsed) / Number(BigInt(params.max) * GAS_PER_BLOB),
  };
  if (percentiles === undefined) return row;
  const txs = block.transactions;
  if (txs.length === 0 || receipts === undefined) {
    row.rewards = percentiles.map(() => 0n);
    return row;
  }
  const sorted = txs
    .map((tx, i) => ({
      reward: effectiveTip(tx, h.baseFeePerGas),
      gasUsed: (receipts[i]?.cumulativeGasUsed ?? 0n) - (receipts[i - 1]?.cumulativeGasUsed ?? 0n),
    }))
    .sort((a, b) => cmp(a.reward, b.reward));
  let idx = 0;
  let sum = (sorted[0] as { gasUsed: bigint }).gasUsed;
  row.rewards = percentiles.map((p) => {
    const threshold = BigInt(Math.floor((Number(h.gasUsed) * p) / 100));
    while (sum < threshold && idx < sorted.length - 1) {
      idx++;
      sum += (sorted[idx] as { gasUsed: bigint }).gasUsed;
    }
    return (sorted[idx] as { reward: bigint }).reward;
  });
  return row;
}
