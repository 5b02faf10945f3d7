// The stored-block input the store's tests write: legacy transactions from the zero address,
// each succeeding with 21,000 gas.
import { RLP } from '@ethereumjs/rlp';
import type { BlockInput, LogInput } from '../src/index.js';

export function blockInput(b: {
  number: number;
  hash: Uint8Array;
  headerRlp: Uint8Array;
  txs: Uint8Array[];
  txHashes: Uint8Array[];
  logs: LogInput[][];
  logsBloom: Uint8Array;
}): BlockInput {
  return {
    number: BigInt(b.number),
    hash: b.hash,
    headerRlp: b.headerRlp,
    body: { size: 0, transactions: b.txs, uncles: [] },
    totalDifficulty: 0n,
    senders: b.txs.map(() => new Uint8Array(20)),
    txHashes: b.txHashes,
    receipts: b.txs.map(() => ({ type: 0, statusOrState: Uint8Array.of(1), cumulativeGasUsed: 21000n })),
    logs: b.logs,
    logsBloom: b.logsBloom,
  };
}

/** n bytes: tag in the first, i big-endian in the last four (distinct keys, addresses, topics). */
export function tagged(tag: number, i: number, n: number): Uint8Array {
  const b = new Uint8Array(n);
  b[0] = tag;
  new DataView(b.buffer).setUint32(n - 4, i);
  return b;
}
/** The address and the topic that every test chain logs often. */
export const HOT_ADDR = tagged(0xaa, 0, 20);
export const HOT_TOPIC = tagged(0xee, 0, 32);

/** A pre-London header's RLP: block n over parent, zero roots and miner, gas limit 30M, the given bloom and timestamp. */
export function legacyHeaderRlp(n: number, parent: Uint8Array, bloom: Uint8Array, timestamp: number): Uint8Array {
  return RLP.encode([
    parent,
    new Uint8Array(32),
    new Uint8Array(20),
    new Uint8Array(32),
    new Uint8Array(32),
    new Uint8Array(32),
    bloom,
    0,
    n,
    30_000_000,
    0,
    timestamp,
    new Uint8Array(0),
    new Uint8Array(32),
    new Uint8Array(8),
  ]);
}
