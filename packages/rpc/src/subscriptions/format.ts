// Payloads of eth_subscription notifications, as geth v1.16 writes them.
import { toData, toQuantity } from '@chainnode/core';
import type { Hex, HeaderRecord, LogRecord } from '@chainnode/core';
import { formatLog } from '../formatters/log.js';
import type { JsonLog } from '../formatters/log.js';

/**
 * geth's `types.Header` JSON (gen_header_json.go, v1.16): struct field order, `hash` last; the
 * fork fields are pointers without omitempty, so a header without them carries `null`. Unlike a
 * block answer: no `size`, `totalDifficulty`, `transactions`, `uncles`, `withdrawals`.
 */
export interface JsonNewHead {
  parentHash: Hex;
  sha3Uncles: Hex;
  miner: Hex;
  stateRoot: Hex;
  transactionsRoot: Hex;
  receiptsRoot: Hex;
  logsBloom: Hex;
  difficulty: Hex;
  number: Hex;
  gasLimit: Hex;
  gasUsed: Hex;
  timestamp: Hex;
  extraData: Hex;
  mixHash: Hex;
  nonce: Hex;
  baseFeePerGas: Hex | null;
  withdrawalsRoot: Hex | null;
  blobGasUsed: Hex | null;
  excessBlobGas: Hex | null;
  parentBeaconBlockRoot: Hex | null;
  requestsHash: Hex | null;
  hash: Hex;
}

const opt = <T>(v: T | undefined, f: (v: T) => Hex): Hex | null => (v === undefined ? null : f(v));

export function formatNewHead(h: HeaderRecord): JsonNewHead {
  return {
    parentHash: toData(h.parentHash),
    sha3Uncles: toData(h.uncleHash),
    miner: toData(h.coinbase),
    stateRoot: toData(h.stateRoot),
    transactionsRoot: toData(h.transactionsRoot),
    receiptsRoot: toData(h.receiptsRoot),
    logsBloom: toData(h.logsBloom),
    difficulty: toQuantity(h.difficulty),
    number: toQuantity(h.number),
    gasLimit: toQuantity(h.gasLimit),
    gasUsed: toQuantity(h.gasUsed),
    timestamp: toQuantity(h.timestamp),
    extraData: toData(h.extraData),
    mixHash: toData(h.mixHash),
    nonce: toData(h.nonce),
    baseFeePerGas: opt(h.baseFeePerGas, toQuantity),
    withdrawalsRoot: opt(h.withdrawalsRoot, toData),
    blobGasUsed: opt(h.blobGasUsed, toQuantity),
    excessBlobGas: opt(h.excessBlobGas, toQuantity),
    parentBeaconBlockRoot: opt(h.parentBeaconBlockRoot, toData),
    requestsHash: opt(h.requestsHash, toData),
    hash: toData(h.hash),
  };
}

/** A log of a `logs` subscription: eth_getLogs' object, `removed: true` for a dropped block's log. */
export type JsonSubscriptionLog = Omit<JsonLog, 'removed'> & { removed: boolean };

export function formatSubscriptionLog(log: LogRecord, removed: boolean): JsonSubscriptionLog {
  const out: JsonSubscriptionLog = formatLog(log);
  out.removed = removed;
  return out;
}

/** `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":ID,"result":RESULT}}` (geth's field order). */
export function notificationText(subscription: string, resultJson: string): string {
  return `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${subscription}","result":${resultJson}}}`;
}
