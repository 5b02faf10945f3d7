// The datadir's upkeep: what it holds, table by table (measureDatadir: `node-cli db info`, the
// store-cost bench), and settling it so its size on disk is what it holds (compactDatadir:
// `node-cli db compact`). Both need the datadir to themselves (LevelDB's lock).
export { SEGMENT_GROUP, TABLE_GROUP, measureDatadir, tableRange } from './sizing.js';
export type { DatadirSizes, GroupSize, StateLayout, TableSize } from './sizing.js';
export { compactDatadir } from './compact.js';
export type { CompactResult } from './compact.js';
export type { Reseal, SegmentTrim } from '../logs/index.js';
export { ConvertRefusedError, convertDatadir } from './convert.js';
export type { ConvertOptions, ConvertResult } from './convert.js';
export { resealDatadirLogs } from './reseal.js';
export type { TrieDeltaStats } from './trie-deltas.js';
