export { startServer } from './server.js';
export type { PeerMetrics, RunningServer, ServerOptions, ThreadMetrics } from './server.js';
export {
  DEFAULT_CONFIG,
  DEFAULT_PLANS,
  NETWORK_FIELDS,
  PLAN_FIELDS,
  PLAN_NAMES,
  SERVER_FIELDS,
  ConfigError,
  checkNetwork,
  checkNetworks,
  isPlanName,
  loadConfig,
  parseConfig,
  rpcConfigOf,
} from './config.js';
export type {
  ConfigField,
  ConfigSchema,
  ConfigValues,
  NetworkConfig,
  PlanConfig,
  PlanName,
  RpcIntegerField,
  ServerConfig,
} from './config.js';
export {
  KEY_PREFIX_LENGTH,
  MAX_KEY_NETWORKS,
  KeyRegistry,
  chargeHash,
  checkSecret,
  createKey,
  findKey,
  generateKey,
  generateSecret,
  hashKey,
  keyAllowsNetwork,
  revokeKey,
} from './keys.js';
export type { CreateKeyOptions, KeyLimits } from './keys.js';
export type { DashboardKeyFields } from './key-fields.js';
export {
  EmbeddedLedger,
  FileKeyStore,
  KeyFileError,
  keysPath,
  readKeys,
  readUsage,
  readUsageByNetwork,
  usagePath,
  validateKeyRecord,
  writeKeys,
} from './ledger-embedded.js';
export { RedisKeyStore, RedisLedger, DEBIT_LUA, connectRedis, parseRedisUrl } from './ledger-redis.js';
export { JOURNAL_DIR, checkLedgerUrl, openLedger } from './ledger.js';
export {
  LocalBuckets,
  LocalTally,
  SHARED_TALLY_KEYS,
  SharedTally,
  TallyFullError,
  sharedTallyBuffer,
} from './ledger-tally.js';
export type { ReserveOutcome, SharedCredits, Tally } from './ledger-tally.js';
export { PortLedger, serveLedgerOverPort } from './ledger-port.js';
export { PortKeyStore, PortUsage, ThreadLedgerHost, linkPorts, openThreadLedger } from './ledger-threads.js';
export type { ThreadLedger, ThreadLedgerLink, ThreadLedgerSources } from './ledger-threads.js';
export type { LedgerSpec, OpenLedger } from './ledger.js';
export { LedgerUnavailableError, NO_NETWORK, nextUtcMidnight, utcDay } from './ledger-api.js';
export type {
  CreditLedger,
  Debit,
  DebitResult,
  KeyRecord,
  KeyStore,
  LedgerFailureMode,
  Limits,
  Usage,
} from './ledger-api.js';
export {
  ALLOWLIST_TYPES,
  AllowlistError,
  MAX_ALLOWLIST_ENTRIES,
  allowlistRefusal,
  originMatches,
  parseOriginPattern,
  takesAddress,
  validateAllowlists,
} from './allowlist.js';
export type { AllowlistRequest, AllowlistType, Allowlists } from './allowlist.js';
export { EmbeddedUsage, MINUTE_BUCKETS, REQUEST_METHOD, USAGE_DAYS, USAGE_STATS_DIR, lastDays } from './usage.js';
export { RedisUsage } from './usage-redis.js';
export type { Counters, DayUsage, ErrorClass, MinuteUsage, UsageEvent, UsageRecord } from './usage.js';
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
  dailyLimit,
  effectiveLimits,
  errorClass,
  limitsOf,
  networkNotAllowedMessage,
  REQUEST_ERROR_CREDITS,
} from './middleware.js';
export {
  IMPLICIT_NETWORK,
  MAX_NETWORKS,
  NETWORK_NAME_RE,
  NetworkRouter,
  NetworkRuntime,
  hostLabel,
  networkNameProblem,
} from './network.js';
export type { NetworkHealth, NetworkParts, RouterOptions } from './network.js';
export type { RequestContext } from './middleware.js';
export { CUT_REASONS, LABEL_VALUES, METRIC_FAMILIES, Metrics, OUTCOMES } from './metrics.js';
export type { CutReason, IngestStatusView, MetricFamily, MetricName, MetricsCounts, Outcome } from './metrics.js';
export { FAULT_ENV, applyFaultInjection, outageStore } from './fault.js';
export { WsNotifier, WS_POLICY_CLOSE } from './notifier.js';
export type { NotifierDeps, NotifierSocket } from './notifier.js';
