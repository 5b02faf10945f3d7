// Plain, decoded chain records: what the store hands to query code. Bytes are Uint8Array,
// numbers are bigint (quantities) or number (indexes, sizes). Nothing here knows LevelDB or
// JSON; the rpc formatters turn these into geth-shaped JSON.
import type { AsciiChunk } from './ascii-chunks.js';

export type Bytes = Uint8Array;

/** A block header with every field a post-Osaka header can carry; later fields are optional. */
export interface HeaderRecord {
  hash: Bytes;
  parentHash: Bytes;
  uncleHash: Bytes; // sha3Uncles
  coinbase: Bytes; // miner
  stateRoot: Bytes;
  transactionsRoot: Bytes;
  receiptsRoot: Bytes;
  logsBloom: Bytes;
  difficulty: bigint;
  number: bigint;
  gasLimit: bigint;
  gasUsed: bigint;
  timestamp: bigint;
  extraData: Bytes;
  mixHash: Bytes;
  nonce: Bytes; // 8 bytes
  baseFeePerGas?: bigint; // London
  withdrawalsRoot?: Bytes; // Shanghai
  blobGasUsed?: bigint; // Cancun
  excessBlobGas?: bigint; // Cancun
  parentBeaconBlockRoot?: Bytes; // Cancun
  requestsHash?: Bytes; // Prague
}

export interface AccessListEntry {
  address: Bytes;
  storageKeys: Bytes[];
}

export interface AuthorizationRecord {
  chainId: bigint;
  address: Bytes;
  nonce: bigint;
  yParity: bigint;
  r: bigint;
  s: bigint;
}

/**
 * A transaction of any type: signed (0 legacy, 1 EIP-2930, 2 EIP-1559, 3 EIP-4844, 4 EIP-7702),
 * an OP-stack deposit (0x7e: no signature, v = r = s = 0, gasPrice 0, the deposit fields below),
 * or a typed envelope of a type this code does not know (`opaque`: only type, hash and sender
 * are known; the other fields are zero and mean nothing).
 */
export interface TxRecord {
  type: number;
  hash: Bytes;
  from: Bytes; // recovered once at import, stored; never recovered at query time (deposits: in the tx)
  /** Deposits: the receipt's depositNonce when the store has it (the encoding has none), else 0. */
  nonce: bigint;
  gas: bigint;
  to: Bytes | null; // null: contract creation
  value: bigint;
  input: Bytes;
  v: bigint;
  r: bigint;
  s: bigint;
  chainId?: bigint; // typed txs; legacy only when EIP-155 protected (derived from v)
  gasPrice?: bigint; // types 0 and 1
  maxPriorityFeePerGas?: bigint; // types 2, 3, 4
  maxFeePerGas?: bigint; // types 2, 3, 4
  accessList?: AccessListEntry[]; // types 1..4
  maxFeePerBlobGas?: bigint; // type 3
  blobVersionedHashes?: Bytes[]; // type 3
  authorizationList?: AuthorizationRecord[]; // type 4
  sourceHash?: Bytes; // type 0x7e
  mint?: bigint; // type 0x7e (0: none; the encoding does not tell them apart)
  isSystemTx?: boolean; // type 0x7e
  depositReceiptVersion?: bigint; // type 0x7e, from its receipt (Canyon on)
  /** A typed envelope of an unknown type: nothing but type, hash and sender is decoded. */
  opaque?: true;
}

export interface WithdrawalRecord {
  index: bigint;
  validatorIndex: bigint;
  address: Bytes;
  amount: bigint; // in Gwei, as in the block
}

/** A canonical block with its body and the facts the RPC adds (size, total difficulty). */
export interface BlockRecord {
  header: HeaderRecord;
  /** RLP length of the whole block ([header, txs, uncles(, withdrawals)]). */
  size: number;
  totalDifficulty: bigint;
  transactions: TxRecord[];
  /**
   * The transaction hashes in order, when the store has them without decoding `transactions`
   * (a store may then decode those only when they are first read): what a hashes-only block
   * answer needs.
   */
  transactionHashes?: Bytes[];
  /**
   * The transactions' canonical encodings and their senders (recovered at import), in order, when
   * the store has them without decoding `transactions`: a full-transaction answer is written
   * from them (rpc's transaction-text.ts) without decoding records. With transactionHashes.
   */
  transactionEncodings?: { raw: readonly Bytes[]; senders: readonly Bytes[] };
  uncleHashes: Bytes[];
  withdrawals?: WithdrawalRecord[]; // present from Shanghai on
}

/** An uncle header as served by the uncle methods. */
export interface UncleRecord {
  header: HeaderRecord;
  /** RLP length of [header, [], []]: geth marshals an uncle as a block with an empty body. */
  size: number;
}

/** A transaction with where it was mined. */
export interface TxWithLocation {
  tx: TxRecord;
  blockHash: Bytes;
  blockNumber: bigint;
  transactionIndex: number;
  blockTimestamp: bigint;
  /** Base fee of the including block, to compute the effective gas price of 1559-style txs. */
  baseFeePerGas?: bigint | undefined;
}

export interface LogRecord {
  address: Bytes;
  topics: Bytes[];
  data: Bytes;
  blockNumber: bigint;
  blockHash: Bytes;
  blockTimestamp: bigint;
  transactionHash: Bytes;
  transactionIndex: number;
  logIndex: number; // position in the block
}

/** A resolved log filter: numbers, not tags. Empty `addresses` means any address. */
export interface LogQuery {
  fromBlock: bigint;
  toBlock: bigint;
  addresses: Bytes[];
  /**
   * Positional; null is a wildcard; an array matches any of its values. As in geth, a log with
   * fewer topics than `topics.length` never matches, even when the extra positions are null
   * (`[null]` excludes logs without topics).
   */
  topics: (Bytes[] | null)[];
}

export interface LogQueryOptions {
  /** Maximum number of logs; one more than this is a "too many" outcome. */
  limit: number;
  /** Wall-clock deadline (Date.now() ms). Past it the query stops and throws LimitExceededError. */
  deadline: number;
}

export type LogQueryResult =
  | { kind: 'ok'; logs: LogRecord[] }
  /**
   * More than `limit` logs match. `lastFittingBlock` is the end of the longest prefix
   * [fromBlock, lastFittingBlock] whose matches fit the limit (fromBlock - 1 if even the first
   * block holds more than `limit`).
   */
  | { kind: 'too-many'; lastFittingBlock: bigint };

/**
 * LogQueryResult with the logs as their JSON answer (an array's text), as formatLog would write
 * it, in ASCII bytes (every member is a hex string, a number or false: the bytes are its UTF-8
 * and its Latin-1 alike), in chunks: concatenated in order they are the text. Bytes, not a
 * string: the stored rows are bytes, and an answer of hundreds of KB built as a string is copied
 * again (joined, flattened, encoded) on its way out. Chunks, not one buffer: they are views of
 * the rows as read and the separators between them, written once, into the reply; a chunk may
 * also be a slice of a sealed log segment's file, read straight into the reply (ascii-chunks.ts).
 */
export type LogTextQueryResult =
  | { kind: 'ok'; ascii: AsciiChunk[]; count: number }
  | { kind: 'too-many'; lastFittingBlock: bigint };

/**
 * A transaction's receipt as stored (consensus fields) with its logs: what the receipt answers
 * derive everything else from (gas used from the cumulative gas, contract address, blob gas).
 */
export interface ReceiptRecord {
  type: number;
  /** Post-Byzantium status (1 byte: 0 or 1, or empty for 0), or the 32-byte post-state root before it. */
  statusOrState: Bytes;
  cumulativeGasUsed: bigint;
  /** The transaction's logs, in order, with their block-wide log index. */
  logs: LogRecord[];
  /** OP-stack deposit receipts (type 0x7e), when the store holds them. */
  depositNonce?: bigint;
  depositReceiptVersion?: bigint;
}

/** An account of a state (absent accounts are null where this is returned). */
export interface AccountRecord {
  nonce: bigint;
  balance: bigint;
  codeHash: Bytes;
  storageRoot: Bytes;
}

/**
 * Synchronous state reads for an EVM (the execution module's state manager): the store's trie
 * walk over its node cache, one synchronous LevelDB get per node not cached. Everything returned
 * is the caller's own copy.
 */
export interface SyncStateReader {
  /** The account `address` in the state `stateRoot`; null when absent. */
  account(stateRoot: Bytes, address: Bytes): AccountRecord | null;
  /** The 32-byte word at `slot` (32 bytes) of the storage trie `storageRoot`; zeros when absent. */
  storage(storageRoot: Bytes, slot: Bytes): Bytes;
  /** The code whose keccak is `codeHash` (empty for the empty code hash); undefined when missing. */
  code(codeHash: Bytes): Bytes | undefined;
  /**
   * A trie node by its hash (undefined when the store lacks it): what a new root over this state
   * is computed from (eth_simulateV1's blocks). Absent (or undefined) on stores that serve no nodes.
   */
  readonly node?: ((hash: Bytes) => Bytes | undefined) | undefined;
}

export interface StorageProofRecord {
  key: Bytes; // the 32-byte slot as requested (left-padded)
  value: bigint;
  proof: Bytes[]; // RLP trie nodes from the storage root
}

export interface AccountProofRecord {
  address: Bytes;
  nonce: bigint;
  balance: bigint;
  codeHash: Bytes;
  storageHash: Bytes; // storage root
  accountProof: Bytes[]; // RLP trie nodes from the state root
  storageProof: StorageProofRecord[];
}

/**
 * The whole state change of one block (ChainStore.stateDiff): every account leaf of the state
 * trie that differs between the parent's state root and the block's, in key order.
 */
export interface StateDiffRecord {
  accounts: AccountDiffRecord[];
}

/** One account leaf's change in a StateDiffRecord. */
export interface AccountDiffRecord {
  /** keccak256 of the address: the leaf's path in the state trie. */
  key: Bytes;
  /** The new leaf's fields; null when the leaf was removed. */
  account: { nonce: bigint; balance: bigint; storageRoot: Bytes; codeHash: Bytes } | null;
  /** The code, when codeHash differs from the parent leaf's and is not the empty code's. */
  code?: Bytes;
  /**
   * Storage leaves added or changed (the value, minimal big-endian) or removed (null), between the
   * parent leaf's storage trie (the empty trie for a new account) and the new one, in key order
   * (keccak256 of the slot). Empty for a removed account.
   */
  storage: [key: Bytes, value: Bytes | null][];
}

/**
 * The accounts a block's transactions changed and the slots they wrote, as the block's recorded
 * state changes name them (each account once): the keys ChainStore.historyStateDiff looks up.
 */
export interface BlockTouches {
  accounts: TouchedAccount[];
}

/** One account of BlockTouches. */
export interface TouchedAccount {
  address: Bytes;
  /** The slots written (32-byte slot numbers, not hashed), each once. */
  slots: Bytes[];
  /**
   * Its code hash before the block (its first transaction's prior state); null: it had no code;
   * undefined: not known to the caller (the store reads it).
   */
  codeHashBefore: Bytes | null | undefined;
}

/** Bounds of one state diff: past either, ChainStore.stateDiff stops and throws. */
export interface StateDiffLimits {
  /** Wall-clock deadline (Date.now() ms); past it: LimitExceededError "query timeout exceeded". */
  deadline: number;
  /** The answer's JSON size, estimated as the walk goes; past it: ResponseTooLargeError. */
  maxBytes: number;
}

/** A page of the transactions an address touched (the store's address-appearance index). */
export interface AppearanceQuery {
  address: Bytes;
  /** 'before': newest first, blocks below `block` (every block when undefined); 'after': oldest first, above it. */
  direction: 'before' | 'after';
  block: bigint | undefined;
  /** Transactions wanted (the page's last block is completed past it). */
  count: number;
}

export interface AppearancePage {
  /** The transactions' positions, in the query's order. */
  positions: { number: bigint; index: number }[];
  /** More matches lie past the page. */
  more: boolean;
}
