// Traces (geth's debug_trace* tracers) by re-execution: the face of the tracing module.
export { TraceBudget, TraceTooLargeError, TracerConfigError } from './hooks.js';
export type { FrameEnter, FrameExit, OpStep, StateView, TraceLog, Tracer, TxEnd, TxStart } from './hooks.js';
export { TraceEngine, TraceReplayError, traceTx } from './replay.js';
export type { BlockTraceOptions, TxTrace } from './replay.js';
export { TRACER_NAMES, makeTracer } from './tracers/index.js';
export type { StructLoggerConfig, TracerChoice } from './tracers/index.js';
export {
  FlatTracer,
  ParityTracer,
  StateDiffTracer,
  blockRewardTraces,
  parityError,
  rawTxCallArgs,
  rewardTraces,
} from './parity/index.js';
export type { RewardBlock } from './parity/index.js';
export type { JsonAccountDiff, JsonDelta, JsonFlatTrace, JsonTraceResults, ParityTraceTypes } from './parity/index.js';
// Otterscan's tracers (ots_*), on the same events.
export * from './ots/tracers.js';
// Call frames recorded at import and traces replayed from them.
export * from './record/index.js';
