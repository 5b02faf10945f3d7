// The store's writer: blocks in, one atomic LevelDB batch per group of blocks, head last.
export * from './writer.js';
