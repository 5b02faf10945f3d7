// The serving thread's side of `serve --follow`: starts the ingest worker thread, and for every
// durable commit it posts, first lets the store drop what the commit made stale (the head moves
// there, atomically for every later call), THEN publishes the commit to ChainEvents subscribers
// (eth_subscribe and other consumers). Keeps the latest ingest status for /health and metrics.
import { Worker } from 'node:worker_threads';
import type { ChainCommit, ChainCommitListener, ChainEvents } from '@chainnode/core';
import type { FollowStatus } from '@chainnode/ingest';
import type { IngestMessage, IngestWorkerData } from './ingest-worker.js';

export interface CommitSink {
  applyCommit(commit: ChainCommit): void;
}

export class FollowRuntime implements ChainEvents {
  private readonly worker: Worker;
  private readonly listeners = new Set<ChainCommitListener>();
  private sink: CommitSink | undefined;
  private current: FollowStatus;
  private readonly exited: Promise<void>;
  /** Resolves when the datadir holds the chain; rejects if the ingest fails before that. */
  readonly ready: Promise<void>;

  constructor(
    data: IngestWorkerData,
    private readonly log: (line: string) => void,
  ) {
    this.current = {
      state: 'starting',
      upstream: '',
      upstreamHead: undefined,
      upstreamHeadTimestamp: undefined,
      localHead: 0n,
      localHeadTimestamp: 0n,
      lagBlocks: 0n,
      lagSeconds: 0,
      reorgs: 0,
      blocksImported: 0,
      lastError: undefined,
      lastErrorAt: undefined,
    };
    this.worker = new Worker(new URL('./ingest-worker.js', import.meta.url), { workerData: data });
    let readyResolve!: () => void;
    let readyReject!: (err: Error) => void;
    this.ready = new Promise<void>((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    this.ready.catch(() => undefined);
    this.worker.on('message', (m: IngestMessage) => {
      switch (m.type) {
        case 'ready':
          readyResolve();
          break;
        case 'commit':
          this.sink?.applyCommit(m.commit);
          for (const l of this.listeners) {
            try {
              l(m.commit);
            } catch (err) {
              this.log(`follow: a chain-event listener failed: ${(err as Error).message}`);
            }
          }
          break;
        case 'status':
          this.current = m.status;
          break;
        case 'log':
          this.log(m.line);
          break;
        case 'failed':
          this.current = { ...this.current, state: 'failed', lastError: m.message, lastErrorAt: Date.now() };
          this.log(`follow: ingest stopped: ${m.message}; serving continues on the verified chain`);
          readyReject(new Error(m.message));
          break;
        case 'stopped':
          break;
      }
    });
    this.exited = new Promise<void>((resolve) => {
      this.worker.on('error', (err) => {
        this.current = { ...this.current, state: 'failed', lastError: err.message, lastErrorAt: Date.now() };
        this.log(`follow: ingest thread crashed: ${err.message}`);
        readyReject(err);
      });
      this.worker.on('exit', () => {
        readyReject(new Error('ingest thread exited'));
        resolve();
      });
    });
  }

  /** From now on commits are applied to `sink` (the serving store) before they are published. */
  attach(sink: CommitSink): void {
    this.sink = sink;
  }

  subscribe(listener: ChainCommitListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  status(): FollowStatus {
    return this.current;
  }

  /** Asks the ingest to stop after the batch in flight and waits for the thread to end. */
  async stop(): Promise<void> {
    this.worker.postMessage({ type: 'stop' });
    const timer = setTimeout(() => void this.worker.terminate(), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}
