export { importChain } from './importer.js';
export type { ImportOptions, ImportProgress, ImportSummary } from './importer.js';
export { BlockVerificationError, ChainMismatchError, ChainSourceError } from './errors.js';
export { readRlpBlocks } from './rlp-stream.js';
export type { RawBlock } from './rlp-stream.js';
