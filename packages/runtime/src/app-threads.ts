// The app threads of `serve --threads N` (runtime.ts's serveThreads; each runs app-thread.ts): starts
// each with its link to the ledger this thread owns and its ports of the ingest threads, answers
// thread 0's requests for the other threads' metrics counts, and stops them in two phases.
import { Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { linkPorts } from '@chainnode/accounts';
import type { ThreadLedgerHost } from '@chainnode/accounts';
import type { IngestThread } from '@chainnode/ingest';
import type { LedgerView, PeerMetrics } from '@chainnode/server';
import type { RuntimeConfig } from './config.js';
import type { AppThreadCommand, AppThreadData, AppThreadListening, AppThreadMessage } from './app-thread-api.js';
import { combineLedgerViews } from './ledger-views.js';
import type { FilterStoresHost } from './thread-filters.js';

export interface AppThreadsOptions {
  config: RuntimeConfig;
  /** The ledger this thread owns, lent to every app thread. */
  host: ThreadLedgerHost;
  /** Each followed network's ingest thread, by network name. */
  ingests: ReadonlyMap<string, IngestThread>;
  /** The state of this thread's own ledger connection (for the gauges thread 0 serves). */
  ownLedger: () => LedgerView | undefined;
  /** Without Redis: the filters the app threads share, kept on this thread. */
  filters?: FilterStoresHost;
}

export class AppThreads {
  private readonly workers: Worker[] = [];
  /** Each worker's end, recorded at its start: a phase must not wait on a thread that already ended. */
  private readonly exits = new Map<Worker, Promise<void>>();
  /** Each app thread's own ledger state, as its last metrics answer gave it. */
  private readonly peerLedgers = new Map<Worker, LedgerView | undefined>();
  private nextAsk = 0;
  private stopping = false;
  private failed: ((err: Error) => void) | undefined;
  /** Rejects when an app thread fails, or ends before the stop began. */
  readonly failure: Promise<never>;

  constructor(private readonly o: AppThreadsOptions) {
    this.failure = new Promise<never>((_, reject) => (this.failed = reject));
    this.failure.catch(() => undefined);
  }

  /** Starts app thread `index` on `port`; resolves once it listens. */
  start(index: number, port: number): Promise<AppThreadListening> {
    const link = this.o.host.link();
    const followFeeds = [...this.o.ingests].map(([network, ingest]): [string, MessagePort] => [network, ingest.port()]);
    const filters = this.o.filters?.link();
    const { metricsPort, ...rest } = this.o.config;
    const data: AppThreadData = {
      // Thread 0 alone serves metrics.
      config: { ...rest, port, ...(index === 0 && metricsPort !== undefined ? { metricsPort } : {}) },
      index,
      threads: this.o.config.threads,
      link,
      followFeeds,
      ...(filters !== undefined ? { filters } : {}),
    };
    const w = new Worker(new URL('./app-thread.js', import.meta.url), {
      workerData: data,
      transferList: [...linkPorts(link), ...followFeeds.map(([, p]) => p), ...(filters !== undefined ? [filters] : [])],
    });
    this.workers.push(w);
    this.exits.set(w, new Promise<void>((r) => w.once('exit', () => r())));
    return new Promise<AppThreadListening>((resolve, reject) => {
      w.on('message', (m: AppThreadMessage) => {
        if (m.type === 'listening') resolve(m);
        else if (m.type === 'peer-metrics') void this.answerPeerMetrics(w, m.id);
      });
      w.on('error', (err) => {
        reject(err);
        this.failed?.(err);
      });
      w.on('exit', (code) => {
        const err = new Error(`app thread ${index} exited with code ${code}`);
        reject(err);
        if (!this.stopping) this.failed?.(err);
      });
    });
  }

  /** Thread `w` serves /metrics: every other thread's counts, and the ledger's state over all threads. */
  private async answerPeerMetrics(w: Worker, id: number): Promise<void> {
    const threads = await this.peerCounts(w);
    w.postMessage({
      type: 'peer-metrics',
      id,
      threads,
      ledger: combineLedgerViews([
        this.o.ownLedger(),
        ...this.workers.filter((o) => o !== w).map((o) => this.peerLedgers.get(o)),
      ]),
    } satisfies AppThreadCommand);
  }

  // Every app thread's metrics counts but `asker`'s; a thread that does not answer within 2 s
  // (busy, stopping) is left out of that scrape.
  private async peerCounts(asker: Worker): Promise<PeerMetrics[]> {
    const all = await Promise.all(this.workers.filter((w) => w !== asker).map((w) => this.askCounts(w)));
    return all.filter((t): t is PeerMetrics => t !== undefined);
  }

  private askCounts(w: Worker): Promise<PeerMetrics | undefined> {
    return new Promise<PeerMetrics | undefined>((resolve) => {
      const id = this.nextAsk++;
      const timer = setTimeout(() => done(undefined), 2000);
      const onMessage = (m: AppThreadMessage): void => {
        if (m.type === 'metrics' && m.id === id) {
          this.peerLedgers.set(w, m.ledger);
          done({ thread: this.workers.indexOf(w), metrics: m.counts });
        }
      };
      const done = (v: PeerMetrics | undefined): void => {
        clearTimeout(timer);
        w.off('message', onMessage);
        resolve(v);
      };
      w.on('message', onMessage);
      w.postMessage({ type: 'metrics', id } satisfies AppThreadCommand);
    });
  }

  // Two phases: every thread drains (stops accepting, finishes in-flight requests) before any
  // closes its store: a thread closing its handle on the shared LevelDB while another thread's
  // reads were running crashed the process (SIGSEGV: see serveThreads), as did terminating a
  // thread that holds uWS while another serves. So nothing is terminated either: the threads end
  // with the process, which serve exits right after.

  /** The first phase: every thread stops accepting and finishes its in-flight requests. */
  drain(): Promise<void> {
    this.stopping = true;
    return this.phase('drain', 'drained');
  }

  /** The second phase: every thread releases its stores and its ports of the ingest. */
  release(): Promise<void> {
    return this.phase('release', 'stopped');
  }

  private async phase(command: 'drain' | 'release', reply: 'drained' | 'stopped'): Promise<void> {
    await Promise.all(
      this.workers.map(async (w) => {
        const exited = this.exits.get(w) ?? Promise.resolve();
        const done = new Promise<void>((r) =>
          w.on('message', (m: AppThreadMessage) => {
            if (m.type === reply) r();
          }),
        );
        w.postMessage({ type: command } satisfies AppThreadCommand);
        await Promise.race([done, exited]);
      }),
    );
  }
}
