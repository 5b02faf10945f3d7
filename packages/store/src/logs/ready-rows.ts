// A block's AddressLogsJson rows (schema.ts) written again from its log rows: what the import
// wrote for it, byte for byte (core's LogJsonWriter, the block's hash, timestamp and transaction
// hashes). A sealed span's rows are deleted once its segment holds their text; a rewind that
// unseals the span puts back the rows of its blocks that stay canonical.
import { LogJsonWriter } from '@chainnode/core';
import type { LogRecord } from '@chainnode/core';
import type { Db } from '../db.js';
import { encodeAddressLogsJson, tables } from '../schema/index.js';
import { headerTxFields } from '../trie/index.js';
import { readBlockLogs } from './log-blocks.js';

/** The block's rows, one per address that emitted logs in it, as [key, value]. */
export async function readyRowsOf(db: Db, number: bigint): Promise<[Uint8Array, Uint8Array][]> {
  const [range, hash, txHashes] = await Promise.all([
    tables.blockLogs.get(db, number),
    tables.canonical.get(db, number),
    tables.blockTxHashes.get(db, number),
  ]);
  if (range === undefined || hash === undefined || txHashes === undefined)
    throw new Error(`ready rows: block ${number}'s log range, hash or tx hashes missing`);
  if (range.count === 0) return [];
  const header = await tables.headers.get(db, hash);
  if (header === undefined) throw new Error(`ready rows: header of block ${number} missing`);
  const timestamp = headerTxFields(header).timestamp;
  const byAddress = new Map<string, { address: Uint8Array; logs: LogRecord[] }>();
  for (const log of await readBlockLogs(db, number, range)) {
    const transactionHash = txHashes.hashes[log.txIndex];
    if (transactionHash === undefined) throw new Error(`ready rows: block ${number}: log of unknown tx ${log.txIndex}`);
    const key = Buffer.from(log.address).toString('latin1');
    let row = byAddress.get(key);
    if (row === undefined) byAddress.set(key, (row = { address: log.address.slice(), logs: [] }));
    row.logs.push({
      address: log.address,
      topics: log.topics,
      data: log.data,
      blockNumber: number,
      blockHash: hash,
      blockTimestamp: timestamp,
      transactionHash,
      transactionIndex: log.txIndex,
      logIndex: log.logIndex,
    });
  }
  const writer = new LogJsonWriter();
  return [...byAddress.values()].map((r) => [
    tables.addressLogsJson.key({ address: r.address, number }),
    encodeAddressLogsJson(r.logs, writer),
  ]);
}
