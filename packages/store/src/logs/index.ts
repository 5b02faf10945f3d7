// The logs: eth_getLogs answered from the log index or a bloom scan (queries.ts), through one
// gate on LevelDB's threads (gate.ts), and the sealed per-address log segments the writer seals
// and the queries read (log-segments.ts).
export { LogQueries, logMatches, queryBloomMatcher } from './queries.js';
export {
  LogSegmentReader,
  LogSegmentSealer,
  hasUncompressedSpans,
  resealLogSegments,
  sealDueLogSegments,
  segmentFileSizes,
  trimSegmentFiles,
} from './log-segments.js';
export type { Reseal, SegmentTrim } from './log-segments.js';
