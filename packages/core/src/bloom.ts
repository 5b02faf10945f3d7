// The 2048-bit logs bloom (Yellow Paper 4.3.1): each address and topic of a log sets three bits,
// taken from the low 11 bits of the first three byte pairs of its keccak. One implementation for
// every package: the receipts a replica or a history upstream sends are checked with it, the rpc
// formats a receipt's bloom with it, and the store and the history layer skip blocks with it.
import { keccak256 } from './keccak.js';
import type { Bytes } from './types.js';

/** The three (byte index, mask) pairs `value` sets in a bloom, flattened: [i0, m0, i1, m1, i2, m2]. */
export function bloomBits(value: Uint8Array): number[] {
  const h = keccak256(value);
  const out: number[] = [];
  for (let i = 0; i < 6; i += 2) {
    const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
    out.push(255 - (bit >> 3), 1 << (bit & 7));
  }
  return out;
}

/**
 * The bits of the addresses and topics seen last, by their bytes as a latin1 string: a block's
 * logs name the same few dozen again and again (Transfer's signature, the tokens, the pools), and
 * a receipt's bloom is formatted from its logs on every answer not remembered (a block's cold
 * receipts: ~2,000 hashes at mainnet's shape). A lookup costs about a third of the keccak.
 * Emptied when full: at most BLOOM_MEMO entries, ~1.5 MB.
 */
const BLOOM_MEMO = 8192;
const bloomMemo = new Map<string, number[]>();

function memoBloomBits(value: Uint8Array): number[] {
  const key = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1');
  let bits = bloomMemo.get(key);
  if (bits === undefined) {
    if (bloomMemo.size >= BLOOM_MEMO) bloomMemo.clear();
    bits = bloomBits(value);
    bloomMemo.set(key, bits);
  }
  return bits;
}

/** The bloom of the logs: the bits of every address and topic. */
export function logsBloomOf(logs: readonly { address: Bytes; topics: readonly Bytes[] }[]): Bytes {
  const bloom = new Uint8Array(256);
  const add = (v: Uint8Array): void => {
    const b = memoBloomBits(v);
    for (let i = 0; i < 6; i += 2) bloom[b[i] as number] = (bloom[b[i] as number] as number) | (b[i + 1] as number);
  };
  for (const log of logs) {
    add(log.address);
    for (const topic of log.topics) add(topic);
  }
  return bloom;
}

/** The union of blooms (a block's bloom from its receipts'). */
export function bloomUnion(blooms: readonly Bytes[]): Bytes {
  const out = new Uint8Array(256);
  for (const b of blooms) for (let j = 0; j < 256; j++) out[j] = (out[j] as number) | (b[j] as number);
  return out;
}

/**
 * A test of blooms against constraints, each a list of alternatives (a query's addresses, the
 * values of one topic position): true when every constraint has an alternative whose bits are all
 * set, so the block may hold a matching log. The bits of every value are computed once.
 */
export function bloomMatcher(constraints: readonly (readonly Uint8Array[])[]): (bloom: Uint8Array) => boolean {
  const bits = constraints.map((c) => c.map(bloomBits));
  const has = (bloom: Uint8Array, b: number[]): boolean => {
    for (let i = 0; i < b.length; i += 2)
      if (((bloom[b[i] as number] as number) & (b[i + 1] as number)) === 0) return false;
    return true;
  };
  return (bloom) => bits.every((alternatives) => alternatives.some((b) => has(bloom, b)));
}
