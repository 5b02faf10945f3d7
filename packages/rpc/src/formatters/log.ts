// Log JSON in geth's field order (types.Log gencodec), with blockTimestamp and removed:false.
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
