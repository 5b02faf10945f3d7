// The Redis connection every Redis engine uses (keys, credits, usage record): @redis/client with
// an explicit command timeout and no offline queue (a command issued while disconnected fails at
// once), and the timeout a written command waits for its reply.
import type { createClient } from '@redis/client';
import { LedgerUnavailableError } from './ledger/api.js';

export interface RedisOptions {
  /** redis://host:port[/db] */
  url: string;
  /** Per-command timeout (ms); a debit that takes longer counts as Redis being away. */
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
}

export type RedisClient = ReturnType<typeof createClient>;

/** Checks a `--ledger` URL: redis://[user:password@]host:port[/db]. */
export function parseRedisUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new Error('--ledger: expected redis://host:port[/db] (not a URL)'); // the value may hold a password: not echoed
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:')
    throw new Error('--ledger: expected a redis:// (or rediss://) URL');
  if (u.hostname === '') throw new Error('--ledger: the URL names no host');
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/\d{1,2}$/.test(u.pathname))
    throw new Error('--ledger: the path must be a database number, e.g. redis://127.0.0.1:6379/0');
  return value;
}

/** A connected client with explicit timeouts and no offline queue; rejects if Redis does not answer. */
export async function connectRedis(opts: RedisOptions, log: (line: string) => void = () => {}): Promise<RedisClient> {
  // The client's code loads with the first connection: the embedded ledger never needs it.
  const { createClient } = await import('@redis/client');
  const client = createClient({
    url: parseRedisUrl(opts.url),
    disableOfflineQueue: true,
    commandsQueueMaxLength: 100_000,
    commandOptions: { timeout: opts.commandTimeoutMs ?? 1000 },
    socket: {
      connectTimeout: opts.connectTimeoutMs ?? 2000,
      // Keep trying (every 50-500 ms) once connected; the ledger decides what to do meanwhile.
      reconnectStrategy: (retries: number) => Math.min(50 + retries * 50, 500),
    },
  });
  let reported = false;
  client.on('error', (err: Error) => {
    if (!reported) log(`ledger: redis error: ${err.message}`); // the URL (and any password in it) is never printed
    reported = true;
  });
  client.on('ready', () => {
    if (reported) log('ledger: redis connection ready');
    reported = false;
  });
  const first = client.connect();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      first,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer')), opts.connectTimeoutMs ?? 2000);
      }),
    ]);
  } catch (err) {
    client.destroy();
    first.catch(() => {});
    throw new LedgerUnavailableError(`cannot reach the Redis ledger: ${(err as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
  return client as RedisClient;
}

export class RedisTimeoutError extends Error {
  constructor(ms: number) {
    super(`no reply from Redis within ${ms} ms`);
    this.name = 'RedisTimeoutError';
  }
}

/**
 * The reply of `p`, or a RedisTimeoutError after `ms`. node-redis's own command timeout only
 * covers the wait before a command is written; once written, a command waits for its reply for
 * as long as the connection lives. The command may still run after we gave up on it: callers
 * treat a timeout as "outcome unknown" (see the journal).
 */
export function timed<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeoutError(ms)), ms);
  });
  p.catch(() => {}); // a late failure of a command we gave up on is not "unhandled"
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
