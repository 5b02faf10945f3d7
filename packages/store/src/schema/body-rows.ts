// A block's body as its Bodies row and BodyTxs rows: staged together, read back together.
import { RLP } from '@ethereumjs/rlp';
import { BODY_ROW_TXS, bodyRowOf } from './block-rows.js';
import type { StoredBody, StoredBodyRow } from './block-rows.js';
import type { Alloc } from './codec.js';
import { tables } from './schema.js';
import type { KvBatch, KvSyncRead } from './table.js';

/** A block's Bodies row and its BodyTxs rows, staged together. */
export function stageBody(batch: KvBatch, hash: Uint8Array, body: StoredBody, alloc: Alloc): void {
  const row: StoredBodyRow = { size: body.size, txCount: body.transactions.length, uncles: body.uncles };
  if (body.withdrawals !== undefined) row.withdrawals = body.withdrawals;
  tables.bodies.stage(batch, hash, row, alloc);
  for (let first = 0; first < body.transactions.length; first += BODY_ROW_TXS)
    tables.bodyTxs.stage(
      batch,
      { hash, row: bodyRowOf(first) },
      RLP.encode(body.transactions.slice(first, first + BODY_ROW_TXS)),
      alloc,
    );
}

/** A block's body, its transactions from its BodyTxs rows (or inline, an earlier release's row). */
export function readBodySync(db: KvSyncRead, hash: Uint8Array): StoredBody | undefined {
  const row = tables.bodies.getSync(db, hash);
  if (row === undefined) return undefined;
  let transactions = row.inline;
  if (transactions === undefined) {
    transactions = [];
    for (let r = 0; transactions.length < row.txCount; r++) {
      const part = tables.bodyTxs.getRawSync(db, { hash, row: r });
      if (part === undefined) throw new Error(`body: transaction row ${r} missing`);
      const txs = RLP.decode(part) as Uint8Array[];
      if (txs.length === 0 || txs.length > BODY_ROW_TXS)
        throw new RangeError(`body: a row of ${txs.length} transactions`);
      transactions.push(...txs);
    }
    if (transactions.length !== row.txCount)
      throw new Error(`body: ${transactions.length} transactions in rows for a count of ${row.txCount}`);
  }
  const body: StoredBody = { size: row.size, transactions, uncles: row.uncles };
  if (row.withdrawals !== undefined) body.withdrawals = row.withdrawals;
  return body;
}
