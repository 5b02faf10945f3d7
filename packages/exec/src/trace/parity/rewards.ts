// Parity's `reward` entries of a block (trace_block, trace_filter): the miner's block reward and
// each uncle's, as reth gives them for a block before the merge (proof of work); a block of
// proof of stake (difficulty 0) has none.
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt } from '@ethereumjs/util';
import { toData, toQuantity } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { JsonFlatTrace } from './flat.js';

const ETHER = 10n ** 18n;

/** What the reward entries of a block read of it and of its uncles. */
export interface RewardBlock {
  number: bigint;
  timestamp: bigint;
  difficulty: bigint;
  coinbase: Bytes;
}

/** The reward entries of the block `raw` (its RLP) under `common` (the chain's rules). */
export function rewardTraces(common: Common, raw: Bytes): JsonFlatTrace[] {
  const [header, , uncles] = RLP.decode(raw) as unknown as [Bytes[], unknown, Bytes[][]];
  const of = (h: Bytes[]): RewardBlock => ({
    number: bytesToBigInt(h[8] as Bytes),
    timestamp: bytesToBigInt(h[11] as Bytes),
    difficulty: bytesToBigInt(h[7] as Bytes),
    coinbase: h[2] as Bytes,
  });
  return blockRewardTraces(common, of(header), uncles.map(of));
}

/**
 * The reward entries of a block (its header's fields) with `uncles` under `common`: what a block
 * without uncles needs is all in its header, no body read.
 */
export function blockRewardTraces(common: Common, block: RewardBlock, uncles: readonly RewardBlock[]): JsonFlatTrace[] {
  const { number, difficulty } = block;
  if (difficulty === 0n) return [];
  const hf = common.getHardforkBy({ blockNumber: number, timestamp: block.timestamp });
  // EIP-649 (Byzantium) and EIP-1234 (Constantinople) lowered Frontier's 5 ether.
  const base = common.hardforkGteHardfork(hf, 'constantinople')
    ? 2n * ETHER
    : common.hardforkGteHardfork(hf, 'byzantium')
      ? 3n * ETHER
      : 5n * ETHER;
  const entry = (author: Bytes, rewardType: 'block' | 'uncle', value: bigint): JsonFlatTrace => ({
    action: { author: toData(author), rewardType, value: toQuantity(value) },
    result: null,
    subtraces: 0,
    traceAddress: [],
    type: 'reward',
  });
  const out = [entry(block.coinbase, 'block', base + (base / 32n) * BigInt(uncles.length))];
  for (const u of uncles) out.push(entry(u.coinbase, 'uncle', ((8n + u.number - number) * base) / 8n));
  return out;
}
