// Credit leases over the Redis engine: a replica reserves a slice of a key's remaining daily
// balance (and tokens of its credits/s bucket) in one script call (taken in Redis at once, so no
// other replica can spend them), spends it in-process (debit and settle take no Redis round trip),
// and reports what it spent and returns what it did not in later script calls, off the request
// path. A call no slice can cover is decided by the Redis engine's per-call script as before
// (exact). docs/decisions/ledger-engines.md states the bounds.
//
// Layout (beside redis.ts's; same hash tag):
//   cn:{<hash>}:l  HASH  lease id (<replica id>.<n>) -> "day granted spent allowance expiry seq"
//     granted: credits of `day` taken from cn:{<hash>}:d for this lease (its spends included);
//     spent: the spends reported so far (through journal sequence `seq`); expiry: ms on Redis's
//     clock, -1 once lapsed and reclaimed, -2 once returned (kept until the day is old, so a late
//     replay of a journal finds the lease and applies nothing twice).
// So the day hash counts charged credits plus what leases hold unspent; usage is the day's count
// less the unspent part of that day's leases.
//
// Crashes: a holder may have answered spends it has not reported yet, at most its lease's
// allowance (it admits nothing from the slice beyond). A lease whose expiry passes is reclaimed by
// the next lease script touching the key: granted - spent - allowance goes back to the balance at
// once, the allowance stays held until the holder's journal (<journalDir>/<rid>.<gen>.lease, every
// spend written before its answer) is replayed by the next ledger on that folder, which charges
// the unreported spends and returns the rest. Nothing answered goes uncharged; nothing is charged
// twice (a spend applies only above the lease's reported sequence); the balance is never exceeded.
import { closeSync, openSync, readdirSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { timed } from '../redis-client.js';
import type { RedisClient } from '../redis-client.js';
import type { CreditLedger, Debit, DebitResult, Limits, Usage } from './api.js';
import { RedisLedger, bucketKey, dayKey, leaseKey, networkKey, readJournalLines, redisUsage } from './redis.js';
import type { RedisLedgerOptions } from './redis.js';

/**
 * One call syncs a replica's leases, each of its own key: reports spends, renews, grows, shrinks
 * or returns the lease, and first reclaims lapsed leases of other replicas of that key.
 * KEYS: 4 per lease: day hash, lease hash, prefix of the per-network split, token bucket.
 * ARGV: 1 ttl (ms); then per lease: id, day ('' = today by Redis's clock, a new lease), want (free
 *       credits wanted beyond `keep`; -1: return everything but `keep`), keep (credits of admitted,
 *       unsettled calls), daily limit, allowance, credits/s (0: none), tokens the holder keeps,
 *       tokens it gives back to the bucket, tokens wanted, m, then m spends (seq, credits, network).
 * Returns 9 per lease: granted, spent, reported seq, state (0 live, 1 lapsed: reclaimed, 2 returned),
 * Redis's now (ms), day, the key's credits charged or held that day, the allowance, tokens lent.
 *
 * Tokens: a lease holds tokens of the key's bucket (field o of the bucket counts those lent); the
 * bucket refills only up to the rate less what is lent, so bucket and leases together never hold
 * more than one second of credits, as the bucket alone did.
 */
export const LEASE_LUA = `
local t = redis.call('TIME')
local nowus = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(nowus / 1000)
local today = math.floor(tonumber(t[1]) / 86400)
local ttl = tonumber(ARGV[1])
local out = {}
local a = 2
local function parse(v)
  local f = {}
  for w in string.gmatch(v, '%S+') do f[#f + 1] = tonumber(w) end
  return { day = f[1], g = f[2], s = f[3], al = f[4], e = f[5], x = f[6], k = f[7] or 0 }
end
local function fmt(L)
  return string.format('%d %d %d %d %d %d %d', L.day, L.g, L.s, L.al, L.e, L.x, L.k)
end
local function hadd(dk, day, delta)
  if delta ~= 0 then
    redis.call('HINCRBY', dk, string.format('%d', day), string.format('%d', delta))
    redis.call('EXPIRE', dk, 259200)
  end
end
local function reclaim(dk, B, L)
  hadd(dk, L.day, -(L.g - L.s - L.al))
  L.g = L.s + L.al
  L.e = -1
  B.o = B.o - L.k
  L.k = 0
end
local g = 0
while a <= #ARGV do
  g = g + 1
  local dk, lk, nk, bk = KEYS[4 * g - 3], KEYS[4 * g - 2], KEYS[4 * g - 1], KEYS[4 * g]
  local id, dayArg, want, keep = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local daily, allow, rate = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])
  local hold, ret, wantTokens = tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]), tonumber(ARGV[a + 9])
  local m = tonumber(ARGV[a + 10])
  local sp = a + 11
  a = sp + 3 * m
  -- The bucket, refilled to now (up to the rate less what leases hold).
  local b = redis.call('HMGET', bk, 'v', 't', 'o')
  local B = { v = tonumber(b[1]), t = tonumber(b[2]), o = tonumber(b[3]) or 0 }
  if B.v == nil or B.t == nil then
    B.v = rate
    B.t = nowus
  end
  -- Lapsed leases of this key: all but their allowance goes back; old days' records go.
  local all = redis.call('HGETALL', lk)
  for i = 1, #all, 2 do
    local L = parse(all[i + 1])
    if L.day < today - 1 then
      B.o = B.o - L.k
      redis.call('HDEL', lk, all[i])
    elseif all[i] ~= id and L.e >= 0 and L.e < now then
      reclaim(dk, B, L)
      redis.call('HSET', lk, all[i], fmt(L))
    end
  end
  if B.o < 0 then B.o = 0 end
  if rate > 0 then
    local elapsed = nowus - B.t
    if elapsed < 0 then elapsed = 0 end
    B.v = math.min(math.max(rate - B.o, 0), B.v + elapsed * rate / 1000000)
    B.t = nowus
  end
  local raw = redis.call('HGET', lk, id)
  local L
  if raw then L = parse(raw) else
    local day = today
    if dayArg ~= '' then day = tonumber(dayArg) end
    L = { day = day, g = 0, s = 0, al = 0, e = now + ttl, x = 0, k = 0 }
  end
  if L.e >= 0 and L.e < now then reclaim(dk, B, L) end
  -- Tokens: the holder keeps hold (never more than lent), gives ret back; the rest was spent.
  if hold > L.k then hold = L.k end
  if ret > L.k - hold then ret = L.k - hold end
  B.o = B.o - (L.k - hold)
  L.k = hold
  if rate > 0 then B.v = math.min(math.max(rate - B.o, 0), B.v + ret) end
  local net = {}
  for i = 0, m - 1 do
    local seq = tonumber(ARGV[sp + 3 * i])
    if seq > L.x then
      local c = tonumber(ARGV[sp + 3 * i + 1])
      L.s = L.s + c
      L.x = seq
      local n = ARGV[sp + 3 * i + 2]
      if n ~= '' then net[n] = (net[n] or 0) + c end
    end
  end
  for n, c in pairs(net) do
    local key = nk .. ':' .. string.format('%d', L.day)
    redis.call('HINCRBY', key, n, string.format('%d', c))
    redis.call('EXPIRE', key, 259200)
  end
  -- Spends beyond the grant (state Redis lost): charged all the same.
  if L.s > L.g then
    hadd(dk, L.day, L.s - L.g)
    L.g = L.s
  end
  local cur = L.g - L.s
  local target = keep
  local live = want > 0 and L.e >= 0 and L.day == today
  if live then
    local used = tonumber(redis.call('HGET', dk, string.format('%d', L.day)) or '0')
    local free = daily - used + cur - keep
    local cap = math.floor(free / 4)
    if cap < 0 then cap = 0 end
    target = keep + math.min(want, cap)
    if rate > 0 and wantTokens > L.k then
      local lend = math.min(wantTokens - L.k, math.floor(B.v / 4))
      if lend > 0 then
        B.v = B.v - lend
        B.o = B.o + lend
        L.k = L.k + lend
      end
    end
  elseif want == 0 then
    target = cur
  end
  if target < keep then target = keep end
  if L.e == -1 and target > cur then target = cur end
  hadd(dk, L.day, target - cur)
  L.g = L.s + target
  -- The allowance covers what the holder may owe unreported: never below what it kept.
  if allow > target then allow = target end
  if allow < keep then allow = keep end
  if L.e >= 0 then L.al = allow end
  local state = 0
  if L.e == -1 then state = 1 end
  if want < 0 and target == 0 then
    L.e = -2
    L.al = 0
    state = 2
  elseif L.e >= 0 then
    L.e = now + ttl
  end
  if L.e == -1 and L.g == L.s then
    L.e = -2
    L.al = 0
    state = 2
  end
  if state == 2 then
    B.o = B.o - L.k
    L.k = 0
  end
  if rate > 0 or b[1] then
    if B.o < 0 then B.o = 0 end
    redis.call('HSET', bk, 'v', tostring(B.v), 't', tostring(B.t), 'o', string.format('%d', B.o))
    redis.call('PEXPIRE', bk, 60000)
  end
  redis.call('HSET', lk, id, fmt(L))
  redis.call('EXPIRE', lk, 259200)
  out[#out + 1] = L.g
  out[#out + 1] = L.s
  out[#out + 1] = L.x
  out[#out + 1] = state
  out[#out + 1] = now
  out[#out + 1] = L.day
  out[#out + 1] = tonumber(redis.call('HGET', dk, string.format('%d', L.day)) or '0')
  out[#out + 1] = L.al
  out[#out + 1] = L.k
end
return out
`;
const LEASE_SHA = createHash('sha1').update(LEASE_LUA).digest('hex');

/** A spend of a lease, journaled before its answer and reported in a later sync. */
interface Spend {
  /** lease id */
  l: string;
  s: number;
  h: string;
  c: number;
  n?: string;
}

interface Lease {
  id: string;
  hash: string;
  /** Redis epoch day of the grant; -1 until the first reply. */
  day: number;
  daily: number;
  /** Granted and reported spent, as Redis last answered. */
  granted: number;
  spent: number;
  /** Spends reported through this sequence (Redis's answer). */
  reported: number;
  /** Spends settled and journaled, not yet acknowledged by Redis. */
  unreported: Spend[];
  unreportedCredits: number;
  /** Credits of admitted calls not settled yet. */
  inflight: number;
  /** What may be spent from the slice now. */
  free: number;
  /** Most credits the holder may owe Redis unreported (admitted or settled since the last report). */
  allowance: number;
  /** Monotonic ms after which the slice is not spent (before Redis can reclaim it, and before midnight). */
  deadline: number;
  /** Credits settled since the last sync, and when that sync went (for the spend rate). */
  window: number;
  windowStart: number;
  /** The slice this lease aims at. */
  want: number;
  lastUse: number;
  /** Returning: no new spends; dropped once Redis has it back. */
  closing: boolean;
  /** The key's credits/s (0: none), and the bucket's tokens this lease holds (spends take both). */
  rate: number;
  tokens: number;
  /** Tokens to give back to the bucket with the next sync (a retired lease's). */
  returnTokens: number;
  /** The largest call cost seen (a lease asks for at least that many tokens). */
  maxCost: number;
}

/** One lease's part of a sync (what was sent). */
interface SyncOp {
  lease: Lease;
  spends: Spend[];
  want: number;
  keep: number;
  allowance: number;
  hold: number;
  ret: number;
  wantTokens: number;
}

interface LeasedToken {
  lease: Lease;
}

export interface LeasedLedgerOptions {
  client: RedisClient;
  /** The per-call engine: calls no slice covers. */
  inner: RedisLedger;
  /** Largest slice of a key's balance one lease holds (credits). */
  maxSlice: number;
  /** Where spends are journaled (the per-call engine's folder). */
  journalDir: string;
  /** Lease expiry in Redis without a sync (default 10 s, at least 4 command timeouts). */
  ttlMs?: number;
  /** Syncs at most this often while nothing is urgent (default 200 ms). */
  periodMs?: number;
  commandTimeoutMs?: number;
}

/** Seconds of a key's recent spend one slice aims to hold. */
const SLICE_SECONDS = 2;
/** An unused lease is returned after this long. */
const IDLE_MS = 2_000;

export class LeasedLedger implements CreditLedger {
  private readonly client: RedisClient;
  readonly inner: RedisLedger;
  private readonly maxSlice: number;
  private readonly ttlMs: number;
  private readonly periodMs: number;
  private readonly timeoutMs: number;
  private readonly journalDir: string;
  private readonly leases = new Map<string, Lease>();
  /** Leases being returned (no longer the key's current lease). */
  private returning: Lease[] = [];
  private leaseNo = 0;
  private seq = 0;
  private gen = 0;
  private fd: number | undefined;
  /** This turn's spends not yet written (journal()), by lease and network, and the write their settles wait for. */
  private pending = new Map<string, Spend>();
  private written: Promise<void> | undefined;
  /** abandon() was called: what was not written is lost, as in a killed process (its settles fail). */
  private abandoned = false;
  /** The ids of the leases this ledger opened (<rid>.open.lease), removed once all are returned. */
  private readonly openFile: string;
  private openFd: number | undefined;
  private openLines = 0;
  /** Journal files whose spends are not all acknowledged. */
  private files: string[] = [];
  /** Journals of an earlier process on this folder, replayed by the first syncs. */
  private orphans: { file: string; spends: Spend[] }[] = [];
  private syncing = false;
  private again = false;
  private timer: NodeJS.Timeout;
  private closed = false;
  /** Lease script calls sent (each one Redis request), and calls decided from a slice. */
  readonly stats = { leaseCalls: 0, leased: 0 };

  constructor(o: LeasedLedgerOptions) {
    this.client = o.client;
    this.inner = o.inner;
    this.maxSlice = o.maxSlice;
    this.timeoutMs = o.commandTimeoutMs ?? 1000;
    this.ttlMs = o.ttlMs ?? Math.max(10_000, 4 * this.timeoutMs);
    this.periodMs = o.periodMs ?? 200;
    this.journalDir = o.journalDir;
    this.openFile = join(this.journalDir, `${this.inner.rid}.open.lease`);
    for (const name of readdirSync(this.journalDir))
      if (name.endsWith('.lease')) {
        const file = join(this.journalDir, name);
        this.orphans.push({ file, spends: readSpends(file) });
      }
    this.timer = setInterval(() => this.sync(), this.periodMs);
    this.timer.unref();
    if (this.orphans.length > 0) this.sync();
  }

  /** Redis requests so far: the per-call engine's script calls and the lease syncs. */
  get redisCalls(): number {
    return this.inner.stats.redisCalls + this.stats.leaseCalls;
  }

  async debit(hash: string, cost: number, limits: Limits, network?: string): Promise<DebitResult> {
    if (this.closed) return this.inner.debit(hash, cost, limits, network);
    const now = performance.now();
    let l = this.leases.get(hash);
    if (l !== undefined && (l.daily !== limits.daily || l.rate !== limits.perSecond)) {
      this.retire(l);
      l = undefined;
    }
    if (l === undefined) {
      l = this.open(hash, limits, cost, now);
      this.sync();
    }
    l.lastUse = now;
    if (cost > l.maxCost) l.maxCost = cost;
    const leased = this.fromSlice(l, cost, now, network);
    if (leased !== undefined) return leased;
    if (l.free < cost) l.want = Math.min(this.maxSlice, Math.max(l.want, cost * 16));
    this.sync();
    const r = await this.inner.debit(hash, cost, limits, network);
    if (r.ok) return r;
    // Refused in Redis: this replica's own slice (credits, tokens) may hold what is missing, or
    // be about to: a grant sent before this call's debit reached Redis first and took the credits
    // it lacked, and its answer may not have been applied yet; a return sent by a call that
    // retired the slice gives them back. Either way the sync in flight is waited for.
    let again = this.fromSlice(l, cost, performance.now(), network);
    if (again !== undefined) return again;
    if (!l.closing && l.free === 0 && l.tokens === 0) {
      if (!this.syncing) return r;
      await this.settled();
      again = this.fromSlice(l, cost, performance.now(), network);
      if (again !== undefined || (!l.closing && l.free === 0 && l.tokens === 0)) return again ?? r;
    }
    if (!l.closing) this.retire(l);
    await this.syncNow();
    return this.inner.debit(hash, cost, limits, network);
  }

  /** Resolves once no sync is out (none is started). */
  private async settled(): Promise<void> {
    while (this.syncing) await new Promise((r) => setTimeout(r, 2));
  }

  /** Admits a call from the key's slice, or undefined if the slice cannot cover it now. */
  private fromSlice(l: Lease, cost: number, now: number, network: string | undefined): DebitResult | undefined {
    if (
      l.closing ||
      now >= l.deadline ||
      l.free < cost ||
      (l.rate > 0 && l.tokens < cost) ||
      l.unreportedCredits + l.inflight + cost > l.allowance
    )
      return undefined;
    l.free -= cost;
    if (l.rate > 0) l.tokens -= cost;
    l.inflight += cost;
    this.stats.leased++;
    if (l.free < l.want / 2 || l.unreportedCredits + l.inflight > l.allowance / 2) this.sync();
    const token: LeasedToken = { lease: l };
    const hash = l.hash;
    return { ok: true, debit: network === undefined ? { hash, cost, token } : { hash, cost, token, network } };
  }

  async settle(debit: Debit, finalCost: number): Promise<void> {
    const token = debit.token as Partial<LeasedToken>;
    const l = token.lease;
    if (l === undefined) return this.inner.settle(debit, finalCost);
    if (finalCost < debit.cost) {
      // What the call did not spend goes back, as the per-call engine gives it back to the bucket:
      // credits to a live slice, tokens to the slice (or, once it is retired, with its return).
      if (!l.closing && performance.now() < l.deadline) l.free += debit.cost - finalCost;
      if (l.rate > 0) {
        if (l.closing) l.returnTokens += debit.cost - finalCost;
        else l.tokens += debit.cost - finalCost;
      }
    }
    try {
      if (finalCost > 0) {
        const { spend, written } = this.journal(l, finalCost, debit.network);
        await written;
        // The turn's spend of this lease and network is reported once, with every settle's credits.
        if (spend !== undefined) l.unreported.push(spend);
        l.unreportedCredits += finalCost;
        l.window += finalCost;
      }
    } finally {
      // Counted in flight until it is counted unreported: the allowance bound holds in between.
      l.inflight -= debit.cost;
    }
  }

  /** Usage by Redis after this ledger's own spends are reported (others': as of their last sync). */
  async usage(hash: string): Promise<Usage> {
    if ([...this.leases.values(), ...this.returning].some((l) => l.hash === hash && l.unreported.length > 0))
      await this.syncNow();
    return redisUsage(this.client, hash, this.timeoutMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.written?.catch(() => undefined);
    for (const l of [...this.leases.values()]) this.retire(l);
    const until = Date.now() + 2 * this.timeoutMs;
    while ((this.returning.length > 0 || this.orphans.length > 0) && Date.now() < until) {
      await this.syncNow();
      if (this.returning.length > 0 || this.orphans.length > 0) await new Promise((r) => setTimeout(r, 20));
    }
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (this.openFd !== undefined) closeSync(this.openFd);
    this.openFd = undefined;
    if (this.returning.length === 0 && this.orphans.length === 0 && this.files.length === 0)
      try {
        unlinkSync(this.openFile);
      } catch {
        // no lease was opened
      }
    await this.inner.close();
  }

  /** Stops without returning anything or closing files (a killed process, for tests). */
  abandon(): void {
    this.closed = true;
    this.abandoned = true;
    clearInterval(this.timer);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (this.openFd !== undefined) closeSync(this.openFd);
    this.openFd = undefined;
  }

  private open(hash: string, limits: Limits, cost: number, now: number): Lease {
    const want = Math.min(this.maxSlice, cost * 64);
    const l: Lease = {
      id: `${this.inner.rid}.${++this.leaseNo}`,
      hash,
      day: -1,
      daily: limits.daily,
      rate: limits.perSecond,
      tokens: 0,
      returnTokens: 0,
      maxCost: cost,
      granted: 0,
      spent: 0,
      reported: 0,
      unreported: [],
      unreportedCredits: 0,
      inflight: 0,
      free: 0,
      allowance: 0,
      deadline: 0,
      window: 0,
      windowStart: now,
      want,
      lastUse: now,
      closing: false,
    };
    this.leases.set(hash, l);
    // Named before Redis can grant it: a successor returns it even if no spend of it is journaled.
    if (this.openFd === undefined) this.openFd = openSync(this.openFile, 'a', 0o600);
    writeSync(this.openFd, openLine(l));
    this.openLines++;
    return l;
  }

  /** Rewrites the lease-id file to the leases still out once it mostly names returned ones. */
  private compactOpenFile(): void {
    const out = [...this.leases.values(), ...this.returning];
    if (this.openLines <= 4 * out.length + 64) return;
    const tmp = `${this.openFile}.tmp`;
    writeFileSync(tmp, out.map(openLine).join(''), { mode: 0o600 });
    if (this.openFd !== undefined) closeSync(this.openFd);
    renameSync(tmp, this.openFile);
    this.openFd = openSync(this.openFile, 'a', 0o600);
    this.openLines = out.length;
  }

  /** No new spends from `l`; its unspent credits go back with the next sync. */
  private retire(l: Lease): void {
    l.closing = true;
    l.free = 0;
    l.returnTokens += l.tokens;
    l.tokens = 0;
    if (this.leases.get(l.hash) === l) this.leases.delete(l.hash);
    this.returning.push(l);
  }

  /**
   * Journals a settled charge: the charges of one event-loop turn are written together (one
   * write, as the embedded engine's), one spend per lease and network with their credits summed
   * (a spend of its own per call wrote ~110 bytes a call and sent as many to Redis), and their
   * settles resolve once it is written, so no answer goes out before its charge is on disk.
   * `spend` is the turn's spend when this charge began it (its settle reports it), else undefined.
   */
  private journal(l: Lease, credits: number, network: string | undefined): { spend?: Spend; written: Promise<void> } {
    const key = network === undefined ? l.id : `${l.id} ${network}`;
    let spend = this.pending.get(key);
    const begun = spend === undefined;
    if (spend === undefined) {
      spend = { l: l.id, s: ++this.seq, h: l.hash, c: 0 };
      if (network !== undefined) spend.n = network;
      this.pending.set(key, spend);
    }
    spend.c += credits;
    this.written ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        try {
          this.writePending();
          resolve();
        } catch (err) {
          reject(err);
        }
      });
    });
    return begun ? { spend, written: this.written } : { written: this.written };
  }

  /** Writes the spends journal() gathered this turn (in one write), into this generation's file. */
  private writePending(): void {
    let lines = '';
    for (const spend of this.pending.values()) lines += `${JSON.stringify(spend)}\n`;
    this.pending = new Map();
    this.written = undefined;
    if (this.abandoned) throw new Error('credit ledger: stopped before the spend was journaled');
    if (lines === '') return;
    if (this.fd === undefined) {
      const file = join(this.journalDir, `${this.inner.rid}.${this.gen}.lease`);
      this.fd = openSync(file, 'a', 0o600);
      this.files.push(file);
    }
    writeSync(this.fd, lines);
  }

  /** A sync soon (one at a time; asked again while one is out: another right after). */
  private sync(): void {
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = true;
    setImmediate(() => void this.runSync());
  }

  private async syncNow(): Promise<void> {
    // Not `await this.settled()`: the last check and the claim below must be one synchronous
    // step, or a sync() in between runs beside this one.
    while (this.syncing) await new Promise((r) => setTimeout(r, 2));
    this.syncing = true;
    await this.runSync();
  }

  private async runSync(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.syncOnce();
      } while (this.again && !this.closed);
    } catch {
      // Redis away or slow: slices are spent on until their deadlines; the next period tries again.
    } finally {
      this.syncing = false;
    }
  }

  /** Whether lease `l` has anything for Redis now (spends, a grant to ask, a return, a renewal). */
  private due(l: Lease, now: number): boolean {
    return (
      l.closing ||
      l.day < 0 ||
      l.unreported.length > 0 ||
      l.free < l.want / 2 ||
      (l.rate > 0 && l.tokens < this.wantTokens(l) / 2) ||
      now > l.deadline - this.ttlMs / 2
    );
  }

  /** Tokens a lease of a key with a credits/s limit asks for: a share of the rate, at least one call. */
  private wantTokens(l: Lease): number {
    return l.rate > 0 ? Math.max(l.maxCost, Math.min(l.want, Math.ceil(l.rate / 4))) : 0;
  }

  private async syncOnce(): Promise<void> {
    const now = performance.now();
    for (const l of [...this.leases.values()])
      if (now - l.lastUse > IDLE_MS || (l.day >= 0 && now >= l.deadline)) this.retire(l);
    const ops: SyncOp[] = [];
    for (const l of [...this.leases.values(), ...this.returning]) {
      if (!this.due(l, now)) continue;
      const elapsed = Math.max(1, now - l.windowStart);
      if (!l.closing && elapsed >= this.periodMs) {
        const rate = (l.window * 1000) / elapsed;
        l.want = Math.min(this.maxSlice, Math.max(Math.ceil(rate * SLICE_SECONDS), Math.ceil(l.want / 2), 1));
        l.window = 0;
        l.windowStart = now;
      } else if (!l.closing && l.window >= l.want / 4) {
        // Spent fast within one period (a stream starting): the slice doubles rather than wait.
        l.want = Math.min(this.maxSlice, l.want * 2);
      }
      // While the sync is out the slice spends at most `budget`, which Redis keeps (and covers by
      // the allowance) whatever it grants or takes back.
      const budget =
        l.closing || now >= l.deadline
          ? 0
          : Math.max(0, Math.min(l.free, l.allowance - l.unreportedCredits - l.inflight));
      l.free = budget;
      ops.push({
        lease: l,
        spends: [...l.unreported],
        want: l.closing ? -1 : l.want,
        keep: l.inflight + budget,
        allowance: Math.ceil(l.want / 2),
        // Tokens: the holder reports what it holds (it only spends from that until the reply).
        hold: l.tokens,
        ret: l.returnTokens,
        wantTokens: this.wantTokens(l),
      });
    }
    const orphans = this.orphans.splice(0);
    const dead = new Map<string, Spend[]>();
    for (const o of orphans) for (const s of o.spends) dead.set(s.l, [...(dead.get(s.l) ?? []), s]);
    if (ops.length === 0 && dead.size === 0) return;
    // Spends from here on go to a new file; the files before hold only spends this sync carries.
    const acked = this.files.splice(0);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.gen++;
    const keys: string[] = [];
    const args: string[] = [String(this.ttlMs)];
    const push = (hash: string, id: string, day: string, nums: number[], spends: Spend[]): void => {
      keys.push(dayKey(hash), leaseKey(hash), networkKey(hash), bucketKey(hash));
      args.push(id, day, ...nums.map(String), String(spends.length));
      for (const s of spends) args.push(String(s.s), String(s.c), s.n ?? '');
    };
    for (const { lease: l, spends, want, keep, allowance, hold, ret, wantTokens } of ops) {
      const nums = [want, keep, l.daily, allowance, l.rate, hold, ret, wantTokens];
      push(l.hash, l.id, l.day < 0 ? '' : String(l.day), nums, spends);
    }
    for (const [id, spends] of dead) push((spends[0] as Spend).h, id, '', [-1, 0, 0, 0, 0, 0, 0, 0], spends);
    const sent = performance.now();
    let reply: unknown;
    try {
      this.stats.leaseCalls++;
      reply = await this.call(keys, args);
      if (!Array.isArray(reply) || reply.length !== 9 * (ops.length + dead.size))
        throw new Error('malformed reply from the Redis ledger');
    } catch (err) {
      // Outcome unknown: the spends go again (applied once, by sequence); the slices spend their budgets.
      this.files.unshift(...acked);
      this.orphans.unshift(...orphans);
      throw err;
    }
    for (const [i, op] of ops.entries()) this.apply(op, reply.slice(9 * i, 9 * i + 9).map(Number), sent);
    this.compactOpenFile();
    for (const f of [...acked, ...orphans.map((o) => o.file)]) {
      try {
        unlinkSync(f);
      } catch {
        // gone already
      }
    }
  }

  private apply(op: SyncOp, r: number[], sent: number): void {
    const l = op.lease;
    const [granted, spent, seq, state, redisNow, day, , allowance, lent] = r as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    l.returnTokens -= op.ret;
    l.unreported.splice(0, op.spends.length);
    l.unreportedCredits = l.unreported.reduce((a, s) => a + s.c, 0);
    l.granted = granted;
    l.spent = spent;
    l.reported = seq;
    l.day = day;
    if (state !== 0) {
      l.closing = true;
      l.free = 0;
      if (this.leases.get(l.hash) === l) this.leases.delete(l.hash);
      if (state === 2) this.returning = this.returning.filter((x) => x !== l);
      else if (!this.returning.includes(l)) this.returning.push(l);
      return;
    }
    if (l.closing) {
      // Retired while this sync was out: what it lent beyond `hold` goes back with the return.
      l.returnTokens += Math.max(0, lent - op.hold);
      return;
    }
    // Lent now: what Redis counts for this lease, less what was spent of hold meanwhile.
    l.tokens = Math.max(0, lent - (op.hold - l.tokens));
    l.allowance = allowance;
    l.free = Math.max(0, granted - spent - l.unreportedCredits - l.inflight);
    const toMidnight = (day + 1) * 86_400_000 - redisNow;
    // Redis's expiry is at least ttl after `sent`; stop spending a margin before, and before midnight.
    l.deadline = sent + Math.min(this.ttlMs, toMidnight) - Math.max(this.timeoutMs, this.ttlMs / 4);
  }

  private async call(keys: string[], args: string[]): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    try {
      return await timed(this.client.sendCommand(['EVALSHA', LEASE_SHA, ...tail]), this.timeoutMs);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return await timed(this.client.sendCommand(['EVAL', LEASE_LUA, ...tail]), this.timeoutMs);
    }
  }
}

/** The line naming lease `l` in the lease-id file (a spend of nothing). */
function openLine(l: Lease): string {
  return `${JSON.stringify({ l: l.id, s: 0, h: l.hash, c: 0 } satisfies Spend)}\n`;
}

function readSpends(file: string): Spend[] {
  return readJournalLines(
    file,
    (s: Spend) =>
      typeof s.l === 'string' && Number.isSafeInteger(s.s) && /^[0-9a-f]{64}$/.test(s.h) && Number.isSafeInteger(s.c),
  );
}

/**
 * The Redis engine's serving ledger of one replica or app thread: the per-call engine, wrapped in
 * credit leases when `leaseCredits` (the largest slice) is above 0. `summary` is its closing line.
 */
export function redisServingLedger(
  o: RedisLedgerOptions,
  leaseCredits: number,
): { ledger: CreditLedger; summary(): string } {
  const inner = new RedisLedger(o);
  const leased =
    leaseCredits > 0
      ? new LeasedLedger({
          client: o.client,
          inner,
          maxSlice: leaseCredits,
          journalDir: o.journalDir,
          ...(o.commandTimeoutMs !== undefined ? { commandTimeoutMs: o.commandTimeoutMs } : {}),
        })
      : undefined;
  return {
    ledger: leased ?? inner,
    summary: () => {
      const s = inner.stats;
      const lease =
        leased === undefined
          ? ''
          : `, ${leased.stats.leaseCalls} lease syncs for ${leased.stats.leased} calls decided from slices`;
      return `ledger: ${s.redisCalls} Redis requests carried ${s.charges} charges (${s.degradedDecisions} decided locally, ${s.replayed} replayed)${lease}`;
    },
  };
}
