// @chainnode/runtime: the serve process. One entry point, runRuntime(config), takes a checked
// RuntimeConfig and runs app threads, networks (stores, offload workers, followers), the ledger, the
// dashboard listener, signals and shutdown. The CLI parses flags and the config file into that
// config; nothing here parses text.
export { RuntimeError, servedDatadirs } from './config.js';
export type { DashboardConfig, FollowedDatadir, RuntimeConfig } from './config.js';
export { hostForUrl, runRuntime } from './runtime.js';
export type { Listening, RuntimeHooks } from './runtime.js';
