// A CreditLedger for worker threads (serve --threads): every call goes over a MessagePort to the
// one ledger that owns the credits (e.g. the embedded engine in the main thread), so credits stay
// exact across threads. The Redis engine needs no proxy (one instance per thread is exact, Redis
// serialises the scripts), but works through this as well.
//   main thread:   serveLedgerOverPort(ledger, port1)      worker: new PortLedger(port2)
import type { MessagePort } from 'node:worker_threads';
import { LedgerUnavailableError } from './ledger-api.js';
import type { CreditLedger, Debit, DebitResult, Limits, Usage } from './ledger-api.js';

type Request =
  | { id: number; op: 'debit'; hash: string; cost: number; limits: Limits; network?: string }
  | { id: number; op: 'settle'; debit: Debit; finalCost: number }
  | { id: number; op: 'usage'; hash: string };

/** A request before it gets its id (Omit distributed over the union). */
type Unnumbered = Request extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; unavailable: boolean; message: string };

/** Answers PortLedger requests arriving on `port` from `ledger`; returns a function that stops. */
export function serveLedgerOverPort(ledger: CreditLedger, port: MessagePort): () => void {
  const onMessage = (req: Request): void => {
    const done = (p: Promise<unknown>): void => {
      p.then(
        (value) => port.postMessage({ id: req.id, ok: true, value } satisfies Reply),
        (err: unknown) =>
          port.postMessage({ id: req.id, ok: false, unavailable: err instanceof LedgerUnavailableError, message: (err as Error).message ?? 'ledger error' } satisfies Reply),
      );
    };
    if (req.op === 'debit') done(ledger.debit(req.hash, req.cost, req.limits, req.network));
    else if (req.op === 'settle') done(ledger.settle(req.debit, req.finalCost));
    else done(ledger.usage(req.hash));
  };
  port.on('message', onMessage);
  return () => port.off('message', onMessage);
}

export class PortLedger implements CreditLedger {
  private next = 1;
  private waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();

  constructor(private readonly port: MessagePort) {
    port.on('message', (r: Reply) => {
      const w = this.waiting.get(r.id);
      if (!w) return;
      this.waiting.delete(r.id);
      if (r.ok) w.resolve(r.value);
      else w.reject(r.unavailable ? new LedgerUnavailableError(r.message) : new Error(r.message));
    });
  }

  private ask<T>(req: Unnumbered): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.port.postMessage({ ...req, id });
    });
  }

  debit(hash: string, cost: number, limits: Limits, network?: string): Promise<DebitResult> {
    return this.ask(network === undefined ? { op: 'debit', hash, cost, limits } : { op: 'debit', hash, cost, limits, network });
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
