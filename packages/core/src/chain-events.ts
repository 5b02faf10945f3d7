// What a commit of the store changed, as readers and subscribers learn of it, and what a follower
// reports of its ingest (FollowStatus). The ingest side (file or live upstream) publishes one
// ChainCommit per durable LevelDB batch, on the serving thread, AFTER the batch is written and the
// serving caches have dropped what it made stale; the serving side (cache invalidation,
// eth_subscribe) consumes it. reth's ExEx notifications (ChainCommitted / ChainReorged) are the
// model: a reorg is one commit with `removed` non-empty.
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

export type FollowState = 'starting' | 'syncing' | 'following' | 'retrying' | 'failed' | 'stopped';

/**
 * What a follower's ingest reports of itself, as /health and the metrics show it: the ingest
 * thread posts it, the serving side keeps the latest.
 */
export interface FollowStatus {
  state: FollowState;
  /** The upstream's origin only (no path: it may hold a key). */
  upstream: string;
  upstreamHead: bigint | undefined;
  upstreamHeadTimestamp: bigint | undefined;
  localHead: bigint;
  localHeadTimestamp: bigint;
  /** Upstream head - local head (0 when ahead or unknown). */
  lagBlocks: bigint;
  /** Upstream head's timestamp - local head's timestamp, seconds (0 when unknown). */
  lagSeconds: number;
  reorgs: number;
  blocksImported: number;
  /** The first block the datadir holds (0 unless it joined its chain at a later block). */
  firstBlock: bigint;
  /**
   * A datadir joined with `--join-state download`: its first block's state, as downloaded so far
   * (counts since this process started: absent when it was whole before). Absent otherwise.
   */
  stateDownload?: { block: bigint; whole: boolean; nodes?: number; codes?: number; bytes?: number };
  lastError: string | undefined;
  /** Date.now() of the last error. */
  lastErrorAt: number | undefined;
}
