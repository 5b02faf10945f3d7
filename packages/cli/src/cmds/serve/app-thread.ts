// One app thread of `node-cli serve --threads N` (see run.ts): a whole server on the shared port,
// with its own shared handle on the datadir and the credit ledger of ledger-threads.ts. Reports
// `listening` once bound; on `drain` stops accepting and finishes in-flight requests (`drained`),
// on `release` closes its log workers and store (`stopped`); see run.ts for why in two phases. A start failure throws, which fails
// the thread and the server's start with its message.
import { parentPort, workerData } from 'node:worker_threads';
import { ThreadCreditLedger } from '@chainnode/server';
import { startApp } from './run.js';
import type { AppThreadCommand, AppThreadData, AppThreadMessage } from './app-thread-api.js';

if (parentPort === null) throw new Error('app-thread.js runs as a worker thread of node-cli serve --threads');
const port = parentPort;
const { opts, index, link } = workerData as AppThreadData;
const ledger = new ThreadCreditLedger(link);
const app = await startApp(opts, { shared: true, ledger, notes: index === 0 });
port.postMessage({ type: 'listening', port: app.srv.port, metricsPort: app.srv.metricsPort } satisfies AppThreadMessage);
port.on('message', (m: AppThreadCommand) => {
  if (m.type === 'drain') void app.drain().finally(() => port.postMessage({ type: 'drained' } satisfies AppThreadMessage));
  else if (m.type === 'release') void app.release().finally(() => port.postMessage({ type: 'stopped' } satisfies AppThreadMessage));
});
