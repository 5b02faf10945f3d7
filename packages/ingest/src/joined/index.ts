// The upstream-backed layers of a followed datadir, in one place: what a node that joined its
// chain at block N (and holds no state of its own) answers from upstreams, never from trust.
// - state it does not hold: proofs (and code) from the followed upstream, verified against the
//   datadir's own state roots and kept (proven-state.ts);
// - with a history upstream: history below N, verified by hash links down from N's header
//   (history.ts), and state there by proofs from that upstream.
// Both wrap a ChainStore, so the rpc above reads one store and never knows; they live in ingest
// because verifying history takes ingest's replication checks (docs/architecture.md).
import { createUpstreamClient } from '@chainnode/core';
import type { ChainStore, UpstreamClient } from '@chainnode/core';
import { withHistoryUpstream } from './history.js';
import type { HistoryStats, HistoryUpstream } from './history.js';
import { withProvenState } from './proven-state.js';
import type { ProvenState, ProvenStateStats } from './proven-state.js';

export interface JoinedUpstreamsOptions {
  /** The followed upstream: state proofs come from it when it is an http(s) URL. */
  followUrl: string;
  /** --history-upstream: blocks below the first block, and state there. */
  historyUrl?: string;
  /** The first block the datadir holds (0: none below it). */
  firstBlock: () => bigint;
  /** Logs one line for each refused answer (it names the upstream's origin, never its key). */
  log: (line: string) => void;
}

/** What the layers counted, for the follow status (the metrics and /health). */
export interface JoinedUpstreamsStatus {
  provenState?: ProvenStateStats;
  historyUpstream?: HistoryStats & { origin: string };
}

export interface JoinedUpstreams {
  /** `store` with the layers around it (itself when there are none). */
  store: ChainStore;
  proven?: ProvenState;
  history?: HistoryUpstream;
  status(): JoinedUpstreamsStatus;
}

/**
 * The upstream state proofs (and code) are fetched from: http(s) only, 8 calls in flight, replies
 * of at most 16 MiB (a proof of many slots with code is far smaller), over kept-alive sockets
 * (a cold state read waits for its proof).
 */
function stateUpstream(url: string): UpstreamClient {
  return createUpstreamClient(url, {
    concurrency: 8,
    maxReplyBytes: 16 * 2 ** 20,
    httpOnly: { name: 'state upstream' },
    keepAlive: true,
  });
}

/** Wraps a followed datadir's `store` in its upstream-backed layers (see the file comment). */
export function withJoinedUpstreams(store: ChainStore, o: JoinedUpstreamsOptions): JoinedUpstreams {
  let history: HistoryUpstream | undefined;
  if (o.historyUrl !== undefined) {
    const h = withHistoryUpstream(store, {
      url: o.historyUrl,
      onRejected: (origin, reason) =>
        o.log(`history upstream ${origin}: an answer did not verify and was refused: ${reason}`),
    });
    store = h.store;
    history = h.history;
  }
  let proven: ProvenState | undefined;
  if (/^https?:\/\//i.test(o.followUrl)) {
    const w = withProvenState(store, {
      upstream: stateUpstream(o.followUrl),
      onRejected: (origin, reason) =>
        o.log(`state upstream ${origin}: a proof did not verify and was refused: ${reason}`),
      ...(o.historyUrl !== undefined
        ? { history: { upstream: stateUpstream(o.historyUrl), firstBlock: o.firstBlock } }
        : {}),
    });
    store = w.store;
    proven = w.state;
  }
  const status = (): JoinedUpstreamsStatus => ({
    ...(proven !== undefined ? { provenState: proven.stats } : {}),
    ...(history !== undefined ? { historyUpstream: { origin: history.origin, ...history.stats } } : {}),
  });
  return {
    store,
    status,
    ...(proven !== undefined ? { proven } : {}),
    ...(history !== undefined ? { history } : {}),
  };
}
