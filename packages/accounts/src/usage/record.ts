// The per-key usage record behind the dashboard: per key, per UTC day and per method, the calls,
// credits and errors by class; plus the last 15 minutes at one-minute resolution. Written by
// the serving middleware (Gate) for every call it sees, read by the dashboard and `keys usage`.
// This is statistics, not the credit ledger: balances are enforced by CreditLedger; this record
// only explains them.
//
// Bounded: at most USAGE_DAYS days (older ones are dropped, files deleted), per day one row per
// (key, method) where methods are the rpc table's names (unknown methods never reach the
// middleware) plus '(request)' for refusals before any method is known; minutes: 16 buckets per key.
//
// Keys are identified by their record id (stable across rotations), never by the key.
import { mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@chainnode/core';
import { utcDay } from '../ledger/api.js';

export const USAGE_DAYS = 30;
export const MINUTE_BUCKETS = 15;
export const USAGE_STATS_DIR = 'usage-stats';
/** The method name recorded for a request refused before its calls were read (401, secret). */
export const REQUEST_METHOD = '(request)';

/**
 * The class of a failed call: '4xx' refused by the gateway (credits, limits, allowlists, secret,
 * revoked key), '5xx' failed on our side (-32603, store unavailable), 'rpc' a JSON-RPC error the
 * method answered (invalid params, -32000, ...).
 */
export type ErrorClass = '4xx' | '5xx' | 'rpc';

export interface Counters {
  calls: number;
  credits: number;
  e4xx: number;
  e5xx: number;
  erpc: number;
}

export interface UsageEvent {
  /** KeyRecord.id */
  key: string;
  method: string;
  /** Credits charged (0 for a failed or free call); of all `calls` together. */
  credits: number;
  error?: ErrorClass;
  /** How many calls this event stands for (default 1): a thread's identical calls of one turn, summed. */
  calls?: number;
}

export interface DayUsage extends Counters {
  day: string;
  methods: Record<string, Counters>;
}

export interface MinuteUsage extends Counters {
  /** ISO time of the minute's start. */
  minute: string;
}

/**
 * The usage record; one interface, two engines: EmbeddedUsage (files in the datadir) and
 * RedisUsage (usage/redis.ts, shared by the replicas of `--ledger redis://`). Recording is
 * synchronous and buffered (it runs for every call); reads are asynchronous.
 */
export interface UsageRecord {
  record(e: UsageEvent): void;
  /** The last `n` UTC days ending today (oldest first, zero-filled), n <= USAGE_DAYS. */
  days(key: string, n?: number): Promise<DayUsage[]>;
  /** The last MINUTE_BUCKETS whole minutes plus the current one (oldest first, zero-filled). */
  minutes(key: string): Promise<MinuteUsage[]>;
  /** Writes what is buffered. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export const COUNTER_FIELDS = ['calls', 'credits', 'e4xx', 'e5xx', 'erpc'] as const;

export function zero(): Counters {
  return { calls: 0, credits: 0, e4xx: 0, e5xx: 0, erpc: 0 };
}

export function add(c: Counters, e: UsageEvent): void {
  const n = e.calls ?? 1;
  c.calls += n;
  c.credits += e.credits;
  if (e.error === '4xx') c.e4xx += n;
  else if (e.error === '5xx') c.e5xx += n;
  else if (e.error === 'rpc') c.erpc += n;
}

function sum(into: Counters, c: Counters): void {
  into.calls += c.calls;
  into.credits += c.credits;
  into.e4xx += c.e4xx;
  into.e5xx += c.e5xx;
  into.erpc += c.erpc;
}

type DayTable = Map<string, Map<string, Counters>>; // key id -> method -> counters
interface Minute {
  start: number;
  c: Counters;
}

const DAY_FILE = /^(\d{4}-\d{2}-\d{2})\.json$/;
const MINUTES_FILE = 'minutes.json';
const MAX_METHOD_LENGTH = 100;

function isCounters(v: unknown): v is Counters {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return ['calls', 'credits', 'e4xx', 'e5xx', 'erpc'].every(
    (f) => typeof o[f] === 'number' && Number.isSafeInteger(o[f]) && (o[f] as number) >= 0,
  );
}

function parseDay(text: string): DayTable {
  const out: DayTable = new Map();
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return out;
  }
  if (typeof raw !== 'object' || raw === null) return out;
  for (const [key, methods] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof methods !== 'object' || methods === null) continue;
    const m = new Map<string, Counters>();
    for (const [name, c] of Object.entries(methods as Record<string, unknown>))
      if (isCounters(c)) m.set(name, { ...c });
    out.set(key, m);
  }
  return out;
}

function dayToJson(t: DayTable): string {
  const o: Record<string, Record<string, Counters>> = {};
  for (const [k, m] of t) o[k] = Object.fromEntries(m);
  return `${JSON.stringify(o)}\n`;
}

/** The day range [today - n + 1, today] as YYYY-MM-DD strings, oldest first. */
export function lastDays(now: number, n: number): string[] {
  const out: string[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(utcDay(now - i * 86_400_000));
  return out;
}

export function dayUsage(day: string, methods: Map<string, Counters> | undefined): DayUsage {
  const d: DayUsage = { day, ...zero(), methods: {} };
  if (methods) {
    for (const [name, c] of methods) {
      d.methods[name] = { ...c };
      sum(d, c);
    }
  }
  return d;
}

/**
 * The embedded engine: counters in memory, written at most once a second (and on close) to
 * `<datadir>/usage-stats/YYYY-MM-DD.json` (one JSON object per day, replaced atomically) and
 * `minutes.json`. A crash loses at most the last second of statistics, never credits (those are
 * the ledger's). Another process (the CLI) reads the same files.
 */
export class EmbeddedUsage implements UsageRecord {
  private readonly dir: string;
  private readonly daysMap = new Map<string, DayTable>();
  private readonly dirty = new Set<string>();
  private readonly minuteMap = new Map<string, Minute[]>();
  private minutesDirty = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    datadir: string,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {
    this.dir = join(datadir, USAGE_STATS_DIR);
    mkdirSync(this.dir, { recursive: true });
    const keep = new Set(lastDays(this.now(), USAGE_DAYS));
    for (const name of readdirSync(this.dir)) {
      const m = DAY_FILE.exec(name);
      if (!m) continue;
      const day = m[1] as string;
      if (!keep.has(day)) {
        try {
          unlinkSync(join(this.dir, name));
        } catch {
          // another process removed it
        }
        continue;
      }
      this.daysMap.set(day, parseDay(readFileSync(join(this.dir, name), 'utf8')));
    }
    for (const [key, list] of readMinutes(this.dir)) this.minuteMap.set(key, list);
  }

  /** Starts the once-a-second writer. */
  start(): this {
    this.timer = setInterval(() => this.flushSync(), 1000);
    this.timer.unref();
    return this;
  }

  record(e: UsageEvent): void {
    const t = this.now();
    const day = utcDay(t);
    let table = this.daysMap.get(day);
    if (!table) {
      table = new Map();
      this.daysMap.set(day, table);
      this.prune(t);
    }
    let methods = table.get(e.key);
    if (!methods) {
      if (table.size >= this.maxKeys) return; // bounded: keys beyond the cap are not itemised
      methods = new Map();
      table.set(e.key, methods);
    }
    const method = e.method.length > MAX_METHOD_LENGTH ? e.method.slice(0, MAX_METHOD_LENGTH) : e.method;
    let c = methods.get(method);
    if (!c) methods.set(method, (c = zero()));
    add(c, e);
    this.dirty.add(day);

    const start = t - (t % 60_000);
    let list = this.minuteMap.get(e.key);
    if (!list) this.minuteMap.set(e.key, (list = []));
    let last = list[list.length - 1];
    if (!last || last.start !== start) {
      last = { start, c: zero() };
      list.push(last);
      const oldest = start - MINUTE_BUCKETS * 60_000;
      while (list.length > 0 && (list[0] as Minute).start < oldest) list.shift();
    }
    add(last.c, e);
    this.minutesDirty = true;
  }

  private prune(now: number): void {
    const keep = new Set(lastDays(now, USAGE_DAYS));
    for (const day of [...this.daysMap.keys()]) {
      if (keep.has(day)) continue;
      this.daysMap.delete(day);
      this.dirty.delete(day);
      try {
        unlinkSync(join(this.dir, `${day}.json`));
      } catch {
        // never written, or already gone
      }
    }
  }

  async days(key: string, n = USAGE_DAYS): Promise<DayUsage[]> {
    return lastDays(this.now(), Math.min(Math.max(1, n), USAGE_DAYS)).map((day) =>
      dayUsage(day, this.daysMap.get(day)?.get(key)),
    );
  }

  async minutes(key: string): Promise<MinuteUsage[]> {
    return minuteSeries(this.now(), this.minuteMap.get(key) ?? []);
  }

  async flush(): Promise<void> {
    this.flushSync();
  }

  flushSync(): void {
    for (const day of this.dirty) {
      const table = this.daysMap.get(day);
      if (table) writeFileAtomic(join(this.dir, `${day}.json`), dayToJson(table));
    }
    this.dirty.clear();
    if (this.minutesDirty) {
      const o: Record<string, Array<{ start: number } & Counters>> = {};
      for (const [k, list] of this.minuteMap) o[k] = list.map((m) => ({ start: m.start, ...m.c }));
      writeFileAtomic(join(this.dir, MINUTES_FILE), `${JSON.stringify(o)}\n`);
      this.minutesDirty = false;
    }
  }

  async close(): Promise<void> {
    this.closeSync();
  }

  closeSync(): void {
    if (this.timer) clearInterval(this.timer);
    this.flushSync();
  }
}

function readMinutes(dir: string): Map<string, Minute[]> {
  const out = new Map<string, Minute[]>();
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, MINUTES_FILE), 'utf8'));
  } catch {
    return out;
  }
  if (typeof raw !== 'object' || raw === null) return out;
  for (const [k, list] of Object.entries(raw as Record<string, unknown>)) {
    if (!Array.isArray(list)) continue;
    const ms: Minute[] = [];
    for (const m of list.slice(-(MINUTE_BUCKETS + 1))) {
      if (isCounters(m) && typeof (m as { start?: unknown }).start === 'number') {
        const { start, calls, credits, e4xx, e5xx, erpc } = m as Counters & { start: number };
        ms.push({ start, c: { calls, credits, e4xx, e5xx, erpc } });
      }
    }
    out.set(k, ms);
  }
  return out;
}

export function minuteSeries(now: number, list: Array<{ start: number; c: Counters }>): MinuteUsage[] {
  const current = now - (now % 60_000);
  const out: MinuteUsage[] = [];
  for (let i = MINUTE_BUCKETS; i >= 0; i--) {
    const start = current - i * 60_000;
    const m = list.find((x) => x.start === start);
    out.push({ minute: new Date(start).toISOString(), ...(m ? { ...m.c } : zero()) });
  }
  return out;
}
