// @chainnode/rpc/settings: the service's defaults a configuration starts from (the runtime's
// settings schema reads them), without the service: a command that only reads or checks
// settings loads these two modules, not every method.
export { DEFAULT_RPC_CONFIG } from './config.js';
export type { RpcConfig } from './config.js';
export { DEFAULT_FILTER_LIMITS, FILTER_TIMEOUT_MS } from './filters/limits.js';
export type { FilterLimits } from './filters/limits.js';
