// The state trie: nodes keyed by hash (trie-db.ts, the executor's node store; trie-update.ts,
// the writer's in-memory updates), the read path's in-place walk over encoded nodes and the
// header/body/account field readers it shares (trie-read.ts), the walk's node slab
// (node-slab.ts), state diffs between two roots (state-diff.ts), and the datadir's trie
// retention setting (trie-window.ts).
export { TrieNodeDb } from './trie-db.js';
export {
  accountFields,
  bodyTransaction,
  headerStateRoot,
  headerTxFields,
  rlpString,
  trieGet,
} from './trie-read.js';
export type { AccountFields, HeaderTxFields, NodeSource } from './trie-read.js';
export { MissingTrieNodeError, hexPrefix, nibblesOf, sharedNibbles, trieGetSync, updateTrie } from './trie-update.js';
export type { NodePut, SyncNodeGet } from './trie-update.js';
export { NodeSlab, copyNodes } from './node-slab.js';
export { diffStates, stateChanges, storageChanges } from './state-diff.js';
export type { StateChangeSink } from './state-diff.js';
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
} from './trie-window.js';
export type { StateTrieMode } from './trie-window.js';
