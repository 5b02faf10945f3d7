// The Redis engine of the usage record (with `--ledger redis://`): every replica adds its calls
// to the same counters, so the dashboard of any replica shows the whole key's usage.
//
// Layout (hash-tagged per key record id, Redis Cluster friendly):
//   cn:{u:<id>}:d:<YYYY-MM-DD>   HASH "<method>|<counter>" -> n     expires after USAGE_DAYS+1 days
//   cn:{u:<id>}:m:<minute ms>    HASH "<counter>" -> n              expires after 17 minutes
// Counters are calls, credits, e4xx, e5xx, erpc. Calls are buffered in memory and added with
// HINCRBY once a second (one round trip per key and second, not per call); while Redis is away
// the buffer is kept (bounded: at most MAX_PENDING_FIELDS counters, beyond which new ones are
// dropped and reported) and added when it returns. This is statistics: the credit ledger, not
// this record, enforces balances. Days and minutes follow this replica's clock.
import { utcDay } from '../ledger/api.js';
import { COUNTER_FIELDS, MINUTE_BUCKETS, USAGE_DAYS, add, dayUsage, lastDays, minuteSeries, zero } from './record.js';
import type { Counters, DayUsage, MinuteUsage, UsageEvent, UsageRecord } from './record.js';

/** The few commands used, as @redis/client exposes them. */
export interface UsageRedisClient {
  hIncrBy(key: string, field: string, by: number): Promise<unknown>;
  expire(key: string, seconds: number): Promise<unknown>;
  hGetAll(key: string): Promise<Record<string, string> | unknown>;
}

const MAX_PENDING_FIELDS = 200_000;
const DAY_TTL_S = (USAGE_DAYS + 1) * 86_400;
const MINUTE_TTL_S = (MINUTE_BUCKETS + 2) * 60;

export const usageDayKey = (id: string, day: string): string => `cn:{u:${id}}:d:${day}`;
export const usageMinuteKey = (id: string, startMs: number): string => `cn:{u:${id}}:m:${startMs}`;

export class RedisUsage implements UsageRecord {
  /** redis key -> field -> delta not yet added. */
  private pending = new Map<string, Map<string, number>>();
  private pendingFields = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private dropped = 0;

  constructor(
    private readonly client: UsageRedisClient,
    private readonly log: (line: string) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  start(): this {
    this.timer = setInterval(() => void this.flush(), 1000);
    this.timer.unref();
    return this;
  }

  private add(key: string, field: string, by: number): void {
    if (by === 0) return;
    let m = this.pending.get(key);
    if (!m) this.pending.set(key, (m = new Map()));
    const cur = m.get(field);
    if (cur === undefined) {
      if (this.pendingFields >= MAX_PENDING_FIELDS) {
        this.dropped++;
        return;
      }
      this.pendingFields++;
    }
    m.set(field, (cur ?? 0) + by);
  }

  record(e: UsageEvent): void {
    const t = this.now();
    const c: Counters = zero();
    add(c, e);
    const day = usageDayKey(e.key, utcDay(t));
    const minute = usageMinuteKey(e.key, t - (t % 60_000));
    const method = e.method.replace(/\|/g, '_').slice(0, 100);
    for (const f of COUNTER_FIELDS) {
      this.add(day, `${method}|${f}`, c[f]);
      this.add(minute, f, c[f]);
    }
  }

  /**
   * Adds the buffered counters to Redis; on failure they stay buffered for the next try. A flush
   * asked for while one runs waits for it and then flushes again (what was recorded meanwhile).
   */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    const p: Promise<void> = this.write().finally(() => {
      if (this.flushing === p) this.flushing = undefined;
    });
    this.flushing = p;
    return p;
  }

  private async write(): Promise<void> {
    if (this.dropped > 0) {
      this.log(`usage record: Redis away too long, ${this.dropped} counter updates dropped`);
      this.dropped = 0;
    }
    const batch = this.pending;
    if (batch.size === 0) return;
    this.pending = new Map();
    this.pendingFields = 0;
    const ops: Promise<unknown>[] = [];
    for (const [key, fields] of batch) {
      for (const [field, by] of fields) ops.push(this.client.hIncrBy(key, field, by));
      ops.push(this.client.expire(key, key.includes('}:m:') ? MINUTE_TTL_S : DAY_TTL_S));
    }
    const results = await Promise.allSettled(ops);
    if (results.some((r) => r.status === 'rejected')) {
      // A failed HINCRBY did not apply: put those counters back for the next flush.
      let i = 0;
      for (const [key, fields] of batch) {
        for (const [field, by] of fields) {
          if (results[i]?.status === 'rejected') this.add(key, field, by);
          i++;
        }
        i++; // the EXPIRE
      }
    }
  }

  private async read(key: string): Promise<Record<string, string>> {
    const r = await this.client.hGetAll(key);
    return typeof r === 'object' && r !== null ? (r as Record<string, string>) : {};
  }

  async days(key: string, n = USAGE_DAYS): Promise<DayUsage[]> {
    await this.flush();
    const names = lastDays(this.now(), Math.min(Math.max(1, n), USAGE_DAYS));
    const hashes = await Promise.all(names.map((d) => this.read(usageDayKey(key, d))));
    return names.map((day, i) => {
      const methods = new Map<string, Counters>();
      for (const [field, value] of Object.entries(hashes[i] ?? {})) {
        const bar = field.lastIndexOf('|');
        const method = field.slice(0, bar);
        const counter = field.slice(bar + 1) as keyof Counters;
        if (!(COUNTER_FIELDS as readonly string[]).includes(counter)) continue;
        let c = methods.get(method);
        if (!c) methods.set(method, (c = zero()));
        c[counter] = Number(value) || 0;
      }
      return dayUsage(day, methods);
    });
  }

  async minutes(key: string): Promise<MinuteUsage[]> {
    await this.flush();
    const t = this.now();
    const current = t - (t % 60_000);
    const starts = Array.from({ length: MINUTE_BUCKETS + 1 }, (_, i) => current - (MINUTE_BUCKETS - i) * 60_000);
    const hashes = await Promise.all(starts.map((s) => this.read(usageMinuteKey(key, s))));
    const list = starts.map((start, i) => {
      const c = zero();
      for (const f of COUNTER_FIELDS) c[f] = Number(hashes[i]?.[f]) || 0;
      return { start, c };
    });
    return minuteSeries(t, list);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    try {
      await this.flush();
    } catch {
      // Redis away at shutdown: the last second of statistics is lost (never credits)
    }
  }
}
