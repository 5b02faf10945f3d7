// Polled filters kept in Redis (serve --ledger redis://…), so that a filter made on one replica (or
// app thread) is polled on any other: each filter's record (criteria and cursor, rpc's
// FilterRecord) is one string under its API key's hash tag, as the ledger's keys are, and every
// poll writes it back with a compare-and-set of its version in one script. Keys:
//   cn:{<key hash>}:f:<network>:<id>   STRING the FilterRecord as JSON   expires filterTimeoutMs (5 min) after the last poll
//   cn:{<key hash>}:fi:<network>       ZSET   id -> expiry (ms, Redis's clock): the key's live filters
//   cn:{pending:<network>}:tx          LIST   hashes of the transactions forwarded, newest last (4096 kept)
//   cn:{pending:<network>}:seq         STRING the journal's sequence number (INCR per transaction)
// Expiry runs on Redis's clock (TIME in the scripts), so replicas with skewed clocks agree.
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

/** KEYS: record, index; ARGV: id, record, timeout ms, expected version. 1 ok, 0 conflict, -1 gone. */
const UPDATE_LUA = `${NOW}
local cur = redis.call('GET', KEYS[1])
if not cur then return -1 end
if cjson.decode(cur).version ~= tonumber(ARGV[4]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

/** KEYS: journal, seq; ARGV: hash, kept. */
const NOTE_LUA = `redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
return redis.call('INCR', KEYS[2])`;

/** KEYS: journal, seq; ARGV: seq seen. Returns {last seq, hashes after the seq seen...}. */
const SINCE_LUA = `local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local n = math.min(math.max(last - tonumber(ARGV[1]), 0), redis.call('LLEN', KEYS[1]))
local out = {tostring(last)}
if n > 0 then for _, h in ipairs(redis.call('LRANGE', KEYS[1], -n, -1)) do out[#out + 1] = h end end
return out`;

export class RedisFilterStore implements FilterStateStore {
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
    const text = await this.command(['GET', this.recordKey(owner, id)]);
    return typeof text === 'string' ? (JSON.parse(text) as FilterRecord) : undefined;
  }

  async update(owner: string, id: string, record: FilterRecord): Promise<FilterUpdate> {
    const text = checkFilterSize(record);
    const r = Number(
      await this.run(
        UPDATE_LUA,
        [this.recordKey(owner, id), this.indexKey(owner)],
        [id, text, String(filterTimeoutOf(this.limits)), String(record.version - 1)],
      ),
    );
    return r === 1 ? 'ok' : r === 0 ? 'conflict' : 'gone';
  }

  async remove(owner: string, id: string): Promise<boolean> {
    const removed = Number(await this.command(['DEL', this.recordKey(owner, id)])) === 1;
    if (removed) await this.command(['ZREM', this.indexKey(owner), id]);
    return removed;
  }

  async notePending(hash: Hex): Promise<void> {
    await this.run(NOTE_LUA, this.journalKeys(), [hash, String(PENDING_JOURNAL)]);
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
      return await timed(this.client.sendCommand(args), this.timeoutMs);
    } catch {
      throw new ServerError('filters are unavailable: their store (Redis) does not answer');
    }
  }
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
