export * from './hex.js';
export * from './errors.js';
export type * from './types.js';
export type * from './chainstore.js';
export * from './codec.js';
export type * from './chain-events.js';
export * from './single-flight.js';
export * from './block-json.js';
export * from './log-json.js';
