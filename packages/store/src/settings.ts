// @chainnode/store/settings: the state trie's setting (its parser and its error), without the
// store: a command that only reads or checks settings loads these, not LevelDB.
export { StateTrieSettingError, parseStateTrie } from './trie/state-trie-mode.js';
export type { StateTrieMode } from './trie/state-trie-mode.js';
