// The logs: eth_getLogs answered from the log index or a bloom scan (queries.ts: posting-list
// cursors in cursors.ts, a query's constraints in match.ts), through one
// gate on LevelDB's threads (gate.ts), and the sealed per-address log segments the writer seals
// and the queries read (log-segments.ts); the logs themselves, one LogBlocks row per block
// (log-blocks.ts, block-logs-codec.ts), whose blocks a log id is found in from the BlockLogs
// ranges (locate.ts).
export { LogQueries } from './queries.js';
export { logMatches, queryBloomMatcher } from './match.js';
export {
  LogSegmentReader,
  LogSegmentSealer,
  hasSpansToReseal,
  resealLogSegments,
  sealDueLogSegments,
  segmentFileSizes,
  trimSegmentFiles,
} from './log-segments.js';
export type { Reseal, SegmentTrim } from './log-segments.js';
// The block-logs codec (block-logs-codec.ts), whole: bench/logs-once measures its candidates.
export * from './block-logs-codec.js';
export {
  decodeLogBlock,
  encodeLogBlock,
  logBlockFirst,
  logBlockColumns,
  logBlockKey,
  readBlockLogs,
  readBlockLogsSync,
} from './log-blocks.js';
export type { LogBlock } from './log-blocks.js';
