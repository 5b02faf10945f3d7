// @chainnode/runtime/configuration: what the runtime is configured with, without the runtime: the
// settings (their schema, parsers, the config file), RuntimeConfig and the errors. A command that
// only reads or checks settings (keys, sync, serve refusing a flag) loads this entry and not
// runRuntime with its threads, networks and followers.
export { RuntimeError, servedDatadirs } from './config.js';
export type { DashboardConfig, FollowedDatadir, RuntimeConfig } from './config.js';
export { ConfigError, flagName } from './settings/schema.js';
export type { ConfigField, ConfigSchema, ConfigValues, FlagSpec, RpcIntegerField } from './settings/schema.js';
export { NETWORK_FIELDS, PLAN_FIELDS, SERVER_FIELDS, checkNetwork, checkNetworks } from './settings/fields.js';
export type { NetworkConfig } from './settings/fields.js';
export {
  isUpstreamUrl,
  parseCheckpoint,
  parseIngestMode,
  parseJoinState,
  parseReorgDepth,
  parseStartBlock,
  parseStateTrieFlag,
  parseTraceFramesFlag,
} from './settings/follow.js';
export {
  DEFAULT_CONFIG,
  flagText,
  flagsFromFile,
  loadConfig,
  parseConfig,
  readConfigFile,
  rpcConfigOf,
  transportConfigOf,
} from './settings/file.js';
export type { ConfigFile, ServerConfig } from './settings/file.js';
export { parseLedgerUrl, runtimeConfigOf } from './settings/flags.js';
export type { ServeFlags } from './settings/flags.js';
