// Daily credit usage: an append-only journal per UTC day, `<datadir>/usage/YYYY-MM-DD.log`,
// one line `<sha256(key)> <credits>[ <network>]` per key (and network) per event-loop turn: the
// balance is one account across networks (readUsage sums every line of a key), the network field
// splits that usage by network (readUsageByNetwork; absent on lines of a single-network server
// and of older versions). Outside LevelDB so the
// `keys usage` command can read it while a server runs.
//
// Exactness: a call first *reserves* its cost in memory (synchronous check-and-add, so 150
// concurrent calls against a balance of 100 calls admit exactly 100). When the call has an
// answer, its charge is *committed*: queued, written with one writeSync for all charges of
// that turn, and only then is the answer released to the client. A reservation whose call
// fails is released and costs nothing. After a crash nothing is refunded (the journal holds
// every charge whose answer was sent) and nothing is charged twice (replay reads each line once).
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const USAGE_DIR = 'usage';

/** `YYYY-MM-DD` of a UTC instant. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The next 00:00 UTC after `ms`. */
export function nextUtcMidnight(ms: number): Date {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1));
}

export function usagePath(datadir: string, day: string): string {
  return join(datadir, USAGE_DIR, `${day}.log`);
}

const LINE = /^([0-9a-f]{64}) (\d{1,15})(?: ([a-z0-9-]{1,32}))?$/;

/** Sums the journal of one day per key hash. Partial (unterminated) trailing lines are ignored. */
export function readUsage(datadir: string, day: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [hash, byNetwork] of readUsageByNetwork(datadir, day)) {
    let sum = 0;
    for (const credits of byNetwork.values()) sum += credits;
    out.set(hash, sum);
  }
  return out;
}

/** Key usage under no network name: lines of a server started without networks. */
export const NO_NETWORK = '';

/** The journal of one day per key hash and network (NO_NETWORK for lines without one). */
export function readUsageByNetwork(datadir: string, day: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  let text: string;
  try {
    text = readFileSync(usagePath(datadir, day), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  const lines = text.split('\n');
  lines.pop(); // after the last newline: empty, or a line a crash cut short
  for (const line of lines) {
    const m = LINE.exec(line);
    if (!m) continue;
    const hash = m[1] as string;
    const network = m[3] ?? NO_NETWORK;
    let byNetwork = out.get(hash);
    if (byNetwork === undefined) out.set(hash, (byNetwork = new Map()));
    byNetwork.set(network, (byNetwork.get(network) ?? 0) + Number(m[2]));
  }
  return out;
}

export interface Reservation {
  readonly day: string;
  readonly hash: string;
  readonly cost: number;
  /** The network the call went to (journaled with the charge); undefined on a single-network server. */
  readonly network?: string;
}

interface Pending {
  lines: Map<string, Map<string, number>>; // day -> "hash[ network]" -> credits
  /** Settles when this turn's charges are written (or failed to be): one promise for all of them. */
  written: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class CreditLedger {
  private day: string;
  private committed: Map<string, number>;
  private reserved = new Map<string, number>();
  private fd: number | undefined;
  private fdDay = '';
  private pending: Pending | undefined;
  private closed = false;
  /** [dayStart, dayEnd): the UTC day `day` in epoch ms. */
  private dayStart = 0;
  private dayEnd = 0;

  constructor(
    private readonly datadir: string,
    private readonly now: () => number = Date.now,
  ) {
    mkdirSync(join(datadir, USAGE_DIR), { recursive: true });
    const t = this.now();
    this.day = utcDay(t);
    this.setDay(t);
    this.committed = readUsage(datadir, this.day);
  }

  private roll(): void {
    // Hot path: one clock read and a compare; the day string is rebuilt only when the clock
    // leaves the current UTC day (either way: a clock set back re-reads that day too).
    const now = this.now();
    if (now >= this.dayStart && now < this.dayEnd) return;
    const day = utcDay(now);
    this.setDay(now);
    if (day !== this.day) {
      this.day = day;
      this.committed = readUsage(this.datadir, day);
      this.reserved = new Map();
    }
  }

  private setDay(now: number): void {
    this.dayEnd = nextUtcMidnight(now).getTime();
    this.dayStart = this.dayEnd - 86_400_000;
  }

  /** Credits used today (committed plus in flight). */
  used(hash: string): number {
    this.roll();
    return (this.committed.get(hash) ?? 0) + (this.reserved.get(hash) ?? 0);
  }

  resetsAt(): Date {
    return nextUtcMidnight(this.now());
  }

  /**
   * Reserves `cost` if today's balance `limit` covers it; undefined when it does not. The balance
   * is the key's across all networks; `network` only labels the charge in the journal.
   */
  reserve(hash: string, cost: number, limit: number, network?: string): Reservation | undefined {
    if (this.used(hash) + cost > limit) return undefined;
    this.reserved.set(hash, (this.reserved.get(hash) ?? 0) + cost);
    return network === undefined ? { day: this.day, hash, cost } : { day: this.day, hash, cost, network };
  }

  /** Gives an unused reservation back (the call failed; it costs nothing). */
  release(r: Reservation): void {
    if (r.day !== this.day) return;
    const left = (this.reserved.get(r.hash) ?? 0) - r.cost;
    if (left > 0) this.reserved.set(r.hash, left);
    else this.reserved.delete(r.hash);
  }

  /** Turns a reservation into a journaled charge; resolves once it is written. */
  commit(r: Reservation): Promise<void> {
    if (this.closed) return Promise.reject(new Error('credit ledger is closed'));
    if (r.day === this.day) {
      this.release(r);
      this.committed.set(r.hash, (this.committed.get(r.hash) ?? 0) + r.cost);
    }
    let p = this.pending;
    if (!p) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const written = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      written.catch(() => {}); // every committer awaits it; this only keeps a failure from being "unhandled"
      p = { lines: new Map(), written, resolve, reject };
      this.pending = p;
      setImmediate(() => this.flush());
    }
    let day = p.lines.get(r.day);
    if (!day) p.lines.set(r.day, (day = new Map()));
    const entry = r.network === undefined ? r.hash : `${r.hash} ${r.network}`;
    day.set(entry, (day.get(entry) ?? 0) + r.cost);
    return p.written;
  }

  private fdFor(day: string): number {
    if (this.fd !== undefined && this.fdDay === day) return this.fd;
    if (this.fd !== undefined) closeSync(this.fd);
    const fd = openSync(usagePath(this.datadir, day), 'a+', 0o600);
    // A crash may have cut the last line short: start ours on a fresh line.
    const size = fstatSync(fd).size;
    if (size > 0) {
      const last = Buffer.alloc(1);
      readSync(fd, last, 0, 1, size - 1);
      if (last[0] !== 0x0a) writeSync(fd, '\n');
    }
    this.fd = fd;
    this.fdDay = day;
    return fd;
  }

  /** Writes every charge of this turn (one write per day touched), then releases the answers. */
  flush(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    try {
      for (const [day, hashes] of p.lines) {
        let text = '';
        for (const [entry, credits] of hashes) {
          const sp = entry.indexOf(' ');
          text += sp < 0 ? `${entry} ${credits}\n` : `${entry.slice(0, sp)} ${credits}${entry.slice(sp)}\n`;
        }
        writeSync(this.fdFor(day), text);
      }
    } catch (err) {
      // Not journaled, so not charged: undo the in-memory charges and fail those calls.
      const today = p.lines.get(this.day);
      if (today) {
        for (const [entry, credits] of today) {
          const hash = entry.slice(0, 64);
          this.committed.set(hash, (this.committed.get(hash) ?? 0) - credits);
        }
      }
      p.reject(err);
      return;
    }
    p.resolve();
  }

  close(): void {
    this.flush();
    this.closed = true;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
