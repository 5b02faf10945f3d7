// Offloading heavy calls to worker threads. Methods marked `offload` in the method table
// (eth_getLogs) can run, whole (params decode, store query, JSON text), in a worker thread that
// opens the same datadir, so the event loop answering every other call never runs them. The
// envelope still wraps them in the caller's middleware (auth, credits, metrics) on the main
// thread; only `next()` crosses to a worker.
//
// Both ends live here:
// - OffloadPool (main thread): a bounded queue in front of N workers, a per-call deadline kept
//   on the main thread, restart of crashed or stuck workers, graceful close.
// - serveOffloadedCalls (worker): answers calls with the same table and handlers as inline
//   execution, returning the result's JSON text or the error object toErrorObject makes, so a
//   client sees the same bytes whichever thread answered.
import { Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import {
  InternalError,
  LimitExceededError,
  MethodNotFoundError,
  RpcError,
  StoreUnavailableError,
  commitWithoutLogs,
  withProperty,
} from '@chainnode/core';
import type { ChainCommit, ChainStore } from '@chainnode/core';
import { DEADLINE_GRACE_MS, resolveConfig } from './config.js';
import { createFormatMemos } from './context.js';
import type { HandlerContext } from './context.js';
import { toErrorObject } from './errors.js';
import type { JsonRpcErrorObject } from './errors.js';
import { JsonText, stringifyResult } from './json-text.js';
import type { MethodDef } from './method.js';
import { isMethodName, METHODS } from './table.js';
import type { MethodName } from './table.js';
import type { RpcConfig } from './config.js';

/** Runs calls of offloadable methods somewhere else than the caller's event loop. */
export interface OffloadExecutor {
  /**
   * The call's result as JSON text; rejects with an error that maps (toErrorObject) to the
   * same error object inline execution gives.
   */
  run(method: MethodName, params: unknown[]): Promise<JsonText>;
}

/** Main thread -> worker. */
export type OffloadRequest =
  | { type: 'call'; id: number; method: string; params: unknown[]; deadline: number }
  /**
   * A followed chain's commit, applied by the serving thread's store already: the worker's store
   * applies it before any call sent after it (one channel, so in order).
   */
  | { type: 'commit'; commit: ChainCommit }
  /** Finish the calls already received, then resolve serveOffloadedCalls (no more calls follow). */
  | { type: 'close' };

/** Worker -> main thread. */
export type OffloadReply =
  | { type: 'ready' }
  | { type: 'result'; id: number; text: string }
  /** A line for the pool's log (the worker's upstream layers refusing an answer). */
  | { type: 'log'; line: string }
  /** `unavailable`: the store failed (StoreUnavailableError), which the main thread rethrows as such. */
  | { type: 'error'; id: number; error: JsonRpcErrorObject; unavailable: boolean };

// ---------------------------------------------------------------------------------------------
// Worker side

/**
 * Answers OffloadRequests arriving on `port` (a worker's parentPort) from `store`, with the
 * same rpc config as the main thread. Posts `ready` at once; resolves after a `close` request
 * once every call received before it is answered (the caller then closes its store). A followed
 * chain's commits go to `applyCommit` (the store's), before the calls sent after them run.
 */
export function serveOffloadedCalls(
  port: MessagePort,
  store: ChainStore,
  config?: Partial<RpcConfig>,
  applyCommit?: (commit: ChainCommit) => void,
): Promise<void> {
  const ctx: HandlerContext = { store, config: resolveConfig(config), memo: createFormatMemos() };
  const running = new Set<Promise<void>>();
  return new Promise<void>((resolve) => {
    port.on('message', (msg: OffloadRequest) => {
      if (msg.type === 'commit') {
        applyCommit?.(msg.commit);
        return;
      }
      if (msg.type === 'close') {
        port.removeAllListeners('message');
        void Promise.allSettled([...running]).then(() => resolve());
        return;
      }
      const p = runOffloaded(ctx, msg).then((reply) => port.postMessage(reply));
      running.add(p);
      void p.finally(() => running.delete(p));
    });
    port.postMessage({ type: 'ready' } satisfies OffloadReply);
  });
}

async function runOffloaded(
  ctx: HandlerContext,
  msg: Extract<OffloadRequest, { type: 'call' }>,
): Promise<OffloadReply> {
  try {
    if (!isMethodName(msg.method)) throw new MethodNotFoundError(msg.method);
    const def = METHODS[msg.method] as MethodDef<unknown, unknown>;
    if (def.offload !== true) throw new Error(`${msg.method} is not offloadable`); // a bug: -32603
    const result = await def.handle(withProperty(ctx, 'deadline', msg.deadline), def.decode(msg.params));
    return { type: 'result', id: msg.id, text: stringifyResult(result === undefined ? null : result) };
  } catch (err) {
    return { type: 'error', id: msg.id, error: toErrorObject(err), unavailable: err instanceof StoreUnavailableError };
  }
}

// ---------------------------------------------------------------------------------------------
// Main thread side

export interface OffloadPoolOptions {
  /** Worker script; it opens its store and calls serveOffloadedCalls(parentPort, ...). */
  script: URL;
  workerData?: unknown;
  /** Environment of the workers (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Number of worker threads (at least 1). */
  size: number;
  /** Most calls queued or running in the workers at once; more are refused at once (-32005). */
  queueLimit: number;
  /** Calls one worker runs at once (they interleave on its event loop). Default 4. */
  perWorker?: number;
  /**
   * Deadline of a call from its submission (RpcConfig.logs.timeoutMs): the caller gets
   * "query timeout exceeded" this long (plus the handlers' 250 ms grace) after submitting,
   * whatever a worker does.
   */
  timeoutMs: number;
  /** A worker still silent on a call this long after that call's deadline is restarted. Default 5000. */
  stuckAfterMs?: number;
  /** Operational messages (worker restarts). */
  log?: (line: string) => void;
  /** Called for each call refused because queueLimit calls were held (the shedding metric). */
  onShed?: () => void;
  /** Called for each call a worker answered (the offloaded-calls metric). */
  onAnswered?: () => void;
}

interface Job {
  id: number;
  method: MethodName;
  params: unknown[];
  deadline: number;
  /** The caller has its answer (result, error or timeout). */
  answered: boolean;
  /** Its deadline passed while a worker held it (counted in that worker's `overdue`). */
  overdue: boolean;
  timer: NodeJS.Timeout;
  resolve: (text: JsonText) => void;
  reject: (err: unknown) => void;
}

interface Slot {
  index: number;
  worker: Worker;
  ready: boolean;
  /** Calls sent to this worker and not answered by it yet (including ones whose caller gave up). */
  jobs: Map<number, Job>;
  /** Calls it holds past their deadline: it may be stuck, so it gets no new ones meanwhile. */
  overdue: number;
  /** Set when we end it on purpose (close, stuck). */
  ending: boolean;
}

/** A pool started without waiting (OffloadPool.launch): `started` settles once every worker was ready, or one could not start. */
export type LaunchedOffloadPool = OffloadPool & { readonly started: Promise<void> };

export const TOO_MANY_OFFLOADED = 'too many concurrent offloaded queries';

/** A fixed set of worker threads answering offloaded calls; see OffloadPoolOptions. */
export class OffloadPool implements OffloadExecutor {
  private readonly slots: (Slot | undefined)[];
  private readonly queue: Job[] = [];
  private nextId = 1;
  /** Calls in the queue or in a worker (answered or not): what queueLimit bounds. */
  private held = 0;
  private closing = false;
  private idle: (() => void) | undefined;
  private readonly perWorker: number;
  private readonly stuckAfterMs: number;
  private readonly crashes: number[];
  private readonly log: (line: string) => void;

  private constructor(private readonly o: OffloadPoolOptions) {
    if (!Number.isSafeInteger(o.size) || o.size < 1)
      throw new RangeError('OffloadPool: size must be a positive integer');
    if (!Number.isSafeInteger(o.queueLimit) || o.queueLimit < 1)
      throw new RangeError('OffloadPool: queueLimit must be a positive integer');
    this.perWorker = o.perWorker ?? 4;
    this.stuckAfterMs = o.stuckAfterMs ?? 5_000;
    this.log = o.log ?? (() => {});
    this.slots = new Array<Slot | undefined>(o.size).fill(undefined);
    this.crashes = new Array<number>(o.size).fill(0);
  }

  /** Starts the workers and resolves once each has opened its store (rejects if one cannot). */
  static async start(options: OffloadPoolOptions): Promise<OffloadPool> {
    const pool = OffloadPool.launch(options);
    await pool.started;
    return pool;
  }

  /**
   * Starts the workers without waiting for them: calls queue (within queueLimit, each by its
   * deadline) until a worker is ready. `started` resolves once every worker has opened its store
   * (or the pool was closed first); if one cannot, the calls waiting get -32603 at once, the pool
   * is closed and `started` rejects with why. A worker loads the modules and opens the store in
   * ~0.5-1 s, which a server need not wait for before it listens; it still fails when one cannot.
   */
  static launch(options: OffloadPoolOptions): LaunchedOffloadPool {
    const pool = new OffloadPool(options);
    const started = Promise.all(pool.slots.map((_, i) => pool.spawn(i))).then(
      () => undefined,
      async (err: unknown) => {
        // Closed by its owner before every worker was ready: that is no failure to report.
        if (pool.closing) return;
        // No worker will take the calls waiting for one: they are answered now, not at their deadlines.
        for (const job of pool.queue.splice(0)) {
          pool.answer(job, () => job.reject(new InternalError()));
          pool.release();
        }
        await pool.close();
        throw err;
      },
    );
    started.catch(() => undefined); // the caller's to handle; never an unhandled rejection
    return Object.assign(pool, { started });
  }

  /** Calls queued or held by a worker now. */
  get load(): number {
    return this.held;
  }

  /**
   * A followed chain's commit (the serving thread's store has applied it): every worker applies it
   * before the calls sent to it afterwards. A worker started later opens the datadir after it.
   */
  applyCommit(commit: ChainCommit): void {
    // A store applying a commit reads its blocks' numbers and hashes only: the logs stay here.
    const forWorkers = commitWithoutLogs(commit);
    for (const slot of this.slots) {
      if (slot === undefined || slot.ending) continue;
      try {
        slot.worker.postMessage({ type: 'commit', commit: forWorkers } satisfies OffloadRequest);
      } catch {
        // It is exiting: its replacement opens the datadir with the commit in it.
      }
    }
  }

  run(method: MethodName, params: unknown[]): Promise<JsonText> {
    if (this.closing) return Promise.reject(new InternalError('server is shutting down'));
    if (this.held >= this.o.queueLimit) {
      this.o.onShed?.();
      return Promise.reject(new LimitExceededError(TOO_MANY_OFFLOADED, { limit: this.o.queueLimit }));
    }
    return new Promise<JsonText>((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        method,
        params,
        deadline: Date.now() + this.o.timeoutMs,
        answered: false,
        overdue: false,
        resolve,
        reject,
        timer: setTimeout(() => this.expire(job), this.o.timeoutMs + DEADLINE_GRACE_MS),
      };
      this.held++;
      this.queue.push(job);
      this.dispatch();
    });
  }

  /**
   * Refuses new calls, lets queued and running ones finish (each is answered by its deadline),
   * then asks every worker to close its store and exit; one that does not is terminated.
   */
  close(): Promise<void> {
    this.closed ??= this.closeOnce();
    return this.closed;
  }

  private closed: Promise<void> | undefined;

  private async closeOnce(): Promise<void> {
    this.closing = true;
    if (this.held > 0) await new Promise<void>((resolve) => (this.idle = resolve));
    await Promise.all(
      this.slots.map(async (slot) => {
        if (slot === undefined) return;
        slot.ending = true;
        const exited = new Promise<void>((r) => slot.worker.once('exit', () => r()));
        slot.worker.postMessage({ type: 'close' } satisfies OffloadRequest);
        const t = setTimeout(() => void slot.worker.terminate(), 5_000);
        await exited;
        clearTimeout(t);
      }),
    );
  }

  private spawn(index: number): Promise<void> {
    const worker = new Worker(this.o.script, {
      workerData: this.o.workerData,
      ...(this.o.env !== undefined ? { env: this.o.env } : {}),
    });
    const slot: Slot = { index, worker, ready: false, jobs: new Map(), overdue: 0, ending: false };
    this.slots[index] = slot;
    return new Promise<void>((resolve, reject) => {
      let failure: Error | undefined;
      worker.on('message', (msg: OffloadReply) => {
        if (msg.type === 'ready') {
          slot.ready = true;
          resolve();
          this.dispatch();
          return;
        }
        if (msg.type === 'log') {
          this.log(`offload worker ${index}: ${msg.line}`);
          return;
        }
        const job = slot.jobs.get(msg.id);
        if (job === undefined) return;
        slot.jobs.delete(msg.id);
        if (job.overdue) slot.overdue--;
        this.crashes[index] = 0;
        this.o.onAnswered?.();
        if (msg.type === 'result') this.answer(job, () => job.resolve(new JsonText(msg.text)));
        else this.answer(job, () => job.reject(fromWire(msg)));
        this.release();
        this.dispatch();
      });
      worker.on('error', (err) => {
        failure = err;
        this.log(`offload worker ${index} failed: ${err.message}`);
      });
      worker.on('exit', (code) => {
        if (this.slots[index] === slot) this.slots[index] = undefined;
        // What it was running is lost: those callers get -32603 (nothing about why).
        for (const job of slot.jobs.values()) {
          this.answer(job, () => job.reject(new InternalError()));
          this.release();
        }
        slot.jobs.clear();
        if (!slot.ready)
          reject(failure ?? new Error(`offload worker ${index} exited with code ${code} before it was ready`));
        if (this.closing) return;
        if (!slot.ending) this.log(`offload worker ${index} exited with code ${code}; restarting it`);
        const crashes = this.crashes[index]!++;
        const delay = crashes === 0 ? 0 : Math.min(2_000, 50 * 2 ** crashes); // a crash loop backs off
        setTimeout(() => {
          if (!this.closing) this.spawn(index).catch(() => undefined); // its own exit restarts it again
        }, delay).unref();
      });
    });
  }

  /** Sends queued calls to ready workers with spare capacity, least loaded first. */
  private dispatch(): void {
    while (this.queue.length > 0) {
      let best: Slot | undefined;
      for (const s of this.slots) {
        if (s === undefined || !s.ready || s.ending || s.overdue > 0 || s.jobs.size >= this.perWorker) continue;
        if (best === undefined || s.jobs.size < best.jobs.size) best = s;
      }
      if (best === undefined) return;
      const job = this.queue.shift() as Job;
      if (Date.now() >= job.deadline) {
        // It waited out its deadline in the queue (its caller's timer, a grace later, has not
        // fired yet): the timeout, without running it.
        this.answer(job, () => job.reject(new LimitExceededError('query timeout exceeded')));
        this.release();
        continue;
      }
      best.jobs.set(job.id, job);
      try {
        best.worker.postMessage({
          type: 'call',
          id: job.id,
          method: job.method,
          params: job.params,
          deadline: job.deadline,
        } satisfies OffloadRequest);
      } catch {
        best.jobs.delete(job.id);
        this.answer(job, () => job.reject(new InternalError()));
        this.release();
      }
    }
  }

  /** The caller's deadline passed: it gets the timeout now; a worker still holding the call is watched. */
  private expire(job: Job): void {
    this.answer(job, () => job.reject(new LimitExceededError('query timeout exceeded')));
    const at = this.queue.indexOf(job);
    if (at >= 0) {
      this.queue.splice(at, 1);
      this.release();
      return;
    }
    const slot = this.slots.find((s) => s?.jobs.has(job.id));
    if (slot === undefined) return;
    job.overdue = true;
    slot.overdue++;
    setTimeout(() => {
      if (slot.jobs.has(job.id) && !slot.ending) {
        this.log(
          `offload worker ${slot.index} has not answered a call ${this.stuckAfterMs} ms past its deadline; restarting it`,
        );
        slot.ending = true;
        void slot.worker.terminate();
      }
    }, this.stuckAfterMs).unref();
  }

  private answer(job: Job, give: () => void): void {
    if (job.answered) return;
    job.answered = true;
    clearTimeout(job.timer);
    give();
  }

  /** A call left the queue and the workers for good. */
  private release(): void {
    this.held--;
    if (this.held === 0) this.idle?.();
  }
}

/** The main-thread error for a worker's error reply: maps (toErrorObject) to the same object. */
function fromWire(msg: Extract<OffloadReply, { type: 'error' }>): Error {
  if (msg.unavailable) return new StoreUnavailableError('store unavailable (offload worker)');
  return new RpcError(msg.error.code, msg.error.message, msg.error.data);
}
