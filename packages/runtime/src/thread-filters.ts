// Polled filters of `serve --threads N` without Redis: the main thread keeps one MemoryFilterStore
// per network, and every app thread reaches it over a MessagePort, so a filter made on one thread
// is polled on any other (a client's HTTP connections land on any thread). With Redis the app
// threads use Redis instead (redis-filters.ts).
import { MessageChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { RpcError } from '@chainnode/core';
import { MemoryFilterStore } from '@chainnode/rpc';
import type { FilterLimits, FilterStateStore } from '@chainnode/rpc';

type Op = keyof FilterStateStore;

interface Request {
  id: number;
  network: string;
  op: Op;
  args: unknown[];
}

type Answer = { id: number; value: unknown } | { id: number; error: { code: number; message: string; data?: unknown } };

/** The main thread's side: the stores, and the port ends it answers on. */
export class FilterStoresHost {
  private readonly stores = new Map<string, MemoryFilterStore>();
  private readonly ports: MessagePort[] = [];

  constructor(private readonly limits: FilterLimits) {}

  /** A new app thread's end (to transfer to it); this side answers its requests. */
  link(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (m: Request) => void this.answer(port1, m));
    port1.unref();
    this.ports.push(port1);
    return port2;
  }

  close(): void {
    for (const p of this.ports.splice(0)) p.close();
  }

  private async answer(port: MessagePort, m: Request): Promise<void> {
    let store = this.stores.get(m.network);
    if (store === undefined) this.stores.set(m.network, (store = new MemoryFilterStore(this.limits)));
    let out: Answer;
    try {
      const f = store[m.op] as (...args: unknown[]) => Promise<unknown>;
      out = { id: m.id, value: await f.apply(store, m.args) };
    } catch (err) {
      const e = err instanceof RpcError ? err : new RpcError(-32603, 'internal error');
      out = {
        id: m.id,
        error:
          e.data === undefined
            ? { code: e.code, message: e.message }
            : { code: e.code, message: e.message, data: e.data },
      };
    }
    port.postMessage(out);
  }
}

/** An app thread's view of one network's filters on the main thread. */
export class PortFilterStore implements FilterStateStore {
  constructor(
    private readonly port: ThreadFilterPort,
    private readonly network: string,
  ) {}

  create = (...args: Parameters<FilterStateStore['create']>) => this.call('create', args) as Promise<void>;
  get = (...args: Parameters<FilterStateStore['get']>) => this.call('get', args) as ReturnType<FilterStateStore['get']>;
  update = (...args: Parameters<FilterStateStore['update']>) =>
    this.call('update', args) as ReturnType<FilterStateStore['update']>;
  remove = (...args: Parameters<FilterStateStore['remove']>) => this.call('remove', args) as Promise<boolean>;
  notePending = (...args: Parameters<FilterStateStore['notePending']>) =>
    this.call('notePending', args) as Promise<void>;
  pendingSince = (...args: Parameters<FilterStateStore['pendingSince']>) =>
    this.call('pendingSince', args) as ReturnType<FilterStateStore['pendingSince']>;

  private call(op: Op, args: unknown[]): Promise<unknown> {
    return this.port.request({ network: this.network, op, args });
  }
}

/** An app thread's end of the link: requests matched to answers by id. */
export class ThreadFilterPort {
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  constructor(private readonly port: MessagePort) {
    port.on('message', (a: Answer) => {
      const w = this.waiting.get(a.id);
      if (w === undefined) return;
      this.waiting.delete(a.id);
      if ('error' in a) w.reject(new RpcError(a.error.code, a.error.message, a.error.data));
      else w.resolve(a.value);
    });
    port.unref();
  }

  request(r: Omit<Request, 'id'>): Promise<unknown> {
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.port.postMessage({ ...r, id } satisfies Request);
    });
  }

  /** openNetwork's filterState for `network`. */
  stateOf(network: string): () => FilterStateStore {
    return () => new PortFilterStore(this, network);
  }
}
