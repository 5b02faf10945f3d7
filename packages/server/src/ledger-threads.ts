// The credit ledger of `serve --threads N`: one authoritative ledger on the main thread, reached
// from every app thread through an adapter with the same reserve / release / commit semantics as
// CreditLedger (ledger.ts), so that keys and credits are exact across threads.
//
// - Balances live in a SharedArrayBuffer: per key, today's used credits (committed plus
//   reserved), one BigInt64 per key found by open addressing on the first 64 bits of the key's
//   sha256. reserve() is a compare-and-swap loop on that counter (check and add in one atomic
//   step, synchronous like CreditLedger.reserve), so 150 concurrent calls against a balance of
//   100 calls admit exactly 100 whichever threads they arrive on; release() subtracts atomically.
// - The journal has one writer: commit() posts the charge to the main thread, whose CreditLedger
//   appends it (one write per event-loop turn for every thread's charges) and answers; the app
//   thread releases the answer it pays for only then, as with one thread. A failed write gives
//   the credits back.
// - At 00:00 UTC the first thread to notice zeroes the counters (the new day's journal is empty).
//   Calls reserved in the same instant on other threads may be counted on either day.
import { MessageChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { CreditLedger, nextUtcMidnight, readUsage, utcDay } from './ledger.js';
import type { LedgerApi, Reservation } from './ledger.js';

/** Keys the shared table holds (open addressing: a power of two, kept under ~70% full by the key file's size in practice). */
export const SHARED_LEDGER_SLOTS = 1 << 16;

const DAY_MS = 86_400_000;
const dayNumber = (ms: number): number => Math.floor(ms / DAY_MS);

interface CommitMsg {
  id: number;
  day: string;
  hash: string;
  cost: number;
}

interface CommitReply {
  id: number;
  ok: boolean;
}

/** Views of the shared buffer: header [day number], tags[slots], used[slots]. */
class SharedBalances {
  readonly header: Int32Array;
  readonly tags: BigInt64Array;
  readonly used: BigInt64Array;
  private readonly mask: number;
  private readonly slots = new Map<string, number>();

  constructor(buffer: SharedArrayBuffer) {
    const n = (buffer.byteLength - 8) / 16;
    if (!Number.isInteger(n) || n < 1 || (n & (n - 1)) !== 0) throw new RangeError('shared credit ledger: bad buffer size');
    this.header = new Int32Array(buffer, 0, 2);
    this.tags = new BigInt64Array(buffer, 8, n);
    this.used = new BigInt64Array(buffer, 8 + 8 * n, n);
    this.mask = n - 1;
  }

  static allocate(slots: number): SharedArrayBuffer {
    return new SharedArrayBuffer(8 + 16 * slots);
  }

  /** The slot of a key hash (64 hex digits), claimed on first use by any thread. */
  slot(hash: string): number {
    const known = this.slots.get(hash);
    if (known !== undefined) return known;
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new RangeError('shared credit ledger: not a key hash');
    let tag = BigInt.asIntN(64, BigInt(`0x${hash.slice(0, 16)}`));
    if (tag === 0n) tag = 1n; // 0 marks a free slot
    let at = Number(BigInt.asUintN(64, tag) & BigInt(this.mask));
    for (let probes = 0; probes <= this.mask; probes++, at = (at + 1) & this.mask) {
      const t = Atomics.load(this.tags, at);
      if (t === 0n) {
        const prev = Atomics.compareExchange(this.tags, at, 0n, tag);
        if (prev !== 0n && prev !== tag) continue; // another key took it just now
      } else if (t !== tag) continue;
      this.slots.set(hash, at);
      return at;
    }
    throw new Error(`shared credit ledger: more than ${this.mask + 1} keys`);
  }

  /** Zeroes the counters when `now` is on a later UTC day than they count (first thread wins). */
  roll(now: number): void {
    const d = dayNumber(now);
    const cur = Atomics.load(this.header, 0);
    if (cur === d) return;
    if (Atomics.compareExchange(this.header, 0, cur, d) === cur) {
      for (let i = 0; i < this.used.length; i++) Atomics.store(this.used, i, 0n);
    }
  }
}

/** What an app thread needs to build its ThreadCreditLedger (structured-cloneable; transfer `port`). */
export interface SharedLedgerLink {
  buffer: SharedArrayBuffer;
  port: MessagePort;
}

/**
 * The main thread's side: today's usage from the journal into the shared balances, and the one
 * CreditLedger that journals every thread's charges.
 */
export class SharedLedgerHost {
  readonly buffer: SharedArrayBuffer;
  private readonly ledger: CreditLedger;
  private readonly ports: MessagePort[] = [];

  constructor(datadir: string, now: () => number = Date.now, slots = SHARED_LEDGER_SLOTS) {
    this.ledger = new CreditLedger(datadir, now);
    this.buffer = SharedBalances.allocate(slots);
    const balances = new SharedBalances(this.buffer);
    const t = now();
    Atomics.store(balances.header, 0, dayNumber(t));
    for (const [hash, credits] of readUsage(datadir, utcDay(t))) {
      if (/^[0-9a-f]{64}$/.test(hash)) Atomics.store(balances.used, balances.slot(hash), BigInt(credits));
    }
  }

  /** A link for one app thread (post it with `transferList: [link.port]`). */
  link(): SharedLedgerLink {
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (m: CommitMsg) => {
      this.ledger.commit({ day: m.day, hash: m.hash, cost: m.cost }).then(
        () => port1.postMessage({ id: m.id, ok: true } satisfies CommitReply),
        () => port1.postMessage({ id: m.id, ok: false } satisfies CommitReply),
      );
    });
    this.ports.push(port1);
    return { buffer: this.buffer, port: port2 };
  }

  /** After every app thread stopped: writes out what is pending and closes the journal. */
  close(): void {
    for (const p of this.ports) p.close();
    this.ledger.close();
  }
}

/** An app thread's ledger: the CreditLedger interface over the shared balances and the host's journal. */
export class ThreadCreditLedger implements LedgerApi {
  private readonly balances: SharedBalances;
  private readonly pending = new Map<number, { resolve: () => void; reject: (err: Error) => void; r: Reservation }>();
  private nextId = 1;
  private day = '';
  private dayNo = -1;
  private closed = false;

  constructor(
    link: SharedLedgerLink,
    private readonly now: () => number = Date.now,
  ) {
    this.balances = new SharedBalances(link.buffer);
    this.port = link.port;
    this.port.on('message', (m: CommitReply) => {
      const p = this.pending.get(m.id);
      if (p === undefined) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve();
      else {
        // Not journaled, so not charged.
        if (p.r.day === this.day) Atomics.sub(this.balances.used, this.balances.slot(p.r.hash), BigInt(p.r.cost));
        p.reject(new Error('credit journal write failed'));
      }
      if (this.closed && this.pending.size === 0) this.port.close();
    });
  }

  private readonly port: MessagePort;

  private today(): string {
    const t = this.now();
    const d = dayNumber(t);
    if (d !== this.dayNo) {
      this.balances.roll(t);
      this.dayNo = d;
      this.day = utcDay(t);
    } else if (Atomics.load(this.balances.header, 0) !== d) this.balances.roll(t);
    return this.day;
  }

  used(hash: string): number {
    this.today();
    return Number(Atomics.load(this.balances.used, this.balances.slot(hash)));
  }

  resetsAt(): Date {
    return nextUtcMidnight(this.now());
  }

  reserve(hash: string, cost: number, limit: number): Reservation | undefined {
    const day = this.today();
    const i = this.balances.slot(hash);
    const c = BigInt(cost);
    const used = this.balances.used;
    for (;;) {
      const cur = Atomics.load(used, i);
      if (Number(cur) + cost > limit) return undefined;
      if (Atomics.compareExchange(used, i, cur, cur + c) === cur) return { day, hash, cost };
    }
  }

  release(r: Reservation): void {
    if (r.day !== this.today()) return;
    Atomics.sub(this.balances.used, this.balances.slot(r.hash), BigInt(r.cost));
  }

  commit(r: Reservation): Promise<void> {
    if (this.closed) return Promise.reject(new Error('credit ledger is closed'));
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, r });
      this.port.postMessage({ id, day: r.day, hash: r.hash, cost: r.cost } satisfies CommitMsg);
    });
  }

  close(): void {
    this.closed = true;
    if (this.pending.size === 0) this.port.close();
  }
}
