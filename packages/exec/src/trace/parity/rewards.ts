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

/** The reward entries of the block `raw` (its RLP) under `common` (the chain's rules). */
export function rewardTraces(common: Common, raw: Bytes): JsonFlatTrace[] {
  const [header, , uncles] = RLP.decode(raw) as unknown as [Bytes[], unknown, Bytes[][]];
  const number = bytesToBigInt(header[8] as Bytes);
  const difficulty = bytesToBigInt(header[7] as Bytes);
  if (difficulty === 0n) return [];
  const c = common.copy();
  c.setHardforkBy({ blockNumber: number, timestamp: bytesToBigInt(header[11] as Bytes) });
  // EIP-649 (Byzantium) and EIP-1234 (Constantinople) lowered Frontier's 5 ether.
  const base = c.gteHardfork('constantinople') ? 2n * ETHER : c.gteHardfork('byzantium') ? 3n * ETHER : 5n * ETHER;
  const entry = (author: Bytes, rewardType: 'block' | 'uncle', value: bigint): JsonFlatTrace => ({
    action: { author: toData(author), rewardType, value: toQuantity(value) },
    result: null,
    subtraces: 0,
    traceAddress: [],
    type: 'reward',
  });
  const out = [entry(header[2] as Bytes, 'block', base + (base / 32n) * BigInt(uncles.length))];
  for (const u of uncles) {
    const un = bytesToBigInt(u[8] as Bytes);
    out.push(entry(u[2] as Bytes, 'uncle', ((8n + un - number) * base) / 8n));
  }
  return out;
}
