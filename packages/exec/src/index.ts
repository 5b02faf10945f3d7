export {
  CallPrecheckError,
  DEFAULT_EXEC_OPTIONS,
  Executor,
  ExecutionTimeout,
  InlineBudgetExceeded,
} from './executor.js';
export { haltMessage } from './halt.js';
export type { BlockOverrides, CallArgs, CallOutcome, ExecOptions, InlineBudget } from './executor.js';
export { StoreStateManager } from './state.js';
export { rememberParams, tuneVm } from './evm-tuning.js';
export { lazyKzg, loadKzg, loadKzgOnPointEvaluation } from './kzg.js';
export type { AccountOverride, BlockStateBase } from './state.js';
export { checkRawTransaction, TxRefusedError } from './tx-check.js';
export type { CheckedTransaction } from './tx-check.js';
export { SimulationError, sanitizeChain } from './simulate.js';
export type {
  SimAccountOverride,
  SimBlockInput,
  SimBlockOverrides,
  SimBlockResult,
  SimCallResult,
  SimOptions,
  SimRules,
} from './simulate.js';
export type { CallObserver } from './executor.js';
export {
  OtsCreatorTracer,
  OtsOperation,
  OtsOperationsTracer,
  OtsRevertTracer,
  OtsTransactionTracer,
  TRACER_NAMES,
  TraceBudget,
  TraceEngine,
  TraceReplayError,
  TraceTooLargeError,
  TracerConfigError,
  makeTracer,
  traceTx,
  FlatTracer,
  ParityTracer,
  StateDiffTracer,
  parityError,
  rawTxCallArgs,
  blockRewardTraces,
  rewardTraces,
  BlockFrameRecorder,
  FrameRecorder,
  bloomMayHold,
  bloomProbe,
  frameBloom,
  txFramesMayHold,
  recordedTouches,
  replayRecorded,
  replayable,
} from './trace/index.js';
export type {
  ReceiptLogs,
  RecordedTxContext,
  BlockTraceOptions,
  FrameEnter,
  JsonAccountDiff,
  JsonDelta,
  JsonFlatTrace,
  JsonInternalOperation,
  JsonTraceEntry,
  JsonTraceResults,
  ParityTraceTypes,
  StructLoggerConfig,
  Tracer,
  TracerChoice,
  TxStart,
  TxTrace,
} from './trace/index.js';
