// @chainnode/accounts: everything about API keys and their credits, in one place for the server
// (serving), the dashboard and the CLI (managing): plans and the limits of a key; key records,
// their validation and the key stores (file, Redis, another thread's); the KeyManager every key
// action goes through; the credit ledger interface with its embedded, Redis and threads engines;
// and the per-key usage record. It depends on @chainnode/core only.

// Plans and limits
export { DEFAULT_PLANS, PLAN_NAMES, isPlanName } from './plans.js';
export { dailyLimit, effectiveLimits, limitsOf } from './limits.js';
export type { PlanConfig, PlanName, PlansOf } from './plans.js';

// Keys
export { KeyFileError, validateKeyRecord } from './keys/record.js';
export type { KeyRecord, KeyStore } from './keys/record.js';
export { MAX_KEY_NETWORKS, checkDashboardFields } from './keys/fields.js';
export type { DashboardKeyFields, KeyLimits } from './keys/fields.js';
export { NETWORK_NAME_RE, networkNameProblem } from './keys/network-name.js';
export {
  ALLOWLIST_TYPES,
  AllowlistError,
  MAX_ALLOWLIST_ENTRIES,
  MAX_ALLOWLIST_ENTRY_LENGTH,
  allowlistRefusal,
  originMatches,
  parseOriginPattern,
  takesAddress,
  validateAllowlists,
} from './keys/allowlist.js';
export type { AllowlistRequest, AllowlistType, Allowlists } from './keys/allowlist.js';
export {
  KEY_PREFIX_LENGTH,
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
} from './keys/keys.js';
export type { CreateKeyOptions, KeysAt } from './keys/keys.js';
export { FileKeyStore, KEYS_FILE, keysPath, readKeys, writeKeys } from './keys/file-store.js';
export { KEYS_HASH, KEYS_VERSION, RedisKeyStore } from './keys/redis-store.js';
export { KeyActionError, KeyManager, MAX_NAME_LENGTH, MAX_NETWORKS } from './keys/manager.js';
export type { CreateInput, KeyManagerOptions, KeyUsage, KeyView, UpdateInput } from './keys/manager.js';

// Credits
export { Charges } from './charges.js';
export type { ChargeNetwork, ChargesOptions, LimitRefusal, Payer, Refused, Taken } from './charges.js';
export { LedgerUnavailableError, NO_NETWORK, nextUtcMidnight, utcDay } from './ledger/api.js';
export type { CreditLedger, Debit, DebitResult, LedgerFailureMode, Limits, Usage } from './ledger/api.js';
export {
  EmbeddedLedger,
  JOURNAL_COMPACT_MIN,
  USAGE_DIR,
  readUsage,
  readUsageByNetwork,
  usagePath,
} from './ledger/embedded.js';
export {
  LocalBuckets,
  LocalTally,
  SHARED_TALLY_KEYS,
  SharedTally,
  TallyFullError,
  bucketTokens,
  sharedTallyBuffer,
} from './ledger/tally.js';
export type { ReserveOutcome, SharedCredits, Tally } from './ledger/tally.js';
export {
  DEBIT_LUA,
  RedisLedger,
  appliedKey,
  bucketKey,
  dayKey,
  leaseKey,
  networkKey,
  redisUsage,
} from './ledger/redis.js';
export type { RedisLedgerOptions } from './ledger/redis.js';
export { LEASE_LUA, LeasedLedger } from './ledger/leases.js';
export type { LeasedLedgerOptions } from './ledger/leases.js';
export { PortLedger, serveLedgerOverPort } from './ledger/port.js';
export {
  JOURNAL_DIR,
  PortKeyStore,
  PortUsage,
  ThreadLedgerHost,
  USAGE_POST_MS,
  linkPorts,
  openThreadLedger,
} from './ledger/threads.js';
export type { RedisCredits, ThreadLedger, ThreadLedgerLink, ThreadLedgerSources } from './ledger/threads.js';
export { openLedger } from './ledger/open.js';
export type { LedgerSpec, OpenLedger } from './ledger/open.js';
export { RedisTimeoutError, connectRedis, parseRedisUrl, timed } from './redis-client.js';
export type { RedisClient, RedisOptions } from './redis-client.js';

// The usage record
export {
  EmbeddedUsage,
  MINUTE_BUCKETS,
  REQUEST_METHOD,
  USAGE_DAYS,
  USAGE_STATS_DIR,
  lastDays,
} from './usage/record.js';
export type { Counters, DayUsage, ErrorClass, MinuteUsage, UsageEvent, UsageRecord } from './usage/record.js';
export { RedisUsage } from './usage/redis.js';
export type { UsageRedisClient } from './usage/redis.js';
