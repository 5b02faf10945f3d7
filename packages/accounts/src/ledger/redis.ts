// The Redis engine (`--ledger redis://host:port[/db]`): keys, daily usage and throughput state
// shared by every replica, through @redis/client with an explicit command timeout and no offline
// queue (a command issued while disconnected fails at once).
//
// Layout (Redis Cluster friendly: every key a script touches carries the API key's hash tag):
//   cn:{keys}            HASH  sha256(key) -> the KeyRecord as one JSON value
//   cn:{keys}:ver        STRING counter, INCR'd with every key change (replicas poll it)
//   cn:{<hash>}:d        HASH  UTC epoch day number -> credits used that day (older days dropped)
//   cn:{<hash>}:n:<day>  HASH  network -> credits of that day charged on that network (multi-network
//                              servers; the balance is :d, this only splits it). Expires in 3 days.
//   cn:{<hash>}:tb       HASH  token bucket {v: tokens, t: last refill, µs on Redis's clock}
//   cn:{<hash>}:q:<rid>  ZSET  sequence numbers of replica <rid>'s charges applied but not yet
//                              acknowledged (idempotency: a retried/replayed charge applies once)
//
// One Lua script (DEBIT) checks and debits both limits in one atomic step on Redis's clock
// (TIME), so replicas with skewed clocks agree on the day and the bucket. Every charge carries
// (replica id, sequence number); the script records applied sequence numbers until the replica
// reports it has their outcome (the watermark), so a command whose reply was lost can be replayed
// without charging twice.
//
// Redis unreachable or slow (a command error or timeout): with failure mode `open` (default)
// the replica keeps serving, decides locally (last known usage plus its own charges since, and an
// in-process token bucket) and journals every charge to <journalDir>/<rid>.log before the
// answer goes out; a background loop pings Redis and, once it answers, replays the journal in
// order (each entry idempotent by its sequence number), then returns to Redis. A command whose
// outcome is unknown (sent, no reply) is journaled under its own sequence number: if Redis had
// applied it, the replay finds it and skips. With mode `closed` the call is refused instead
// (LedgerUnavailableError), and only refunds/undos are journaled.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { timed } from '../redis-client.js';
import type { RedisClient } from '../redis-client.js';
import { LocalBuckets } from './tally.js';
import { LedgerUnavailableError, NO_NETWORK } from './api.js';
import type { CreditLedger, Debit, DebitResult, LedgerFailureMode, Limits, Usage } from './api.js';

const DAY_S = 86_400;

/** Reply codes of DEBIT (the script returns the numbers). */
const DebitReply = { daily: 0, throughput: 1, duplicate: 2, applied: 3, nothing: 4 } as const;

/**
 * KEYS: 1 day hash, 2 token bucket, 3 applied-sequence zset of this replica, 4 prefix of the
 *       per-network split (`:<day>` is appended in the script: same hash tag, same slot).
 * ARGV: 1 mode (c: check limits and debit; f: force, apply the delta; u: undo, apply the delta
 *       only if sequence ARGV[8] was applied), 2 seq, 3 credits (negative: a refund),
 *       4 daily limit, 5 credits/s (0: none), 6 watermark (sequences below it are acknowledged),
 *       7 epoch day ('' = today by Redis's clock), 8 undo target seq, 9 network ('' = none).
 * Returns {code, used that day, day}.
 */
export const DEBIT_LUA = `
local t = redis.call('TIME')
local sec = tonumber(t[1])
local now = sec * 1000000 + tonumber(t[2])
local mode = ARGV[1]
local seq = ARGV[2]
local cost = tonumber(ARGV[3])
local rate = tonumber(ARGV[5])
local day = ARGV[7]
if day == '' then day = tostring(math.floor(sec / 86400)) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[6])
local used = tonumber(redis.call('HGET', KEYS[1], day) or '0')
if redis.call('ZSCORE', KEYS[3], seq) then return {2, used, day} end
if mode == 'u' and not redis.call('ZSCORE', KEYS[3], ARGV[8]) then
  redis.call('ZADD', KEYS[3], seq, seq)
  redis.call('PEXPIRE', KEYS[3], 86400000)
  return {4, used, day}
end
-- The bucket: checked and debited in mode c; refunds (negative) give tokens back; replayed
-- charges (f/u, positive) leave it alone (the replica's own bucket limited them during the outage).
if rate > 0 and (mode == 'c' and cost > 0 or cost < 0) then
  local b = redis.call('HMGET', KEYS[2], 'v', 't')
  local tokens = tonumber(b[1])
  local last = tonumber(b[2])
  if tokens == nil or last == nil then tokens = rate; last = now end
  local elapsed = now - last
  if elapsed < 0 then elapsed = 0 end
  tokens = math.min(rate, tokens + elapsed * rate / 1000000)
  if mode == 'c' then
    if used + cost > tonumber(ARGV[4]) then return {0, used, day} end
    if tokens < cost then return {1, used, day} end
  end
  tokens = math.min(rate, tokens - cost)
  redis.call('HSET', KEYS[2], 'v', tostring(tokens), 't', tostring(now))
  redis.call('PEXPIRE', KEYS[2], 60000)
elseif mode == 'c' and used + cost > tonumber(ARGV[4]) then
  return {0, used, day}
end
used = used + cost
redis.call('HSET', KEYS[1], day, tostring(used))
redis.call('HDEL', KEYS[1], tostring(tonumber(day) - 2))
redis.call('EXPIRE', KEYS[1], 259200)
redis.call('ZADD', KEYS[3], seq, seq)
redis.call('PEXPIRE', KEYS[3], 86400000)
if ARGV[9] ~= nil and ARGV[9] ~= '' then
  local nk = KEYS[4] .. ':' .. day
  if redis.call('HINCRBY', nk, ARGV[9], cost) <= 0 then redis.call('HDEL', nk, ARGV[9]) end
  redis.call('EXPIRE', nk, 259200)
end
return {3, used, day}
`;
const DEBIT_SHA = createHash('sha1').update(DEBIT_LUA).digest('hex');

export const dayKey = (hash: string): string => `cn:{${hash}}:d`;
export const bucketKey = (hash: string): string => `cn:{${hash}}:tb`;
export const appliedKey = (hash: string, rid: string): string => `cn:{${hash}}:q:${rid}`;
/** Prefix of the per-network split of a key's day (`:<epoch day>` follows). */
export const networkKey = (hash: string): string => `cn:{${hash}}:n`;

/** A charge waiting in the local journal for Redis. */
interface Entry {
  /** replica id and sequence number: the identity of the charge. */
  r: string;
  s: number;
  h: string;
  /** epoch day */
  d: string;
  /** credits (negative: a refund) */
  c: number;
  /** undo: apply only if this sequence of the same replica was applied */
  u?: number;
  /** the key's credits/s at the time, for the bucket */
  p: number;
  /** the network the call went to (labels the charge; absent: none) */
  n?: string;
}

interface RedisToken {
  seq: number;
  day: string;
  perSecond: number;
}

const NETWORK_LABEL = /^[a-z0-9-]{1,32}$/;

export interface RedisLedgerOptions {
  client: RedisClient;
  failure: LedgerFailureMode;
  /** Where this replica's journal files live (one per replica id). */
  journalDir: string;
  /** Most journal entries waiting for Redis; beyond, paid calls are refused until it returns. */
  journalMax?: number;
  commandTimeoutMs?: number;
  log?: (line: string) => void;
}

export class RedisLedger implements CreditLedger {
  /** This instance's replica id (fresh per process/thread start). */
  readonly rid = randomBytes(6).toString('hex');
  private seq = 0;
  /** Issued sequence numbers in order, and the ones resolved; the watermark is the first unresolved. */
  private order: number[] = [];
  private orderHead = 0;
  private resolved = new Set<number>();
  private readonly client: RedisClient;
  private readonly failure: LedgerFailureMode;
  private readonly journalDir: string;
  private readonly journalMax: number;
  private readonly timeoutMs: number;
  private readonly log: (line: string) => void;
  /** Degraded: Redis is away, calls are decided locally and journaled. */
  private degraded = false;
  private journal: Entry[] = [];
  private journalFd: number | undefined;
  /** Journals left by earlier processes, replayed first. */
  private orphanFiles: string[] = [];
  private probe: NodeJS.Timeout | undefined;
  private replaying = false;
  private closed = false;
  /** Last known usage per key and day (from Redis replies), plus local charges since. */
  private known = new Map<string, { day: string; used: number }>();
  private readonly buckets = new LocalBuckets();
  /** Counters for tests and metrics. */
  readonly stats = { redisCalls: 0, degradedDecisions: 0, replayed: 0 };

  constructor(o: RedisLedgerOptions) {
    this.client = o.client;
    this.failure = o.failure;
    this.journalDir = o.journalDir;
    this.journalMax = o.journalMax ?? 200_000;
    this.timeoutMs = o.commandTimeoutMs ?? 1000;
    this.log = o.log ?? (() => {});
    mkdirSync(this.journalDir, { recursive: true, mode: 0o700 });
    for (const name of readdirSync(this.journalDir))
      if (name.endsWith('.log')) this.orphanFiles.push(join(this.journalDir, name));
    if (this.orphanFiles.length > 0) {
      // Charges of an earlier process that Redis may not have: replay them before anything else.
      for (const f of this.orphanFiles) this.journal.push(...readJournal(f));
      this.enterDegraded('journal of an earlier run to replay');
    }
  }

  private nextSeq(): number {
    const s = ++this.seq;
    this.order.push(s);
    return s;
  }

  private resolve(seq: number): void {
    this.resolved.add(seq);
    while (this.orderHead < this.order.length && this.resolved.has(this.order[this.orderHead] as number)) {
      this.resolved.delete(this.order[this.orderHead] as number);
      this.orderHead++;
    }
    if (this.orderHead > 4096 && this.orderHead * 2 > this.order.length) {
      this.order = this.order.slice(this.orderHead);
      this.orderHead = 0;
    }
  }

  private watermark(): number {
    return this.orderHead < this.order.length ? (this.order[this.orderHead] as number) : this.seq + 1;
  }

  private async run(rid: string, hash: string, args: string[], watermark: number): Promise<[number, number, string]> {
    this.stats.redisCalls++;
    const keys = [dayKey(hash), bucketKey(hash), appliedKey(hash, rid), networkKey(hash)];
    const tail = [String(keys.length), ...keys, ...args.slice(0, 5), String(watermark), ...args.slice(5)];
    let reply: unknown;
    try {
      reply = await timed(this.client.sendCommand(['EVALSHA', DEBIT_SHA, ...tail]), this.timeoutMs);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      reply = await timed(this.client.sendCommand(['EVAL', DEBIT_LUA, ...tail]), this.timeoutMs);
    }
    const [code, used, day] = reply as [number, number, string];
    return [Number(code), Number(used), String(day)];
  }

  private localDay(): string {
    return String(Math.floor(Date.now() / 1000 / DAY_S));
  }

  private resetsAtOf(day: string): string {
    return new Date((Number(day) + 1) * DAY_S * 1000).toISOString();
  }

  private note(hash: string, day: string, used: number): void {
    if (this.known.size > 100_000) this.known.clear();
    this.known.set(hash, { day, used });
  }

  async debit(hash: string, cost: number, limits: Limits, network?: string): Promise<DebitResult> {
    if (this.closed) throw new LedgerUnavailableError('credit ledger is closed');
    const seq = this.nextSeq();
    if (!this.degraded) {
      try {
        const [code, used, day] = await this.run(
          this.rid,
          hash,
          ['c', String(seq), String(cost), String(limits.daily), String(limits.perSecond), '', '', network ?? ''],
          this.watermark(),
        );
        this.resolve(seq);
        if (code === DebitReply.applied) {
          this.note(hash, day, used);
          return { ok: true, debit: debitOf(hash, cost, { seq, day, perSecond: limits.perSecond }, network) };
        }
        this.note(hash, day, used);
        return {
          ok: false,
          reason: code === DebitReply.throughput ? 'throughput' : 'daily',
          resetsAt: this.resetsAtOf(day),
        };
      } catch (err) {
        // No reply: the script may or may not have run. Decide locally below; the journal entry
        // carries this same sequence number, so the replay finds out which.
        this.enterDegraded((err as Error).message);
        return this.decideLocally(seq, hash, cost, limits, true, network);
      }
    }
    return this.decideLocally(seq, hash, cost, limits, false, network);
  }

  private decideLocally(
    seq: number,
    hash: string,
    cost: number,
    limits: Limits,
    ambiguous: boolean,
    network: string | undefined,
  ): DebitResult {
    this.stats.degradedDecisions++;
    const day = this.localDay();
    const n = network !== undefined ? { n: network } : {};
    const undo = (): void => {
      // The command that timed out may have debited in Redis: journal an undo of it.
      if (ambiguous)
        this.append({ r: this.rid, s: this.nextSeq(), h: hash, d: day, c: -cost, u: seq, p: limits.perSecond, ...n });
    };
    if (this.failure === 'closed' || this.journal.length >= this.journalMax) {
      undo();
      this.resolve(seq);
      throw new LedgerUnavailableError(
        this.failure === 'closed' ? 'credit ledger unavailable' : 'credit ledger unavailable (local journal full)',
      );
    }
    const k = this.known.get(hash);
    const used = k !== undefined && k.day === day ? k.used : 0;
    if (used + cost > limits.daily) {
      undo();
      this.resolve(seq);
      return { ok: false, reason: 'daily', resetsAt: this.resetsAtOf(day) };
    }
    if (!this.buckets.take(hash, cost, limits.perSecond)) {
      undo();
      this.resolve(seq);
      return { ok: false, reason: 'throughput', resetsAt: this.resetsAtOf(day) };
    }
    this.note(hash, day, used + cost);
    // Journaled now (in memory; on disk by the time settle() resolves, i.e. before the answer).
    this.append({ r: this.rid, s: seq, h: hash, d: day, c: cost, p: limits.perSecond, ...n });
    this.resolve(seq);
    return { ok: true, debit: debitOf(hash, cost, { seq, day, perSecond: limits.perSecond }, network) };
  }

  async settle(debit: Debit, finalCost: number): Promise<void> {
    const { day, perSecond } = debit.token as RedisToken;
    const refund = debit.cost - finalCost;
    if (refund > 0) {
      const k = this.known.get(debit.hash);
      if (k && k.day === day) k.used -= refund;
      const seq = this.nextSeq();
      if (!this.degraded) {
        try {
          await this.run(
            this.rid,
            debit.hash,
            ['f', String(seq), String(-refund), '0', String(perSecond), day, '', debit.network ?? ''],
            this.watermark(),
          );
          this.resolve(seq);
          return;
        } catch (err) {
          this.enterDegraded((err as Error).message);
        }
      }
      this.append({
        r: this.rid,
        s: seq,
        h: debit.hash,
        d: day,
        c: -refund,
        p: perSecond,
        ...(debit.network !== undefined ? { n: debit.network } : {}),
      });
      this.resolve(seq);
    }
    this.flushJournal();
  }

  usage(hash: string): Promise<Usage> {
    return redisUsage(this.client, hash, this.timeoutMs);
  }

  /** Charges waiting for Redis (for tests and metrics). */
  get journalLength(): number {
    return this.journal.length;
  }

  get isDegraded(): boolean {
    return this.degraded;
  }

  private append(e: Entry): void {
    this.journal.push(e);
    this.pendingLines += `${JSON.stringify(e)}\n`;
  }

  private pendingLines = '';

  /** Writes journal lines appended since the last call (synchronously: before any answer goes out). */
  private flushJournal(): void {
    if (this.pendingLines === '') return;
    if (this.journalFd === undefined) this.journalFd = openSync(join(this.journalDir, `${this.rid}.log`), 'a', 0o600);
    const text = this.pendingLines;
    this.pendingLines = '';
    writeSync(this.journalFd, text);
  }

  private enterDegraded(reason: string): void {
    if (this.closed) return;
    if (!this.degraded)
      this.log(
        `ledger: Redis unavailable (${reason}); ${this.failure === 'open' ? 'serving on local decisions, journaling charges' : 'refusing paid calls'} until it returns`,
      );
    this.degraded = true;
    if (this.probe === undefined) {
      this.probe = setInterval(() => void this.tryRecover(), 200);
      this.probe.unref();
    }
  }

  /** Pings Redis; when it answers, replays the journal in order, then leaves degraded mode. */
  private async tryRecover(): Promise<void> {
    if (this.replaying || this.closed) return;
    this.replaying = true;
    try {
      await timed(this.client.sendCommand(['PING']), this.timeoutMs);
      this.flushJournal();
      while (this.journal.length > 0) {
        const batch = this.journal.slice(0, 1000);
        // Pipelined in order on one connection: Redis applies them in this order. Watermark 0:
        // nothing is acknowledged during a replay (entries may be out of sequence order).
        await Promise.all(
          batch.map((e) =>
            this.run(
              e.r,
              e.h,
              [
                e.u !== undefined ? 'u' : 'f',
                String(e.s),
                String(e.c),
                '0',
                String(e.p),
                e.d,
                e.u !== undefined ? String(e.u) : '',
                e.n ?? '',
              ],
              0,
            ),
          ),
        );
        this.journal.splice(0, batch.length);
        this.stats.replayed += batch.length;
      }
      // Everything is in Redis: drop the files (ours and those of earlier runs).
      if (this.journalFd !== undefined) closeSync(this.journalFd);
      this.journalFd = undefined;
      for (const f of [join(this.journalDir, `${this.rid}.log`), ...this.orphanFiles]) {
        try {
          unlinkSync(f);
        } catch {
          // already gone
        }
      }
      this.orphanFiles = [];
      if (this.probe) clearInterval(this.probe);
      this.probe = undefined;
      if (this.degraded) this.log('ledger: Redis is back; journal replayed');
      this.degraded = false;
    } catch {
      // still away; try again on the next tick
    } finally {
      this.replaying = false;
    }
  }

  async close(): Promise<void> {
    this.flushJournal();
    if (this.degraded && this.journal.length > 0) {
      // One last attempt; what is left stays in the journal file for the next start.
      await this.tryRecover();
    }
    this.closed = true;
    if (this.probe) clearInterval(this.probe);
    if (this.journalFd !== undefined) closeSync(this.journalFd);
    this.journalFd = undefined;
  }
}

function debitOf(hash: string, cost: number, token: RedisToken, network: string | undefined): Debit {
  return network === undefined ? { hash, cost, token } : { hash, cost, token, network };
}

/**
 * Today's usage of a key (by Redis's clock), read without a ledger instance. byNetwork: the
 * per-network split; what no network claims (charges of servers without networks) is NO_NETWORK.
 */
export async function redisUsage(client: RedisClient, hash: string, timeoutMs = 1000): Promise<Usage> {
  const t = (await timed(client.sendCommand(['TIME']), timeoutMs)) as [string, string];
  const day = Math.floor(Number(t[0]) / DAY_S);
  const [usedRaw, split] = await Promise.all([
    timed(client.hGet(dayKey(hash), String(day)), timeoutMs),
    timed(client.hGetAll(`${networkKey(hash)}:${day}`), timeoutMs) as Promise<Record<string, string>>,
  ]);
  const used = usedRaw === null || usedRaw === undefined ? 0 : Number(usedRaw);
  const byNetwork: Record<string, number> = {};
  let claimed = 0;
  for (const [network, v] of Object.entries(split)) {
    const credits = Number(v);
    if (credits > 0) {
      byNetwork[network] = credits;
      claimed += credits;
    }
  }
  if (used - claimed > 0) byNetwork[NO_NETWORK] = used - claimed;
  return { used, resetsAt: new Date((day + 1) * DAY_S * 1000).toISOString(), byNetwork };
}

function readJournal(path: string): Entry[] {
  const out: Entry[] = [];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return out;
  }
  const lines = text.split('\n');
  lines.pop(); // a line a crash cut short
  for (const line of lines) {
    try {
      const e = JSON.parse(line) as Entry;
      if (
        typeof e.r === 'string' &&
        Number.isSafeInteger(e.s) &&
        /^[0-9a-f]{64}$/.test(e.h) &&
        /^\d+$/.test(e.d) &&
        Number.isSafeInteger(e.c) &&
        (e.n === undefined || (typeof e.n === 'string' && NETWORK_LABEL.test(e.n)))
      )
        out.push(e);
    } catch {
      // skip a damaged line
    }
  }
  return out;
}
