// The store's reader: LevelChainStore, the ChainStore over a datadir, with its caches.
export * from './reader.js';
