// The ledger of `serve --threads N`: the main thread owns the engine (embedded or Redis, opened by
// openLedger) and every app thread reaches it through adapters implementing the same interfaces
// (the embedded engine's credits excepted: the threads share their counts in memory), so keys,
// credits and the usage record are exact across threads:
//   - credits, embedded engine: each app thread has its own EmbeddedLedger on one SharedTally
//     (tally.ts: the counts in shared memory, checked and taken under one lock), so 150
//     concurrent calls against a balance of 100 calls admit exactly 100 whichever threads they
//     arrive on, with no hop to another thread; each thread journals its own charges to the day's
//     file before its answers go out, as with one thread;
//   - credits, Redis engine: each app thread opens its own RedisLedger (its own connection,
//     batches and journal folder, <datadir>/ledger-journal/thread-<n>): Redis applies one script
//     at a time, so ledgers on separate connections are exact together, as replicas are, and a
//     debit costs no hop to the main thread and back;
//   - credits, any other CreditLedger: PortLedger / serveLedgerOverPort (port.ts): debit() and
//     settle() run on the main thread's ledger, and a settle resolves only once it made the
//     charge durable;
//   - keys: PortKeyStore, the main thread's KeyStore (list/get/put; watch() forwarded);
//   - usage: PortUsage, the main thread's UsageRecord (record() posted, reads asked).
//   main thread:   const host = new ThreadLedgerHost(sources); worker: openThreadLedger(host.link())
import { withProperty } from '@chainnode/core';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { connectRedis } from '../redis-client.js';
import type { KeyRecord, KeyStore } from '../keys/record.js';
import type { DayUsage, MinuteUsage, UsageEvent, UsageRecord } from '../usage/record.js';
import { EmbeddedLedger } from './embedded.js';
import { PortLedger, serveLedgerOverPort } from './port.js';
import { redisServingLedger } from './leases.js';
import { SharedTally } from './tally.js';
import type { SharedCredits } from './tally.js';
import type { CreditLedger, LedgerFailureMode } from './api.js';

/** The Redis engine's credits as each app thread opens its own ledger on them (openLedger().redis). */
export interface RedisCredits {
  redis: {
    url: string;
    datadir: string;
    failure: LedgerFailureMode;
    commandTimeoutMs?: number;
    journalMax?: number;
    /** Largest credit lease of a key (leases.ts); 0 or absent: every call decided in Redis. */
    leaseCredits?: number;
  };
}

/** RedisCredits with the journal folder of one app thread. */
type RedisCreditsOfThread = RedisCredits & { journalName: string };

/** What an app thread needs (structured-cloneable; transfer the ports). */
export interface ThreadLedgerLink {
  /**
   * The credits: the shared counts of the embedded engine, the Redis engine's settings (the thread
   * connects on its own), else a port to the main thread's ledger.
   */
  credits: MessagePort | SharedCredits | RedisCreditsOfThread;
  keys: MessagePort;
  usage: MessagePort;
}

/** The ports of a link, for `transferList`. */
export function linkPorts(link: ThreadLedgerLink): MessagePort[] {
  return [...(isShared(link.credits) || isRedis(link.credits) ? [] : [link.credits]), link.keys, link.usage];
}

function isShared(c: MessagePort | CreditLedger | SharedCredits | RedisCredits): c is SharedCredits {
  return (c as Partial<SharedCredits>).tally instanceof SharedArrayBuffer;
}

function isRedis(c: MessagePort | CreditLedger | SharedCredits | RedisCredits): c is RedisCredits {
  const r = (c as Partial<RedisCredits>).redis;
  return typeof r === 'object' && r !== null && typeof r.url === 'string';
}

export interface ThreadLedgerSources {
  keys: KeyStore;
  /**
   * The main thread's ledger, the shared counts every thread opens its own ledger on, or the
   * Redis engine's settings (every thread its own connection).
   */
  credits: CreditLedger | SharedCredits | RedisCredits;
  usage: UsageRecord;
}

type Ask = { id: number; op: string; args: unknown[] };
type Answer = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };
/** Messages without an id: one-way (usage records, key-change notices, watch requests). */
type Note = { note: string; args: unknown[] };
/** The notes of one event-loop turn of the asking side (a usage record per call: one message per turn). */
type Notes = { notes: Note[] };

/** Answers `Ask`s on `port` with `handlers`; one-way notes go to `onNote`. */
function servePort(
  port: MessagePort,
  handlers: Record<string, (...args: never[]) => Promise<unknown>>,
  onNote: (n: Note) => void = () => {},
): void {
  port.on('message', (m: Ask | Note | Notes) => {
    if ('notes' in m) {
      for (const n of m.notes) onNote(n);
      return;
    }
    if (!('id' in m)) {
      onNote(m);
      return;
    }
    const h = handlers[m.op];
    const p =
      h === undefined
        ? Promise.reject(new Error(`unknown op ${m.op}`))
        : (h as (...a: unknown[]) => Promise<unknown>)(...m.args);
    p.then(
      (value) => port.postMessage({ id: m.id, ok: true, value } satisfies Answer),
      (err: unknown) =>
        port.postMessage({ id: m.id, ok: false, message: (err as Error).message ?? 'error' } satisfies Answer),
    );
  });
}

/** The asking side of servePort. */
class PortClient {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private closed = false;

  constructor(
    readonly port: MessagePort,
    onNote: (n: Note) => void = () => {},
  ) {
    port.on('message', (m: Answer | Note) => {
      if (!('id' in m)) {
        onNote(m);
        return;
      }
      const w = this.waiting.get(m.id);
      if (w === undefined) return;
      this.waiting.delete(m.id);
      if (m.ok) w.resolve(m.value);
      else w.reject(new Error(m.message));
    });
  }

  ask<T>(op: string, ...args: unknown[]): Promise<T> {
    if (this.closed) return Promise.reject(new Error('thread ledger link is closed'));
    const id = this.next++;
    this.flushNotes(); // an ask (e.g. the usage flush) comes after every note sent before it
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.port.postMessage({ id, op, args } satisfies Ask);
    });
  }

  private notes: Note[] = [];
  private notesScheduled = false;

  /** Sent with the other notes of this event-loop turn, in order. */
  note(note: string, ...args: unknown[]): void {
    if (this.closed) return;
    this.notes.push({ note, args });
    if (this.notesScheduled) return;
    this.notesScheduled = true;
    setImmediate(() => this.flushNotes());
  }

  private flushNotes(): void {
    this.notesScheduled = false;
    if (this.notes.length === 0 || this.closed) return;
    const notes = this.notes;
    this.notes = [];
    this.port.postMessage({ notes } satisfies Notes);
  }

  close(): void {
    this.flushNotes();
    this.closed = true;
    for (const w of this.waiting.values()) w.reject(new Error('thread ledger link is closed'));
    this.waiting.clear();
    this.port.close();
  }
}

/** The main thread's KeyStore, from an app thread. */
export class PortKeyStore implements KeyStore {
  private readonly client: PortClient;
  private readonly watchers = new Set<() => void>();
  private watching = false;

  constructor(port: MessagePort) {
    this.client = new PortClient(port, (n) => {
      if (n.note === 'changed') for (const w of this.watchers) w();
    });
  }

  list(): Promise<KeyRecord[]> {
    return this.client.ask('list');
  }

  get(hash: string): Promise<KeyRecord | undefined> {
    return this.client.ask('get', hash);
  }

  put(record: KeyRecord): Promise<void> {
    return this.client.ask('put', record);
  }

  watch(onChange: () => void): () => void {
    this.watchers.add(onChange);
    if (!this.watching) {
      this.watching = true;
      this.client.note('watch');
    }
    return () => this.watchers.delete(onChange);
  }

  async close(): Promise<void> {
    this.watchers.clear();
    this.client.close();
  }
}

/**
 * How long an app thread sums usage events before posting them: the main thread's record writes
 * to disk once a second (usage/record.ts) anyway, so a tenth of that loses nothing a crash would not.
 */
export const USAGE_POST_MS = 100;

/**
 * The main thread's UsageRecord, from an app thread: record() is posted (synchronous, buffered
 * there). The calls of USAGE_POST_MS with the same key, method and outcome are posted as one
 * event (UsageEvent.calls): the main thread receives a few small notes a second, not one object
 * per call (which, cloned and replayed there, cost more than the record itself) nor one message
 * per event-loop turn (a wake-up of the main thread each: on 2 cores under load it took 7% of a
 * core and a context switch per turn from the app threads).
 */
export class PortUsage implements UsageRecord {
  private readonly client: PortClient;
  private turn = new Map<string, UsageEvent>();
  private timer: NodeJS.Timeout | undefined;

  constructor(port: MessagePort) {
    this.client = new PortClient(port);
  }

  record(e: UsageEvent): void {
    const k = `${e.key}\n${e.method}\n${e.error ?? ''}`;
    const had = this.turn.get(k);
    if (had !== undefined) {
      had.calls = (had.calls ?? 1) + (e.calls ?? 1);
      had.credits += e.credits;
      return;
    }
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.post(), USAGE_POST_MS);
      this.timer.unref(); // close() and flush() post what is left
    }
    this.turn.set(k, withProperty(e, 'calls', e.calls ?? 1));
  }

  /** The events summed so far, to the main thread (before any question: the answer counts them). */
  private post(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const e of this.turn.values()) this.client.note('record', e);
    this.turn.clear();
  }

  days(key: string, n?: number): Promise<DayUsage[]> {
    this.post();
    return this.client.ask('days', key, n);
  }

  minutes(key: string): Promise<MinuteUsage[]> {
    this.post();
    return this.client.ask('minutes', key);
  }

  flush(): Promise<void> {
    this.post();
    return this.client.ask('flush');
  }

  async close(): Promise<void> {
    // Messages posted before close() are delivered in order before the port closes: ask for a
    // flush so that every record of this thread is written by the main thread's record.
    this.post();
    try {
      await this.client.ask('flush');
    } finally {
      this.client.close();
    }
  }
}

/** The main thread's side: one link per app thread onto the engine it owns. */
export class ThreadLedgerHost {
  private readonly ports: MessagePort[] = [];
  private readonly unwatch: (() => void)[] = [];
  private links = 0;

  constructor(private readonly sources: ThreadLedgerSources) {}

  /** A link for one app thread (post it with `transferList: linkPorts(link)`). */
  link(): ThreadLedgerLink {
    const shared = this.sources.credits;
    let credits: MessagePort | SharedCredits | RedisCreditsOfThread;
    if (isShared(shared)) credits = shared;
    else if (isRedis(shared)) credits = { redis: shared.redis, journalName: `thread-${this.links}` };
    else {
      const channel = new MessageChannel();
      serveLedgerOverPort(shared, channel.port1);
      this.ports.push(channel.port1);
      credits = channel.port2;
    }
    const keys = new MessageChannel();
    const ks = this.sources.keys;
    servePort(
      keys.port1,
      {
        list: () => ks.list(),
        get: (hash: string) => ks.get(hash),
        put: (record: KeyRecord) => ks.put(record),
      },
      (n) => {
        if (n.note === 'watch')
          this.unwatch.push(ks.watch(() => keys.port1.postMessage({ note: 'changed', args: [] } satisfies Note)));
      },
    );
    const usage = new MessageChannel();
    const us = this.sources.usage;
    servePort(
      usage.port1,
      {
        days: (key: string, n?: number) => us.days(key, n),
        minutes: (key: string) => us.minutes(key),
        flush: () => us.flush(),
      },
      (n) => {
        if (n.note === 'record') us.record(n.args[0] as UsageEvent);
      },
    );
    this.ports.push(keys.port1, usage.port1);
    this.links++;
    return { credits, keys: keys.port2, usage: usage.port2 };
  }

  /** After every app thread stopped: stops answering (the caller closes the engine it owns). */
  close(): void {
    for (const u of this.unwatch) u();
    for (const p of this.ports) p.close();
  }
}

/** An app thread's ledger: the interfaces of the main thread's engine, over the link's ports. */
export interface ThreadLedger {
  keys: KeyStore;
  credits: CreditLedger;
  usage: UsageRecord;
  close(): Promise<void>;
}

/**
 * An app thread's ledger. `log`: the thread's operational lines (the Redis engine's outage and
 * recovery notices, and at close the count of its Redis requests).
 */
export async function openThreadLedger(
  link: ThreadLedgerLink,
  log: (line: string) => void = () => {},
): Promise<ThreadLedger> {
  let credits: CreditLedger;
  let closeClient = async (): Promise<void> => {};
  const c = link.credits;
  if (isShared(c)) credits = new EmbeddedLedger(c.datadir, Date.now, new SharedTally(c.tally));
  else if (isRedis(c)) {
    const r = c.redis;
    const timeout = r.commandTimeoutMs !== undefined ? { commandTimeoutMs: r.commandTimeoutMs } : {};
    const client = await connectRedis({ url: r.url, ...timeout }, log);
    const ledger = redisServingLedger(
      {
        client,
        failure: r.failure,
        journalDir: join(r.datadir, JOURNAL_DIR, c.journalName),
        ...(r.journalMax !== undefined ? { journalMax: r.journalMax } : {}),
        ...timeout,
        log,
      },
      r.leaseCredits ?? 0,
    );
    credits = ledger.ledger;
    closeClient = async () => {
      log(ledger.summary());
      try {
        await client.close();
      } catch {
        client.destroy();
      }
    };
  } else credits = new PortLedger(c);
  const keys = new PortKeyStore(link.keys);
  const usage = new PortUsage(link.usage);
  return {
    keys,
    credits,
    usage,
    close: async () => {
      await usage.close().catch(() => undefined);
      await credits.close();
      await closeClient();
      await keys.close();
    },
  };
}

/** Where the Redis engine's journals live in a datadir (one folder per ledger instance). */
export const JOURNAL_DIR = 'ledger-journal';
