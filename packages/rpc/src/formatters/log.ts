// Log JSON in geth's field order (types.Log gencodec), with blockTimestamp and removed:false.
// formatLogsText writes the same JSON as text directly (a getLogs answer holds up to 10,000 logs),
// in slices, so that a large answer never holds the event loop for long.
import { toData, toQuantity } from '@chainnode/core';
import type { Hex, LogRecord } from '@chainnode/core';

export interface JsonLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  transactionHash: Hex;
  transactionIndex: Hex;
  blockHash: Hex;
  blockTimestamp: Hex;
  logIndex: Hex;
  removed: false;
}

export function formatLog(log: LogRecord): JsonLog {
  return {
    address: toData(log.address),
    topics: log.topics.map(toData),
    data: toData(log.data),
    blockNumber: toQuantity(log.blockNumber),
    transactionHash: toData(log.transactionHash),
    transactionIndex: toQuantity(log.transactionIndex),
    blockHash: toData(log.blockHash),
    blockTimestamp: toQuantity(log.blockTimestamp),
    logIndex: toQuantity(log.logIndex),
    removed: false,
  };
}

/**
 * Hex of a byte view without allocating a Buffer for it: Buffer's own hexSlice works on any
 * Uint8Array (a log answer hexes about seven values per log; the Buffer views were a fifth of its
 * time, and their garbage more). Falls back to a view where hexSlice is missing.
 */
const hexSlice = (Buffer.prototype as unknown as { hexSlice?: (this: Uint8Array, start: number, end: number) => string }).hexSlice;
const hexView: (b: Uint8Array) => string =
  hexSlice !== undefined ? (b) => hexSlice.call(b, 0, b.length) : (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** Let other requests run at least this often (ms) while a large answer is written. */
const SLICE_MS = 4;

/**
 * `JSON.stringify(logs.map(formatLog))`, written directly: every value is a hex string or a
 * boolean, so nothing needs escaping. Yields to the event loop every few milliseconds and calls
 * `check` there (it may throw, e.g. past the query deadline).
 */
export async function formatLogsText(logs: LogRecord[], check: () => void = () => undefined): Promise<string> {
  const parts: string[] = new Array<string>(logs.length);
  // Block and transaction fields repeat across the logs of a block / transaction: written once.
  let blockOf: bigint | undefined;
  let blockNumberText = '';
  let blockText = '';
  let txOf = -1;
  let txText = '';
  let sliceStart = Date.now();
  for (let i = 0; i < logs.length; i++) {
    const log = logs[i] as LogRecord;
    if (log.blockNumber !== blockOf) {
      blockOf = log.blockNumber;
      blockNumberText = `"blockNumber":"${toQuantity(log.blockNumber)}"`;
      blockText = `"blockHash":"0x${hexView(log.blockHash)}","blockTimestamp":"${toQuantity(log.blockTimestamp)}"`;
      txOf = -1;
    }
    if (log.transactionIndex !== txOf) {
      txOf = log.transactionIndex;
      txText = `"transactionHash":"0x${hexView(log.transactionHash)}","transactionIndex":"${toQuantity(log.transactionIndex)}"`;
    }
    let topics = '';
    for (let t = 0; t < log.topics.length; t++) topics += `${t === 0 ? '' : ','}"0x${hexView(log.topics[t] as Uint8Array)}"`;
    parts[i] =
      `{"address":"0x${hexView(log.address)}","topics":[${topics}],"data":"0x${hexView(log.data)}",${blockNumberText},` +
      `${txText},${blockText},"logIndex":"${toQuantity(log.logIndex)}","removed":false}`;
    if ((i & 127) === 127 && Date.now() - sliceStart >= SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      check();
      sliceStart = Date.now();
    }
  }
  return `[${parts.join(',')}]`;
}
