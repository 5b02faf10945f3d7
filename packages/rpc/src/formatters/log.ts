// Log JSON in geth's field order (types.Log gencodec), with blockTimestamp and removed:false.
// formatLogsAscii writes the same JSON as bytes (core's LogJsonWriter, also the writer of the store's
// per-block log rows) in slices, so that a large answer never holds the event loop for long.
import { logsJsonAscii, toData, toQuantity } from '@chainnode/core';
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

/** Let other requests run at least this often (ms) while a large answer is written. */
const SLICE_MS = 4;

/**
 * `JSON.stringify(logs.map(formatLog))` as ASCII bytes, written directly: every value is a hex
 * string or a boolean, so nothing needs escaping, and no string is made per log. Yields to the
 * event loop every few milliseconds and calls `check` there (it may throw, e.g. past the query
 * deadline).
 */
export async function formatLogsAscii(logs: LogRecord[], check: () => void = () => undefined): Promise<Uint8Array> {
  let sliceStart = Date.now();
  return logsJsonAscii(logs, async () => {
    if (Date.now() - sliceStart < SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    check();
    sliceStart = Date.now();
  });
}
