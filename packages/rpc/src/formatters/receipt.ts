// Receipt JSON exactly as geth's MarshalReceipt (internal/ethapi): the consensus fields the store
// keeps (type, status or post-state root, cumulative gas) and what geth derives from them and the
// block: gasUsed (cumulative minus the previous receipt's), effectiveGasPrice, contractAddress
// (creations only), the receipt's own logs bloom, blob gas for type 3, and OP-stack deposit fields
// when the store holds them.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from '@chainnode/core';
import { LogJsonWriter, bytesToBigInt, hexOfBytes, logsBloomOf, toData, toQuantity } from '@chainnode/core';
import type { HeaderRecord, Hex, ReceiptRecord, TxRecord } from '@chainnode/core';
import { GAS_PER_BLOB } from '../chain/forks.js';
import type { ForkSchedule } from '../chain/forks.js';
import { formatLog } from './log.js';
import type { JsonLog } from './log.js';
import { effectiveGasPrice } from './transaction.js';

export interface JsonReceipt {
  blockHash: Hex;
  blockNumber: Hex;
  contractAddress: Hex | null;
  cumulativeGasUsed: Hex;
  effectiveGasPrice: Hex;
  from: Hex;
  gasUsed: Hex;
  logs: JsonLog[];
  logsBloom: Hex;
  root?: Hex;
  status?: Hex;
  to: Hex | null;
  transactionHash: Hex;
  transactionIndex: Hex;
  type: Hex;
  blobGasUsed?: Hex;
  blobGasPrice?: Hex;
  depositNonce?: Hex;
  depositReceiptVersion?: Hex;
}

/** keccak(rlp([sender, nonce]))[12:]: the address a creation transaction deploys to. */
export function createdAddress(from: Uint8Array, nonce: bigint): Uint8Array {
  return keccak256(RLP.encode([from, nonce])).subarray(12);
}

export interface ReceiptContext {
  header: HeaderRecord;
  forks: ForkSchedule;
}

/**
 * Receipt `index` of a block as an object (needs the previous receipt's cumulative gas for
 * gasUsed): the reference receiptText's text is checked against (receipt-text.test.ts); the server
 * answers with that text.
 */
export function formatReceipt(
  ctx: ReceiptContext,
  tx: TxRecord,
  index: number,
  receipt: ReceiptRecord,
  previous: ReceiptRecord | undefined,
): JsonReceipt {
  const h = ctx.header;
  const price = tx.type >= 2 ? effectiveGasPrice(tx, h.baseFeePerGas) : (tx.gasPrice ?? 0n);
  const out: JsonReceipt = {
    blockHash: toData(h.hash),
    blockNumber: toQuantity(h.number),
    // Deposits: tx.nonce is the receipt's depositNonce, as op-geth derives the address from it.
    // A transaction of an unknown type (opaque) has no known recipient: no created address.
    contractAddress: tx.to === null && tx.opaque !== true ? toData(createdAddress(tx.from, tx.nonce)) : null,
    cumulativeGasUsed: toQuantity(receipt.cumulativeGasUsed),
    effectiveGasPrice: toQuantity(price),
    from: toData(tx.from),
    gasUsed: toQuantity(receipt.cumulativeGasUsed - (previous?.cumulativeGasUsed ?? 0n)),
    logs: receipt.logs.map(formatLog),
    logsBloom: toData(logsBloomOf(receipt.logs)),
    to: tx.to === null ? null : toData(tx.to),
    transactionHash: toData(tx.hash),
    transactionIndex: toQuantity(index),
    type: toQuantity(tx.type),
  };
  // geth: a post-state root (pre-Byzantium) is "root", else "status".
  if (receipt.statusOrState.length === 32) out.root = toData(receipt.statusOrState);
  else out.status = toQuantity(bytesToBigInt(receipt.statusOrState));
  if (tx.type === 3) {
    out.blobGasUsed = toQuantity(BigInt(tx.blobVersionedHashes?.length ?? 0) * GAS_PER_BLOB);
    out.blobGasPrice = toQuantity(ctx.forks.blobGasPrice(h) ?? 0n);
  }
  if (receipt.depositNonce !== undefined) out.depositNonce = toQuantity(receipt.depositNonce);
  if (receipt.depositReceiptVersion !== undefined)
    out.depositReceiptVersion = toQuantity(receipt.depositReceiptVersion);
  return out;
}

/**
 * `JSON.stringify(formatReceipt(ctx, tx, index, receipt, previous))`, written directly as text
 * (the logs by core's LogJsonWriter, formatLog's text): every value is a hex string, null or
 * false, so nothing needs escaping. A receipt answered cold spent more on its object of strings
 * and the stringify pass than on reading it. receipt-text.test.ts compares both.
 */
export function receiptText(
  ctx: ReceiptContext,
  tx: TxRecord,
  index: number,
  receipt: ReceiptRecord,
  previous: ReceiptRecord | undefined,
): string {
  const h = ctx.header;
  const price = tx.type >= 2 ? effectiveGasPrice(tx, h.baseFeePerGas) : (tx.gasPrice ?? 0n);
  const contract =
    tx.to === null && tx.opaque !== true ? `"0x${hexOfBytes(createdAddress(tx.from, tx.nonce))}"` : 'null';
  const writer = new LogJsonWriter();
  let logs = '';
  for (let i = 0; i < receipt.logs.length; i++)
    logs += `${i === 0 ? '' : ','}${writer.write(receipt.logs[i] as ReceiptRecord['logs'][number])}`;
  const gasUsed = receipt.cumulativeGasUsed - (previous?.cumulativeGasUsed ?? 0n);
  let s =
    `{"blockHash":"0x${hexOfBytes(h.hash)}","blockNumber":"0x${h.number.toString(16)}","contractAddress":${contract},` +
    `"cumulativeGasUsed":"0x${receipt.cumulativeGasUsed.toString(16)}","effectiveGasPrice":"0x${price.toString(16)}",` +
    `"from":"0x${hexOfBytes(tx.from)}","gasUsed":"0x${gasUsed.toString(16)}","logs":[${logs}],` +
    `"logsBloom":"0x${hexOfBytes(logsBloomOf(receipt.logs))}","to":${tx.to === null ? 'null' : `"0x${hexOfBytes(tx.to)}"`},` +
    `"transactionHash":"0x${hexOfBytes(tx.hash)}","transactionIndex":"0x${index.toString(16)}","type":"0x${tx.type.toString(16)}"`;
  if (receipt.statusOrState.length === 32) s += `,"root":"0x${hexOfBytes(receipt.statusOrState)}"`;
  else s += `,"status":"0x${bytesToBigInt(receipt.statusOrState).toString(16)}"`;
  if (tx.type === 3) {
    const blobGas = BigInt(tx.blobVersionedHashes?.length ?? 0) * GAS_PER_BLOB;
    s += `,"blobGasUsed":"0x${blobGas.toString(16)}","blobGasPrice":"0x${(ctx.forks.blobGasPrice(h) ?? 0n).toString(16)}"`;
  }
  if (receipt.depositNonce !== undefined) s += `,"depositNonce":"0x${receipt.depositNonce.toString(16)}"`;
  if (receipt.depositReceiptVersion !== undefined)
    s += `,"depositReceiptVersion":"0x${receipt.depositReceiptVersion.toString(16)}"`;
  return `${s}}`;
}
