// The two sides of `serve --follow` (and of a network's `follow=<URL>`):
//
// - IngestThread: the ingest worker thread following the upstream into the datadir, started ONCE
//   per followed datadir by the thread that owns it (the serving thread with one thread, the main
//   thread with --threads N). It keeps the state a late listener needs (ready, the latest status,
//   a failure, the exit) and hands every event to its listeners: in-thread ones, and MessagePorts
//   (port()) that carry them to app threads.
// - FollowRuntime: one serving thread's ChainEvents. For every durable commit it first lets that
//   thread's store drop what the commit made stale (applyCommit: the head moves there, atomically
//   for every later call), THEN publishes the commit to that thread's subscribers (eth_subscribe
//   and other consumers). Keeps the latest ingest status for /health and metrics, its local head
//   set to each commit's head as the commit is applied. Fed by an IngestThread directly (one
//   thread) or through a port (each app thread of --threads N), so every thread sees every
//   commit in the order the ingest wrote them. Also hands on the upstream's pending transaction
//   hashes (onPending).
import { MessageChannel, Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { unpackCommit } from '@chainnode/core';
import type { ChainCommit, ChainCommitListener, ChainEvents, FollowStatus, Hex } from '@chainnode/core';
import { blocksBehind, initialFollowStatus } from '../follow.js';
import type { IngestMessage, IngestWorkerData } from './ingest-worker.js';

/** What an ingest thread tells the serving side: its own messages, a crash, and its end. */
export type FollowEvent = IngestMessage | { type: 'crashed'; message: string } | { type: 'exited' };

type FollowListener = (e: FollowEvent) => void;

export interface CommitSink {
  applyCommit(commit: ChainCommit): void;
}

/** The ingest worker thread of one followed datadir (see the top of this file). */
export class IngestThread {
  private readonly worker: Worker;
  private readonly listeners = new Set<FollowListener>();
  private isReady = false;
  private latest: FollowStatus | undefined;
  private failure: FollowEvent | undefined;
  private ended = false;
  private readonly exited: Promise<void>;

  constructor(data: IngestWorkerData) {
    this.worker = new Worker(new URL('./ingest-worker.js', import.meta.url), { workerData: data });
    this.worker.on('message', (m: IngestMessage) => {
      if (m.type === 'ready') this.isReady = true;
      else if (m.type === 'status') this.latest = m.status;
      else if (m.type === 'failed') this.failure = m;
      this.emit(m);
    });
    this.exited = new Promise<void>((resolve) => {
      this.worker.on('error', (err) => {
        const e: FollowEvent = { type: 'crashed', message: err.message };
        this.failure = e;
        this.emit(e);
      });
      // Ports stay open after the exit (closing one may drop what was posted just before): each
      // app thread closes its end when it releases its stores.
      this.worker.on('exit', () => {
        this.ended = true;
        this.emit({ type: 'exited' });
        resolve();
      });
    });
  }

  private emit(e: FollowEvent): void {
    for (const l of this.listeners) l(e);
  }

  /**
   * Hands `listener` the state so far (latest status, ready, failure, exit: commits before now
   * are in the datadir already, which a store opened later reads), then every event; returns the
   * function that stops it.
   */
  listen(listener: FollowListener): () => void {
    if (this.latest !== undefined) listener({ type: 'status', status: this.latest });
    if (this.isReady) listener({ type: 'ready' });
    if (this.failure !== undefined) listener(this.failure);
    if (this.ended) listener({ type: 'exited' });
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** A port carrying listen() to another thread (transfer it there and give it to FollowRuntime.fromPort). */
  port(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    const stop = this.listen((e) => port1.postMessage(e));
    port1.on('close', stop);
    return port2;
  }

  /** Asks the ingest to stop after the batch in flight and waits for the thread to end. */
  async stop(): Promise<void> {
    if (!this.ended) this.worker.postMessage({ type: 'stop' });
    const timer = setTimeout(() => void this.worker.terminate(), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** One serving thread's view of a followed datadir (see the top of this file). */
export class FollowRuntime implements ChainEvents {
  private readonly listeners = new Set<ChainCommitListener>();
  private readonly pendingListeners = new Set<(hashes: Hex[]) => void>();
  private sink: CommitSink | undefined;
  private current: FollowStatus = initialFollowStatus();
  /** Resolves when the datadir holds the chain; rejects if the ingest fails before that. */
  readonly ready: Promise<void>;
  private readyResolve!: () => void;
  private readyReject!: (err: Error) => void;

  /**
   * `feed` registers the event handler; `release` ends what this
   * runtime owns: the ingest thread itself (one thread), or only its port (--threads).
   */
  private constructor(
    feed: (on: FollowListener) => void,
    private readonly release: () => Promise<void>,
    private readonly log: (line: string) => void,
  ) {
    this.ready = new Promise<void>((res, rej) => {
      this.readyResolve = res;
      this.readyReject = rej;
    });
    this.ready.catch(() => undefined);
    feed((e) => this.onEvent(e));
  }

  /** Starts the ingest thread and serves its events in this thread (one serving thread). */
  static own(data: IngestWorkerData, log: (line: string) => void): FollowRuntime {
    const ingest = new IngestThread(data);
    return new FollowRuntime(
      (on) => ingest.listen(on),
      () => ingest.stop(),
      log,
    );
  }

  /** The events another thread's IngestThread sends through `port` (an app thread of --threads N). */
  static fromPort(port: MessagePort, log: (line: string) => void): FollowRuntime {
    return new FollowRuntime(
      (on) => port.on('message', on),
      async () => {
        port.close();
      },
      log,
    );
  }

  private onEvent(m: FollowEvent): void {
    switch (m.type) {
      case 'ready':
        this.readyResolve();
        break;
      case 'commit': {
        const commit = unpackCommit(m.packed);
        this.sink?.applyCommit(commit);
        // The ingest posts its status after the commit: until it arrives, the kept status takes
        // the commit's head, so /health never shows a head below the one this thread serves.
        // (The head's timestamp, and lagSeconds with it, come with that status.)
        const localHead = commit.head.number;
        this.current = { ...this.current, localHead, lagBlocks: blocksBehind({ ...this.current, localHead }) };
        for (const l of this.listeners) {
          try {
            l(commit);
          } catch (err) {
            this.log(`follow: a chain-event listener failed: ${(err as Error).message}`);
          }
        }
        break;
      }
      case 'status':
        this.current = m.status;
        break;
      case 'log':
        this.log(m.line);
        break;
      case 'pending':
        for (const l of this.pendingListeners) l(m.hashes);
        break;
      case 'failed':
        this.current = { ...this.current, state: 'failed', lastError: m.message, lastErrorAt: Date.now() };
        this.log(`follow: ingest stopped: ${m.message}; serving continues on the verified chain`);
        this.readyReject(new Error(m.message));
        break;
      case 'crashed':
        this.current = { ...this.current, state: 'failed', lastError: m.message, lastErrorAt: Date.now() };
        this.log(`follow: ingest thread crashed: ${m.message}`);
        this.readyReject(new Error(m.message));
        break;
      case 'exited':
        this.readyReject(new Error('ingest thread exited'));
        break;
      case 'stopped':
        break;
    }
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

  /** The upstream's pending transaction hashes, in batches (none from an HTTP upstream); returns the function that stops it. */
  onPending(listener: (hashes: Hex[]) => void): () => void {
    this.pendingListeners.add(listener);
    return () => {
      this.pendingListeners.delete(listener);
    };
  }

  status(): FollowStatus {
    return this.current;
  }

  /** Stops the ingest thread (when this runtime owns it) or leaves it to its owner (a port). */
  stop(): Promise<void> {
    return this.release();
  }
}
