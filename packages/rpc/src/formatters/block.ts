// Block and uncle JSON as geth v1.16's RPCMarshalBlock: geth builds a map, so keys come out
// in alphabetical order; fork fields appear only when the header has them. Plus the spec's
// totalDifficulty (null for uncles, as geth's uncle answer has no total difficulty).
import { toData, toQuantity } from '@chainnode/core';
import type { BlockRecord, Hex, HeaderRecord, UncleRecord, WithdrawalRecord } from '@chainnode/core';
import { formatTransaction } from './transaction.js';
import type { JsonTransaction } from './transaction.js';

export interface JsonWithdrawal {
  index: Hex;
  validatorIndex: Hex;
  address: Hex;
  amount: Hex;
}

export interface JsonHeaderFields {
  baseFeePerGas?: Hex;
  blobGasUsed?: Hex;
  difficulty: Hex;
  excessBlobGas?: Hex;
  extraData: Hex;
  gasLimit: Hex;
  gasUsed: Hex;
  hash: Hex;
  logsBloom: Hex;
  miner: Hex;
  mixHash: Hex;
  nonce: Hex;
  number: Hex;
  parentBeaconBlockRoot?: Hex;
  parentHash: Hex;
  receiptsRoot: Hex;
  requestsHash?: Hex;
  sha3Uncles: Hex;
  stateRoot: Hex;
  timestamp: Hex;
  transactionsRoot: Hex;
  withdrawalsRoot?: Hex;
}

export interface JsonBlock extends JsonHeaderFields {
  size: Hex;
  totalDifficulty: Hex | null;
  /** Absent on uncles. */
  transactions?: Hex[] | JsonTransaction[];
  uncles: Hex[];
  withdrawals?: JsonWithdrawal[];
}

export function formatHeaderFields(h: HeaderRecord): JsonHeaderFields {
  const f: JsonHeaderFields = {
    difficulty: toQuantity(h.difficulty),
    extraData: toData(h.extraData),
    gasLimit: toQuantity(h.gasLimit),
    gasUsed: toQuantity(h.gasUsed),
    hash: toData(h.hash),
    logsBloom: toData(h.logsBloom),
    miner: toData(h.coinbase),
    mixHash: toData(h.mixHash),
    nonce: toData(h.nonce),
    number: toQuantity(h.number),
    parentHash: toData(h.parentHash),
    receiptsRoot: toData(h.receiptsRoot),
    sha3Uncles: toData(h.uncleHash),
    stateRoot: toData(h.stateRoot),
    timestamp: toQuantity(h.timestamp),
    transactionsRoot: toData(h.transactionsRoot),
  };
  if (h.baseFeePerGas !== undefined) f.baseFeePerGas = toQuantity(h.baseFeePerGas);
  if (h.withdrawalsRoot !== undefined) f.withdrawalsRoot = toData(h.withdrawalsRoot);
  if (h.blobGasUsed !== undefined) f.blobGasUsed = toQuantity(h.blobGasUsed);
  if (h.excessBlobGas !== undefined) f.excessBlobGas = toQuantity(h.excessBlobGas);
  if (h.parentBeaconBlockRoot !== undefined) f.parentBeaconBlockRoot = toData(h.parentBeaconBlockRoot);
  if (h.requestsHash !== undefined) f.requestsHash = toData(h.requestsHash);
  return f;
}

export function formatWithdrawal(w: WithdrawalRecord): JsonWithdrawal {
  return {
    index: toQuantity(w.index),
    validatorIndex: toQuantity(w.validatorIndex),
    address: toData(w.address),
    amount: toQuantity(w.amount),
  };
}

export function formatBlock(b: BlockRecord, fullTransactions: boolean): JsonBlock {
  const h = b.header;
  const out: JsonBlock = {
    ...formatHeaderFields(h),
    size: toQuantity(b.size),
    totalDifficulty: toQuantity(b.totalDifficulty),
    transactions: fullTransactions
      ? b.transactions.map((tx, i) =>
          formatTransaction({
            tx,
            blockHash: h.hash,
            blockNumber: h.number,
            transactionIndex: i,
            blockTimestamp: h.timestamp,
            baseFeePerGas: h.baseFeePerGas,
          }),
        )
      : (b.transactionHashes ?? b.transactions.map((tx) => tx.hash)).map(toData),
    uncles: b.uncleHashes.map(toData),
  };
  if (b.withdrawals !== undefined) out.withdrawals = b.withdrawals.map(formatWithdrawal);
  return sortKeys(out);
}

/** geth marshals an uncle as a block with an empty body: no transactions, no uncles. */
export function formatUncle(u: UncleRecord): JsonBlock {
  return sortKeys({
    ...formatHeaderFields(u.header),
    size: toQuantity(u.size),
    totalDifficulty: null,
    uncles: [],
  });
}

function sortKeys<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o).sort()) out[k] = (o as Record<string, unknown>)[k];
  return out as T;
}
