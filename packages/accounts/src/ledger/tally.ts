// The embedded engine's in-memory counts (per key: credits journaled today, credits reserved by
// calls in flight, the throughput bucket) behind one interface, in two places:
//   - LocalTally: plain Maps, for one EmbeddedLedger (one thread: `serve --threads 1`, the tests,
//     the `keys` CLI);
//   - SharedTally: a SharedArrayBuffer that every app thread of `serve --threads N` maps, so each
//     thread checks and takes credits itself, atomically with the others (a futex-style lock on
//     the buffer, Atomics.wait/notify), instead of asking one ledger thread over a MessagePort.
//     That hop (a structured clone, a wake-up and an answer for each debit and each settle) cost
//     more CPU than serving the call, and one ledger thread would be what limits 16 cores.
// The journal stays the truth (embedded.ts): each thread appends its own lines to the day's
// file (O_APPEND, one write per turn: whole lines, never interleaved), and the tally of a day is
// loaded from that file when a tally enters the day.
//
// Days are UTC day numbers (ms / 86,400,000). Every call names the day its caller is on; a tally
// that moved to another day ignores calls of the old one (a debit is then retried on the new day,
// a settle of yesterday's debit no longer touches today's counts), as LocalTally did with Maps.
export type ReserveOutcome = 'ok' | 'daily' | 'throughput' | 'moved';

export interface Tally {
  /** Makes `day` the current day unless it already is; `load` gives that day's journaled credits per key. */
  enter(day: number, load: () => Map<string, number>): void;
  /** Credits of `hash` on `day`: journaled plus reserved (0 when the tally is on another day). */
  used(day: number, hash: string): number;
  /**
   * Checks the daily limit and the throughput bucket and reserves `cost`, in one atomic step.
   * 'moved': the tally is on another day than `day` (nothing taken; enter the new day and retry).
   */
  reserve(day: number, hash: string, cost: number, daily: number, perSecond: number): ReserveOutcome;
  /** A debit of `day` settled: its reservation ends, `finalCost` is charged, unused tokens return. */
  settle(day: number, hash: string, cost: number, finalCost: number, perSecond: number): void;
  /** Journaled credits that could not be written after all: taken back. */
  uncharge(day: number, hash: string, credits: number): void;
  /** The order between the journal's writers and its compaction (shared like the counts). */
  readonly journal: JournalSync;
}

/**
 * Every writer of the day's journal (one EmbeddedLedger per app thread) appends under one lock,
 * and a compaction swaps the file (embedded.ts) under the same lock and bumps a generation:
 * a writer whose file is of an older generation reopens the path before its next append, so no
 * line is ever appended to a file that was already replaced.
 */
export interface JournalSync {
  /** Runs `fn` holding the journal lock (not re-entrant; short: an append, or a compaction's swap). */
  locked<T>(fn: () => T): T;
  /** The journal file's generation, bumped by every compaction. */
  generation(): number;
  /** Bumps the generation (with the lock held, right after the swap). */
  bump(): void;
  /** Takes the right to compact: one compaction at a time; false when another thread has it. */
  claim(): boolean;
  unclaim(): void;
  /** The journal size (bytes) at which a writer starts a compaction; 0 until a compaction set it. */
  compactAt(): number;
  setCompactAt(bytes: number): void;
}

class LocalJournalSync implements JournalSync {
  private gen = 0;
  private claimed = false;
  private at = 0;
  locked<T>(fn: () => T): T {
    return fn();
  }
  generation(): number {
    return this.gen;
  }
  bump(): void {
    this.gen++;
  }
  claim(): boolean {
    if (this.claimed) return false;
    this.claimed = true;
    return true;
  }
  unclaim(): void {
    this.claimed = false;
  }
  compactAt(): number {
    return this.at;
  }
  setCompactAt(bytes: number): void {
    this.at = bytes;
  }
}

/**
 * Token bucket per key: capacity = one second of credits, refilled continuously at the rate.
 * Shared by the embedded engine and the Redis engine's fail-open mode.
 */
/** A token bucket's tokens at `t`: at most one second of credits, refilled continuously at the rate. */
export function bucketTokens(tokens: number, at: number, t: number, perSecond: number): number {
  return Math.min(perSecond, tokens + (Math.max(0, t - at) / 1000) * perSecond);
}

export class LocalBuckets {
  private buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Takes `cost` tokens when available; false otherwise (nothing taken). */
  take(hash: string, cost: number, perSecond: number): boolean {
    if (perSecond <= 0 || cost === 0) return true;
    const t = this.now();
    let b = this.buckets.get(hash);
    if (!b) {
      if (this.buckets.size >= 100_000) this.buckets.clear(); // bounded: a full bucket is the default anyway
      b = { tokens: perSecond, at: t };
      this.buckets.set(hash, b);
    }
    b.tokens = bucketTokens(b.tokens, b.at, t, perSecond);
    b.at = t;
    if (b.tokens < cost) return false;
    b.tokens -= cost;
    return true;
  }

  give(hash: string, credits: number, perSecond: number): void {
    const b = this.buckets.get(hash);
    if (b && perSecond > 0) b.tokens = Math.min(perSecond, b.tokens + credits);
  }
}

export class LocalTally implements Tally {
  readonly journal: JournalSync = new LocalJournalSync();
  private day = Number.NaN;
  private committed = new Map<string, number>();
  private reserved = new Map<string, number>();
  private readonly buckets = new LocalBuckets();

  enter(day: number, load: () => Map<string, number>): void {
    if (day === this.day) return;
    this.committed = load();
    this.reserved = new Map();
    this.day = day;
  }

  used(day: number, hash: string): number {
    if (day !== this.day) return 0;
    return (this.committed.get(hash) ?? 0) + (this.reserved.get(hash) ?? 0);
  }

  reserve(day: number, hash: string, cost: number, daily: number, perSecond: number): ReserveOutcome {
    if (day !== this.day) return 'moved';
    const reserved = this.reserved.get(hash) ?? 0;
    if ((this.committed.get(hash) ?? 0) + reserved + cost > daily) return 'daily';
    if (!this.buckets.take(hash, cost, perSecond)) return 'throughput';
    this.reserved.set(hash, reserved + cost);
    return 'ok';
  }

  settle(day: number, hash: string, cost: number, finalCost: number, perSecond: number): void {
    if (finalCost < cost) this.buckets.give(hash, cost - finalCost, perSecond);
    if (day !== this.day) return;
    const left = (this.reserved.get(hash) ?? 0) - cost;
    if (left > 0) this.reserved.set(hash, left);
    else this.reserved.delete(hash);
    if (finalCost > 0) this.committed.set(hash, (this.committed.get(hash) ?? 0) + finalCost);
  }

  uncharge(day: number, hash: string, credits: number): void {
    if (day !== this.day) return;
    this.committed.set(hash, (this.committed.get(hash) ?? 0) - credits);
  }
}

/**
 * Slots of a SharedTally by default (4 MiB of shared memory): it holds three quarters as many
 * keys per UTC day (49,152), a quarter stays free to keep probe runs short.
 */
export const SHARED_TALLY_KEYS = 65_536;

// Layout of the buffer: a header of 8 Int32 (lock, day, keys in the table, capacity; the
// journal's lock, generation, compaction claim and compaction size in KiB), then per slot a flag
// byte, then per slot the key's 32 hash bytes, then per slot 4 Float64: committed, reserved,
// bucket tokens, bucket time (ms; 0: a full bucket not yet used).
const LOCK = 0;
const DAY = 1;
const COUNT = 2;
const CAPACITY = 3;
const J_LOCK = 4;
const J_GEN = 5;
const J_CLAIM = 6;
const J_COMPACT_KIB = 7;
const HEADER_INTS = 8;
const HEADER_BYTES = HEADER_INTS * 4;
const F_COMMITTED = 0;
const F_RESERVED = 1;
const F_TOKENS = 2;
const F_AT = 3;

/** The table is full for the day: the key cannot be counted (the caller refuses the call). */
export class TallyFullError extends Error {
  constructor(capacity: number) {
    super(
      `the shared credit table holds ${capacity - (capacity >> 2)} keys a day and is full until 00:00 UTC (serve --threads 1, or a Redis ledger, has no such bound)`,
    );
    this.name = 'TallyFullError';
  }
}

/** The embedded engine's credits as every thread of `serve --threads` opens them. */
export interface SharedCredits {
  datadir: string;
  /** A sharedTallyBuffer() (posted, not copied: every thread maps the same memory). */
  tally: SharedArrayBuffer;
}

/** Allocates the shared memory of a SharedTally of `keys` slots (a power of two; 3/4 of them usable). */
export function sharedTallyBuffer(keys = SHARED_TALLY_KEYS): SharedArrayBuffer {
  if (!Number.isInteger(Math.log2(keys)) || keys < 8)
    throw new Error(`shared tally: ${keys} is not a power of two >= 8`);
  const sab = new SharedArrayBuffer(HEADER_BYTES + keys + keys * 32 + keys * 32);
  const h = new Int32Array(sab, 0, HEADER_INTS);
  h[DAY] = -1;
  h[CAPACITY] = keys;
  return sab;
}

// A futex-style mutex on h[at] (states 0 free, 1 held, 2 held with waiters): the sections it
// guards are short, so a waiter seldom sleeps.
function lockAt(h: Int32Array, at: number): void {
  let c = Atomics.compareExchange(h, at, 0, 1);
  if (c === 0) return;
  do {
    if (c === 2 || Atomics.compareExchange(h, at, 1, 2) !== 0) Atomics.wait(h, at, 2);
  } while ((c = Atomics.compareExchange(h, at, 0, 2)) !== 0);
}

function unlockAt(h: Int32Array, at: number): void {
  if (Atomics.sub(h, at, 1) !== 1) {
    Atomics.store(h, at, 0);
    Atomics.notify(h, at, 1);
  }
}

/** The journal's lock, generation, claim and size in the shared header. */
class SharedJournalSync implements JournalSync {
  constructor(private readonly h: Int32Array) {}
  locked<T>(fn: () => T): T {
    lockAt(this.h, J_LOCK);
    try {
      return fn();
    } finally {
      unlockAt(this.h, J_LOCK);
    }
  }
  generation(): number {
    return Atomics.load(this.h, J_GEN);
  }
  bump(): void {
    Atomics.add(this.h, J_GEN, 1);
  }
  claim(): boolean {
    return Atomics.compareExchange(this.h, J_CLAIM, 0, 1) === 0;
  }
  unclaim(): void {
    Atomics.store(this.h, J_CLAIM, 0);
  }
  compactAt(): number {
    return Atomics.load(this.h, J_COMPACT_KIB) * 1024;
  }
  setCompactAt(bytes: number): void {
    Atomics.store(this.h, J_COMPACT_KIB, Math.min(0x7fffffff, Math.ceil(bytes / 1024)));
  }
}

/** One thread's view of a tally shared between threads (each thread makes its own from the buffer). */
export class SharedTally implements Tally {
  readonly journal: JournalSync;
  private readonly header: Int32Array;
  private readonly used8: Uint8Array;
  private readonly hashes: Uint8Array;
  private readonly f: Float64Array;
  private readonly capacity: number;
  /** This thread's slot of each key, valid while the table is on `slotsDay`. */
  private slots = new Map<string, number>();
  private slotsDay = -1;

  constructor(
    readonly buffer: SharedArrayBuffer,
    /** Milliseconds on a clock all threads share (the bucket's refill). */
    private readonly now: () => number = () => performance.timeOrigin + performance.now(),
  ) {
    this.header = new Int32Array(buffer, 0, HEADER_INTS);
    this.journal = new SharedJournalSync(this.header);
    this.capacity = this.header[CAPACITY] as number;
    this.used8 = new Uint8Array(buffer, HEADER_BYTES, this.capacity);
    this.hashes = new Uint8Array(buffer, HEADER_BYTES + this.capacity, this.capacity * 32);
    this.f = new Float64Array(buffer, HEADER_BYTES + this.capacity * 33, this.capacity * 4);
  }

  // The counts' lock (lockAt): held for a few loads and stores.
  private lock(): void {
    lockAt(this.header, LOCK);
  }

  private unlock(): void {
    unlockAt(this.header, LOCK);
  }

  enter(day: number, load: () => Map<string, number>): void {
    if (Atomics.load(this.header, DAY) === day) return;
    // Read the journal outside the lock (a file read); a thread that entered meanwhile wins.
    const journaled = load();
    this.lock();
    try {
      if (this.header[DAY] === day) return;
      this.used8.fill(0);
      this.hashes.fill(0);
      this.f.fill(0);
      this.header[COUNT] = 0;
      this.header[DAY] = day;
      for (const [hash, credits] of journaled) {
        // A key that no longer fits stays out for the day: its calls are refused (reserve finds
        // no room for it either), never served against a count without its journaled credits.
        const s = this.find(hash, true);
        if (s >= 0) this.f[s * 4 + F_COMMITTED] = credits;
      }
    } finally {
      this.unlock();
    }
  }

  /** The slot of `hash` (lock held), -1 when absent (or, with `create`, when the table is full). */
  private find(hash: string, create: boolean): number {
    const day = this.header[DAY] as number;
    if (this.slotsDay !== day) {
      this.slots = new Map();
      this.slotsDay = day;
    }
    const known = this.slots.get(hash);
    if (known !== undefined) return known;
    const key = Buffer.from(hash, 'hex');
    const mask = this.capacity - 1;
    let s = Number.parseInt(hash.slice(0, 8), 16) & mask;
    for (let probes = 0; probes < this.capacity; probes++, s = (s + 1) & mask) {
      if (this.used8[s] === 0) {
        // Keep a quarter free: probe runs stay short, and a key never seen today (the common
        // first call of the day) finds its end quickly.
        if (!create || (this.header[COUNT] as number) >= this.capacity - (this.capacity >> 2)) return -1;
        this.used8[s] = 1;
        this.hashes.set(key, s * 32);
        this.header[COUNT] = (this.header[COUNT] as number) + 1;
        this.remember(hash, s);
        return s;
      }
      if (key.equals(this.hashes.subarray(s * 32, s * 32 + 32))) {
        this.remember(hash, s);
        return s;
      }
    }
    return -1;
  }

  private remember(hash: string, s: number): void {
    if (this.slots.size >= 100_000) this.slots.clear(); // bounded: the table is the truth
    this.slots.set(hash, s);
  }

  used(day: number, hash: string): number {
    this.lock();
    try {
      if (this.header[DAY] !== day) return 0;
      const s = this.find(hash, false);
      return s < 0 ? 0 : (this.f[s * 4 + F_COMMITTED] as number) + (this.f[s * 4 + F_RESERVED] as number);
    } finally {
      this.unlock();
    }
  }

  reserve(day: number, hash: string, cost: number, daily: number, perSecond: number): ReserveOutcome {
    const t = this.now();
    this.lock();
    try {
      if (this.header[DAY] !== day) return 'moved';
      const s = this.find(hash, true);
      if (s < 0) throw new TallyFullError(this.capacity);
      const f = this.f;
      const o = s * 4;
      const reserved = f[o + F_RESERVED] as number;
      if ((f[o + F_COMMITTED] as number) + reserved + cost > daily) return 'daily';
      if (perSecond > 0 && cost > 0) {
        // The token bucket of LocalBuckets, its state in the slot.
        const at = f[o + F_AT] as number;
        const tokens = at === 0 ? perSecond : bucketTokens(f[o + F_TOKENS] as number, at, t, perSecond);
        f[o + F_AT] = t;
        if (tokens < cost) {
          f[o + F_TOKENS] = tokens;
          return 'throughput';
        }
        f[o + F_TOKENS] = tokens - cost;
      }
      f[o + F_RESERVED] = reserved + cost;
      return 'ok';
    } finally {
      this.unlock();
    }
  }

  settle(day: number, hash: string, cost: number, finalCost: number, perSecond: number): void {
    this.lock();
    try {
      if (this.header[DAY] !== day) return;
      const s = this.find(hash, false);
      if (s < 0) return;
      const f = this.f;
      const o = s * 4;
      if (finalCost < cost && perSecond > 0 && (f[o + F_AT] as number) !== 0)
        f[o + F_TOKENS] = Math.min(perSecond, (f[o + F_TOKENS] as number) + cost - finalCost);
      f[o + F_RESERVED] = Math.max(0, (f[o + F_RESERVED] as number) - cost);
      f[o + F_COMMITTED] = (f[o + F_COMMITTED] as number) + finalCost;
    } finally {
      this.unlock();
    }
  }

  uncharge(day: number, hash: string, credits: number): void {
    this.lock();
    try {
      if (this.header[DAY] !== day) return;
      const s = this.find(hash, false);
      if (s >= 0) this.f[s * 4 + F_COMMITTED] = (this.f[s * 4 + F_COMMITTED] as number) - credits;
    } finally {
      this.unlock();
    }
  }
}
