// Cursors over the log index's posting lists, and a query's deadline: a PostingCursor reads one
// (kind, value)'s log ids chunk by chunk with forward seeks, a UnionCursor merges several (a
// constraint listing several values). queries.ts intersects them by a leapfrog join.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { LimitExceededError } from '@chainnode/core';
import {
  LOG_INDEX_CHUNK,
  Prefix,
  decodePostings,
  logIndexKeyLength,
  readU64,
  writeLogIndexKey,
} from '../schema/index.js';
import type { LogDb, RawIterator } from './gate.js';

/** Let other requests run at least this often (ms) during one query. */
const YIELD_EVERY_MS = 4;

/** Deadline and fairness of one query: `tick()` throws past the deadline and yields now and then. */
export class Budget {
  private last = Date.now();
  constructor(private readonly deadline: number) {
    this.check();
  }

  check(): void {
    if (Date.now() > this.deadline) throw new LimitExceededError('query timeout exceeded');
  }

  async tick(): Promise<void> {
    const now = Date.now();
    if (now > this.deadline) throw new LimitExceededError('query timeout exceeded');
    if (now - this.last >= YIELD_EVERY_MS) {
      await nextTurn();
      this.last = Date.now();
      this.check();
    }
  }
}

/** Last 8 bytes of a key as a number; Infinity for OPEN_CHUNK (all 0xff). */
function chunkLast(key: Uint8Array): number {
  const at = key.length - 8;
  let open = true;
  for (let i = at; i < key.length; i++) if (key[i] !== 0xff) open = false;
  if (open) return Infinity;
  return readU64(key, at);
}

export interface IdCursor {
  /** Smallest matching log id >= x (ids only grow between calls), or undefined past the end. */
  seek(x: number): Promise<number | undefined>;
  /** Rough count of ids in [start, end), from what the first seek loaded. */
  estimate(): number;
  close(): Promise<void>;
}

/** The log ids of one (kind, value) below `end`, chunk by chunk, with forward seeks. */
export class PostingCursor implements IdCursor {
  private it: RawIterator | undefined;
  private ids: number[] = [];
  private pos = 0;
  /** Largest id the loaded chunk covers (Infinity: the open chunk, nothing after it). */
  private last = -1;
  private done = false;
  private firstLoad: { ids: number; span: number } | undefined;

  constructor(
    private readonly db: LogDb,
    private readonly kind: number,
    private readonly value: Uint8Array,
    private readonly start: number,
    private readonly end: number,
  ) {}

  private key(id: number): Uint8Array {
    const k = new Uint8Array(logIndexKeyLength(this.value.length));
    return writeLogIndexKey(k, this.kind, this.value, id === Infinity ? undefined : id, Prefix.LogIndex);
  }

  /** Loads the chunk that may hold x: the first chunk whose last id is >= x. */
  private async load(x: number): Promise<boolean> {
    let entry: [Uint8Array, Uint8Array] | undefined;
    if (this.it === undefined) {
      this.it = this.db.iterator({ gte: this.key(x), lte: this.key(Infinity) });
      entry = await this.it.next();
    } else {
      // The iterator stands right after the loaded chunk: try the next chunk before seeking.
      entry = await this.it.next();
      if (entry !== undefined && chunkLast(entry[0]) < x) {
        this.it.seek(this.key(x));
        entry = await this.it.next();
      }
    }
    if (entry === undefined) return false;
    this.ids = decodePostings(entry[1]);
    this.pos = 0;
    this.last = chunkLast(entry[0]);
    if (this.firstLoad === undefined) {
      const first = this.ids[0] as number;
      const last = this.ids[this.ids.length - 1] as number;
      this.firstLoad = { ids: this.ids.length, span: this.last === Infinity ? Infinity : last - first + 1 };
    }
    return true;
  }

  async seek(x: number): Promise<number | undefined> {
    if (this.done) return undefined;
    if (x > this.last && !(await this.load(x))) {
      this.done = true;
      return undefined;
    }
    const ids = this.ids;
    let lo = this.pos;
    if ((ids[lo] as number) < x) {
      let hi = ids.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((ids[mid] as number) < x) lo = mid + 1;
        else hi = mid;
      }
    }
    this.pos = lo;
    const id = ids[lo];
    if (id === undefined || id >= this.end) {
      // Past the open chunk's ids (nothing more for this value) or past the range.
      this.done = true;
      return undefined;
    }
    return id;
  }

  estimate(): number {
    if (this.done && this.firstLoad === undefined) return 0;
    const f = this.firstLoad;
    if (f === undefined) return 0;
    if (f.span === Infinity) return f.ids; // the open chunk: everything left of this value
    return Math.max(LOG_INDEX_CHUNK, (f.ids * (this.end - this.start)) / f.span);
  }

  async close(): Promise<void> {
    const it = this.it;
    this.it = undefined;
    if (it !== undefined) await it.close();
  }
}

/** Ids matching any of several values (one constraint with alternatives). */
export class UnionCursor implements IdCursor {
  private readonly heads: (number | undefined)[];

  constructor(private readonly parts: IdCursor[]) {
    this.heads = parts.map(() => -1);
  }

  async seek(x: number): Promise<number | undefined> {
    const behind: number[] = [];
    this.heads.forEach((h, i) => {
      if (h !== undefined && h < x) behind.push(i);
    });
    if (behind.length > 0) {
      await Promise.all(
        behind.map(async (i) => {
          this.heads[i] = await (this.parts[i] as IdCursor).seek(x);
        }),
      );
    }
    let min: number | undefined;
    for (const h of this.heads) if (h !== undefined && (min === undefined || h < min)) min = h;
    return min;
  }

  estimate(): number {
    return this.parts.reduce((n, p) => n + p.estimate(), 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.close()));
  }
}
