// Flat state history (docs/decisions/archive-state.md): per block, the value after the block of
// every account and slot it changed, keyed for one reverse seek per historical read. Written by
// the writer in the block's own batch, undone by its rewinds; read by block number.
export { encodeStateChanges, stageStateStep } from './write.js';
export { decodeStateChanges, historyStateDiff } from './block-changes.js';
export { LATEST_CHANGES, LatestRows, decodeLatest, fillLatest, hasHistoryIndex, hasLatest } from './latest.js';
export type { LatestRow, PendingLatest } from './latest.js';
export type { HistoryBatch } from './batch.js';
export type { HistoryStats, StateStep, StateWrites } from './write.js';
export {
  EMPTY_STATE_ROOT,
  accountAt,
  accountRowAt,
  pointAccountAtCanonical,
  pointStorageAtCanonical,
  readAtCanonical,
  slotRowAt,
  stateHistoryRoot,
  storageAt,
} from './read.js';
