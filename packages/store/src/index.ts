export { openChainStore, LevelChainStore } from './reader/index.js';
export type { OpenChainStoreOptions } from './reader/index.js';
export { RewindBelowTrieWindowError, StoreWriter } from './writer/index.js';
export type {
  AnchorState,
  BlockInput,
  GenesisInput,
  LogInput,
  FlushStats,
  RemovedBlock,
  WriterOptions,
} from './writer/index.js';
export { pruneCadence } from './trie/index.js';
export type { PruneReport, TriePrunerOptions } from './trie/index.js';
export type { StateWrites } from './history/index.js';
/** A StateChanges row decoded (a block's count of history rows): for tests and tools that read the table. */
export { decodeStateChanges } from './history/index.js';
export { DatadirInUseError, DatadirEmptyError } from './db.js';
export { EXECUTED_ONLY, digestDatadir } from './digest.js';
export { BODY_ROW_TXS, Prefix, SCHEMA_VERSION } from './schema/index.js';
export type { StoredBody, StoredReceipt } from './schema/index.js';
export { sizeOnDisk } from './disk.js';
/** Hand RLP writers (byte-equal to RLP.encode, tested in schema.test), for writers of synthetic blocks. */
export {
  decodeLog,
  rlpUintLength,
  writeRlpUint,
} from './schema/index.js';
export { keccak256 } from './keccak.js';
export {
  MissingTrieNodeError,
  hexPrefix,
  nibblesOf,
  sharedNibbles,
  trieGet,
  trieGetSync,
  updateTrie,
} from './trie/index.js';
export type { NodePut, NodeSource, SyncDecodedGet, SyncNodeGet } from './trie/index.js';
// Trie rows as stored (branch nodes may be deltas against older rows): for tools that read TrieNodes directly.
export { deltaChain, nodeBytes, storedNode } from './trie/index.js';
export type { RawNodeGet } from './trie/index.js';
export { logMatches, queryBloomMatcher } from './logs/index.js';
/** The block-logs codec's parts (bench/logs-once measures its candidates). */
export * from './logs/block-logs-codec.js';
export {
  ConvertRefusedError,
  SEGMENT_GROUP,
  TABLE_GROUP,
  compactDatadir,
  convertDatadir,
  measureDatadir,
  resealDatadirLogs,
} from './upkeep/index.js';
export type {
  CompactResult,
  ConvertOptions,
  ConvertResult,
  DatadirSizes,
  GroupSize,
  Reseal,
  SegmentTrim,
  StateLayout,
  TableSize,
} from './upkeep/index.js';
export {
  DEFAULT_STATE_TRIE,
  DEFAULT_TRIE_WINDOW,
  StateTrieSettingError,
  formatStateTrie,
  parseStateTrie,
  putStateTrie,
  putTrieFrom,
  readStateTrie,
  readTrieFrom,
} from './trie/index.js';
export type { StateTrieMode } from './trie/index.js';
