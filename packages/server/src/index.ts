export { startServer } from './server.js';
export { holdFreePort } from './port-hold.js';
export type { PortHold } from './port-hold.js';
export type { PeerMetrics, RunningServer, ServerOptions, ThreadMetrics } from './server.js';
export { DEFAULT_TRANSPORT_CONFIG, transportConfig } from './config.js';
export type { TransportConfig } from './config.js';
export {
  AllowlistRejectedError,
  DailyLimitError,
  Gate,
  KeyLimitError,
  KeyRevokedError,
  LedgerDownError,
  NetworkNotAllowedError,
  ThroughputLimitError,
  creditsForError,
  errorClass,
  networkNotAllowedMessage,
  REQUEST_ERROR_CREDITS,
} from './middleware.js';
export {
  IMPLICIT_NETWORK,
  MAX_NETWORKS,
  NetworkRouter,
  NetworkRuntime,
  hostLabel,
} from './router.js';
export type { NetworkHealth, NetworkParts, RouterOptions } from './router.js';
export type { AccessRecord, RequestContext } from './middleware.js';
export { CUT_REASONS, LABEL_VALUES, METRIC_FAMILIES, Metrics, OUTCOMES } from './metrics.js';
export type {
  CutReason,
  DiskView,
  FollowReport,
  LedgerView,
  MetricFamily,
  MetricName,
  MetricsCounts,
  Outcome,
} from './metrics.js';
export { datadirDisk } from './disk.js';
export { FAULT_ENV, applyFaultInjection, outageStore } from './fault.js';
export { WsNotifier, WS_POLICY_CLOSE } from './notifier.js';
export type { NotifierDeps, NotifierSocket } from './notifier.js';
export { LOG_FORMATS, LOG_LEVELS, createLog, defaultLogFormat, redact } from './log.js';
export type { Log, LogFields, LogFormat, LogLevel, LogOptions, LogValue } from './log.js';
