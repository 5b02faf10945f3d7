// Entry of the ingest worker thread of a followed datadir (`node-cli serve --follow`): follows the upstream with the
// ingest package's Follower, writing the datadir the serving thread reads (both open it with
// `shared: true`), and posts to the serving thread: `ready` once the datadir holds the chain,
// every durable `commit`, `status` changes, `log` lines, and `failed` when a verification
// failure or a too-deep reorg stops it (the serving thread keeps serving the verified prefix),
// and `pending`: the hashes of the upstream's pending transactions (core's UpstreamPendingFeed,
// a WebSocket upstream, or the `wsUrl` beside an HTTP one). A WebSocket upstream's new heads (core's
// UpstreamHeadsFeed) wake the follower between polls.
// A `stop` message ends it after the batch in flight.
import { parentPort, workerData } from 'node:worker_threads';
import { UpstreamHeadsFeed, UpstreamPendingFeed, packCommit } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { Follower } from '../follow.js';
import type { FollowStatus } from '@chainnode/core';
import type { FollowSettings } from '../follow.js';
import type { StateSourceKind } from '../replicate/sources.js';

/** The datadir to follow into and its follow settings (historyUpstream is the serving side's). */
export interface IngestWorkerData extends FollowSettings {
  datadir: string;
  stateSource?: StateSourceKind;
}

export type IngestMessage =
  | { type: 'ready' }
  /** A durable commit, in one buffer (core's packCommit: cheap to hand from thread to thread). */
  | { type: 'commit'; packed: Uint8Array }
  | { type: 'status'; status: FollowStatus }
  | { type: 'log'; line: string }
  | { type: 'pending'; hashes: Hex[] }
  | { type: 'failed'; message: string }
  | { type: 'stopped' };

if (parentPort === null) throw new Error('ingest-worker.js runs as the worker thread of an IngestThread');
const port = parentPort;
const data = workerData as IngestWorkerData;
const abort = new AbortController();
port.on('message', (m: { type?: string }) => {
  if (m.type === 'stop') abort.abort();
});
const post = (m: IngestMessage) => port.postMessage(m);
// Every follow setting reaches the follower (the upstream's WebSocket and the history upstream
// are the serving side's): spread, so a setting added later cannot be dropped here.
const { historyUpstream: _history, wsUrl: _ws, ...settings } = data;
const follower = new Follower({
  ...settings,
  follow: true,
  shared: true,
  signal: abort.signal,
  onReady: () => post({ type: 'ready' }),
  onCommit: (commit) => {
    const packed = packCommit(commit);
    port.postMessage({ type: 'commit', packed } satisfies IngestMessage, [packed.buffer]);
  },
  onStatus: (status) => post({ type: 'status', status }),
  log: (line) => post({ type: 'log', line }),
});
// A WebSocket upstream's new heads wake the follower at once instead of at its next poll.
const subscribeAt = data.wsUrl ?? data.url;
const heads = new UpstreamHeadsFeed({
  url: subscribeAt,
  onHead: () => follower.wake(),
  log: (line) => post({ type: 'log', line }),
});
const pending = new UpstreamPendingFeed({
  url: subscribeAt,
  onHashes: (hashes) => post({ type: 'pending', hashes }),
  log: (line) => post({ type: 'log', line }),
});
try {
  await follower.run();
  post({ type: 'stopped' });
} catch (err) {
  post({ type: 'failed', message: (err as Error).message });
} finally {
  pending.stop();
  heads.stop();
  port.close();
}
