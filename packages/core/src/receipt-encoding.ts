// The consensus encoding of receipts (what a block's receiptsRoot commits to, and geth's
// debug_getRawReceipts answers): legacy receipts are rlp([statusOrPostState, cumulativeGasUsed,
// bloom, logs]); typed receipts are the type byte followed by that RLP; a log is
// [address, [topics..], data]. OP-stack deposit receipts (type 0x7e) append depositNonce and
// then depositReceiptVersion when present (op-geth's optional RLP fields).
import { logsBloomOf } from './bloom.js';
import { DEPOSIT_TX_TYPE } from './deposit-tx.js';
import { encodeNested, encodeTyped, uintBytes } from './rlp-write.js';
import type { Nested } from './rlp-write.js';
import type { Bytes } from './types.js';

/** The fields of a log that the consensus encoding holds. */
export interface ConsensusLog {
  address: Bytes;
  topics: readonly Bytes[];
  data: Bytes;
}

/** The fields of a receipt that the consensus encoding holds. */
export interface ConsensusReceipt {
  type: number;
  /**
   * Status after Byzantium: empty bytes (or one 0x00 byte, as the store keeps it) for failure,
   * 0x01 for success; before it, the 32-byte post-state root.
   */
  statusOrState: Bytes;
  cumulativeGasUsed: bigint;
  logs: readonly ConsensusLog[];
  /** The 256-byte logs bloom; computed from the logs when absent. */
  bloom?: Bytes;
  /** OP-stack deposit receipts only (type 0x7e). */
  depositNonce?: bigint;
  depositReceiptVersion?: bigint;
}

/** The status field as consensus encodes it: status 0 is the empty string, never a 0x00 byte. */
function statusField(s: Bytes): Bytes {
  return s.length === 1 && s[0] === 0 ? new Uint8Array(0) : s;
}

/** The consensus encoding of one receipt (see the file comment). */
export function encodeReceipt(r: ConsensusReceipt): Bytes {
  if (!Number.isInteger(r.type) || r.type < 0 || r.type > 0x7f) throw new RangeError(`receipt: bad type ${r.type}`);
  const bloom = r.bloom ?? logsBloomOf(r.logs);
  if (bloom.length !== 256) throw new RangeError('receipt: bloom must be 256 bytes');
  const fields: Nested[] = [
    statusField(r.statusOrState),
    uintBytes(r.cumulativeGasUsed),
    bloom,
    r.logs.map((l) => [l.address, l.topics as Nested[], l.data]),
  ];
  if (r.type === DEPOSIT_TX_TYPE) {
    // rlp:"optional" fields: a later one present makes the earlier ones present (as zero).
    if (r.depositNonce !== undefined || r.depositReceiptVersion !== undefined)
      fields.push(uintBytes(r.depositNonce ?? 0n));
    if (r.depositReceiptVersion !== undefined) fields.push(uintBytes(r.depositReceiptVersion));
  }
  // One allocation (rlp-write.ts): the generic encoder made a buffer per item and copied each
  // log's data once per level of nesting.
  return r.type === 0 ? encodeNested(fields) : encodeTyped(r.type, fields);
}
