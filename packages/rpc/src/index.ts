export type * from './service.js';
export { createRpcService } from './envelope.js';
export {
  DEFAULT_RPC_CONFIG,
  INLINE_COST_LIMIT,
  INLINE_TRY_WORK,
  defaultClientVersion,
  resolveConfig,
} from './config.js';
export { OffloadPool, serveOffloadedCalls, TOO_MANY_OFFLOADED } from './offload.js';
export type {
  LaunchedOffloadPool,
  OffloadExecutor,
  OffloadPoolOptions,
  OffloadReply,
  OffloadRequest,
} from './offload.js';
export { methodCosts, methodTransports, isMethodName, METHODS } from './table.js';
export type { MethodName, MethodTable, RpcSchema } from './table.js';
export { UNSERVED_METHODS } from './unserved.js';
export type { MethodDef, Transport } from './method.js';
export { toErrorObject } from './errors.js';
export type { JsonRpcErrorObject } from './errors.js';
export type { AnswerCacheStats } from './call-cache.js';
export type { JsonRpcResponse } from './envelope.js';
export type { JsonBlock, JsonWithdrawal, JsonHeaderFields } from './formatters/block.js';
export type {
  JsonTransaction,
  JsonAnyTransaction,
  JsonOpaqueTransaction,
  JsonAccessListEntry,
  JsonAuthorization,
} from './formatters/transaction.js';
export type { JsonLog } from './formatters/log.js';
export type { JsonAccountProof, JsonStorageProof } from './formatters/proof.js';
export { SubscriptionHub, DEFAULT_SUBSCRIPTION_LIMITS, EVENT_CREDITS, newSubscriptionId } from './subscriptions/hub.js';
export type {
  MessageSubscriptions,
  Notification,
  NotificationSink,
  SubscriptionConnection,
  SubscriptionHubOptions,
  SubscriptionKind,
  SubscriptionLimits,
  SubscriptionRequest,
  SubscriptionScope,
} from './subscriptions/hub.js';
export { LogFilterIndex, filterMatches, logKeys } from './subscriptions/log-filter-index.js';
export type { LogKeys, LogMatchFilter, MatchableLog } from './subscriptions/log-filter-index.js';
export { formatNewHead, formatSubscriptionLog, notificationText } from './subscriptions/format.js';
export type { JsonNewHead, JsonSubscriptionLog } from './subscriptions/format.js';
export {
  NotificationsUnsupportedError,
  SubscriptionNotFoundError,
  UnknownSubscriptionError,
} from './subscriptions/errors.js';
export type { JsonStateDiff, JsonStateDiffAccount } from './formatters/state-diff.js';
export type { TxForwarder } from './context.js';
export { FilterRegistry, FilterScope, MAX_BLOCK_CHANGES } from './filters/engine.js';
export type { FilterRegistryOptions } from './filters/engine.js';
export {
  CURSOR_DEPTH,
  FilterNotFoundError,
  MAX_FILTER_BYTES,
  MemoryFilterStore,
  PENDING_JOURNAL,
  checkFilterSize,
  perKeyLimitError,
  totalLimitError,
} from './filters/state.js';
export { DEFAULT_FILTER_LIMITS, FILTER_TIMEOUT_MS, filterTimeoutOf } from './filters/limits.js';
export type { FilterLimits } from './filters/limits.js';
export type {
  CursorBlock,
  FilterCriteria,
  FilterKind,
  FilterRecord,
  FilterStateStore,
  FilterUpdate,
} from './filters/state.js';
