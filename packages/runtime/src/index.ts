// @chainnode/runtime: the serve process. One entry point, runRuntime(config), takes a checked
// RuntimeConfig and runs app threads, networks (stores, offload workers, followers), the ledger, the
// dashboard listener, signals and shutdown. The CLI parses flags and the config file into that
// config; nothing here parses text but the settings (settings/: their schema, declared once, and
// the reading of a config file through it).
export * from './configuration.js';
export { hostForUrl, runRuntime } from './runtime.js';
export type { Listening, RuntimeHooks } from './runtime.js';
