// The embedded engine's credits (the default for one process; its keys: keys/file-store.ts): daily
// usage as an append-only journal per UTC day, `<datadir>/usage/YYYY-MM-DD.log`, one line
// `<sha256(key)> <credits>[ <network>]` per key (and network) per event-loop turn (EmbeddedLedger).
// The balance is one account across networks (readUsage sums every line of a key); the network
// field splits it (readUsageByNetwork; absent on lines of a server without networks and of older
// versions). It lives outside LevelDB so the `keys` CLI can read it while a server runs.
//
// Exactness: debit() checks and takes the cost in memory in one synchronous step (so 150
// concurrent calls against a balance of 100 calls admit exactly 100), together with the
// in-process token bucket of the throughput limit. settle() queues the final charge; one
// writeSync per event-loop turn writes every charge of that turn, and only then do the settles
// resolve and the answers go out. After a crash nothing answered is refunded (the journal holds
// every charge whose answer was sent) and nothing is charged twice (replay reads each line once).
// A debit whose call never settles (a crash mid-call) was never journaled: it costs nothing.
//
// Compaction: a line per key per turn per thread is ~1,500 lines a second per busy thread (a
// gigabyte a day, read whole at every start). Once the day's file reaches its compaction size
// (JOURNAL_COMPACT_MIN, and at least 4x what the last compaction left), the thread that sees it
// writes the same sums as one line per key and network into a new file, adds the lines appended
// meanwhile, and renames it over the journal: readers see the old file or the new one, both whole,
// with the same sums. The swap runs under the journal lock every append takes (tally.ts
// JournalSync), and bumps a generation that makes every writer reopen the path before its next
// append, so no line lands in a replaced file. A crash mid-compaction leaves the journal as it
// was (and a *.tmp file, removed at the next start).
import {
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { syncDir, tempPathFor } from '@chainnode/core';
import { LedgerUnavailableError, NO_NETWORK, nextUtcMidnight, utcDay } from './api.js';
import { LocalTally, TallyFullError } from './tally.js';
import type { Tally } from './tally.js';
import type { CreditLedger, Debit, DebitResult, Limits, Usage } from './api.js';

export const USAGE_DIR = 'usage';

export function usagePath(datadir: string, day: string): string {
  return join(datadir, USAGE_DIR, `${day}.log`);
}

const LINE = /^([0-9a-f]{64}) (\d{1,15})(?: ([a-z0-9-]{1,32}))?$/;

/** Sums the journal of one day per key hash. Partial (unterminated) trailing lines are ignored. */
export function readUsage(datadir: string, day: string): Map<string, number> {
  return sumNetworks(readUsageByNetwork(datadir, day));
}

function sumNetworks(byNetwork: Map<string, Map<string, number>>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [hash, nets] of byNetwork) {
    let sum = 0;
    for (const credits of nets.values()) sum += credits;
    out.set(hash, sum);
  }
  return out;
}

/** The journal of one day per key hash and network (NO_NETWORK for lines without one). */
export function readUsageByNetwork(datadir: string, day: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  let fd: number;
  try {
    fd = openSync(usagePath(datadir, day), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  try {
    addFrom(fd, 0, out);
  } finally {
    closeSync(fd);
  }
  return out;
}

/** Bytes read at a time: a journal of any size is summed in bounded memory. */
const READ_CHUNK = 4 << 20;

/**
 * Adds the whole lines of `fd` from byte `from` to `byNetwork`, reading in chunks; returns the
 * offset after the last whole line (after it: nothing, a line still being written, or one a crash
 * cut short).
 */
function addFrom(fd: number, from: number, byNetwork: Map<string, Map<string, number>>): number {
  const buf = Buffer.allocUnsafe(READ_CHUNK);
  let at = from;
  for (;;) {
    const n = readSync(fd, buf, 0, buf.length, at);
    if (n === 0) return at;
    const whole = buf.lastIndexOf(0x0a, n - 1) + 1;
    if (whole === 0) {
      if (n < buf.length) return at; // the rest is one unfinished line
      throw new Error(`usage journal: a line of more than ${READ_CHUNK} bytes at offset ${at}`);
    }
    addLines(byNetwork, buf.toString('latin1', 0, whole));
    at += whole;
  }
}

/** Adds journal lines (whole ones, each ending in a newline) to `byNetwork`. */
function addLines(byNetwork: Map<string, Map<string, number>>, text: string): void {
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (m) addTo(byNetwork, m[1] as string, m[3] ?? NO_NETWORK, Number(m[2]));
  }
}

/** The journal lines that give exactly `byNetwork`: one per key and network. */
function summaryLines(byNetwork: Map<string, Map<string, number>>): string {
  const lines: string[] = [];
  for (const [hash, nets] of byNetwork) {
    for (const [network, credits] of nets)
      lines.push(network === NO_NETWORK ? `${hash} ${credits}\n` : `${hash} ${credits} ${network}\n`);
  }
  return lines.join('');
}

/** The smallest journal a compaction rewrites (and the default compaction size). */
export const JOURNAL_COMPACT_MIN = 8 << 20;
/** Appended bytes between two checks of the journal's size (one fstat; at most an eighth of the compaction size). */
const CHECK_EVERY = 64 << 10;

function addTo(byNetwork: Map<string, Map<string, number>>, hash: string, network: string, credits: number): void {
  let nets = byNetwork.get(hash);
  if (nets === undefined) byNetwork.set(hash, (nets = new Map()));
  const v = (nets.get(network) ?? 0) + credits;
  if (v === 0) nets.delete(network);
  else nets.set(network, v);
}

/** Removes compaction temps another process left (a crash mid-compaction); this process's are its threads'. */
function removeStaleTemps(dir: string): void {
  for (const name of readdirSync(dir)) {
    const m = /^\d{4}-\d{2}-\d{2}\.log\.(\d+)\.[0-9a-f]{8}\.tmp$/.exec(name);
    if (m && Number(m[1]) !== process.pid) {
      try {
        unlinkSync(join(dir, name));
      } catch {
        // gone already
      }
    }
  }
}

interface Pending {
  lines: Map<string, { dayNo: number; entries: Map<string, number> }>; // day -> "hash[ network]" -> credits
  /** Settles when this turn's charges are written (or failed to be): one promise for all of them. */
  written: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface EmbeddedToken {
  day: string;
  dayNo: number;
  perSecond: number;
}

/** The pending-line key of a charge: the hash, and the network after a space when there is one. */
const entryOf = (hash: string, network: string | undefined): string =>
  network === undefined ? hash : `${hash} ${network}`;

export class EmbeddedLedger implements CreditLedger {
  private day: string;
  /** The UTC day number of `day` (what the tally is asked with). */
  private dayNo: number;
  private readonly tally: Tally;
  /**
   * Today's journaled credits per key and network (Usage.byNetwork), read from the day's file,
   * the part added since the last read: every thread sharing a tally journals there, and a
   * charge is in it once it is durable.
   */
  private committedByNetwork = new Map<string, Map<string, number>>();
  /**
   * Where readTail stopped: in which day's file, which file (the journal generation and the inode:
   * a compaction replaces the file, and a later one may reuse a freed inode number), how far.
   */
  private tail: { day: string; gen: number; ino: number; offset: number } | undefined;
  private fd: number | undefined;
  private fdDay = '';
  /** The journal generation `fd` was opened in (JournalSync: a compaction replaced the file since when older). */
  private fdGen = 0;
  /** Bytes this ledger appended since it last looked at the journal's size. */
  private sinceCheck = 0;
  /** This thread does not try to compact below this size again (after a failed compaction). */
  private retryAt = 0;
  private readonly compactMin: number;
  private pending: Pending | undefined;
  private closed = false;
  /** [dayStart, dayEnd): the UTC day `day` in epoch ms. */
  private dayStart = 0;
  private dayEnd = 0;

  constructor(
    private readonly datadir: string,
    private readonly now: () => number = Date.now,
    /** Where the counts live: this instance's (default), or a SharedTally of `serve --threads`. */
    tally?: Tally,
    options: { journalCompactMin?: number } = {},
  ) {
    mkdirSync(join(datadir, USAGE_DIR), { recursive: true });
    removeStaleTemps(join(datadir, USAGE_DIR));
    this.tally = tally ?? new LocalTally();
    this.compactMin = options.journalCompactMin ?? JOURNAL_COMPACT_MIN;
    const t = this.now();
    this.day = utcDay(t);
    this.setDay(t);
    this.dayNo = this.dayStart / 86_400_000;
    this.enterDay();
  }

  /** Puts the tally on this.day, reading the day's journal if the tally moves. */
  private enterDay(): void {
    this.tally.enter(this.dayNo, () => readUsage(this.datadir, this.day));
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
      this.dayNo = this.dayStart / 86_400_000;
      this.enterDay();
    }
  }

  private setDay(now: number): void {
    this.dayEnd = nextUtcMidnight(now).getTime();
    this.dayStart = this.dayEnd - 86_400_000;
  }

  /** Credits used today (journaled plus in flight). */
  used(hash: string): number {
    this.roll();
    return this.tally.used(this.dayNo, hash);
  }

  private resetsAt(): string {
    return new Date(this.dayEnd).toISOString();
  }

  /** The synchronous check-and-take behind debit(); `network` only labels the charge. */
  debitSync(hash: string, cost: number, limits: Limits, network?: string): DebitResult {
    this.roll();
    let outcome = this.tally.reserve(this.dayNo, hash, cost, limits.daily, limits.perSecond);
    if (outcome === 'moved') {
      // Another thread moved the shared tally to another day (its clock crossed midnight first,
      // or this one was set back): read the clock again and put the tally on its day.
      this.dayStart = this.dayEnd = 0;
      this.roll();
      this.enterDay();
      outcome = this.tally.reserve(this.dayNo, hash, cost, limits.daily, limits.perSecond);
      if (outcome === 'moved') throw new LedgerUnavailableError('credit ledger: the threads disagree on the UTC day');
    }
    if (outcome !== 'ok') return { ok: false, reason: outcome, resetsAt: this.resetsAt() };
    const token: EmbeddedToken = { day: this.day, dayNo: this.dayNo, perSecond: limits.perSecond };
    return { ok: true, debit: network === undefined ? { hash, cost, token } : { hash, cost, token, network } };
  }

  debit(hash: string, cost: number, limits: Limits, network?: string): Promise<DebitResult> {
    try {
      return Promise.resolve(this.debitSync(hash, cost, limits, network));
    } catch (err) {
      return Promise.reject(err instanceof TallyFullError ? new LedgerUnavailableError(err.message) : err);
    }
  }

  settle(debit: Debit, finalCost: number): Promise<void> {
    const { day, dayNo, perSecond } = debit.token as EmbeddedToken;
    this.roll();
    this.tally.settle(dayNo, debit.hash, debit.cost, finalCost, perSecond);
    if (finalCost <= 0) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('credit ledger is closed'));
    let p = this.pending;
    if (!p) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const written = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      written.catch(() => {}); // every settler awaits it; this only keeps a failure from being "unhandled"
      p = { lines: new Map(), written, resolve, reject };
      this.pending = p;
      setImmediate(() => this.flush());
    }
    let forDay = p.lines.get(day);
    if (!forDay) p.lines.set(day, (forDay = { dayNo, entries: new Map() }));
    const entry = entryOf(debit.hash, debit.network);
    forDay.entries.set(entry, (forDay.entries.get(entry) ?? 0) + finalCost);
    return p.written;
  }

  async usage(hash: string): Promise<Usage> {
    const used = this.used(hash);
    this.readTail();
    const byNetwork = Object.fromEntries(this.committedByNetwork.get(hash) ?? []);
    return { used, resetsAt: this.resetsAt(), byNetwork };
  }

  /**
   * Adds the lines journaled since the last read of today's file (every thread's). A compacted
   * file (another inode) holds the same sums in other lines: it is read again from its start.
   */
  private readTail(): void {
    // The generation before the open: a compaction in between makes the next read start over.
    const gen = this.tally.journal.generation();
    let fd: number;
    try {
      fd = openSync(usagePath(this.datadir, this.day), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      if (this.tail?.day !== this.day) {
        this.tail = undefined; // nothing journaled today yet
        this.committedByNetwork = new Map();
      }
      return;
    }
    try {
      const st = fstatSync(fd);
      if (this.tail?.day !== this.day || this.tail.gen !== gen || this.tail.ino !== st.ino) {
        this.tail = { day: this.day, gen, ino: st.ino, offset: 0 };
        this.committedByNetwork = new Map();
      }
      if (st.size > this.tail.offset) this.tail.offset = addFrom(fd, this.tail.offset, this.committedByNetwork);
    } finally {
      closeSync(fd);
    }
  }

  /** The journal of `day`, open for appending (call with the journal lock held). */
  private fdFor(day: string, gen: number): number {
    if (this.fd !== undefined && this.fdDay === day && this.fdGen === gen) return this.fd;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    // 'a+': O_APPEND, so the threads sharing a tally each append whole lines with one write.
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
    this.fdGen = gen;
    return fd;
  }

  /** Writes every charge of this turn (one write per day touched), then releases the answers. */
  flush(): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    const journal = this.tally.journal;
    let compact: string | undefined;
    try {
      for (const [day, { entries }] of p.lines) {
        let text = '';
        for (const [entry, credits] of entries) {
          // "<hash> <credits>" or "<hash> <credits> <network>"
          text +=
            entry.length === 64 ? `${entry} ${credits}\n` : `${entry.slice(0, 64)} ${credits}${entry.slice(64)}\n`;
        }
        // Under the journal lock: never into a file a compaction has just replaced.
        const size = journal.locked(() => {
          const fd = this.fdFor(day, journal.generation());
          writeSync(fd, text);
          this.sinceCheck += text.length;
          if (this.sinceCheck < Math.min(CHECK_EVERY, this.compactMin >> 3) || day !== this.day) return 0;
          this.sinceCheck = 0;
          return fstatSync(fd).size;
        });
        if (size >= Math.max(this.retryAt, journal.compactAt() || this.compactMin)) compact = day;
      }
    } catch (err) {
      // Not journaled, so not charged: undo the in-memory charges and fail those calls.
      for (const { dayNo, entries } of p.lines.values()) {
        for (const [entry, credits] of entries) this.tally.uncharge(dayNo, entry.slice(0, 64), credits);
      }
      p.reject(err);
      return;
    }
    p.resolve();
    if (compact !== undefined) {
      const day = compact;
      setImmediate(() => this.compactJournal(day));
    }
  }

  /**
   * Rewrites the journal of `day` as one line per key and network (the same sums), keeping the
   * lines appended meanwhile; see the top of this file. Returns false when nothing was done
   * (another thread is compacting, or the rewrite failed: the journal stays as it was, and this
   * thread tries again once the file has doubled).
   */
  compactJournal(day: string = this.day): boolean {
    const journal = this.tally.journal;
    if (this.closed || !journal.claim()) return false;
    const path = usagePath(this.datadir, day);
    const tmp = tempPathFor(path);
    let out: number | undefined;
    let renamed = false;
    let size = 0;
    try {
      // The bulk outside the lock: every append meanwhile goes to the old file, after `upTo`.
      const gen = journal.generation();
      const sums = new Map<string, Map<string, number>>();
      let upTo: number;
      const inFd = openSync(path, 'r');
      try {
        upTo = addFrom(inFd, 0, sums);
      } finally {
        closeSync(inFd);
      }
      out = openSync(tmp, 'w', 0o600);
      writeSync(out, summaryLines(sums));
      const o = out;
      renamed = journal.locked(() => {
        if (journal.generation() !== gen) return false; // cannot happen while claimed; never swap a newer file
        // The lines appended since the read (whole ones: every append is, under this lock).
        const inFd2 = openSync(path, 'r');
        try {
          const rest = fstatSync(inFd2).size - upTo;
          if (rest > 0) {
            const buf = Buffer.allocUnsafe(rest);
            let got = 0;
            while (got < rest) {
              const n = readSync(inFd2, buf, got, rest - got, upTo + got);
              if (n === 0) break;
              got += n;
            }
            writeSync(o, buf, 0, got);
          }
        } finally {
          closeSync(inFd2);
        }
        fsyncSync(o);
        size = fstatSync(o).size;
        renameSync(tmp, path);
        journal.bump();
        return true;
      });
      if (renamed) {
        syncDir(join(this.datadir, USAGE_DIR));
        journal.setCompactAt(Math.max(this.compactMin, 4 * size));
      }
    } catch {
      // Disk full, a permission: the journal is untouched and still the truth.
      renamed = false;
    } finally {
      if (out !== undefined) closeSync(out);
      if (!renamed) {
        try {
          unlinkSync(tmp);
        } catch {
          // not created
        }
        this.retryAt = 2 * Math.max(this.retryAt, journal.compactAt() || this.compactMin);
      }
      journal.unclaim();
    }
    return renamed;
  }

  async close(): Promise<void> {
    this.flush();
    this.closed = true;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
