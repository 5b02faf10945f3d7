// The state trie: nodes keyed by hash (trie-db.ts, the executor's node store; trie-update.ts,
// the writer's in-memory updates), the read path's in-place walk over encoded nodes and the
// header/body/account field readers it shares (trie-read.ts), the walk's node slab
// (node-slab.ts), state diffs between two roots (state-diff.ts), the datadir's trie
// retention setting (state-trie-mode.ts: its text and values; trie-window.ts: in a datadir), the window's pruner (trie-prune.ts) and the archive's
// branch nodes kept as deltas (node-delta.ts).
export * from './trie-db.js';
export * from './trie-read.js';
export * from './trie-update.js';
export * from './node-slab.js';
export * from './state-diff.js';
export * from './state-trie-mode.js';
export * from './trie-window.js';
export * from './trie-prune.js';
export * from './node-delta.js';
