import type {
  AccountProofRecord,
  AppearancePage,
  AppearanceQuery,
  AccountRecord,
  BlockRecord,
  Bytes,
  HeaderRecord,
  LogQuery,
  LogQueryOptions,
  LogQueryResult,
  LogTextQueryResult,
  ReceiptRecord,
  SyncStateReader,
  BlockTouches,
  StateDiffLimits,
  StateDiffRecord,
  TxWithLocation,
  UncleRecord,
} from './types.js';

export interface ChainHead {
  number: bigint;
  hash: Bytes;
}

/** A block by number and hash: the one a by-block state read is for. */
export interface BlockRef {
  readonly number: bigint;
  readonly hash: Bytes;
}

/** Facts of the imported chain fixed at genesis. */
export interface ChainInfo {
  chainId: bigint;
  /** Network id for net_version; geth exports carry none, so it equals chainId. */
  networkId: bigint;
  genesisHash: Bytes;
  /**
   * The geth genesis.json the chain started from (its `config` holds the fork schedule), as
   * stored at import; at least `{ config }`. What an EVM needs to pick rules per block.
   */
  genesis?: unknown;
  /**
   * The first block the store holds: 0, or N for a node that joined its chain at block N (no
   * block, receipt or state of its own below N; state at N and above arrives proven, on demand).
   */
  firstBlock?: bigint;
}

/**
 * How long the store keeps its state trie (a datadir setting, `--state-trie`): every block's
 * (`archive`), or the last `blocks` blocks' (`window`), complete from block `trieFrom` on. Below
 * `trieFrom` state reads come from the flat state history and proofs are refused.
 */
export type StateTrieView = { mode: 'archive' } | { mode: 'window'; blocks: number; trieFrom: bigint };

/** A JSON text ready to be spliced into an answer (exactly what the formatter would write), as its ASCII bytes. */
export interface ReadyJson {
  readonly ascii: Uint8Array;
}

/**
 * The read-only view of an imported chain that all query code depends on (never LevelDB).
 * Everything is canonical-chain only. "Not found" is `undefined`, never an exception; a
 * failure to read throws StoreUnavailableError.
 */
export interface ChainStore {
  info(): ChainInfo;
  /** The newest fully imported block. */
  head(): Promise<ChainHead>;
  canonicalHash(number: bigint): Promise<Bytes | undefined>;
  /** Number of a canonical block by hash; undefined for unknown hashes. */
  blockNumber(hash: Bytes): Promise<bigint | undefined>;
  header(hash: Bytes): Promise<HeaderRecord | undefined>;
  /**
   * The state root of the canonical block `hash` (undefined when it is not canonical), for
   * state reads that need nothing else of the header; without it callers read header().
   */
  stateRoot?(hash: Bytes): Promise<Bytes | undefined>;
  /**
   * The state root of the canonical block numbered `number` (undefined past the head): what
   * canonicalHash then stateRoot give, in one step (one promise per state read, not three).
   */
  canonicalStateRoot?(number: bigint): Promise<Bytes | undefined>;
  block(hash: Bytes): Promise<BlockRecord | undefined>;
  /**
   * The canonical block `hash` as its hashes-only JSON answer, when the store writes it from its
   * rows without a block record (else undefined, and the caller formats block()). While cached,
   * the same object for the same block.
   */
  readyBlockJson?(hash: Bytes): Promise<ReadyJson | undefined>;
  /** Uncle `index` of the canonical block `blockHash`; undefined past the end. */
  uncle(blockHash: Bytes, index: number): Promise<UncleRecord | undefined>;
  transaction(hash: Bytes): Promise<TxWithLocation | undefined>;
  /** Matching logs in block then log order, answered from the log index. */
  logs(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult>;
  /**
   * The same query answered as JSON text, when the store keeps ready-to-serve log encodings (else
   * undefined, and the caller formats logs()). Undefined also for queries it leaves to logs().
   */
  logsText?(query: LogQuery, options: LogQueryOptions): Promise<LogTextQueryResult | undefined>;
  /**
   * The receipts of the canonical block `blockHash`, in transaction order, each with its logs;
   * undefined when the block is not canonical.
   */
  receipts(blockHash: Bytes): Promise<ReceiptRecord[] | undefined>;
  /**
   * Receipt `index` of the canonical block `blockHash` with its logs, and the receipt before it
   * (its cumulative gas gives gasUsed), without building the block's other receipts' logs;
   * undefined when the block is not canonical, has no such receipt, or is not held here (a
   * joined node's blocks below its first): callers then use receipts(). Absent: use receipts().
   */
  receiptAt?(
    blockHash: Bytes,
    index: number,
  ): Promise<{ receipt: ReceiptRecord; previous: ReceiptRecord | undefined } | undefined>;
  /**
   * Transaction `index` of the canonical block `number`, with its location, without decoding the
   * block's others; undefined when there is none here (callers then read the block). Absent: read
   * the block.
   */
  transactionAt?(number: bigint, index: number): Promise<TxWithLocation | undefined>;
  /**
   * The transactions `address` touched as their sender, recipient, created contract or log
   * emitter, or that their recorded call frames name, a page at a time, from the
   * address-appearance index. Undefined when the store's
   * index does not cover its whole chain (a datadir written before the index existed). Absent on
   * stores without the index.
   */
  appearances?(query: AppearanceQuery): Promise<AppearancePage | undefined>;
  /**
   * Every position of `address` in the canonical blocks `from`..`to` in the address-appearance
   * index (the rows' appearances, and the addresses of the recorded frames from block
   * `framesFrom` on; undefined: none recorded into it), oldest first. Undefined when the index
   * does not cover the range.
   */
  appearanceRange?(
    address: Bytes,
    from: bigint,
    to: bigint,
  ): Promise<{ positions: AppearancePage['positions']; framesFrom: bigint | undefined } | undefined>;
  /**
   * The call frames of the canonical block `blockHash`'s transactions as its executing import
   * recorded them (an opaque row the trace module reads, led by the block's hash); undefined when
   * the block was not recorded (replicated, joined, or imported with recording off). With
   * `index`, only a row holding that transaction's (a part of the block's: TRACE_ROW_TXS of its
   * transactions, or all of them as an earlier release wrote them). Absent on stores without
   * recorded frames.
   */
  txFrames?(blockHash: Bytes, index?: number): Promise<Bytes | undefined>;
  /**
   * What the canonical block `blockHash`'s transactions changed of the state as its executing
   * import recorded it (an opaque row the trace module reads, led by the block's hash); undefined
   * as txFrames; with `index`, a row holding that transaction's, as txFrames. Absent on stores
   * without recorded frames.
   */
  txStateDiffs?(blockHash: Bytes, index?: number): Promise<Bytes | undefined>;
  /**
   * The frame blooms of the canonical blocks `from`..`to` (exec's frameBloom of the addresses their
   * recorded frames name and their senders), one per block, undefined where a block was not
   * recorded: one range read. Absent on stores without recorded frames.
   */
  frameBlooms?(from: bigint, to: bigint): Promise<(Bytes | undefined)[]>;
  /**
   * The canonical blocks of `from`..`to`, ascending, whose recorded frames the address-appearance
   * index holds (the blocks an executing import recorded from Meta.frameAppearancesFrom on): for
   * these, the index lists every transaction whose frames name an address. One range read. Absent
   * on stores without recorded frames.
   */
  frameIndexedBlocks?(from: bigint, to: bigint): Promise<bigint[]>;
  /** The account `address` in the state `stateRoot`; null when absent. */
  account(stateRoot: Bytes, address: Bytes): Promise<AccountRecord | null>;
  /**
   * The account `address` after the canonical block `block` (null: absent), from the store's flat
   * state history: one seek, no trie walk. Undefined when the store keeps no state history, or
   * when `block` is no longer canonical (a reorg removed it): the caller then reads account() at
   * the block's state root. Absent on stores without a state history.
   */
  accountAtBlock?(block: BlockRef, address: Bytes): Promise<AccountRecord | null | undefined>;
  /** storageAt() after the canonical block `block` from the flat state history; undefined as accountAtBlock. */
  storageAtBlock?(block: BlockRef, address: Bytes, slot: Bytes): Promise<Bytes | undefined>;
  /**
   * The state trie's retention (absent: archive). Synchronous and cached (a commit refreshes it);
   * `fresh` reads the datadir's current trieFrom (a background pruner advances it between commits).
   */
  stateTrie?(fresh?: boolean): StateTrieView;
  /** Code by its keccak (empty for the empty code hash); undefined when the store has none. */
  code(codeHash: Bytes): Promise<Bytes | undefined>;
  /** Synchronous state reads through the same caches (for an EVM's state manager). */
  stateReader(): SyncStateReader;
  /** Storage slot (32-byte key) of `address` in the state whose root is `stateRoot`; zero if absent. */
  storageAt(stateRoot: Bytes, address: Bytes, slot: Bytes): Promise<Bytes>;
  /** EIP-1186 proof from the trie nodes of the state `stateRoot`. */
  proof(stateRoot: Bytes, address: Bytes, slots: Bytes[]): Promise<AccountProofRecord>;
  /**
   * Consensus encodings as the chain carries them (geth's debug_getRaw*), for canonical blocks
   * only (undefined otherwise): the header's RLP, the whole block's RLP, and one transaction's
   * canonical encoding (typed: type byte ++ payload) by its hash.
   */
  rawHeader(hash: Bytes): Promise<Bytes | undefined>;
  rawBlock(hash: Bytes): Promise<Bytes | undefined>;
  rawTransaction(txHash: Bytes): Promise<Bytes | undefined>;
  /**
   * The state change from the state `parentRoot` to the state `root` (a block's parent's root
   * and its own), by a diff of the two tries that reads only the paths where they differ.
   * Throws LimitExceededError / ResponseTooLargeError past `limits`.
   */
  stateDiff(parentRoot: Bytes, root: Bytes, limits: StateDiffLimits): Promise<StateDiffRecord>;
  /**
   * stateDiff's answer for the canonical `block`, read from its state history rows instead of
   * diffing two tries: the rows at its number of the keys `touches` names, which are its whole
   * change set exactly when they are as many as the block's stored count. Undefined when they are
   * not, when the store keeps no count for the block (a datadir written before it did), or when
   * `block` is not canonical: the caller diffs the tries. Throws ResponseTooLargeError past
   * `limits.maxBytes`. Absent on stores without state history.
   */
  historyStateDiff?(
    block: BlockRef,
    touches: BlockTouches,
    limits: StateDiffLimits,
  ): Promise<StateDiffRecord | undefined>;
  /**
   * Stores trie nodes and contract code that the caller has verified against a stored state root
   * (a node that joined its chain at block N fetches the paths it reads as proofs). Each is keyed
   * by its own keccak here, as the archive trie keys them, so nothing can be stored under another
   * hash. Readable as soon as the call returns; the promise settles when they are written (a
   * crash before that loses proven state only: it is proven again). Absent on stores that do not
   * take proven state.
   */
  addProvenState?(nodes: Bytes[], codes: Bytes[]): Promise<void>;
  /**
   * Trie nodes by their keccak, each whole as its hash names it (undefined when not stored): what
   * a node joining the chain downloads its first block's state by, checking each against the hash
   * it asked for. Absent on stores that cannot list nodes by hash.
   */
  stateNodes?(hashes: Bytes[]): Promise<(Bytes | undefined)[]>;
  /**
   * A store whose state may be incomplete (a joined node's) records what its synchronous state
   * reads (stateReader) could not find; this fetches and proves those paths. True when it
   * fetched something (run the execution again), false when nothing was recorded. Absent on
   * stores that hold their whole state.
   */
  fetchMissedState?(): Promise<boolean>;
  /**
   * A store whose state may be incomplete (a joined node's) fetches and proves, together and
   * before an execution starts, the accounts and slots of the state `stateRoot` it is known to
   * read (a call's sender, target and access list) and does not hold, and the target's code: the
   * execution does not fail on each in turn. Absent on stores that hold their whole state.
   */
  prefetchState?(stateRoot: Bytes, paths: { address: Bytes; slots: Bytes[] }[], codeOf?: Bytes): Promise<void>;
  close(): Promise<void>;
}
