// @chainnode/runtime: the serve process. One entry point, runRuntime(config), takes a checked
// RuntimeConfig and runs app threads, networks (stores, offload workers, followers), the ledger, the
// dashboard listener, signals and shutdown. The CLI parses flags and the config file into that
// config; nothing here parses text but the settings (settings/: their schema, declared once, and
// the reading of a config file through it).
export { RuntimeError, servedDatadirs } from './config.js';
export type { DashboardConfig, FollowedDatadir, RuntimeConfig } from './config.js';
export { hostForUrl, runRuntime } from './runtime.js';
export type { Listening, RuntimeHooks } from './runtime.js';
export { ConfigError, flagName } from './settings/schema.js';
export type { ConfigField, ConfigSchema, ConfigValues, FlagSpec, RpcIntegerField } from './settings/schema.js';
export { NETWORK_FIELDS, PLAN_FIELDS, SERVER_FIELDS, checkNetwork, checkNetworks } from './settings/fields.js';
export type { NetworkConfig } from './settings/fields.js';
export {
  isUpstreamUrl,
  parseCheckpoint,
  parseIngestMode,
  parseReorgDepth,
  parseStartBlock,
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
