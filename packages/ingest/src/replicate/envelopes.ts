// Transactions and receipts as replication receives them, turned into their canonical encodings
// (what the header's roots commit to) with their senders recovered here, never taken from the
// upstream. Signed types are decoded with @ethereumjs/tx; OP-stack deposits (0x7e) carry their
// sender in the encoding; any other typed envelope is kept opaque (its hash and root still check).
import { RLP } from '@ethereumjs/rlp';
import type { Common } from '@ethereumjs/common';
import { createTxFromRPC } from '@ethereumjs/tx';
import { keccak256 } from '@chainnode/store';
import {
  DEPOSIT_TX_TYPE,
  bytesToBigInt,
  decodeDepositTx,
  depositTxFromJson,
  encodeDepositTx,
  encodeNested,
  encodeReceipt,
  logsBloomOf,
  wireBytes,
} from '@chainnode/core';
import type { LogInput } from '@chainnode/store';
import { legacySender, legacySigning, recoverSender, typedSender, typedSigning } from './senders.js';
import type { SigningParts } from './senders.js';
import { UpstreamError } from '../errors.js';

/** A transaction in its canonical encoding, with its hash and the sender recovered from it. */
export interface ReplicaTx {
  type: number;
  /** The canonical encoding: RLP list (legacy) or type byte || payload. */
  bytes: Uint8Array;
  hash: Uint8Array;
  /** Recovered from the signature, read from a deposit's encoding, or zero for an opaque type. */
  sender: Uint8Array;
}

/** A receipt's consensus fields and logs (bloom recomputed from the logs, never taken). */
export interface ReplicaReceipt {
  type: number;
  /** 0x01 / empty (status) or a 32-byte post-state root (before Byzantium). */
  statusOrState: Uint8Array;
  cumulativeGasUsed: bigint;
  logs: LogInput[];
  depositNonce?: bigint | undefined;
  depositReceiptVersion?: bigint | undefined;
}

const ZERO_ADDRESS = new Uint8Array(20);
const KNOWN_SIGNED = new Set([0, 1, 2, 3, 4]);

/** A transaction from a block body entry (legacy: the RLP list; typed: the envelope bytes). */
export function txFromBody(entry: Uint8Array | Uint8Array[]): ReplicaTx {
  const { tx, signing } = txFromBodySigning(entry);
  if (signing !== undefined) tx.sender = recoverSender(signing);
  return tx;
}

/**
 * txFromBody without the signature's recovery: a signed transaction's sender is left zero and its
 * signing parts returned, for the caller to recover (sender-pool.ts) and set.
 */
export function txFromBodySigning(entry: Uint8Array | Uint8Array[]): { tx: ReplicaTx; signing?: SigningParts } {
  if (Array.isArray(entry)) {
    const bytes = encodeNested(entry);
    return { tx: { type: 0, bytes, hash: keccak256(bytes), sender: ZERO_ADDRESS }, signing: legacySigning(entry) };
  }
  const bytes = entry;
  const type = bytes[0] as number;
  if (type === DEPOSIT_TX_TYPE)
    return { tx: { type, bytes, hash: keccak256(bytes), sender: decodeDepositTx(bytes).from } };
  if (!KNOWN_SIGNED.has(type)) return { tx: { type, bytes, hash: keccak256(bytes), sender: ZERO_ADDRESS } };
  return { tx: { type, bytes, hash: keccak256(bytes), sender: ZERO_ADDRESS }, signing: typedSigning(bytes) };
}

const hexField = (o: Record<string, unknown>, name: string): string => {
  const v = o[name];
  if (typeof v !== 'string' || !/^0x[0-9a-fA-F]*$/.test(v)) throw new Error(`no valid "${name}"`);
  return v;
};
const quantity = (o: Record<string, unknown>, name: string): bigint => BigInt(hexField(o, name));
const dataField = (o: Record<string, unknown>, name: string): Uint8Array => {
  const b = wireBytes(o[name]);
  if (b === undefined) throw new Error(`no valid "${name}"`);
  return b;
};
const optQuantity = (o: Record<string, unknown>, name: string): bigint | undefined =>
  o[name] === undefined || o[name] === null ? undefined : quantity(o, name);

/** A transaction rebuilt from its JSON (eth_getBlockByHash with full transactions). */
export async function txFromJson(json: unknown, common: Common): Promise<ReplicaTx> {
  if (typeof json !== 'object' || json === null) throw new Error('transaction is not an object');
  const o = json as Record<string, unknown>;
  const type = Number(quantity(o, 'type'));
  if (type === DEPOSIT_TX_TYPE) {
    const tx = depositTxFromJson(o);
    const bytes = encodeDepositTx(tx);
    return { type, bytes, hash: keccak256(bytes), sender: tx.from };
  }
  if (!KNOWN_SIGNED.has(type)) throw new Error(`transaction type ${type} cannot be rebuilt from JSON`);
  const tx = await createTxFromRPC(o as never, { common });
  const bytes = tx.serialize();
  return {
    type,
    bytes,
    hash: keccak256(bytes),
    sender: type === 0 ? legacySender(RLP.decode(bytes) as Uint8Array[]) : typedSender(bytes),
  };
}

/**
 * A receipt's log, its fields' widths checked: an upstream's receipts are hostile until
 * validated, and a self-consistent lie (its header committing to them) passes the receipts root.
 */
function replicaLog(address: unknown, topics: unknown, data: unknown): LogInput {
  if (!(address instanceof Uint8Array) || address.length !== 20) throw new Error('log address is not 20 bytes');
  if (!Array.isArray(topics) || topics.length > 4) throw new Error('log topics are not a list of at most 4');
  for (const t of topics)
    if (!(t instanceof Uint8Array) || t.length !== 32) throw new Error('log topic is not 32 bytes');
  if (!(data instanceof Uint8Array)) throw new Error('log data is not bytes');
  return { address, topics: topics as Uint8Array[], data };
}

/** A receipt from its consensus encoding (debug_getRawReceipts). */
export function receiptFromRaw(raw: Uint8Array): ReplicaReceipt {
  const typed = raw.length > 0 && (raw[0] as number) < 0x80;
  const type = typed ? (raw[0] as number) : 0;
  const f = RLP.decode(typed ? raw.subarray(1) : raw) as unknown as (Uint8Array | Uint8Array[][])[];
  if (!Array.isArray(f) || f.length < 4) throw new Error('receipt is not a list of at least 4 items');
  if (!Array.isArray(f[3])) throw new Error('receipt logs are not a list');
  const logs = (f[3] as unknown[]).map((l) => {
    if (!Array.isArray(l) || l.length !== 3) throw new Error('receipt log is malformed');
    return replicaLog(l[0], l[1], l[2]);
  });
  const r: ReplicaReceipt = {
    type,
    statusOrState: f[0] as Uint8Array,
    cumulativeGasUsed: bytesToBigInt(f[1] as Uint8Array),
    logs,
  };
  if (type === DEPOSIT_TX_TYPE) {
    if (f[4] !== undefined) r.depositNonce = bytesToBigInt(f[4] as Uint8Array);
    if (f[5] !== undefined) r.depositReceiptVersion = bytesToBigInt(f[5] as Uint8Array);
  }
  return r;
}

/** A receipt from its JSON (eth_getBlockReceipts / eth_getTransactionReceipt). */
export function receiptFromJson(json: unknown): ReplicaReceipt {
  if (typeof json !== 'object' || json === null) throw new Error('receipt is not an object');
  const o = json as Record<string, unknown>;
  const type = o.type === undefined ? 0 : Number(quantity(o, 'type'));
  let statusOrState: Uint8Array;
  if (o.status !== undefined && o.status !== null) {
    const s = quantity(o, 'status');
    if (s !== 0n && s !== 1n) throw new Error(`status ${s} is not 0 or 1`);
    statusOrState = s === 1n ? Uint8Array.of(1) : new Uint8Array(0);
  } else statusOrState = dataField(o, 'root');
  if (!Array.isArray(o.logs)) throw new Error('receipt has no logs list');
  const logs = o.logs.map((l: unknown) => {
    if (typeof l !== 'object' || l === null) throw new Error('log is not an object');
    const lo = l as Record<string, unknown>;
    if (!Array.isArray(lo.topics)) throw new Error('log has no topics');
    return replicaLog(
      dataField(lo, 'address'),
      lo.topics.map((t: unknown) => dataField({ t }, 't')),
      dataField(lo, 'data'),
    );
  });
  const r: ReplicaReceipt = { type, statusOrState, cumulativeGasUsed: quantity(o, 'cumulativeGasUsed'), logs };
  if (type === DEPOSIT_TX_TYPE) {
    r.depositNonce = optQuantity(o, 'depositNonce');
    r.depositReceiptVersion = optQuantity(o, 'depositReceiptVersion');
  }
  return r;
}

/** The consensus encoding of a receipt, its bloom computed from its logs unless given. */
export function encodeReplicaReceipt(r: ReplicaReceipt, bloom: Uint8Array = logsBloomOf(r.logs)): Uint8Array {
  return encodeReceipt({
    type: r.type,
    statusOrState: r.statusOrState,
    cumulativeGasUsed: r.cumulativeGasUsed,
    logs: r.logs,
    bloom,
    ...(r.depositNonce !== undefined ? { depositNonce: r.depositNonce } : {}),
    ...(r.depositReceiptVersion !== undefined ? { depositReceiptVersion: r.depositReceiptVersion } : {}),
  });
}

/** Parses a list of hex strings (upstream input) into bytes, with a clear error. */
export function hexList(v: unknown, what: string, origin: string): Uint8Array[] {
  if (!Array.isArray(v)) throw new UpstreamError(`${origin}: ${what} is not a list`);
  return v.map((x, i) => {
    const b = wireBytes(x);
    if (b === undefined) throw new UpstreamError(`${origin}: ${what}[${i}] is not hex bytes`);
    return b;
  });
}
