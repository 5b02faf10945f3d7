// The key schema (schema.ts: one-byte table prefixes, keys and value codecs, the only place
// that says how a row is laid out) and the log row's hand RLP codec (rlp.ts).
export * from './schema.js';
export * from './rlp.js';
