// The log queries' one gate on LevelDB: LogQueries reads the database through GatedDb, which
// holds at most LOG_READS_IN_FLIGHT of libuv's threads for all log queries together.
import type { Db } from '../db.js';
import type { KvRange } from '../schema/index.js';

export interface RawIterator {
  next(): Promise<[Uint8Array, Uint8Array] | undefined>;
  nextv(size: number): Promise<[Uint8Array, Uint8Array][]>;
  seek(target: Uint8Array): void;
  close(): Promise<void>;
}

/** What the log code reads LevelDB through (see GatedDb). */
export interface LogDb {
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  getMany(keys: Uint8Array[]): Promise<(Uint8Array | undefined)[]>;
  iterator(opts: KvRange): RawIterator & AsyncIterable<[Uint8Array, Uint8Array]>;
}

/** Admits at most `limit` operations at once; the others wait in order. */
export class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve)); // the slot is handed over
    try {
      return await f();
    } finally {
      const next = this.waiting.shift();
      if (next !== undefined) next();
      else this.active--;
    }
  }
}

/**
 * LevelDB reads run on libuv's thread pool (4 threads by default), shared with every other
 * request. Heavy log queries could fill it (a 50-address union seeks 50 posting lists at once)
 * and a cheap eth_getBlockByNumber would then wait behind them; so all log-query reads together
 * hold at most LOG_READS_IN_FLIGHT threads and queue among themselves for the rest.
 */
export const LOG_READS_IN_FLIGHT = 2;

export class GatedDb implements LogDb {
  constructor(
    private readonly db: Db,
    private readonly gate: Gate,
  ) {}

  get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.gate.run(() => this.db.get(key));
  }

  getMany(keys: Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    return this.gate.run(() => this.db.getMany(keys));
  }

  iterator(opts: KvRange): RawIterator & AsyncIterable<[Uint8Array, Uint8Array]> {
    const it = this.db.iterator(opts);
    const gate = this.gate;
    const next = (): Promise<[Uint8Array, Uint8Array] | undefined> => gate.run(() => it.next());
    return {
      next,
      nextv: (size) => gate.run(() => it.nextv(size)),
      seek: (target) => it.seek(target),
      close: () => it.close(),
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<[Uint8Array, Uint8Array]>> => {
          const entry = await next();
          return entry === undefined ? { done: true, value: undefined } : { done: false, value: entry };
        },
      }),
    };
  }
}
