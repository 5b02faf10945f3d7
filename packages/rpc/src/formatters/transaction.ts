// Transaction JSON exactly as geth v1.16's RPCTransaction: same field order, the same
// per-type presence rules (legacy: no yParity/accessList, chainId only when EIP-155
// protected; typed: chainId, accessList, yParity; 1559 and later: gasPrice is the effective
// price paid), blob and set-code fields, and the location fields of a mined transaction.
import { DEPOSIT_TX_TYPE, toData, toQuantity } from '@chainnode/core';
import type { AccessListEntry, AuthorizationRecord, Hex, TxRecord, TxWithLocation } from '@chainnode/core';

export interface JsonAccessListEntry {
  address: Hex;
  storageKeys: Hex[];
}

export interface JsonAuthorization {
  chainId: Hex;
  address: Hex;
  nonce: Hex;
  yParity: Hex;
  r: Hex;
  s: Hex;
}

export interface JsonTransaction {
  blockHash: Hex;
  blockNumber: Hex;
  blockTimestamp: Hex;
  from: Hex;
  gas: Hex;
  gasPrice: Hex;
  maxFeePerGas?: Hex;
  maxPriorityFeePerGas?: Hex;
  maxFeePerBlobGas?: Hex;
  hash: Hex;
  input: Hex;
  nonce: Hex;
  to: Hex | null;
  transactionIndex: Hex;
  value: Hex;
  type: Hex;
  accessList?: JsonAccessListEntry[];
  chainId?: Hex;
  blobVersionedHashes?: Hex[];
  authorizationList?: JsonAuthorization[];
  v: Hex;
  r: Hex;
  s: Hex;
  yParity?: Hex;
  // OP-stack deposits (type 0x7e) only, as op-geth's RPCTransaction.
  sourceHash?: Hex;
  mint?: Hex;
  isSystemTx?: boolean;
  depositReceiptVersion?: Hex;
}

/** Any transaction's JSON: a known type's, or an unknown type's envelope. */
export type JsonAnyTransaction = JsonTransaction | JsonOpaqueTransaction;

/** A typed envelope of a type not known here: where it is, what type, its hash and sender. */
export interface JsonOpaqueTransaction {
  blockHash: Hex;
  blockNumber: Hex;
  blockTimestamp: Hex;
  from: Hex;
  hash: Hex;
  transactionIndex: Hex;
  type: Hex;
}

/** geth's effectiveGasPrice: min(maxPriorityFeePerGas + baseFee, maxFeePerGas). */
export function effectiveGasPrice(tx: TxRecord, baseFee: bigint | undefined): bigint {
  const feeCap = tx.maxFeePerGas ?? 0n;
  if (baseFee === undefined) return feeCap;
  const tip = tx.maxPriorityFeePerGas ?? 0n;
  return tip + baseFee < feeCap ? tip + baseFee : feeCap;
}

export function formatAccessList(list: AccessListEntry[]): JsonAccessListEntry[] {
  return list.map((e) => ({ address: toData(e.address), storageKeys: e.storageKeys.map(toData) }));
}

export function formatAuthorization(a: AuthorizationRecord): JsonAuthorization {
  return {
    chainId: toQuantity(a.chainId),
    address: toData(a.address),
    nonce: toQuantity(a.nonce),
    yParity: toQuantity(a.yParity),
    r: toQuantity(a.r),
    s: toQuantity(a.s),
  };
}

/** Any stored transaction's JSON: an unknown type's envelope, or formatTransaction's. */
export function formatAnyTransaction(loc: TxWithLocation): JsonAnyTransaction {
  const { tx } = loc;
  if (tx.opaque === true)
    return {
      blockHash: toData(loc.blockHash),
      blockNumber: toQuantity(loc.blockNumber),
      blockTimestamp: toQuantity(loc.blockTimestamp),
      from: toData(tx.from),
      hash: toData(tx.hash),
      transactionIndex: toQuantity(loc.transactionIndex),
      type: toQuantity(tx.type),
    };
  return formatTransaction(loc);
}

/**
 * The fields every known transaction shares, in geth's order: `head` (its block, sender and gas)
 * stands before the gas price, `tail` after the fee fields.
 */
function sharedFields(loc: TxWithLocation) {
  const { tx } = loc;
  return {
    head: {
      blockHash: toData(loc.blockHash),
      blockNumber: toQuantity(loc.blockNumber),
      blockTimestamp: toQuantity(loc.blockTimestamp),
      from: toData(tx.from),
      gas: toQuantity(tx.gas),
    },
    tail: {
      hash: toData(tx.hash),
      input: toData(tx.input),
      nonce: toQuantity(tx.nonce),
      to: tx.to === null ? null : toData(tx.to),
      transactionIndex: toQuantity(loc.transactionIndex),
      value: toQuantity(tx.value),
      type: toQuantity(tx.type),
    },
  };
}

/** A transaction of a known type (signed, or an OP-stack deposit). */
export function formatTransaction(loc: TxWithLocation): JsonTransaction {
  const { tx } = loc;
  if (tx.opaque === true) throw new Error(`formatTransaction: type ${tx.type} is not known here`);
  if (tx.type === DEPOSIT_TX_TYPE) return formatDeposit(loc);
  const typed = tx.type !== 0;
  const shared = sharedFields(loc);
  const dynamicFee = tx.type >= 2;
  // Insertion order below is geth's struct order; optional fields are simply left out.
  const out: JsonTransaction = {
    ...shared.head,
    gasPrice: toQuantity(dynamicFee ? effectiveGasPrice(tx, loc.baseFeePerGas) : (tx.gasPrice ?? 0n)),
    ...(dynamicFee
      ? {
          maxFeePerGas: toQuantity(tx.maxFeePerGas ?? 0n),
          maxPriorityFeePerGas: toQuantity(tx.maxPriorityFeePerGas ?? 0n),
        }
      : {}),
    ...(tx.type === 3 ? { maxFeePerBlobGas: toQuantity(tx.maxFeePerBlobGas ?? 0n) } : {}),
    ...shared.tail,
    ...(typed ? { accessList: formatAccessList(tx.accessList ?? []) } : {}),
    ...(typed || (tx.chainId !== undefined && tx.chainId !== 0n) ? { chainId: toQuantity(tx.chainId ?? 0n) } : {}),
    // geth tags these omitempty: an empty list is left out.
    ...(tx.blobVersionedHashes && tx.blobVersionedHashes.length > 0
      ? { blobVersionedHashes: tx.blobVersionedHashes.map(toData) }
      : {}),
    ...(tx.authorizationList && tx.authorizationList.length > 0
      ? { authorizationList: tx.authorizationList.map(formatAuthorization) }
      : {}),
    v: toQuantity(tx.v),
    r: toQuantity(tx.r),
    s: toQuantity(tx.s),
    // geth: yParity = v.Sign(), i.e. 0 or 1 for typed transactions.
    ...(typed ? { yParity: toQuantity(tx.v === 0n ? 0n : 1n) } : {}),
  };
  return out;
}

/**
 * An OP-stack deposit as op-geth's newRPCTransaction shows it: no signature (v, r, s are 0), gas
 * price 0, no chainId, access list or yParity; the nonce is the receipt's depositNonce (0 when
 * the store has none, as op-geth without a receipt); sourceHash always, mint only when not zero
 * (op-geth decodes a zero mint as absent and leaves it out), isSystemTx only when true,
 * depositReceiptVersion when the receipt has one. Fields in op-geth's struct order.
 */
function formatDeposit(loc: TxWithLocation): JsonTransaction {
  const { tx } = loc;
  const shared = sharedFields(loc);
  const out: JsonTransaction = {
    ...shared.head,
    gasPrice: '0x0',
    ...shared.tail,
    v: '0x0',
    r: '0x0',
    s: '0x0',
    sourceHash: toData(tx.sourceHash ?? new Uint8Array(32)),
  };
  if (tx.mint !== undefined && tx.mint !== 0n) out.mint = toQuantity(tx.mint);
  if (tx.isSystemTx === true) out.isSystemTx = true;
  if (tx.depositReceiptVersion !== undefined) out.depositReceiptVersion = toQuantity(tx.depositReceiptVersion);
  return out;
}
