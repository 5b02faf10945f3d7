export { importChain } from './importer.js';
export type { ImportOptions, ImportProgress, ImportSummary } from './importer.js';
export {
  BlockVerificationError,
  ChainMismatchError,
  ChainSourceError,
  ReorgTooDeepError,
  UpstreamError,
} from './errors.js';
export { ImportPipeline, GenesisRequiredError } from './pipeline.js';
export type { PipelineOptions, PipelineHead, GenesisChoice, JoinState } from './pipeline.js';
export { readRlpBlocks } from './rlp-stream.js';
export type { RawBlock } from './rlp-stream.js';
export { Follower, followUpstream, initialFollowStatus } from './follow.js';
export type { FollowSettings, FollowerOptions, FollowSummary } from './follow.js';
export { RpcBlockSource } from './rpc-source.js';
export type { UpstreamBlock, UpstreamTip } from './rpc-source.js';
export { assertExecutable } from './follow.js';
export type { IngestMode, StartBlock } from './follow.js';
export type { StateSourceKind } from './replicate/sources.js';
export { FollowRuntime, IngestThread } from './thread/follow-runtime.js';
export type { CommitSink, FollowEvent } from './thread/follow-runtime.js';
export type { IngestMessage, IngestWorkerData } from './thread/ingest-worker.js';
export { ReplicationTimings } from './replicate/timings.js';
export { withJoinedUpstreams } from './joined/index.js';
export type { JoinedUpstreams, JoinedUpstreamsOptions, JoinedUpstreamsStatus } from './joined/index.js';
export { HistoryNotVerifiedError, HistoryUpstream, withHistoryUpstream } from './joined/history.js';
export type { HistoryStats, HistoryUpstreamOptions } from './joined/history.js';
export { ProvenState, UnprovenStateError, withProvenState } from './joined/proven-state.js';
export type { ProvenStateOptions, ProvenStateStats } from './joined/proven-state.js';
