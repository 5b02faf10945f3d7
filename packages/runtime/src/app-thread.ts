// One app thread of the runtime with `threads` N > 1 (see runtime.ts): a whole server on the shared port,
// with its own shared handle on the datadir and the main thread's ledger engine (keys, credits,
// usage record) through the threads engine of @chainnode/accounts, and for each followed network the events of the ingest
// thread the main thread owns (@chainnode/ingest's FollowRuntime: applied to this thread's store, then published to
// this thread's subscribers). Thread 0's /metrics adds the other threads' counts (asked for through
// the main thread). Reports
// `listening` once bound; on `drain` stops accepting and finishes in-flight requests (`drained`),
// on `release` closes its offload workers and store (`stopped`); see runtime.ts for why in two phases. A start failure throws, which fails
// the thread and the server's start with its message.
import { parentPort, workerData } from 'node:worker_threads';
import { openThreadLedger } from '@chainnode/accounts';
import type { LedgerView, PeerMetrics } from '@chainnode/server';
import { combineLedgerViews, creditsView } from './ledger-views.js';
import { configureLog, partLog, startApp } from './runtime.js';
import { ThreadFilterPort } from './thread-filters.js';
import type { AppThreadCommand, AppThreadData, AppThreadMessage } from './app-thread-api.js';

if (parentPort === null) throw new Error('app-thread.js runs as a worker thread of the serve runtime');
const port = parentPort;
const { config, index, threads, link, followFeeds, filters } = workerData as AppThreadData;
configureLog(config.log);
const ledger = await openThreadLedger(link, partLog('ledger'));
/** This thread's own Redis connection's state (with --threads each app thread debits on its own). */
const ownLedger = () => creditsView(ledger.credits, config.ledger.failure);
// Thread 0 serves /metrics: it asks the main thread for the other threads' counts and adds them.
// The Redis ledger's state comes with the answer (the main thread owns the ledger): /metrics asks
// for both at once, so the state is the one of the peers' answer.
const peerAsks = new Map<number, (t: PeerMetrics[]) => void>();
let ledgerState: LedgerView | undefined;
let nextAsk = 0;
const peerMetrics = (): Promise<PeerMetrics[]> =>
  new Promise((resolve) => {
    const id = nextAsk++;
    peerAsks.set(id, resolve);
    port.postMessage({ type: 'peer-metrics', id } satisfies AppThreadMessage);
  });
let lastPeers: Promise<PeerMetrics[]> | undefined;
const app = await startApp(config, () => ledger, {
  shared: true,
  notes: index === 0,
  threads,
  thread: index,
  followFeeds: new Map(followFeeds),
  ...(filters !== undefined ? { filterPort: new ThreadFilterPort(filters) } : {}),
  ...(index === 0
    ? {
        peerMetrics: () => (lastPeers = peerMetrics()),
        ledgerStatus: async () => {
          await lastPeers?.catch(() => undefined);
          return combineLedgerViews([ledgerState, ownLedger()]);
        },
      }
    : {}),
});
// A part started without waiting that cannot serve (offload workers that cannot open the
// datadir) fails this thread, and with it the server (app-threads.ts' failure).
void app.failure.catch((err: unknown) =>
  setImmediate(() => {
    throw err;
  }),
);
port.postMessage({
  type: 'listening',
  port: app.srv.port,
  metricsPort: app.srv.metricsPort,
} satisfies AppThreadMessage);
port.on('message', (m: AppThreadCommand) => {
  if (m.type === 'drain')
    void app.drain().finally(() => port.postMessage({ type: 'drained' } satisfies AppThreadMessage));
  else if (m.type === 'release')
    void app
      .release()
      .then(() => ledger.close())
      .finally(() => port.postMessage({ type: 'stopped' } satisfies AppThreadMessage));
  else if (m.type === 'metrics')
    port.postMessage({
      type: 'metrics',
      id: m.id,
      counts: app.srv.metricsCounts(),
      ledger: ownLedger(),
    } satisfies AppThreadMessage);
  else if (m.type === 'peer-metrics') {
    ledgerState = m.ledger;
    peerAsks.get(m.id)?.(m.threads);
    peerAsks.delete(m.id);
  }
});
