// The serve runtime: opens each network (its store, offload workers and rpc service: network.ts), the
// ledger and the dashboard listener, runs the uWS server until SIGTERM/SIGINT, then shuts down in
// order: stop accepting, let in-flight requests finish, stop each network's offload workers and
// follower, close the stores and the ledger. It takes a checked RuntimeConfig (config.ts) and
// parses nothing.
// Without networks the one chain of `datadir` is served on every Host (and a follow of '' follows
// it live). A network with `follow` follows its own upstream with its own ingest thread.
// With `threads` N > 1 this thread owns the ledger, the dashboard and each followed datadir's one
// ingest thread, and N app threads (app-thread.ts) each run the rest on the same port; see
// serveThreads. `threads` 1 runs everything on this thread.
// Nothing logged here contains an API key (the log scrubs key material, server's log.ts).
import type { MessagePort } from 'node:worker_threads';
import { hasAdminToken, startDashboard } from '@chainnode/dashboard';
import type { RunningDashboard } from '@chainnode/dashboard';
import { createLog, defaultLogFormat, holdFreePort, startServer } from '@chainnode/server';
import { LedgerUnavailableError, ThreadLedgerHost, openLedger } from '@chainnode/accounts';
import type { AccessRecord, LedgerView, Log, NetworkRuntime, PeerMetrics, RunningServer } from '@chainnode/server';
import type { CreditLedger, KeyStore, OpenLedger, UsageRecord } from '@chainnode/accounts';
import { resolveConfig } from '@chainnode/rpc';
import { LevelChainStore } from '@chainnode/store';
import type { ChainStore } from '@chainnode/core';
import type { FollowSettings, IngestThread } from '@chainnode/ingest';
import { RuntimeError, servedDatadirs } from './config.js';
import type { RuntimeConfig } from './config.js';
import { filterLimitsOf, rpcConfigOf, transportConfigOf } from './settings/file.js';
import type { ServerConfig } from './settings/file.js';
import { checkThreadPool, ingestWorkerData, openNetwork } from './network.js';
import { openFilterStates } from './redis-filters.js';
import { FilterStoresHost } from './thread-filters.js';
import type { ThreadFilterPort } from './thread-filters.js';
import type { AppThreadListening } from './app-thread-api.js';
import { AppThreads } from './app-threads.js';
import { ledgerView } from './ledger-views.js';
import { StopSignals } from './signals.js';

/** A started server with everything it holds (store, offload workers, follower). */
export interface App {
  srv: RunningServer;
  /** Stop accepting, finish in-flight requests, stop the follower and offload workers, close the store. */
  stop(): Promise<void>;
  /** The first half of stop(): stop accepting and finish in-flight requests. */
  drain(): Promise<void>;
  /** The second half: stop the follower and the offload workers, close the store. */
  release(): Promise<void>;
  /** Rejects when a part started without waiting cannot serve (a network's offload workers). */
  failure: Promise<never>;
}

/** Keys, credits and usage record a server uses (the caller keeps ownership and closes them). */
export interface AppLedger {
  keys: KeyStore;
  credits: CreditLedger;
  usage: UsageRecord;
}

export interface AppExtras {
  /** Other threads of this process open the datadir too (serve --threads). */
  shared?: boolean;
  /**
   * serve --threads: the events of each followed network's ingest thread, which the main thread
   * owns, by network name ('' for the one network of --datadir): required for every followed network.
   */
  followFeeds?: ReadonlyMap<string, MessagePort>;
  /** Print the startup notes (fault injection, offload workers, follower): one app thread of several does. */
  notes?: boolean;
  /** How many app threads serve the port (serve --threads; absent: 1): for the thread-pool check. */
  threads?: number;
  /** serve --threads, thread 0: the other threads' metrics counts, added to its own at /metrics. */
  peerMetrics?: () => Promise<PeerMetrics[]>;
  /** serve --threads: this app thread's index. */
  thread?: number;
  /** The Redis ledger's state for its gauges (the thread that owns the ledger knows it). */
  ledgerStatus?: () => Promise<LedgerView | undefined>;
  /** serve --threads without Redis: the filters every app thread shares, on the main thread. */
  filterPort?: ThreadFilterPort;
}

/** The process log (configureLog); lines are scrubbed of key material. */
let processLog: Log = createLog({ format: defaultLogFormat(), level: 'info' });
let accessLog: ((rec: AccessRecord) => void) | undefined;

/** Sets up the log (the runtime and each app thread). */
export function configureLog(config: RuntimeConfig['log']): void {
  processLog = createLog({ format: config.format, level: config.level });
  const log = processLog;
  accessLog = config.access
    ? (rec) => {
        const { network, ...fields } = rec;
        log.child('access', network).record(rec.method, fields);
      }
    : undefined;
}

/** The lines of one part of the runtime: the part's name is the record's component. */
export type PartLog = (line: string) => void;

const WARNING = /\b(error|failed|cannot|unavailable|lost|stopped:)\b/i;

/**
 * The log of one component (`ledger`, `dashboard`, `follow`, `logs`, `serve`) of one network (null:
 * the process, or the one network of `datadir`). The parts hand over text lines, already worded
 * for the text format (`network x: follow: …`), which is why a line is written as given; a line
 * reporting a failure is a warning.
 */
export function partLog(component: string, network: string | null = null): PartLog {
  return (line) => processLog.child(component, network).line(WARNING.test(line) ? 'warn' : 'info', line);
}

/** The runtime's own lines (startup, signals, stopping). */
const log = partLog('serve');

/**
 * Opens every network (each its store, offload workers, rpc service and, when followed, its ingest
 * thread) and starts the uWS server with the ledger `ledgerOf()` returns (asked for once the
 * stores are open: the embedded engine creates files in the datadir, which must not appear before
 * the store's checks); nothing is printed to stdout.
 */
export async function startApp(config: RuntimeConfig, ledgerOf: () => AppLedger, extras: AppExtras = {}): Promise<App> {
  configureLog(config.log);
  const server = config.server;
  const notes = extras.notes ?? true;
  const quiet =
    (component: string, network: string | null): PartLog =>
    (line) => {
      if (notes) partLog(component, network)(line);
    };
  const follows = new Map(config.follows.map((f) => [f.network, f.follow]));
  const followOf = (network: string): { follow?: FollowSettings; followFeed?: MessagePort } => {
    const follow = follows.get(network);
    if (follow === undefined) return {};
    const feed = extras.followFeeds?.get(network);
    // With threads the main thread owns the ingest: an app thread never starts its own.
    if (extras.shared === true && feed === undefined)
      throw new Error(`no ingest feed for followed network "${network}"`);
    return { follow, ...(feed !== undefined ? { followFeed: feed } : {}) };
  };
  const rpcConfig = resolveConfig(rpcConfigOf(server));
  if (notes)
    checkThreadPool(
      server,
      config.networks.length === 0
        ? config.follows.length === 0
          ? 1
          : 0
        : config.networks.filter((n) => n.follow === undefined).length,
      extras.threads ?? 1,
      log,
    );
  const shared = extras.shared === true;
  // Polled filters live in the ledger's Redis when there is one, so any replica or thread continues them.
  const filters = await openFilterStates(config.ledger.url, server.ledgerCommandTimeoutMs, quiet('ledger', null));
  const filterState = (network: string) => {
    const of = filters.of(network) ?? extras.filterPort?.stateOf(network);
    return of === undefined ? {} : { filterState: of };
  };
  let failed: (err: RuntimeError) => void = () => {};
  const failure = new Promise<never>((_, reject) => (failed = reject));
  failure.catch(() => undefined);
  // One after the other: each opens a LevelDB and starts worker threads; a failure closes the rest.
  const networks: NetworkRuntime[] = [];
  const closeAll = async (): Promise<void> => {
    await Promise.allSettled(networks.map((n) => n.close()));
    await filters.close();
  };
  try {
    if (config.networks.length === 0) {
      networks.push(
        await openNetwork({
          name: '',
          datadir: config.datadir,
          implicit: true,
          config: server,
          rpcConfig,
          log: quiet,
          shared,
          onFailure: failed,
          ...followOf(''),
          ...filterState(''),
        }),
      );
    }
    for (const n of config.networks) {
      networks.push(
        await openNetwork({
          name: n.name,
          datadir: n.datadir,
          config: server,
          rpcConfig,
          log: quiet,
          shared,
          onFailure: failed,
          ...followOf(n.name),
          ...filterState(n.name),
        }),
      );
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  let srv: RunningServer;
  try {
    const ledger = ledgerOf();
    srv = await startServer({
      networks,
      ...(config.defaultNetwork !== undefined ? { defaultNetwork: config.defaultNetwork } : {}),
      config: transportConfigOf(server),
      host: config.host,
      port: config.port,
      log,
      ledger: { keys: ledger.keys, credits: ledger.credits },
      usage: ledger.usage,
      ...(config.failoverUrl !== undefined ? { failoverUrl: config.failoverUrl } : {}),
      ...(config.metricsPort !== undefined ? { metricsPort: config.metricsPort } : {}),
      ...(extras.peerMetrics !== undefined ? { peerMetrics: extras.peerMetrics } : {}),
      ...(extras.thread !== undefined ? { thread: extras.thread } : {}),
      ...(extras.ledgerStatus !== undefined ? { ledgerStatus: extras.ledgerStatus } : {}),
      ...(accessLog !== undefined ? { access: accessLog } : {}),
    });
  } catch (err) {
    await closeAll();
    throw new RuntimeError((err as Error).message);
  }
  const release = async (): Promise<void> => {
    await srv.router.close();
    await filters.close();
  };
  return {
    srv,
    drain: () => srv.close(),
    release,
    failure,
    stop: async () => {
      await srv.close();
      await release();
    },
  };
}

/** The ledger of this process, opened once on this thread (the main thread with app threads). */
async function openServeLedger(config: RuntimeConfig, hooks: RuntimeHooks): Promise<OpenLedger> {
  let ledger: OpenLedger | undefined;
  try {
    ledger = await openLedger({
      ...(config.ledger.url !== undefined ? { url: config.ledger.url } : {}),
      datadir: config.datadir,
      failure: config.ledger.failure,
      commandTimeoutMs: config.server.ledgerCommandTimeoutMs,
      journalMax: config.server.ledgerJournalMax,
      leaseCredits: config.server.ledgerLeaseCredits,
      log: partLog('ledger'),
      threads: config.threads > 1,
    });
    await hooks.onLedger?.(ledger, config.server);
    return ledger;
  } catch (err) {
    await ledger?.close();
    if (err instanceof LedgerUnavailableError) throw new RuntimeError(err.message);
    throw err;
  }
}

/** The dashboard on the admin listener, when asked for (on this thread, beside the ledger it reads). */
async function startAdmin(
  config: RuntimeConfig,
  ledger: OpenLedger,
  rpcPort: number,
): Promise<RunningDashboard | undefined> {
  const d = config.dashboard;
  if (d === undefined) return undefined;
  let dash: RunningDashboard;
  try {
    dash = await startDashboard({
      datadir: config.datadir,
      keys: ledger.manager(config.server),
      host: d.host,
      port: d.port,
      rpcUrl: `http://${hostForUrl(config.host)}:${rpcPort}`,
      log: partLog('dashboard'),
      ...(d.tls !== undefined ? { tls: d.tls } : {}),
    });
  } catch (err) {
    throw new RuntimeError(`cannot start the dashboard: ${(err as Error).message}`);
  }
  if (!hasAdminToken(config.datadir))
    processLog
      .child('dashboard')
      .warn(`no admin token yet: create one with node-cli admin token create --datadir ${config.datadir}`);
  return dash;
}

/** `host` as it stands in a URL (an IPv6 address in brackets). */
export function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** What is listening once the runtime has started. */
export interface Listening {
  /** The JSON-RPC listener's port (the one picked when the config said 0). */
  port: number;
  metricsPort: number | undefined;
  /** The dashboard's URL, when it is served. */
  dashboardUrl?: string;
  /** Where keys and credits live. */
  ledger: OpenLedger['engine'];
}

export interface RuntimeHooks {
  /** Once the ledger is open, before anything serves (`start` makes its development key there). */
  onLedger?: (ledger: OpenLedger, server: ServerConfig) => Promise<void>;
  /** Once everything listens (`serve` prints its banner). */
  onListening?: (l: Listening) => void;
}

/**
 * Runs `stop` on the first SIGTERM/SIGINT (at once if one came during startup); a second one
 * exits at once (signals.ts). Resolves with the exit code: 0, or 1 when stopping failed.
 */
async function untilSignal(signals: StopSignals, stop: () => Promise<void>): Promise<number> {
  signals.markStarted();
  await signals.next();
  try {
    await stop();
    log('stopped cleanly');
    return 0;
  } catch (err) {
    log(`error while stopping: ${(err as Error).message}`);
    return 1;
  }
}

/**
 * The runtime's one entry point: serves `config` until SIGTERM/SIGINT, then stops cleanly and
 * resolves with the process's exit code (the caller exits with it: idle keep-alive clients must
 * not keep the process alive past a clean stop). A signal at any moment from the call on, startup
 * included, is handled so. A failure to start rejects, with a RuntimeError when the operator can
 * act on its message, after closing whatever was opened.
 */
export async function runRuntime(config: RuntimeConfig, hooks: RuntimeHooks = {}): Promise<number> {
  // First the log, then: a signal from now on stops the process cleanly, whatever startup is
  // doing (one that came while the modules loaded is logged in the format asked for).
  configureLog(config.log);
  const signals = new StopSignals(log);
  const ledger = await openServeLedger(config, hooks);
  if (signals.received !== undefined) {
    // Stopped before anything serves: nothing to drain.
    await ledger.close();
    log('stopped cleanly');
    return 0;
  }
  if (config.threads > 1) return serveThreads(config, ledger, signals, hooks);
  let app: App;
  try {
    app = await startApp(config, () => ({ keys: ledger.keys, credits: ledger.ledger(), usage: ledger.usageRecord() }), {
      ledgerStatus: async () => ledgerView(ledger, config.ledger.failure),
    });
  } catch (err) {
    await ledger.close();
    throw err;
  }
  let dash: RunningDashboard | undefined;
  try {
    dash = await startAdmin(config, ledger, app.srv.port);
  } catch (err) {
    await app.stop();
    await ledger.close();
    throw err;
  }
  hooks.onListening?.(listening(app.srv, dash, ledger));
  return serveUntil(signals, app.failure, async () => {
    await app.drain();
    await dash?.close();
    await app.release();
    await ledger.close();
  });
}

/**
 * Serves until a signal (stops, resolves 0; untilSignal) or until `failure` rejects: a part that
 * cannot serve (an app thread, offload workers started without waiting), logged, then stopped,
 * resolving 1. Either way `stopAll` runs once.
 */
function serveUntil(signals: StopSignals, failure: Promise<never>, stopAll: () => Promise<void>): Promise<number> {
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= stopAll());
  return Promise.race([
    untilSignal(signals, stop),
    failure.catch(async (err: unknown) => {
      processLog.error(`${(err as Error).message}; stopping`);
      await stop();
      return 1;
    }),
  ]);
}

function listening(
  srv: { port: number; metricsPort: number | undefined },
  dash: RunningDashboard | undefined,
  ledger: OpenLedger,
): Listening {
  return {
    port: srv.port,
    metricsPort: srv.metricsPort,
    ...(dash !== undefined ? { dashboardUrl: dash.url } : {}),
    ledger: ledger.engine,
  };
}

/**
 * `--threads N`: N app threads (app-thread.ts), each a whole server (uWS app, its own shared
 * handle on the datadir, offload workers, key registry) listening on the same port (uWS sets
 * SO_REUSEPORT on an explicit port: the kernel spreads connections over the threads). This thread
 * owns the ledger engine (embedded or Redis) and the dashboard; the app threads reach the ledger
 * through the threads engine of @chainnode/accounts (same interfaces), so credits stay exact across threads. Thread 0
 * starts first and alone serves metrics.
 *
 * A followed datadir (`--follow`, `follow=<URL>`) has ONE ingest thread, owned here
 * (@chainnode/ingest's IngestThread); every app thread gets a port carrying its events, applies each
 * commit to its own store and publishes it to its own subscribers, and shows the ingest status in
 * its /health and metrics. An app thread serves once its store opens: at once when the datadir
 * holds a chain, else when the ingest reports ready (as with one thread).
 *
 * LevelDB handles: classic-level shares one LevelDB per datadir between the threads of a process,
 * but that LevelDB keeps using the block cache and filter policy of its FIRST opener, which that
 * opener frees when it closes: a first opener closing while another thread reads (or LevelDB
 * compacts) uses freed memory (the SIGSEGVs seen while building this). So this thread opens every
 * datadir that holds a chain first (an anchor handle, never read) and closes it last; a followed
 * datadir that is still empty is first opened by its ingest thread, which therefore stops after
 * the app threads released theirs.
 */
async function serveThreads(
  config: RuntimeConfig,
  ledger: OpenLedger,
  signals: StopSignals,
  hooks: RuntimeHooks,
): Promise<number> {
  // The embedded engine's counts are shared memory every app thread opens its own ledger on (the
  // main thread's ledger() too, for the dashboard); with Redis every app thread opens its own
  // connection and batches its own debits (this thread's ledger() replays a journal left in
  // ledger-journal/main by an earlier single-thread run).
  const credits = ledger.ledger();
  const host = new ThreadLedgerHost({
    keys: ledger.keys,
    credits: ledger.shared ?? ledger.redis ?? credits,
    usage: ledger.usageRecord(),
  });
  const anchors: ChainStore[] = [];
  const ingests = new Map<string, IngestThread>();
  // Without Redis the app threads share their filters through this thread (with it, through Redis).
  const filters = config.ledger.url === undefined ? new FilterStoresHost(filterLimitsOf(config.server)) : undefined;
  const threads = new AppThreads({
    config,
    host,
    ingests,
    ownLedger: () => ledgerView(ledger, config.ledger.failure),
    ...(filters !== undefined ? { filters } : {}),
  });
  let dash: RunningDashboard | undefined;
  // Drain the app threads (no request runs any more; commits still reach them, harmlessly), then
  // each releases its stores (and closes its ports of the ingest), then the ingest threads stop,
  // then the anchors close: the first opener of each datadir closes last.
  const stopAll = async (): Promise<void> => {
    await threads.drain();
    await dash?.close();
    await threads.release();
    await Promise.allSettled([...ingests.values()].map((i) => i.stop()));
    await Promise.allSettled(anchors.map((a) => a.close()));
    host.close();
    filters?.close();
    await ledger.close();
  };
  let first: AppThreadListening;
  try {
    // Anchors (see above): a datadir that does not open here (missing, empty, busy) is left to
    // the app threads, which fail with the usual message, or to its ingest (an empty followed datadir).
    for (const datadir of new Set(servedDatadirs(config))) {
      const anchor = await LevelChainStore.open(datadir, { shared: true }).catch(() => undefined);
      if (anchor !== undefined) anchors.push(anchor);
    }
    // The ingest's code loads only when a network follows an upstream.
    if (config.follows.length > 0) {
      const { IngestThread } = await import('@chainnode/ingest');
      for (const f of config.follows) ingests.set(f.network, new IngestThread(ingestWorkerData(f.datadir, f.follow)));
    }
    // uWS sets SO_REUSEPORT only on an explicit port: with --port 0 one is found and held here
    // until the threads listen beside the hold (port-hold.ts in @chainnode/server).
    const hold = config.port === 0 ? await holdFreePort(config.host) : undefined;
    const port = hold?.port ?? config.port;
    try {
      // All at once: each loads the modules and opens its handles itself (~0.6-0.8 s), in parallel on the cores.
      [first] = (await Promise.all(Array.from({ length: config.threads }, (_, i) => threads.start(i, port)))) as [
        AppThreadListening,
        ...AppThreadListening[],
      ];
    } finally {
      hold?.release();
    }
    dash = await startAdmin(config, ledger, first.port);
  } catch (err) {
    await stopAll();
    throw err instanceof RuntimeError ? err : new RuntimeError((err as Error).message);
  }
  hooks.onListening?.(listening(first, dash, ledger));
  return serveUntil(signals, threads.failure, stopAll);
}
