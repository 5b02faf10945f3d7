// The receipt JSON the server writes as text (formatters/receipt.ts receiptText) against
// JSON.stringify of the object formatter (formatReceipt), byte for byte: every receipt of the
// fixture chain and of the execution-apis chain as the store hands them out, and variants of
// real ones for what those chains lack (a pre-Byzantium post-state root, a failed status, a
// creation, a blob transaction, OP-stack deposit fields, a transaction of an unknown type, logs
// of many topics or none).
import type { LogRecord, ReceiptRecord, TxRecord } from '@chainnode/core';
import { LevelChainStore } from '@chainnode/store';
import { availableChains, datadirCopy } from '@chainnode/testkit';
import { forksOf } from '../src/chain/forks.js';
import { formatReceipt, receiptText } from '../src/formatters/receipt.js';
import type { ReceiptContext } from '../src/formatters/receipt.js';

const both = (ctx: ReceiptContext, tx: TxRecord, i: number, r: ReceiptRecord, prev: ReceiptRecord | undefined) => [
  receiptText(ctx, tx, i, r, prev),
  JSON.stringify(formatReceipt(ctx, tx, i, r, prev)),
];

test.each(availableChains())(
  '%s: every receipt as text equals its formatted object, and variants of them',
  async (chain) => {
    const c = await datadirCopy(chain);
    const store = await LevelChainStore.open(c.dir);
    const differing: string[] = [];
    let receipts = 0;
    let logs = 0;
    let variants = 0;
    try {
      const forks = forksOf(store.info());
      const head = (await store.head()).number;
      for (let n = 0n; n <= head; n++) {
        const hash = (await store.canonicalHash(n)) as Uint8Array;
        const block = await store.block(hash);
        const rs = await store.receipts(hash);
        if (block === undefined || rs === undefined) throw new Error(`block ${n}`);
        const ctx: ReceiptContext = { header: block.header, forks };
        for (const [i, r] of rs.entries()) {
          const tx = block.transactions[i] as TxRecord;
          const [text, object] = both(ctx, tx, i, r, rs[i - 1]);
          if (text !== object) differing.push(`${n}:${i}`);
          receipts++;
          logs += r.logs.length;
          // Variants on every 50th: the fields these chains may not show.
          if (receipts % 50 !== 1) continue;
          const many: LogRecord = { ...(r.logs[0] ?? dummyLog(block.header.hash, n, tx.hash, i)) };
          many.topics = [0, 1, 2, 3].map((k) => new Uint8Array(32).fill(k));
          many.data = new Uint8Array(0);
          const kinds: [TxRecord, ReceiptRecord][] = [
            [tx, { ...r, statusOrState: new Uint8Array(32).fill(7) }],
            [tx, { ...r, statusOrState: new Uint8Array(0), logs: [] }],
            [{ ...tx, to: null }, r],
            [{ ...tx, type: 3, blobVersionedHashes: [new Uint8Array(32), new Uint8Array(32)] }, r],
            [
              { ...tx, type: 0x7e },
              { ...r, type: 0x7e, depositNonce: 9n, depositReceiptVersion: 1n },
            ],
            [tx, { ...r, depositNonce: 0n }],
            [{ ...tx, type: 0x42, opaque: true, to: null }, r],
            [tx, { ...r, logs: [many, many] }],
          ];
          for (const [t, v] of kinds) {
            const [a, b] = both(ctx, t, i, v, i === 0 ? undefined : rs[i - 1]);
            if (a !== b) differing.push(`${n}:${i} variant ${variants}`);
            variants++;
          }
        }
      }
    } finally {
      await store.close();
      await c.cleanup();
    }
    expect(differing).toEqual([]);
    expect(receipts).toBeGreaterThan(50);
    expect(logs).toBeGreaterThan(10);
    expect(variants).toBeGreaterThan(8);
  },
  240_000,
);

function dummyLog(blockHash: Uint8Array, number: bigint, txHash: Uint8Array, index: number): LogRecord {
  return {
    address: new Uint8Array(20).fill(0xaa),
    topics: [],
    data: Uint8Array.of(1, 2, 3),
    blockNumber: number,
    blockHash,
    blockTimestamp: 1n,
    transactionHash: txHash,
    transactionIndex: index,
    logIndex: 0,
  };
}
