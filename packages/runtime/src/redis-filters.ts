// Polled filters kept in Redis (serve --ledger redis://…), so that a filter made on one replica (or
// app thread) is polled on any other: each filter's record (criteria and cursor, rpc's
// FilterRecord) is one string under its API key's hash tag, as the ledger's keys are, and every
// poll writes it back with a compare-and-set of its version in one script. A poll's write whose
// reply is late or lost is settled before the poll answers (settle below): the write carries the
// poll's id and a deadline on Redis's clock, so a re-read tells whether it applied (the changes
// are answered) or never will (the error is answered and the cursor has not moved). Keys:
//   cn:{<key hash>}:f:<network>:<id>   STRING the FilterRecord as JSON   expires filterTimeoutMs (5 min) after the last poll
//   cn:{<key hash>}:fi:<network>       ZSET   id -> expiry (ms, Redis's clock): the key's live filters
//   cn:{pending:<network>}:tx          LIST   hashes of the pending transactions (forwarded, the upstream's), newest last (4096 kept)
//   cn:{pending:<network>}:seq         STRING the journal's sequence number (INCR per transaction)
//   cn:{pending:<network>}:in          SET    the hashes the journal holds (each is reported once)
// Expiry runs on Redis's clock (TIME in the scripts), so replicas with skewed clocks agree.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectRedis, timed } from '@chainnode/accounts';
import type { RedisClient } from '@chainnode/accounts';
import { ServerError } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { PENDING_JOURNAL, checkFilterSize, filterTimeoutOf, perKeyLimitError } from '@chainnode/rpc';
import type { FilterLimits, FilterRecord, FilterStateStore, FilterUpdate } from '@chainnode/rpc';

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: record, index; ARGV: id, record, timeout ms, per-key limit. 1: made; 0: the key holds the limit. */
const CREATE_LUA = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

/** KEYS: record; returns {record or nil, Redis's clock in ms}. */
const GET_LUA = `${NOW}
return {redis.call('GET', KEYS[1]), now}`;

/**
 * KEYS: record, index; ARGV: id, record, timeout ms, expected version, deadline (ms, Redis's
 * clock). 1 ok, 0 conflict, -1 gone, -2 past its deadline (not applied).
 */
const UPDATE_LUA = `${NOW}
if now > tonumber(ARGV[5]) then return -2 end
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if cjson.decode(cur).version ~= tonumber(ARGV[4]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

/**
 * KEYS: record; ARGV: poll id, deadline, expected version. Whether the poll's write applied: 1 it
 * did, 0 it never will (another write won, or its deadline passed), -1 gone, -2 not yet known.
 */
const SETTLE_LUA = `${NOW}
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
local rec = cjson.decode(cur)
if rec.poll == ARGV[1] then return 1 end
if rec.version ~= tonumber(ARGV[3]) or now > tonumber(ARGV[2]) then return 0 end
return -2`;

/** Re-reads that settle a poll's write whose reply did not come, each with the ledger's timeout. */
const SETTLE_ATTEMPTS = 4;

const OUTCOMES: Record<number, FilterUpdate> = { 1: 'ok', 0: 'conflict', [-1]: 'gone' };

/** KEYS: journal, seq, journal's members; ARGV: kept, hashes... A hash the journal holds is not added again. */
const NOTE_LUA = `for i = 2, #ARGV do
  if redis.call('SADD', KEYS[3], ARGV[i]) == 1 then
    redis.call('RPUSH', KEYS[1], ARGV[i])
    redis.call('INCR', KEYS[2])
  end
end
while redis.call('LLEN', KEYS[1]) > tonumber(ARGV[1]) do redis.call('SREM', KEYS[3], redis.call('LPOP', KEYS[1])) end
return 1`;

/** KEYS: journal, seq; ARGV: seq seen. Returns {last seq, hashes after the seq seen...}. */
const SINCE_LUA = `local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local n = math.min(math.max(last - tonumber(ARGV[1]), 0), redis.call('LLEN', KEYS[1]))
local out = {tostring(last)}
if n > 0 then for _, h in ipairs(redis.call('LRANGE', KEYS[1], -n, -1)) do out[#out + 1] = h end end
return out`;

export class RedisFilterStore implements FilterStateStore {
  /** Redis's clock minus this process's monotonic clock (ms), as last seen. */
  private clockOffset: number | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly network: string,
    private readonly limits: FilterLimits,
    private readonly timeoutMs = 1000,
  ) {}

  async create(owner: string, id: string, record: FilterRecord): Promise<void> {
    const text = checkFilterSize(record);
    const made = await this.run(
      CREATE_LUA,
      [this.recordKey(owner, id), this.indexKey(owner)],
      [id, text, String(filterTimeoutOf(this.limits)), String(this.limits.perKey)],
    );
    if (Number(made) !== 1) throw perKeyLimitError(this.limits);
  }

  async get(owner: string, id: string): Promise<FilterRecord | undefined> {
    const sent = performance.now();
    const [text, now] = (await this.run(GET_LUA, [this.recordKey(owner, id)], [])) as [unknown, number];
    this.clockOffset = Number(now) - (sent + performance.now()) / 2;
    return typeof text === 'string' ? (JSON.parse(text) as FilterRecord) : undefined;
  }

  /**
   * The compare-and-set of a poll, tagged with a fresh poll id and refused by Redis past a
   * deadline (the ledger's timeout from now). Without a reply in time, settle() learns the
   * outcome; when it cannot, the poll fails and its write can no longer apply.
   */
  async update(owner: string, id: string, record: FilterRecord): Promise<FilterUpdate> {
    const poll = randomBytes(16).toString('hex');
    const text = checkFilterSize({ ...record, poll });
    const deadline = Math.ceil((await this.redisNow()) + this.timeoutMs);
    const key = this.recordKey(owner, id);
    const expected = String(record.version - 1);
    const args = [id, text, String(filterTimeoutOf(this.limits)), expected, String(deadline)];
    let r: number;
    try {
      r = Number(await this.send(['EVAL', UPDATE_LUA, '2', key, this.indexKey(owner), ...args]));
    } catch {
      r = await this.settle(key, [poll, String(deadline), expected], deadline);
    }
    const outcome = OUTCOMES[r];
    if (outcome === undefined) throw unavailable();
    return outcome;
  }

  /** Whether the write of poll `args[0]` applied (1), never will (0), or the filter is gone (-1); -2: unknown. */
  private async settle(key: string, args: string[], deadline: number): Promise<number> {
    for (let attempt = 0; attempt < SETTLE_ATTEMPTS; attempt++) {
      try {
        const r = Number(await this.send(['EVAL', SETTLE_LUA, '1', key, ...args]));
        if (r !== -2) return r;
        await sleep(Math.max(deadline - (await this.redisNow()), 0) + 1); // applies by then or never
      } catch {
        await sleep(50 * (attempt + 1));
      }
    }
    return -2;
  }

  /** Redis's clock now (ms), from the offset the last read saw (a TIME first if none has). */
  private async redisNow(): Promise<number> {
    if (this.clockOffset === undefined) {
      const sent = performance.now();
      const [s, us] = (await this.command(['TIME'])) as [string, string];
      this.clockOffset = Number(s) * 1000 + Math.floor(Number(us) / 1000) - (sent + performance.now()) / 2;
    }
    return performance.now() + this.clockOffset;
  }

  async remove(owner: string, id: string): Promise<boolean> {
    const removed = Number(await this.command(['DEL', this.recordKey(owner, id)])) === 1;
    if (removed) await this.command(['ZREM', this.indexKey(owner), id]);
    return removed;
  }

  async notePending(hashes: readonly Hex[]): Promise<void> {
    await this.run(
      NOTE_LUA,
      [...this.journalKeys(), `cn:{pending:${this.network}}:in`],
      [String(PENDING_JOURNAL), ...hashes],
    );
  }

  async pendingSince(seq: number): Promise<{ seq: number; hashes: Hex[] }> {
    const reply = (await this.run(SINCE_LUA, this.journalKeys(), [String(seq)])) as string[];
    return { seq: Number(reply[0]), hashes: reply.slice(1) as Hex[] };
  }

  private recordKey(owner: string, id: string): string {
    return `cn:{${owner}}:f:${this.network}:${id}`;
  }

  private indexKey(owner: string): string {
    return `cn:{${owner}}:fi:${this.network}`;
  }

  private journalKeys(): string[] {
    return [`cn:{pending:${this.network}}:tx`, `cn:{pending:${this.network}}:seq`];
  }

  private async run(lua: string, keys: string[], args: string[]): Promise<unknown> {
    return this.command(['EVAL', lua, String(keys.length), ...keys, ...args]);
  }

  /** One command with the ledger's timeout; Redis away is a -32000 the client can retry. */
  private async command(args: string[]): Promise<unknown> {
    try {
      return await this.send(args);
    } catch {
      throw unavailable();
    }
  }

  private send(args: string[]): Promise<unknown> {
    return timed(this.client.sendCommand(args), this.timeoutMs);
  }
}

function unavailable(): ServerError {
  return new ServerError('filters are unavailable: their store (Redis) does not answer');
}

/** The filter stores of one app thread: in Redis when the ledger is (one connection), else none (memory). */
export interface FilterStates {
  /** openNetwork's filterState for `network`; undefined: memory. */
  of(network: string): ((limits: FilterLimits) => FilterStateStore) | undefined;
  close(): Promise<void>;
}

/** Connects to the ledger's Redis for filters; without one (or if it does not answer now) filters stay in memory. */
export async function openFilterStates(
  url: string | undefined,
  timeoutMs: number,
  log: (line: string) => void,
): Promise<FilterStates> {
  if (url === undefined) return { of: () => undefined, close: async () => {} };
  let client: RedisClient;
  try {
    client = await connectRedis({ url, commandTimeoutMs: timeoutMs }, log);
  } catch (err) {
    log(`filters: Redis unavailable (${(err as Error).message}): filters stay in this process's memory`);
    return { of: () => undefined, close: async () => {} };
  }
  let open = true;
  return {
    of: (network) => (limits) => new RedisFilterStore(client, network, limits, timeoutMs),
    close: async () => {
      if (open) client.destroy();
      open = false;
    },
  };
}
