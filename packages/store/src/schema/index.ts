// The key schema (schema.ts: one-byte table prefixes and the tables, the only place that says
// which table holds what), the typed table (table.ts), the byte codecs of keys and values
// (codec.ts), the row codecs of blocks and logs (block-rows.ts, log-rows.ts, body-rows.ts) and
// the log row's hand RLP codec (rlp.ts).
export * from './schema.js';
export * from './table.js';
export * from './codec.js';
export * from './block-rows.js';
export * from './body-rows.js';
export * from './log-rows.js';
export * from './rlp.js';
export * from './trace-row-codec.js';
