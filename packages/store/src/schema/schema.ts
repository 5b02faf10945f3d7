// The LevelDB key schema: every table of the store, in ONE database. Each table owns a one-byte
// prefix (never reuse a retired one), numbers in keys are fixed-width big-endian so that byte order
// equals numeric order, and each table is a typed class whose range scans are clamped to its prefix.
//
//   prefix  table           Key -> Value
//   0x01    Meta            utf8 name -> bytes   (schemaVersion, genesisHash, chainConfig, head,
//                           genesisJson, logsJsonFrom, logSegments, firstBlock)
//   0x02    Canonical       number(8) -> blockHash(32)
//   0x03    HashToNumber    blockHash(32) -> number(8)
//   0x04    Headers         blockHash(32) -> header RLP (as in the block)
//   0x05    Bodies          blockHash(32) -> RLP [size, txCount, [uncleHeaderRlp..], withdrawals?]: the
//                           transactions are BodyTxs rows. An earlier release wrote them inline,
//                           RLP [size, [rawTx..], [uncleHeaderRlp..], withdrawals?] (a list where
//                           the count is), still read; `db convert` cuts them out.
//   0x06    Receipts        blockHash(32) -> RLP [[type, status(or postState), cumulativeGasUsed
//                           (, depositNonce(, depositReceiptVersion))]..]: the two trailing items
//                           only on OP-stack deposit receipts that have them (Regolith, Canyon), so
//                           rows written before they existed read unchanged.
//   0x07    TxLookup        txHash(32) -> varint(number) ++ varint(txIndex) (unsigned LEB128: 2-7
//                           bytes), or number(8) ++ txIndex(4): exactly 12 bytes (rows written
//                           before the compact form). No longer written: TxLookupShort (0x20)
//                           replaces it. Read after TxLookupShort while a datadir holds any
//                           (LevelChainStore.open); `db convert` moves them to TxLookupShort.
//   0x08    TotalDifficulty blockHash(32) -> td (minimal big-endian)
//   0x09    Senders         blockHash(32) -> sender(20) per tx, concatenated in tx order
//   0x0a    Blooms          number(8) -> logsBloom(256)
//   0x0b    BlockLogs       number(8) -> firstLogId(8) ++ logCount(4)
//   0x0c    Logs            logId(8) -> RLP [number, txIndex, logIndex, address, [topics..], data]:
//                           one row per log, as earlier releases wrote them. No longer written:
//                           a block's logs are its LogBlocks row; readers read these rows for the
//                           blocks that have no LogBlocks row (logs/log-blocks.ts), and `db
//                           convert` rewrites them as LogBlocks rows.
//   0x0d    LogIndex        kind(1) ++ value(20|32) ++ lastLogId(8) -> delta-varint logIds
//                           kind: 0x00..0x03 topic position, 0x10 address. The value's sorted
//                           log ids are cut into chunks of LOG_INDEX_CHUNK ids (occurrence
//                           0..N-1, N..2N-1, ...); a full chunk is keyed by its last id, the
//                           remainder (1..N-1 ids) by OPEN_CHUNK (all 0xff). A forward seek to
//                           value ++ id lands on the one chunk that may hold id. The layout is a
//                           pure function of the id set (batch grouping does not show).
//   0x0e    TrieNodes       key as the MPT / state manager asks (node hash, 'c'++codeHash) -> bytes
//   0x0f    BlockTxHashes   number(8) -> extras ++ zero padding ++ txHash(32) per tx, concatenated
//                           in tx order. extras: RLP [size, [uncleHash..], totalDifficulty,
//                           headerRlp, withdrawals?] (the block's RLP size, its uncles' hashes,
//                           its total difficulty, its header as in Headers, its withdrawals list
//                           as in the body): a hashes-only block answer is this one row (~0.6 KB
//                           more per block than the hashes alone, for one read instead of three).
//                           The padding (0..31 bytes) makes the value's length 1 more than a
//                           multiple of 32. Rows of earlier releases: the hashes alone (length a
//                           multiple of 32; the answer reads the body), or extras without the
//                           header and total difficulty ([size, [uncleHash..], withdrawals?]; the
//                           answer reads them from their tables); `db convert` rewrites both
//                           (blockTxHashesCodec, decodeBlockExtras).
//   0x10    BlockJson       blockHash(32) -> a block's hashes-only JSON answer, as earlier releases
//                           wrote it at import (0x01 ++ the answer, or an older row: the answer
//                           with an empty transaction list). No longer written or read: the answer
//                           is written on demand from the rows above (reader.ts loadReadyJson),
//                           and `db convert` deletes the rows a datadir still holds.
//   0x11    AddressLogsJson address(20) ++ number(8) -> count(4) ++ count x [logIndex(4) ++ textEnd(4)]
//                           ++ ASCII text: the JSON (core's LogJsonWriter) of the logs this address
//                           emitted in this block, joined by ',', in log order; entry i spans
//                           [i = 0 ? 0 : textEnd(i-1) + 1, textEnd(i)) of the text. Written at
//                           import: a ready-to-serve encoding laid out for the commonest getLogs
//                           query (an address over a block range: one forward scan of contiguous
//                           rows, each read whole). Present from block Meta.logsJsonFrom on (a
//                           datadir written before the table existed has none below its first
//                           block written after; readers then format logs from the Logs rows,
//                           so no schema version bump).
//   0x12    LogSegments     spanStart(8) ++ address(20) -> file(4) ++ offset(8) ++ count(4) ++ count x
//                           [block - spanStart (4) ++ textEnd(4) ++ logCount(4)]: where an address's
//                           AddressLogsJson text of a sealed span (log-segments.ts) lies in segment
//                           file `file`: its blocks in order, block i's text (its row's text) at
//                           [offset + (i = 0 ? 0 : textEnd(i-1) + 1), offset + textEnd(i)), the
//                           blocks joined by ','. Present for the spans of Meta.logSegments only.
//                           With count's top bit set (spans sealed since), the text is compressed
//                           in chunks (logs/segment-chunks.ts): textEnd is in the joined text, and
//                           chunks(4) ++ chunks x [firstEntry(4) ++ packedEnd(4)] follow: chunk j
//                           holds entries [firstEntry(j), firstEntry(j+1)), its brotli bytes at
//                           [offset + packedEnd(j-1), offset + packedEnd(j)) of the file.
//   0x13    AccountHistory  keccak(address)(32) ++ number(8) -> the account's state-trie leaf (RLP
//                           [nonce, balance, storageRoot, codeHash]) after block `number`, or empty
//                           (a tombstone) when the block deleted it: one row per account a block
//                           changed (history/). The account at block N is the row of the greatest
//                           number <= N (one reverse seek); none: absent at N. Present when
//                           Meta.stateHistory is (a datadir written before the table existed, or
//                           one that joined its chain above genesis, has none: readers walk the
//                           trie, so no schema version bump).
//   0x14    StorageHistory  keccak(address)(32) ++ keccak(slot)(32) ++ number(8) -> the slot's value
//                           after block `number` (minimal big-endian, as in its trie leaf), or empty
//                           when the block cleared it (set to zero, or its account deleted or
//                           re-created: every slot the account had gets a row). Read as
//                           AccountHistory; present with it.
//   0x15    StateLatest     keccak(address)(32) (++ keccak(slot)(32)) -> number(8) ++ count(1) ++
//                           count varint gaps ++ value: the key's AccountHistory (32-byte key) or
//                           StorageHistory (64-byte key) row of the greatest number, that number and
//                           its value, and the numbers of the key's earlier rows, newest first, at
//                           most 32 (each as its gap from the one before; fewer than 32: all of
//                           them) (history/latest.ts). A read at a block >= number is this one point
//                           read; at a block between two listed numbers, one more (the row at the
//                           lower); no row: the key has no history row (never changed). Complete
//                           only when Meta.stateLatest is present (a datadir written before the
//                           table existed, or with its earlier form without the list, flagged
//                           Meta.stateLatestUnlisted, is read by the seek until `db convert` fills
//                           it again; so no schema version bump).
//   0x16    LogBlocks       firstLogId(8) -> number(8) ++ codec(1) ++ the block's logs, columnar and
//                           compressed (logs/block-logs-codec.ts: per-block address and topic
//                           dictionaries, then per log its tx index gap, address, topics and data
//                           length, then the data blobs; codec 0 none, 1 deflate, 2 brotli): the
//                           logs of block `number` (log ids firstLogId.. in log order), one row
//                           per block that has logs (BlockLogs gives a block's firstLogId and
//                           count). The log holding id X is in the row of the greatest
//                           firstLogId <= X (found from the BlockLogs ranges: logs/locate.ts
//                           blockOfSync), or, for a block written by an earlier release and not
//                           converted yet, its Logs row. Columns under 4 KB are written with
//                           codec 0 (a zlib call's setup costs more than it saves there).
//   0x17    Appearances     kind(1) ++ address(20) ++ lastId(8) -> delta-varint appearance ids: the
//                           address-appearance index (appearances/). kind 0x00. An id is a
//                           transaction's position, number * 2^16 + txIndex (APPEARANCE_TX_BITS);
//                           its address appears in it as the sender, the recipient, the contract a
//                           creation transaction deploys, or the emitter of one of its logs (what
//                           its call frames name besides: FrameAppearances). Chunked exactly as LogIndex (LOG_INDEX_CHUNK
//                           ids a chunk, the open remainder under OPEN_CHUNK), written by the same
//                           writer code at import in every ingest mode. Complete from block
//                           Meta.appearancesFrom on (a datadir written before the table existed has
//                           rows only from its first block written after; the searches refuse until
//                           `db convert` builds the whole index: appearances/build.ts).
//   0x18    TxFrames        number(8) ++ row(2) -> the block's hash(32) ++ the call frames of
//                           TRACE_ROW_TXS of its transactions (core trace-rows.ts; row r holds
//                           transactions 16r .. 16r + 15) as its executing import recorded them
//                           (what the frame tracers are fed: frames entered and left, logs), in
//                           the form the trace module reads (packages/exec trace/record/codec.ts;
//                           opaque here): one transaction's trace reads its row, a block's reads
//                           its rows in order. Written by an import that executes with recording
//                           on; none for replicated or joined blocks (their traces re-execute).
//                           Stored compressed after the hash (trace-row-codec.ts: version 0x03,
//                           brotli; rows an earlier release wrote uncompressed are read as they
//                           are). An earlier release wrote one row a block under number(8) alone,
//                           still read. Cut on rewind.
//   0x19    FrameBlooms     number(8) -> the block's hash(32) ++ a 512-byte bloom of every address
//                           its recorded frames name and its senders (exec's frameBloom): what
//                           trace_filter reads first, for a range, to skip the blocks that cannot
//                           match. Written and cut with the TxFrames row.
//   0x1a    FrameAppearances kind(1) ++ address(20) ++ lastId(8) -> delta-varint appearance ids:
//                           the addresses a transaction's recorded call frames name (a frame's
//                           caller or callee, a created contract, a SELFDESTRUCT beneficiary)
//                           that its Appearances do not already hold (an internal call's callee
//                           that emits no log, say). The Appearances layout and kind; written
//                           with the TxFrames row (an executing import with recording on), from
//                           block Meta.frameAppearancesFrom on. The searches and trace_filter
//                           read both tables.
//   0x1b    FrameAddresses  number(8) -> the block's hash(32) ++ the distinct addresses it posted
//                           to FrameAppearances (20 bytes each): what a rewind reads to cut them.
//   0x1c    TxStateDiffs    number(8) ++ row(2) -> the block's hash(32) ++ what each of its transactions
//                           changed of the accounts it touched (balances, nonces, code hashes and
//                           slots before and after; which it created or destroyed), as its
//                           executing import recorded them: what prestateTracer's diffMode and
//                           Parity's stateDiff answer from (packages/exec trace/record/changes.ts;
//                           opaque here), cut into rows, keyed and compressed as TxFrames. Written and cut
//                           with the TxFrames rows, under the same setting (Meta.traceFrames).
//   0x1d    BodyTxs         blockHash(32) ++ row(2) -> RLP [rawTx..]: transactions BODY_ROW_TXS * row
//                           .. BODY_ROW_TXS * row + BODY_ROW_TXS - 1 of the block's body (typed:
//                           type byte ++ payload; legacy: the RLP list), one row per BODY_ROW_TXS
//                           (none for a block without transactions), written with its Bodies row.
//                           One transaction read alone reads its row (~5 KB at mainnet's shape),
//                           not the block's ~70 KB of transactions.
//   0x1e    HistoryIndex    keccak(address)(32) (++ keccak(slot)(32)) ++ range(4) -> flags(1) ++
//                           [varint: range start - the key's last change before the first
//                           offset, 0: none; when flags bit 0] ++ offset(1)..: the key's changes
//                           in blocks range * 256 .. range * 256 + 255, ascending (every change
//                           from the first listed on), for keys with more changes than their
//                           StateLatest row lists (history/change-index.ts). A read below the
//                           listed changes is the row of its range, or the nearest below, then
//                           the history row; no row answers: the seek.
//   0x1f    StateChanges    number(8) -> varint(accounts) ++ varint(slots): how many AccountHistory
//                           and StorageHistory rows block `number` has (its change set's size),
//                           written and cut with them (history/write.ts). What a block's change
//                           set read from its rows is checked against: rows found at the block's
//                           number for the keys its recorded state changes (TxStateDiffs) name are
//                           the whole change set exactly when they are this many
//                           (history/block-changes.ts). None for a block written before the table
//                           existed: its change set is the trie diff.
//   0x20    TxLookupShort   txHash[0..16) -> varint(number) ++ varint(txIndex), as TxLookup: keyed
//                           by half the hash (17 key bytes a transaction instead of 33). What it
//                           locates is checked against the whole hash at read (reader.ts), so a
//                           second transaction with the same 16 bytes (2^64 work to make) can only
//                           make the first one's lookup answer not found, never another's.
import { blockTxHashesCodec, bodyCodec, bodyRowKeyCodec, receiptsCodec } from './block-rows.js';
import {
  addressNumberCodec,
  bigUintCodec,
  blockLogRangeCodec,
  fixedBytesCodec,
  fixedListCodec,
  hashCodec,
  txHashKeyCodec,
  historyKeyCodec,
  rawCodec,
  traceRowKeyCodec,
  txLocationCodec,
  u64Codec,
} from './codec.js';
import type { Codec } from './codec.js';
import { logCodec, logIndexKeyCodec, postingCodec } from './log-rows.js';
import { Table } from './table.js';
import { traceRowCodec } from './trace-row-codec.js';

export type { StoredLog } from './rlp.js';

export const SCHEMA_VERSION = 2;

export const Prefix = {
  Meta: 0x01,
  Canonical: 0x02,
  HashToNumber: 0x03,
  Headers: 0x04,
  Bodies: 0x05,
  Receipts: 0x06,
  TxLookup: 0x07,
  TotalDifficulty: 0x08,
  Senders: 0x09,
  Blooms: 0x0a,
  BlockLogs: 0x0b,
  Logs: 0x0c,
  LogIndex: 0x0d,
  TrieNodes: 0x0e,
  BlockTxHashes: 0x0f,
  BlockJson: 0x10,
  AddressLogsJson: 0x11,
  LogSegments: 0x12,
  AccountHistory: 0x13,
  StorageHistory: 0x14,
  StateLatest: 0x15,
  LogBlocks: 0x16,
  Appearances: 0x17,
  TxFrames: 0x18,
  FrameBlooms: 0x19,
  FrameAppearances: 0x1a,
  FrameAddresses: 0x1b,
  TxStateDiffs: 0x1c,
  BodyTxs: 0x1d,
  HistoryIndex: 0x1e,
  StateChanges: 0x1f,
  TxLookupShort: 0x20,
} as const;

/** The Appearances table's one kind: an address a transaction touches. */
export const APPEARANCE_KIND = 0x00;

/** Bits of an appearance id below the block number: the transaction's index in its block. */
export const APPEARANCE_TX_BITS = 16;

/** The appearance id of transaction `txIndex` of block `number` (below 2^53 up to block 2^37). */
export function appearanceId(number: bigint | number, txIndex: number): number {
  return Number(number) * 2 ** APPEARANCE_TX_BITS + txIndex;
}

export const LogIndexKind = { Address: 0x10 } as const;

/** Log ids per full posting-list chunk. */
export const LOG_INDEX_CHUNK = 1024;

/** lastLogId of a value's open (not yet full) chunk: sorts after every full chunk. */
export const OPEN_CHUNK = 0xffff_ffff_ffff_ffffn;

const utf8: Codec<string> = {
  encode: (s) => new TextEncoder().encode(s),
  decode: (b) => new TextDecoder().decode(b),
};

export const MetaKey = {
  SchemaVersion: 'schemaVersion',
  GenesisHash: 'genesisHash',
  ChainConfig: 'chainConfig',
  Head: 'head',
  /** The whole genesis.json the chain was started from (JSON): a follower restarts without --genesis. */
  GenesisJson: 'genesisJson',
  /** u64: AddressLogsJson rows exist for every block from this number on (see the table). */
  LogsJsonFrom: 'logsJsonFrom',
  /** u64: the Appearances index holds every block from this number on (see the table). */
  AppearancesFrom: 'appearancesFrom',
  /**
   * u64, only while `db convert` builds the Appearances index of a datadir written without it:
   * the next block to post (appearances/build.ts). Meta.appearancesFrom (0) is written, and this
   * key deleted, in the batch of the last block.
   */
  AppearancesBuilt: 'appearancesBuilt',
  /**
   * u64: the FrameAppearances index holds the recorded frames of every block from this number on
   * (a datadir that recorded frames before the table existed: its next block).
   */
  FrameAppearancesFrom: 'frameAppearancesFrom',
  /**
   * from(8) ++ to(8) ++ file(4) ++ fileLength(8): the spans of blocks [from, to) are sealed into
   * log segments (log-segments.ts), and segment file `file`, the one appended to, ends at
   * fileLength (bytes past it are a crashed seal's and are cut off by the next).
   */
  LogSegments: 'logSegments',
  /**
   * u64: the first block the datadir holds, when it joined its chain at a block N > 0 (absent:
   * from genesis). No rows of any table below N; no state of its own (proven nodes only).
   */
  FirstBlock: 'firstBlock',
  /**
   * utf8, a joined datadir that downloads its first block's whole state (`--join-state download`):
   * `pending` from the anchor's batch until every trie node and code of that state is written,
   * then `whole` (its later blocks replicate with state: trie walks are local from N on). Absent:
   * a joined datadir that proves state on demand. Fixed with the anchor.
   */
  AnchorState: 'anchorState',
  /**
   * 32 bytes: the state root of block 0's state (the genesis alloc's, which an upstream's block 0
   * header may not carry: anvil --init). Present: the datadir keeps flat state history
   * (AccountHistory, StorageHistory) for every block from genesis on.
   */
  StateHistory: 'stateHistory',
  /**
   * utf8: how long the hash-keyed state trie is kept (trie-window.ts): `archive` (every block's
   * trie; also when absent, a datadir written before the setting existed) or `window=<N>` (the
   * last N blocks' tries, older nodes pruned). Fixed when the datadir is created.
   */
  StateTrie: 'stateTrie',
  /**
   * u64 as decimal utf8: the lowest block whose state trie the datadir still holds complete
   * (absent: 0). Written before any node below it is deleted, so no reader trusts a pruned trie.
   */
  TrieFrom: 'trieFrom',
  /**
   * u64 as decimal utf8: the window start of the last pruning cycle whose sweep finished (absent:
   * none did). Below Meta.trieFrom, a cycle was stopped midway (a crash, a close): the nodes it had
   * not yet swept are still held, and the next cycle is due at once.
   */
  TriePruned: 'triePruned',
  /**
   * u64 as decimal utf8, only while `db convert` builds the flat state history of a datadir written
   * without it: the change sets of blocks up to this one are written. Meta.stateHistory is written
   * (and this key deleted) in the batch of the last block.
   */
  StateHistoryBuilt: 'stateHistoryBuilt',
  /**
   * Empty: every key of the flat state history has its StateLatest row, with its earlier changes
   * listed (written with genesis, or by `db convert` once it has filled the table). Absent: readers
   * seek the history.
   */
  StateLatest: 'stateLatestListed',
  /**
   * Empty: the StateLatest rows of an earlier release (number ++ value, no list of earlier
   * changes), not read and no longer kept by the writer; `db convert` fills the table again and
   * drops this key.
   */
  StateLatestUnlisted: 'stateLatest',
  /**
   * Empty: every key with more changes than its StateLatest row lists has HistoryIndex rows from
   * its first change on (written with genesis, or by `db convert`). Absent (a datadir written
   * before the table): keys are indexed from the writer's first change of them on; reads the rows
   * do not answer seek.
   */
  HistoryIndex: 'historyIndex',
  /**
   * utf8: `all` when the writer kept every block's new branch nodes as deltas from genesis on
   * (node-delta.ts), or the decimal number of the last block whose nodes `db convert` has
   * rewritten as deltas (resumable). Absent: a datadir of an earlier release, its nodes whole
   * (read the same; a writer of this release keeps the new ones as deltas).
   */
  TrieDeltas: 'trieDeltas',
  /**
   * utf8 `off`: the executing import records no call frames (TxFrames) from now on (`--trace-frames
   * off`). Absent: it records them. Changed whenever an import is given the option.
   */
  TraceFrames: 'traceFrames',
} as const;

/** The TrieNodes key (without the table prefix) of a contract's code: 'c' ++ code hash, as the state manager keys it. */
export function codeNodeKey(codeHash: Uint8Array): Uint8Array {
  const key = new Uint8Array(33);
  key[0] = 0x63;
  key.set(codeHash, 1);
  return key;
}

export const tables = {
  meta: new Table(Prefix.Meta, 'Meta', utf8, rawCodec),
  canonical: new Table(Prefix.Canonical, 'Canonical', u64Codec, hashCodec),
  hashToNumber: new Table(Prefix.HashToNumber, 'HashToNumber', hashCodec, u64Codec),
  headers: new Table(Prefix.Headers, 'Headers', hashCodec, rawCodec),
  bodies: new Table(Prefix.Bodies, 'Bodies', hashCodec, bodyCodec),
  bodyTxs: new Table(Prefix.BodyTxs, 'BodyTxs', bodyRowKeyCodec, rawCodec),
  receipts: new Table(Prefix.Receipts, 'Receipts', hashCodec, receiptsCodec),
  txLookup: new Table(Prefix.TxLookup, 'TxLookup', hashCodec, txLocationCodec),
  txLookupShort: new Table(Prefix.TxLookupShort, 'TxLookupShort', txHashKeyCodec, txLocationCodec),
  totalDifficulty: new Table(Prefix.TotalDifficulty, 'TotalDifficulty', hashCodec, bigUintCodec),
  senders: new Table(Prefix.Senders, 'Senders', hashCodec, fixedListCodec(20)),
  blooms: new Table(Prefix.Blooms, 'Blooms', u64Codec, fixedBytesCodec(256, 'bloom')),
  blockLogs: new Table(Prefix.BlockLogs, 'BlockLogs', u64Codec, blockLogRangeCodec),
  logs: new Table(Prefix.Logs, 'Logs', u64Codec, logCodec),
  logBlocks: new Table(Prefix.LogBlocks, 'LogBlocks', u64Codec, rawCodec),
  logIndex: new Table(Prefix.LogIndex, 'LogIndex', logIndexKeyCodec, postingCodec),
  appearances: new Table(Prefix.Appearances, 'Appearances', logIndexKeyCodec, postingCodec),
  txFrames: new Table(Prefix.TxFrames, 'TxFrames', traceRowKeyCodec, traceRowCodec),
  frameBlooms: new Table(Prefix.FrameBlooms, 'FrameBlooms', u64Codec, rawCodec),
  frameAppearances: new Table(Prefix.FrameAppearances, 'FrameAppearances', logIndexKeyCodec, postingCodec),
  frameAddresses: new Table(Prefix.FrameAddresses, 'FrameAddresses', u64Codec, rawCodec),
  txStateDiffs: new Table(Prefix.TxStateDiffs, 'TxStateDiffs', traceRowKeyCodec, traceRowCodec),
  trieNodes: new Table(Prefix.TrieNodes, 'TrieNodes', rawCodec, rawCodec),
  blockTxHashes: new Table(Prefix.BlockTxHashes, 'BlockTxHashes', u64Codec, blockTxHashesCodec),
  blockJson: new Table(Prefix.BlockJson, 'BlockJson', hashCodec, rawCodec),
  addressLogsJson: new Table(Prefix.AddressLogsJson, 'AddressLogsJson', addressNumberCodec, rawCodec),
  accountHistory: new Table(Prefix.AccountHistory, 'AccountHistory', historyKeyCodec(1), rawCodec),
  storageHistory: new Table(Prefix.StorageHistory, 'StorageHistory', historyKeyCodec(2), rawCodec),
  stateLatest: new Table(Prefix.StateLatest, 'StateLatest', rawCodec, rawCodec),
  historyIndex: new Table(Prefix.HistoryIndex, 'HistoryIndex', rawCodec, rawCodec),
  stateChanges: new Table(Prefix.StateChanges, 'StateChanges', u64Codec, rawCodec),
} as const;
