// The full-transaction block answer as the object formatter gives it: each transaction formatted
// to an object (formatAnyTransaction), the list stringified, around the block's head. The text
// writer's answers are compared with it (block-text and transaction-text tests).
import { blockJsonHead } from '@chainnode/core';
import type { BlockRecord } from '@chainnode/core';
import { formatAnyTransaction } from '../src/formatters/transaction.js';

export function expectedBlockText(b: BlockRecord): string {
  const h = b.header;
  const objects = b.transactions.map((tx, i) =>
    formatAnyTransaction({
      tx,
      blockHash: h.hash,
      blockNumber: h.number,
      transactionIndex: i,
      blockTimestamp: h.timestamp,
      baseFeePerGas: h.baseFeePerGas,
    }),
  );
  return blockJsonHead(b, false, JSON.stringify(objects).slice(1, -1));
}
