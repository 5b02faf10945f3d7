/** A block failed verification; nothing of it was written. */
export class BlockVerificationError extends Error {
  constructor(
    readonly blockNumber: bigint,
    readonly field: string,
    readonly expected: string,
    readonly computed: string,
    /** Whose claim `expected` is: the block's own (a file) or the upstream's (replication). */
    says: 'block' | 'upstream' = 'block',
  ) {
    super(`block ${blockNumber}: ${field} mismatch: ${says} says ${expected}, computed ${computed}`);
    this.name = 'BlockVerificationError';
  }
}

/** The chain being imported does not belong in this datadir (different genesis or history). */
export class ChainMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChainMismatchError';
  }
}

/** The chain export itself is unreadable (missing files, bad JSON, truncated RLP). */
export class ChainSourceError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChainSourceError';
  }
}

/** The new canonical chain leaves the stored one deeper than the allowed reorg depth. */
export class ReorgTooDeepError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ReorgTooDeepError';
  }
}

/** The upstream node is unreachable or answers something that is not a valid reply (core's upstream client). */
export { UpstreamError } from '@chainnode/core';
