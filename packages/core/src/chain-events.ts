// What a commit of the store changed, as readers and subscribers learn of it. The ingest side
// (file or live upstream) publishes one ChainCommit per durable LevelDB batch, on the serving
// thread, AFTER the batch is written and the serving caches have dropped what it made stale; the
// serving side (cache invalidation, eth_subscribe) consumes it. reth's ExEx notifications
// (ChainCommitted / ChainReorged) are the model: a reorg is one commit with `removed` non-empty.
import type { ChainHead } from './chainstore.js';
import type { Bytes, LogRecord } from './types.js';

export interface CommittedBlock {
  number: bigint;
  hash: Bytes;
  /** The block's logs in log-index order, as eth_getLogs returns them (removed: the logs it had). */
  logs: LogRecord[];
}

export interface ChainCommit {
  /** Blocks that stopped being canonical, OLDEST first; empty unless this commit is a reorg. */
  removed: CommittedBlock[];
  /** Blocks that became canonical in this commit, oldest first. */
  added: CommittedBlock[];
  /** The head after the commit. */
  head: ChainHead;
}

export type ChainCommitListener = (commit: ChainCommit) => void;

/** A source of commit notifications; `subscribe` returns the function that unsubscribes. */
export interface ChainEvents {
  subscribe(listener: ChainCommitListener): () => void;
}
