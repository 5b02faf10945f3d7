// One replicated block: what a source hands the pipeline (header, canonical transactions,
// receipts, and a way to fill the state overlay), and the checks that stand in for execution.
// Every root the header commits to is recomputed from the received data; the state root from the
// node's own parent state plus the changes (state.ts). Any mismatch names the block and field.
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import { bloomUnion, keccak256, logsBloomOf } from '@chainnode/core';
import type { HeaderRecord } from '@chainnode/core';
import { BlockVerificationError } from '../errors.js';
import { encodeReplicaReceipt } from './envelopes.js';
import type { ReplicaReceipt, ReplicaTx } from './envelopes.js';
import { orderedTrieRoot } from './ordered-trie.js';
import type { StateOverlay } from './state.js';

export interface ReplicaBlock {
  number: bigint;
  hash: Uint8Array;
  parentHash: Uint8Array;
  timestamp: bigint;
  headerRlp: Uint8Array;
  header: HeaderRecord;
  transactions: ReplicaTx[];
  /** Uncle headers as their RLP value lists. */
  uncles: Uint8Array[][];
  /** Withdrawals as their RLP value lists (from Shanghai on). */
  withdrawals?: Uint8Array[][] | undefined;
  receipts: ReplicaReceipt[];
  /** Size of the block's RLP encoding (the `size` field). */
  size: number;
  /** Puts the block's whole state change into the overlay (the source's diff and block-level writes). */
  changes(overlay: StateOverlay): Promise<void>;
}

const hex = (b: Uint8Array): string => bytesToHex(b);

function fail(
  n: bigint,
  field: string,
  upstream: Uint8Array | bigint | string,
  computed: Uint8Array | bigint | string,
): never {
  const fmt = (v: Uint8Array | bigint | string) =>
    typeof v === 'string' ? v : typeof v === 'bigint' ? v.toString() : hex(v);
  throw new BlockVerificationError(n, field, fmt(upstream), fmt(computed), 'upstream');
}

export function checkField(
  n: bigint,
  field: string,
  upstream: Uint8Array | bigint,
  computed: Uint8Array | bigint,
): void {
  const same = typeof upstream === 'bigint' ? upstream === computed : equalsBytes(upstream, computed as Uint8Array);
  if (!same) fail(n, field, upstream, computed);
}

/**
 * The checks that need no state: header hash, transactions root, uncles hash, withdrawals root,
 * receipts root, logs bloom and gas used. Throws BlockVerificationError naming the field.
 * `withdrawalsRootIsStorageRoot` (OP-stack from Isthmus, op-stack.ts): the header's
 * withdrawalsRoot is a storage root checked against the state; the withdrawals list must be empty.
 */
export async function verifyBlockData(b: ReplicaBlock, withdrawalsRootIsStorageRoot = false): Promise<void> {
  const n = b.number;
  const h = b.header;
  checkField(n, 'hash', b.hash, keccak256(b.headerRlp));
  checkField(n, 'transactionsRoot', h.transactionsRoot, orderedTrieRoot(b.transactions.map((t) => t.bytes)));
  checkField(n, 'uncleHash (sha3Uncles)', h.uncleHash, keccak256(RLP.encode(b.uncles as never)));
  if (h.withdrawalsRoot !== undefined && withdrawalsRootIsStorageRoot) {
    if (b.withdrawals === undefined || b.withdrawals.length > 0)
      fail(n, 'withdrawals', `${b.withdrawals?.length ?? 'no list'}`, 'an empty list (OP-stack from Isthmus)');
  } else if (h.withdrawalsRoot !== undefined) {
    const ws = (b.withdrawals ?? []).map((w) => RLP.encode(w as never));
    checkField(n, 'withdrawalsRoot', h.withdrawalsRoot, orderedTrieRoot(ws));
  } else if (b.withdrawals !== undefined && b.withdrawals.length > 0)
    fail(n, 'withdrawals', 'none', `${b.withdrawals.length}`);
  if (b.receipts.length !== b.transactions.length)
    fail(n, 'receipts', `${b.receipts.length} receipts`, `${b.transactions.length} transactions`);
  // Each receipt's bloom is computed once: it goes into the receipt's encoding and the block's.
  const blooms = b.receipts.map((r) => logsBloomOf(r.logs));
  const encoded = b.receipts.map((r, i) => {
    const tx = b.transactions[i] as ReplicaTx;
    if (r.type !== tx.type) fail(n, `receipt ${i} type`, BigInt(r.type), BigInt(tx.type));
    return encodeReplicaReceipt(r, blooms[i]);
  });
  checkField(n, 'receiptsRoot', h.receiptsRoot, orderedTrieRoot(encoded));
  checkField(n, 'logsBloom', h.logsBloom, bloomUnion(blooms));
  const used = b.receipts.length === 0 ? 0n : (b.receipts[b.receipts.length - 1] as ReplicaReceipt).cumulativeGasUsed;
  checkField(n, 'gasUsed', h.gasUsed, used);
}
