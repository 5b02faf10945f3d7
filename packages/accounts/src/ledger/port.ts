// A CreditLedger for worker threads (serve --threads): every call goes over a MessagePort to the
// one ledger that owns the credits (e.g. the embedded engine in the main thread), so credits stay
// exact across threads. The Redis engine needs no proxy (one instance per thread is exact, Redis
// serialises the scripts), but works through this as well.
//   main thread:   serveLedgerOverPort(ledger, port1)      worker: new PortLedger(port2)
//
// Both sides post BATCHES, one message per event-loop turn (setImmediate): every call is a debit
// and a settle, and a message per request and per reply (each a structured clone, an event on the
// other thread and its wake-up) cost more CPU than the call itself. Order is kept: requests are
// handed to the ledger in the order they were asked, within and across batches.
import { withProperty } from '@chainnode/core';
import type { MessagePort } from 'node:worker_threads';
import { LedgerUnavailableError } from './api.js';
import type { CreditLedger, Debit, DebitResult, Limits, Usage } from './api.js';

type Request =
  | { id: number; op: 'debit'; hash: string; cost: number; limits: Limits; network?: string }
  | { id: number; op: 'settle'; debit: Debit; finalCost: number }
  | { id: number; op: 'usage'; hash: string };

/** A request before it gets its id (Omit distributed over the union). */
type Unnumbered = Request extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

type Reply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; unavailable: boolean; message: string };

/** Messages of `T`, posted on `port` as one array per event-loop turn. */
class Outbox<T> {
  private items: T[] = [];
  private scheduled = false;
  constructor(private readonly port: MessagePort) {}

  push(item: T): void {
    this.items.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    if (this.items.length === 0) return;
    const batch = this.items;
    this.items = [];
    this.port.postMessage(batch);
  }
}

/** Answers PortLedger requests arriving on `port` from `ledger`; returns a function that stops. */
export function serveLedgerOverPort(ledger: CreditLedger, port: MessagePort): () => void {
  const replies = new Outbox<Reply>(port);
  const one = (req: Request): void => {
    const done = (p: Promise<unknown>): void => {
      p.then(
        (value) => replies.push({ id: req.id, ok: true, value }),
        (err: unknown) =>
          replies.push({
            id: req.id,
            ok: false,
            unavailable: err instanceof LedgerUnavailableError,
            message: (err as Error).message ?? 'ledger error',
          }),
      );
    };
    if (req.op === 'debit') done(ledger.debit(req.hash, req.cost, req.limits, req.network));
    else if (req.op === 'settle') done(ledger.settle(req.debit, req.finalCost));
    else done(ledger.usage(req.hash));
  };
  const onMessage = (batch: Request[]): void => {
    for (const req of batch) one(req);
  };
  port.on('message', onMessage);
  return () => {
    port.off('message', onMessage);
    replies.flush();
  };
}

export class PortLedger implements CreditLedger {
  private next = 1;
  private waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private readonly requests: Outbox<Request>;

  constructor(private readonly port: MessagePort) {
    this.requests = new Outbox<Request>(port);
    port.on('message', (batch: Reply[]) => {
      for (const r of batch) {
        const w = this.waiting.get(r.id);
        if (!w) continue;
        this.waiting.delete(r.id);
        if (r.ok) w.resolve(r.value);
        else w.reject(r.unavailable ? new LedgerUnavailableError(r.message) : new Error(r.message));
      }
    });
  }

  private ask<T>(req: Unnumbered): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.requests.push(withProperty(req, 'id', id) as Request);
    });
  }

  debit(hash: string, cost: number, limits: Limits, network?: string): Promise<DebitResult> {
    return this.ask(
      network === undefined ? { op: 'debit', hash, cost, limits } : { op: 'debit', hash, cost, limits, network },
    );
  }

  settle(debit: Debit, finalCost: number): Promise<void> {
    return this.ask({ op: 'settle', debit, finalCost });
  }

  usage(hash: string): Promise<Usage> {
    return this.ask({ op: 'usage', hash });
  }

  async close(): Promise<void> {
    for (const w of this.waiting.values()) w.reject(new LedgerUnavailableError('credit ledger closed'));
    this.waiting.clear();
    this.port.close();
  }
}
