// The stored-block input the store's tests write: legacy transactions from the zero address,
// each succeeding with 21,000 gas.
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
