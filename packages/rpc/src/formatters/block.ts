// Block and uncle JSON as geth v1.16's RPCMarshalBlock: geth builds a map, so keys come out
// in alphabetical order; fork fields appear only when the header has them. Plus the spec's
// totalDifficulty (null for uncles, as geth's uncle answer has no total difficulty). The text
// itself is written by core's blockJsonHead (the store keeps it per block, ready to serve).
import { blockJsonHead, hashList, toData, toQuantity } from '@chainnode/core';
import type { BlockRecord, Hex, UncleRecord, WithdrawalRecord } from '@chainnode/core';
import { blockAsciiWithTransactions } from './transaction-text.js';
import type { JsonAnyTransaction } from './transaction.js';

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
  transactions?: Hex[] | JsonAnyTransaction[];
  uncles: Hex[];
  withdrawals?: JsonWithdrawal[];
}

export function formatWithdrawal(w: WithdrawalRecord): JsonWithdrawal {
  return {
    index: toQuantity(w.index),
    validatorIndex: toQuantity(w.validatorIndex),
    address: toData(w.address),
    amount: toQuantity(w.amount),
  };
}

/**
 * The block's JSON text (what both block methods serve): core's blockJsonHead with the
 * transaction hashes, or the transaction objects (each exactly JSON.stringify of
 * formatAnyTransaction's object), as its list. The methods serve the full block's as the bytes
 * blockAsciiWithTransactions writes; this is their text.
 */
export function blockText(b: BlockRecord, fullTransactions: boolean): string {
  if (fullTransactions) {
    const ascii = blockAsciiWithTransactions(b);
    return Buffer.from(ascii.buffer, ascii.byteOffset, ascii.byteLength).toString('latin1');
  }
  return blockJsonHead(b, false, hashList(b.transactionHashes ?? b.transactions.map((tx) => tx.hash)));
}

/** The block as an object (tests; what blockText encodes). */
export function formatBlock(b: BlockRecord, fullTransactions: boolean): JsonBlock {
  return JSON.parse(blockText(b, fullTransactions)) as JsonBlock;
}

/** geth marshals an uncle as a block with an empty body: no transactions, no uncles. */
export function uncleText(u: UncleRecord): string {
  return blockJsonHead({ header: u.header, size: u.size, totalDifficulty: 0n, uncleHashes: [] }, true);
}

export function formatUncle(u: UncleRecord): JsonBlock {
  return JSON.parse(uncleText(u)) as JsonBlock;
}
