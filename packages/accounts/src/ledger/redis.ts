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
//   cn:{<hash>}:tb       HASH  token bucket {v: tokens, t: last refill, µs on Redis's clock, o: tokens
//                              lent to credit leases (v + o <= the rate)}
//   cn:{<hash>}:q:<rid>  ZSET  sequence numbers of replica <rid>'s charges applied but not yet
//                              acknowledged (idempotency: a retried/replayed charge applies once)
//   cn:{<hash>}:l        HASH  credit leases of replicas (leases.ts); :d counts what they hold
//
// One Lua script (DEBIT) checks and debits both limits of a charge in one atomic step on Redis's
// clock (TIME), so replicas with skewed clocks agree on the day and the bucket. A replica sends
// its charges in batches: what its calls asked for while the previous script call was out (at
// most one call in flight, MAX_BATCH charges each) goes as one script call, which applies them in
// order and answers each; a call still gets its answer only once its own debit is decided. Every
// charge carries (replica id, sequence number); the script records applied sequence numbers until
// the replica reports it has their outcome (the watermark), so a batch whose reply was lost can be
// replayed, charge by charge, without charging twice.
//
// Redis unreachable or slow (a command error or timeout): with failure mode `open` (default)
// the replica keeps serving, decides locally (last known usage plus its own charges since, and an
// in-process token bucket) and journals every charge to <journalDir>/<rid>.log before the
// answer goes out; a background loop pings Redis and, once it answers, replays the journal in
// order (each entry idempotent by its sequence number), then returns to Redis. A charge whose
// outcome is unknown (its batch sent, no reply) is journaled under its own sequence number: if
// Redis had applied it, the replay finds it and skips; charges still queued (never sent) are
// decided locally like any other. With mode `closed` the call is refused instead
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

/** Reply codes of a charge (the script returns the numbers). */
const DebitReply = { daily: 0, throughput: 1, duplicate: 2, applied: 3, nothing: 4 } as const;

/** Charges per script call at most (a batch beyond waits for the next call). */
export const MAX_BATCH = 512;

/**
 * One call applies a batch of charges of one replica, in order, atomically (Redis runs one script
 * at a time), and answers each.
 * KEYS: 4 per API key of the batch (its group g = 1, 2, ...): 4g-3 day hash, 4g-2 token bucket,
 *       4g-1 the applied-sequence zset of the batch's replica, 4g prefix of the per-network split
 *       (`:<day>` is appended in the script: same hash tag, same slot).
 * ARGV: 1 watermark (the replica's sequences below it are acknowledged: their records go; 0:
 *       none), then 9 per charge: group, mode (c: check both limits and debit; f: force, apply the
 *       delta; u: undo, apply the delta only if the undo target was applied), seq, credits
 *       (negative: a refund), daily limit, credits/s (0: none), epoch day ('' = today by Redis's
 *       clock), undo target seq, network ('' = none).
 * Returns 3 values per charge: code (DebitReply), the key's credits that day after it, the day.
 *
 * Each key's state is read once per call (HGET of the day, HMGET of the bucket, one trim of the
 * applied records) and written once at its end (HSET, one variadic ZADD, the expiries): a call
 * costs about 10 commands per key it touches, however many charges of that key it carries. A
 * fresh debit (mode c) needs no duplicate check: its sequence number was never sent before; a
 * charge sent again (f, u: a replay) is checked against the applied records.
 */
export const DEBIT_LUA = `
local t = redis.call('TIME')
local sec = tonumber(t[1])
local now = sec * 1000000 + tonumber(t[2])
local today = tostring(math.floor(sec / 86400))
local wm = ARGV[1]
local G = {}
local order = {}
local out = {}
local function group(g)
  local s = G[g]
  if s ~= nil then return s end
  local k = (g - 1) * 4
  s = { d = KEYS[k + 1], b = KEYS[k + 2], q = KEYS[k + 3], n = KEYS[k + 4], used = {}, days = {}, seqs = {}, net = {} }
  if wm ~= '0' then redis.call('ZREMRANGEBYSCORE', s.q, '-inf', '(' .. wm) end
  G[g] = s
  order[#order + 1] = s
  return s
end
local function applied(s, seq)
  return s.seqs[seq] or redis.call('ZSCORE', s.q, seq)
end
local n = (#ARGV - 1) / 9
for i = 0, n - 1 do
  local a = 2 + i * 9
  local s = group(tonumber(ARGV[a]))
  local mode = ARGV[a + 1]
  local seq = ARGV[a + 2]
  local cost = tonumber(ARGV[a + 3])
  local daily = tonumber(ARGV[a + 4])
  local rate = tonumber(ARGV[a + 5])
  local day = ARGV[a + 6]
  if day == '' then day = today end
  local used = s.used[day]
  if used == nil then
    used = tonumber(redis.call('HGET', s.d, day) or '0')
    s.used[day] = used
  end
  local code = 3
  if mode ~= 'c' and applied(s, seq) then
    code = 2
  elseif mode == 'u' and not applied(s, ARGV[a + 7]) then
    code = 4
    s.seqs[seq] = true
  elseif mode == 'c' and used + cost > daily then
    code = 0
  elseif rate > 0 and (mode == 'c' and cost > 0 or cost < 0) then
    -- The bucket: checked and debited in mode c; refunds (negative) give tokens back; replayed
    -- charges (f/u, positive) leave it alone (the replica's own bucket limited them meanwhile).
    if s.tokens == nil then
      local b = redis.call('HMGET', s.b, 'v', 't', 'o')
      s.tokens = tonumber(b[1])
      s.last = tonumber(b[2])
      -- Tokens lent to credit leases (leases.ts): the bucket and they together hold at most the rate.
      s.cap = rate - (tonumber(b[3]) or 0)
      if s.cap < 0 then s.cap = 0 end
      if s.tokens == nil or s.last == nil then
        s.tokens = rate
        s.last = now
      end
    end
    local elapsed = now - s.last
    if elapsed < 0 then elapsed = 0 end
    local tokens = math.min(s.cap, s.tokens + elapsed * rate / 1000000)
    if mode == 'c' and tokens < cost then
      code = 1
    else
      s.tokens = math.min(s.cap, tokens - cost)
      s.last = now
      s.bucket = true
    end
  end
  if code == 3 then
    used = used + cost
    s.used[day] = used
    s.days[day] = true
    s.seqs[seq] = true
    local net = ARGV[a + 8]
    if net ~= '' then
      local nk = day .. ' ' .. net
      s.net[nk] = (s.net[nk] or 0) + cost
    end
  end
  out[#out + 1] = code
  out[#out + 1] = used
  out[#out + 1] = day
end
for _, s in ipairs(order) do
  local wrote = false
  for day in pairs(s.days) do
    redis.call('HSET', s.d, day, tostring(s.used[day]))
    redis.call('HDEL', s.d, tostring(tonumber(day) - 2))
    wrote = true
  end
  if wrote then redis.call('EXPIRE', s.d, 259200) end
  if s.bucket then
    redis.call('HSET', s.b, 'v', tostring(s.tokens), 't', tostring(s.last))
    redis.call('PEXPIRE', s.b, 60000)
  end
  local zs = {}
  for seq in pairs(s.seqs) do
    zs[#zs + 1] = seq
    zs[#zs + 1] = seq
  end
  if #zs > 0 then
    redis.call('ZADD', s.q, unpack(zs))
    redis.call('PEXPIRE', s.q, 86400000)
  end
  for nk, delta in pairs(s.net) do
    if delta ~= 0 then
      local sp = string.find(nk, ' ', 1, true)
      local key = s.n .. ':' .. string.sub(nk, 1, sp - 1)
      local field = string.sub(nk, sp + 1)
      if redis.call('HINCRBY', key, field, delta) <= 0 then redis.call('HDEL', key, field) end
      redis.call('EXPIRE', key, 259200)
    end
  end
end
return out
`;
const DEBIT_SHA = createHash('sha1').update(DEBIT_LUA).digest('hex');

export const dayKey = (hash: string): string => `cn:{${hash}}:d`;
export const bucketKey = (hash: string): string => `cn:{${hash}}:tb`;
export const appliedKey = (hash: string, rid: string): string => `cn:{${hash}}:q:${rid}`;
/** Credit leases of a key (leases.ts). */
export const leaseKey = (hash: string): string => `cn:{${hash}}:l`;
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

/** A charge as one script call carries it (see DEBIT_LUA). */
interface ChargeArgs {
  hash: string;
  mode: 'c' | 'f' | 'u';
  seq: number;
  /** Negative: a refund. */
  credits: number;
  daily: number;
  perSecond: number;
  /** Epoch day; '' = today by Redis's clock. */
  day: string;
  undo?: number;
  network?: string;
}

/** code (DebitReply), the key's credits that day after the charge, the day. */
type ChargeReply = [number, number, string];

interface Charge extends ChargeArgs {
  resolve: (reply: ChargeReply) => void;
  reject: (err: unknown) => void;
}

/** A queued charge that was never sent (Redis went away first): its outcome is not in doubt. */
class NotSentError extends Error {
  constructor() {
    super('not sent: the Redis ledger is away');
    this.name = 'NotSentError';
  }
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
  /**
   * Most charges per script call (default MAX_BATCH) and script calls out at once (default 1).
   * `{ maxBatch: 1, maxInFlight: Infinity }` sends one script call per charge, as soon as it is
   * asked for: the unbatched engine, kept for comparison (bench:ledger).
   */
  maxBatch?: number;
  maxInFlight?: number;
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
  /**
   * Counters for tests, metrics and the bench: script calls sent (redisCalls; each one request),
   * charges they carried, decisions taken locally, journal entries replayed.
   */
  readonly stats = { redisCalls: 0, charges: 0, degradedDecisions: 0, replayed: 0 };
  /** Charges waiting for the next script call, and whether one is out. */
  private queue: Charge[] = [];
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private inFlight = 0;
  private scheduled = false;

  constructor(o: RedisLedgerOptions) {
    this.client = o.client;
    this.failure = o.failure;
    this.journalDir = o.journalDir;
    this.journalMax = o.journalMax ?? 200_000;
    this.timeoutMs = o.commandTimeoutMs ?? 1000;
    this.log = o.log ?? (() => {});
    this.maxBatch = Math.max(1, Math.min(MAX_BATCH, o.maxBatch ?? MAX_BATCH));
    this.maxInFlight = Math.max(1, o.maxInFlight ?? 1);
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

  /** Queues a charge for the next batch; resolves with its reply, rejects with the batch's failure. */
  private send(c: ChargeArgs): Promise<ChargeReply> {
    return new Promise<ChargeReply>((resolve, reject) => {
      this.queue.push({ ...c, resolve, reject });
      this.schedule();
    });
  }

  /** Sends the queued charges at the end of this event-loop turn, unless a batch is out already. */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.sendBatch();
    });
  }

  private sendBatch(): void {
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight) this.sendOne();
  }

  private sendOne(): void {
    const batch = this.queue.splice(0, this.maxBatch);
    if (this.degraded) {
      // Never sent: each is decided (or journaled) locally, with no doubt about its outcome.
      for (const c of batch) c.reject(new NotSentError());
      if (this.queue.length > 0) this.schedule();
      return;
    }
    this.inFlight++;
    this.runBatch(this.rid, batch, this.watermark()).then(
      (replies) => {
        this.inFlight--;
        for (const [i, c] of batch.entries()) c.resolve(replies[i] as ChargeReply);
        if (this.queue.length > 0) this.schedule();
      },
      (err: unknown) => {
        this.inFlight--;
        for (const c of batch) c.reject(err);
        if (this.queue.length > 0) this.schedule();
      },
    );
  }

  /**
   * One script call for `batch` (charges of replica `rid`, in order); its replies in the same order.
   * A reply that is not what the script returns counts as no reply (the outcome is unknown).
   */
  private async runBatch(rid: string, batch: readonly ChargeArgs[], watermark: number): Promise<ChargeReply[]> {
    this.stats.redisCalls++;
    this.stats.charges += batch.length;
    const groups = new Map<string, number>();
    const keys: string[] = [];
    const args: string[] = [String(watermark)];
    for (const c of batch) {
      let g = groups.get(c.hash);
      if (g === undefined) {
        g = groups.size + 1;
        groups.set(c.hash, g);
        keys.push(dayKey(c.hash), bucketKey(c.hash), appliedKey(c.hash, rid), networkKey(c.hash));
      }
      args.push(
        String(g),
        c.mode,
        String(c.seq),
        String(c.credits),
        String(c.daily),
        String(c.perSecond),
        c.day,
        c.undo === undefined ? '' : String(c.undo),
        c.network ?? '',
      );
    }
    const tail = [String(keys.length), ...keys, ...args];
    let reply: unknown;
    try {
      reply = await timed(this.client.sendCommand(['EVALSHA', DEBIT_SHA, ...tail]), this.timeoutMs);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      reply = await timed(this.client.sendCommand(['EVAL', DEBIT_LUA, ...tail]), this.timeoutMs);
    }
    if (!Array.isArray(reply) || reply.length !== batch.length * 3)
      throw new Error('malformed reply from the Redis ledger');
    const out: ChargeReply[] = [];
    for (let i = 0; i < batch.length; i++) {
      const code = Number(reply[3 * i]);
      const used = Number(reply[3 * i + 1]);
      const day = String(reply[3 * i + 2]);
      if (!(code >= 0 && code <= 4) || !Number.isFinite(used) || !/^\d{1,9}$/.test(day))
        throw new Error('malformed reply from the Redis ledger');
      out.push([code, used, day]);
    }
    return out;
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
        const [code, used, day] = await this.send({
          hash,
          mode: 'c',
          seq,
          credits: cost,
          daily: limits.daily,
          perSecond: limits.perSecond,
          day: '',
          ...(network !== undefined ? { network } : {}),
        });
        this.resolve(seq);
        this.note(hash, day, used);
        if (code === DebitReply.applied)
          return { ok: true, debit: debitOf(hash, cost, { seq, day, perSecond: limits.perSecond }, network) };
        return {
          ok: false,
          reason: code === DebitReply.throughput ? 'throughput' : 'daily',
          resetsAt: this.resetsAtOf(day),
        };
      } catch (err) {
        if (err instanceof NotSentError) return this.decideLocally(seq, hash, cost, limits, false, network);
        // No reply: the batch may or may not have been applied. Decide locally below; the journal
        // entry carries this same sequence number, so the replay finds out which.
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
          await this.send({
            hash: debit.hash,
            mode: 'f',
            seq,
            credits: -refund,
            daily: 0,
            perSecond,
            day,
            ...(debit.network !== undefined ? { network: debit.network } : {}),
          });
          this.resolve(seq);
          return;
        } catch (err) {
          // Not sent, or no reply: journaled under its sequence number (a replay applies it once).
          if (!(err instanceof NotSentError)) this.enterDegraded((err as Error).message);
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
        // One script call per run of entries of one replica (at most MAX_BATCH), in journal order.
        // Watermark 0: nothing is acknowledged during a replay (entries may be out of sequence order).
        const rid = (this.journal[0] as Entry).r;
        let end = 1;
        while (end < this.journal.length && end < MAX_BATCH && (this.journal[end] as Entry).r === rid) end++;
        const batch = this.journal.slice(0, end).map(
          (e): ChargeArgs => ({
            hash: e.h,
            mode: e.u !== undefined ? 'u' : 'f',
            seq: e.s,
            credits: e.c,
            daily: 0,
            perSecond: e.p,
            day: e.d,
            ...(e.u !== undefined ? { undo: e.u } : {}),
            ...(e.n !== undefined ? { network: e.n } : {}),
          }),
        );
        await this.runBatch(rid, batch, 0);
        this.journal.splice(0, end);
        this.stats.replayed += end;
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
    // Charges queued or out get their answers first (or fail, and are journaled, as any other).
    const until = Date.now() + 2 * this.timeoutMs;
    while ((this.inFlight > 0 || this.queue.length > 0) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 5));
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
  const [usedRaw, split, leases] = await Promise.all([
    timed(client.hGet(dayKey(hash), String(day)), timeoutMs),
    timed(client.hGetAll(`${networkKey(hash)}:${day}`), timeoutMs) as Promise<Record<string, string>>,
    timed(client.hGetAll(leaseKey(hash)), timeoutMs) as Promise<Record<string, string>>,
  ]);
  // The day's count holds what leases of that day hold unspent (granted - spent): not used.
  let held = 0;
  for (const v of Object.values(leases)) {
    const [leaseDay, granted, spent] = v.split(' ').map(Number) as [number, number, number];
    if (leaseDay === day) held += granted - spent;
  }
  const used = (usedRaw === null || usedRaw === undefined ? 0 : Number(usedRaw)) - held;
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
  return readJournalLines(
    path,
    (e: Entry) =>
      typeof e.r === 'string' &&
      Number.isSafeInteger(e.s) &&
      /^[0-9a-f]{64}$/.test(e.h) &&
      /^\d+$/.test(e.d) &&
      Number.isSafeInteger(e.c) &&
      (e.n === undefined || (typeof e.n === 'string' && NETWORK_LABEL.test(e.n))),
  );
}

/** The lines of a journal file (JSON, one a line) that pass `valid`; a damaged or cut line is skipped. */
export function readJournalLines<T>(path: string, valid: (line: T) => boolean): T[] {
  const out: T[] = [];
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
      const e = JSON.parse(line) as T;
      if (valid(e)) out.push(e);
    } catch {
      // skip a damaged line
    }
  }
  return out;
}
