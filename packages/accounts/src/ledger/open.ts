// Opens the configured ledger engine: embedded (default: files in the datadir) or Redis
// (`--ledger redis://host:port[/db]`). `serve` and every `keys` command go through here.
import { join } from 'node:path';
import { FileKeyStore } from '../keys/file-store.js';
import { KeyManager } from '../keys/manager.js';
import { RedisKeyStore } from '../keys/redis-store.js';
import type { KeyStore } from '../keys/record.js';
import { connectRedis } from '../redis-client.js';
import { EmbeddedUsage } from '../usage/record.js';
import type { UsageRecord } from '../usage/record.js';
import { RedisUsage } from '../usage/redis.js';
import type { UsageRedisClient } from '../usage/redis.js';
import type { PlansOf } from '../plans.js';
import { EmbeddedLedger } from './embedded.js';
import { SharedTally, sharedTallyBuffer } from './tally.js';
import type { SharedCredits } from './tally.js';
import { redisServingLedger } from './leases.js';
import { redisUsage } from './redis.js';
import { JOURNAL_DIR } from './threads.js';
import type { RedisCredits } from './threads.js';
import type { CreditLedger, LedgerFailureMode, Usage } from './api.js';

export interface LedgerSpec {
  /** redis://host:port[/db]; undefined: the embedded engine in `datadir`. */
  url?: string;
  datadir: string;
  /** While Redis is unreachable: `open` (default) serves and journals, `closed` refuses paid calls. */
  failure?: LedgerFailureMode;
  commandTimeoutMs?: number;
  /** Most charges journaled locally while Redis is away (fail-open). */
  journalMax?: number;
  /** Largest credit lease of a key (leases.ts); 0 or absent: every call decided in Redis. */
  leaseCredits?: number;
  /**
   * Name of this instance's journal folder, <datadir>/ledger-journal/<name> (default "main").
   * Several ledgers in one process (serve --threads) need one name each: a ledger replays the
   * journals it finds in its own folder at start, as left by a crashed predecessor.
   */
  journalName?: string;
  log?: (line: string) => void;
  /**
   * `serve --threads`: the embedded engine keeps its counts in shared memory (OpenLedger.shared),
   * on which every app thread opens its own ledger. Ignored by the Redis engine.
   */
  threads?: boolean;
}

export interface OpenLedger {
  readonly engine: 'embedded' | 'redis';
  readonly keys: KeyStore;
  /** The serving ledger, opened on first use (only `serve` needs it). */
  ledger(): CreditLedger;
  /** With `threads` (embedded engine): the counts every thread's ledger shares, ledger()'s included. */
  readonly shared?: SharedCredits;
  /** The Redis engine: what an app thread opens its own ledger (connection, batches, journal) with. */
  readonly redis?: RedisCredits;
  /** Today's usage of a key, read without opening the serving ledger (for the `keys` commands). */
  usage(hash: string): Promise<Usage>;
  /** The per-key/per-method usage record of this engine (the dashboard's), opened on first use. */
  usageRecord(): UsageRecord;
  /** The key manager over this engine's keys, usage record and balances (dashboard, `keys`, `start`). */
  manager(config: PlansOf): KeyManager;
  close(): Promise<void>;
}

function managerOf(l: OpenLedger, config: PlansOf): KeyManager {
  return new KeyManager({ keys: l.keys, config, usage: l.usageRecord(), balance: (hash) => l.usage(hash) });
}

export async function openLedger(spec: LedgerSpec): Promise<OpenLedger> {
  if (spec.url === undefined) {
    const keys = new FileKeyStore(spec.datadir);
    let ledger: EmbeddedLedger | undefined;
    let record: EmbeddedUsage | undefined;
    const shared: SharedCredits | undefined =
      spec.threads === true ? { datadir: spec.datadir, tally: sharedTallyBuffer() } : undefined;
    const open = (): EmbeddedLedger =>
      (ledger ??= new EmbeddedLedger(
        spec.datadir,
        Date.now,
        shared === undefined ? undefined : new SharedTally(shared.tally),
      ));
    const l: OpenLedger = {
      engine: 'embedded',
      keys,
      ...(shared !== undefined ? { shared } : {}),
      ledger: open,
      usage: (hash) => open().usage(hash),
      usageRecord: () => (record ??= new EmbeddedUsage(spec.datadir).start()),
      manager: (config) => managerOf(l, config),
      close: async () => {
        await record?.close();
        await ledger?.close();
        await keys.close();
      },
    };
    return l;
  }
  const client = await connectRedis(
    { url: spec.url, ...(spec.commandTimeoutMs !== undefined ? { commandTimeoutMs: spec.commandTimeoutMs } : {}) },
    spec.log,
  );
  const keys = new RedisKeyStore(client);
  let serving: ReturnType<typeof redisServingLedger> | undefined;
  let record: RedisUsage | undefined;
  const l: OpenLedger = {
    engine: 'redis',
    redis: {
      redis: {
        url: spec.url,
        datadir: spec.datadir,
        failure: spec.failure ?? 'open',
        ...(spec.commandTimeoutMs !== undefined ? { commandTimeoutMs: spec.commandTimeoutMs } : {}),
        ...(spec.journalMax !== undefined ? { journalMax: spec.journalMax } : {}),
        ...(spec.leaseCredits !== undefined ? { leaseCredits: spec.leaseCredits } : {}),
      },
    },
    usageRecord: () => (record ??= new RedisUsage(client as unknown as UsageRedisClient, spec.log).start()),
    keys,
    ledger: () =>
      (serving ??= redisServingLedger(
        {
          client,
          failure: spec.failure ?? 'open',
          journalDir: join(spec.datadir, JOURNAL_DIR, spec.journalName ?? 'main'),
          ...(spec.journalMax !== undefined ? { journalMax: spec.journalMax } : {}),
          ...(spec.commandTimeoutMs !== undefined ? { commandTimeoutMs: spec.commandTimeoutMs } : {}),
          ...(spec.log !== undefined ? { log: spec.log } : {}),
        },
        spec.leaseCredits ?? 0,
      )).ledger,
    usage: (hash) => redisUsage(client, hash, spec.commandTimeoutMs),
    manager: (config) => managerOf(l, config),
    close: async () => {
      await record?.close();
      if (serving !== undefined) {
        await serving.ledger.close();
        spec.log?.(serving.summary());
      }
      await keys.close();
      try {
        await client.close();
      } catch {
        client.destroy();
      }
    },
  };
  return l;
}
