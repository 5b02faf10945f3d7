// @chainnode/server/settings: what a configuration reads of the server (the transport's
// defaults, the log's formats and levels, the most networks a process serves) and the log itself,
// without the server: a command that only reads or checks settings, or logs, loads these.
export { DEFAULT_TRANSPORT_CONFIG } from './config.js';
export type { TransportConfig } from './config.js';
export { LOG_FORMATS, LOG_LEVELS, createLog, defaultLogFormat } from './log.js';
export type { Log, LogFormat } from './log.js';
export { MAX_NETWORKS } from './router.js';
