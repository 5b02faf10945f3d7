// Opens each network (its store, log workers and rpc service: network.ts), runs the uWS server
// until SIGTERM/SIGINT, then shuts down in order: stop accepting, let in-flight requests finish,
// stop each network's log workers and follower, close the stores.
// Without --network (or config networks) the one chain of --datadir is served on every Host,
// exactly as before networks existed (and `--follow <URL>` follows it live). A network given as
// `--network <name>=<datadir>,follow=<URL>` follows its own upstream with its own ingest thread.
// With `--threads N` (N > 1; the default is one per core) this thread owns the ledger, the
// dashboard and each followed datadir's one ingest thread, and N app threads (app-thread.ts) each
// run the rest on the same port; see serveThreads. `--threads 1` runs everything on this thread.
// Shared by `serve` and `start`. Nothing printed here contains an API key unless the caller
// passes one for the banner (`start` prints its development key on purpose).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { hasAdminToken, startDashboard } from '@chainnode/dashboard';
import type { RunningDashboard } from '@chainnode/dashboard';
import { ConfigError, loadConfig, rpcConfigOf, startServer } from '@chainnode/server';
import {
  LedgerUnavailableError,
  RedisLedger,
  ThreadLedgerHost,
  checkLedgerUrl,
  linkPorts,
  openLedger,
} from '@chainnode/accounts';
import type {
  LedgerView,
  NetworkConfig,
  NetworkRuntime,
  RunningServer,
  PeerMetrics,
  ServerConfig,
} from '@chainnode/server';
import type { CreditLedger, KeyStore, LedgerFailureMode, OpenLedger, UsageRecord } from '@chainnode/accounts';
import { resolveConfig } from '@chainnode/rpc';
import { LOG_FORMATS, LOG_LEVELS, createLog, defaultLogFormat } from '@chainnode/server';
import type { AccessRecord, Log, LogFormat, LogLevel } from '@chainnode/server';
import { redactUrl } from '@chainnode/ingest';
import { CliError } from '../../cli-error.js';
import { isUpstreamUrl, parseCheckpoint, parseIngestMode, parseReorgDepth, parseStartBlock } from '../sync/index.js';
import { LevelChainStore } from '@chainnode/store';
import type { ChainStore } from '@chainnode/core';
import { IngestThread } from '@chainnode/ingest';
import { checkThreadPool, ingestWorkerData, openNetwork, resolveNetworks } from './network.js';
import type { FollowOptions } from './network.js';
import type { AppThreadCommand, AppThreadData, AppThreadListening, AppThreadMessage } from './app-thread-api.js';
import type { ServeOptions } from './options.js';
import { StopSignals } from './signals.js';

export { openStore } from './network.js';

export type { ServeOptions } from './options.js';

/** The admin port to use, or undefined when the dashboard is off (default port 8546). */
function dashboardPort(opts: ServeOptions): number | undefined {
  if (opts.adminPort !== undefined) return parsePort('--admin-port', opts.adminPort);
  return opts.dashboard === true ? 8546 : undefined;
}

function readTls(opts: ServeOptions): { cert: string; key: string } | undefined {
  if (opts.adminTlsCert === undefined && opts.adminTlsKey === undefined) return undefined;
  if (opts.adminTlsCert === undefined || opts.adminTlsKey === undefined)
    throw new CliError('--admin-tls-cert and --admin-tls-key go together');
  try {
    return { cert: readFileSync(opts.adminTlsCert, 'utf8'), key: readFileSync(opts.adminTlsKey, 'utf8') };
  } catch (err) {
    throw new CliError(`cannot read the admin TLS files: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** `--ledger`: undefined (embedded) or a checked redis:// URL. */
export function parseLedgerUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    return checkLedgerUrl(value);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
}

export function parseLedgerFailure(value: string | undefined): LedgerFailureMode {
  if (value === undefined || value === 'open') return 'open';
  if (value === 'closed') return 'closed';
  throw new CliError(`--ledger-failure: expected open or closed, got "${value}"`);
}

export function parsePort(name: string, value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535)
    throw new CliError(`${name}: expected a port number 0-65535, got "${value}"`);
  return Number(value);
}

export function parseFailoverUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new CliError('--failover-url: expected an http(s) URL of a JSON-RPC endpoint');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new CliError('--failover-url: expected an http:// or https:// URL');
  return value;
}

export function readConfig(datadir: string, file: string | undefined): ServerConfig {
  try {
    return loadConfig(datadir, file);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message);
    throw err;
  }
}

/** A started server with everything it holds (store, log workers, follower). */
export interface App {
  srv: RunningServer;
  /** Stop accepting, finish in-flight requests, stop the follower and log workers, close the store. */
  stop(): Promise<void>;
  /** The first half of stop(): stop accepting and finish in-flight requests. */
  drain(): Promise<void>;
  /** The second half: stop the follower and the log workers, close the store. */
  release(): Promise<void>;
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
  /** Print the startup notes (fault injection, log workers, follower): one app thread of several does. */
  notes?: boolean;
  /** How many app threads serve the port (serve --threads; absent: 1): for the thread-pool check. */
  threads?: number;
  /** serve --threads, thread 0: the other threads' metrics counts, added to its own at /metrics. */
  peerMetrics?: () => Promise<PeerMetrics[]>;
  /** serve --threads: this app thread's index. */
  thread?: number;
  /** The Redis ledger's state for its gauges (the thread that owns the ledger knows it). */
  ledgerStatus?: () => Promise<LedgerView | undefined>;
}

/** The Redis ledger's state for its gauges; undefined with the embedded ledger. */
export function ledgerView(ledger: OpenLedger, failure: LedgerFailureMode): LedgerView | undefined {
  if (ledger.engine !== 'redis') return undefined;
  return creditsView(ledger.ledger(), failure);
}

/** One Redis ledger's state (a thread's own connection, or the main thread's). */
export function creditsView(l: CreditLedger, failure: LedgerFailureMode): LedgerView | undefined {
  if (!(l instanceof RedisLedger)) return undefined;
  return { failure, degraded: l.isDegraded, journalCharges: l.journalLength };
}

/**
 * The ledger's state over every connection that debits (with --threads each app thread has its
 * own): degraded when any is, the journals' charges summed.
 */
export function combineLedgerViews(views: readonly (LedgerView | undefined)[]): LedgerView | undefined {
  const present = views.filter((v): v is LedgerView => v !== undefined);
  const first = present[0];
  if (first === undefined) return undefined;
  return {
    failure: first.failure,
    degraded: present.some((v) => v.degraded),
    journalCharges: present.reduce((n, v) => n + v.journalCharges, 0),
  };
}

/** The process log (configureLog: --log-format, --log-level); lines are scrubbed of key material. */
let processLog: Log = createLog({ format: defaultLogFormat(), level: 'info' });
let accessLog: ((rec: AccessRecord) => void) | undefined;

/** Sets up the log from `opts` (serve and each app thread). */
export function configureLog(opts: ServeOptions): void {
  const format = opts.logFormat ?? defaultLogFormat();
  if (!(LOG_FORMATS as readonly string[]).includes(format))
    throw new CliError(`--log-format: expected json or text, got "${format}"`);
  const level = opts.logLevel ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new CliError(`--log-level: expected one of ${LOG_LEVELS.join(', ')}, got "${level}"`);
  processLog = createLog({ format: format as LogFormat, level: level as LogLevel });
  const log = processLog;
  accessLog =
    opts.accessLog === true
      ? (rec) => {
          const { network, ...fields } = rec;
          log.child('access', network).record(rec.method, fields);
        }
      : undefined;
}

const COMPONENTS = /^(ledger|follow|ingest|replicate|dashboard|admin|logs?|log workers?): (.*)$/s;

/**
 * A line of the runtime's parts, which prefix it with `network <name>: ` and their component
 * (`ledger: …`, `follow: …`): those become the record's network and component.
 */
export const log = (line: string): void => {
  const n = /^network ([a-z0-9-]+): (.*)$/s.exec(line);
  const rest = n === null ? line : (n[2] as string);
  const c = COMPONENTS.exec(rest);
  const component = c === null ? 'serve' : ((c[1] as string).split(' ')[0] as string);
  const level = /\b(error|failed|cannot|unavailable|lost|stopped:)\b/i.test(rest) ? 'warn' : 'info';
  processLog.child(component, n === null ? null : (n[1] as string)).line(level, line);
};

/** The networks `opts` asks for, checked (`--network` flags replace the config's). */
function networkSpecs(
  opts: ServeOptions,
  config: ServerConfig,
): { specs: NetworkConfig[]; defaultNetwork: string | undefined } {
  const specs = resolveNetworks(opts.network, config);
  if (specs.length > 0 && opts.follow !== undefined)
    throw new CliError('--follow: with networks, give each network its own: --network <name>=<datadir>,follow=<URL>');
  if (opts.follow !== undefined && !isUpstreamUrl(opts.follow))
    throw new CliError('--follow: expected an http(s):// or ws(s):// JSON-RPC URL');
  if (opts.genesis !== undefined && opts.follow === undefined)
    throw new CliError('--genesis: only with --follow <URL>');
  const defaultNetwork = opts.defaultNetwork ?? (specs.length > 0 ? config.defaultNetwork : undefined);
  if (defaultNetwork !== undefined) {
    if (specs.length === 0) throw new CliError('--default-network needs --network (or networks in the config)');
    if (!specs.some((n) => n.name === defaultNetwork))
      throw new CliError(
        `--default-network ${defaultNetwork}: not among the networks (${specs.map((n) => n.name).join(', ')})`,
      );
  }
  return { specs, defaultNetwork };
}

/** Every datadir `opts` serves: --datadir's chain, or each network's. */
function servedDatadirs(opts: ServeOptions, config: ServerConfig): string[] {
  const { specs } = networkSpecs(opts, config);
  return specs.length === 0 ? [opts.datadir] : specs.map((n) => n.datadir);
}

/** `--history-upstream <URL>`: an http(s):// JSON-RPC endpoint. */
function parseHistoryUpstream(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^https?:\/\/[^/\s]/i.test(value))
    throw new CliError(`--history-upstream: expected an http(s):// URL of a JSON-RPC endpoint`);
  return value;
}

/** A datadir to follow and how: `network` is the network's name, '' for the one network of --datadir. */
export interface FollowedDatadir {
  network: string;
  datadir: string;
  follow: FollowOptions;
}

/** The datadirs `opts` follows (`--follow`, or networks with `follow=<URL>`), options checked. */
export function followPlan(opts: ServeOptions, config: ServerConfig): FollowedDatadir[] {
  const { specs } = networkSpecs(opts, config);
  const reorgDepth = parseReorgDepth(opts.reorgDepth);
  const pollMs = opts.pollMs === undefined ? 1000 : Number(opts.pollMs);
  if (!Number.isInteger(pollMs) || pollMs < 10)
    throw new CliError(`--poll-ms: expected an integer >= 10, got "${opts.pollMs}"`);
  const ingest = parseIngestMode(opts.ingest);
  const startBlock = parseStartBlock(opts.startBlock);
  const checkpoint = parseCheckpoint(opts.checkpoint);
  if (specs.length === 0) {
    if (opts.follow === undefined) {
      if (opts.ingest !== undefined) throw new CliError('--ingest: only with --follow <URL>');
      if (startBlock !== undefined || checkpoint !== undefined)
        throw new CliError('--start-block, --checkpoint: only with --follow <URL>');
      if (opts.historyUpstream !== undefined) throw new CliError('--history-upstream: only with --follow <URL>');
      return [];
    }
    const history = parseHistoryUpstream(opts.historyUpstream);
    return [
      {
        network: '',
        datadir: opts.datadir,
        follow: {
          url: opts.follow,
          reorgDepth,
          pollMs,
          ingest,
          ...(opts.genesis !== undefined ? { genesisPath: opts.genesis } : {}),
          ...(startBlock !== undefined ? { startBlock } : {}),
          ...(checkpoint !== undefined ? { checkpoint } : {}),
          ...(history !== undefined ? { historyUpstream: history } : {}),
        },
      },
    ];
  }
  if (opts.historyUpstream !== undefined)
    throw new CliError('--history-upstream: with --network, give each network its own ,history=<URL>');
  return specs.flatMap((n) =>
    n.follow === undefined
      ? []
      : [
          {
            network: n.name,
            datadir: n.datadir,
            follow: {
              url: n.follow,
              reorgDepth,
              pollMs,
              ingest: n.ingest ?? ingest,
              ...(n.history !== undefined ? { historyUpstream: n.history } : {}),
            },
          },
        ],
  );
}

/**
 * Opens every network (each its store, log workers, rpc service and, with a follow URL, its
 * ingest thread) and starts the uWS server on `opts` with the ledger `ledgerOf()` returns (asked
 * for once the stores are open: the embedded engine creates files in the datadir, which must not
 * appear before the store's checks); nothing is printed to stdout.
 */
export async function startApp(opts: ServeOptions, ledgerOf: () => AppLedger, extras: AppExtras = {}): Promise<App> {
  configureLog(opts);
  const port = parsePort('--port', opts.port);
  const metricsPort = opts.metricsPort === undefined ? undefined : parsePort('--metrics-port', opts.metricsPort);
  const failoverUrl = parseFailoverUrl(opts.failoverUrl);
  const config = readConfig(opts.datadir, opts.config);
  const notes = extras.notes ?? true;
  const quiet = (line: string): void => {
    if (notes) log(line);
  };
  const { specs, defaultNetwork } = networkSpecs(opts, config);
  const follows = new Map(followPlan(opts, config).map((f) => [f.network, f.follow]));
  const followOf = (network: string): { follow?: FollowOptions; followFeed?: MessagePort } => {
    const follow = follows.get(network);
    if (follow === undefined) return {};
    const feed = extras.followFeeds?.get(network);
    // With --threads the main thread owns the ingest: an app thread never starts its own.
    if (extras.shared === true && feed === undefined)
      throw new Error(`no ingest feed for followed network "${network}"`);
    return { follow, ...(feed !== undefined ? { followFeed: feed } : {}) };
  };
  const rpcConfig = resolveConfig(rpcConfigOf(config));
  if (notes)
    checkThreadPool(
      config,
      specs.length === 0 ? (opts.follow === undefined ? 1 : 0) : specs.filter((n) => n.follow === undefined).length,
      extras.threads ?? 1,
      log,
    );
  const shared = extras.shared === true;
  // One after the other: each opens a LevelDB and starts worker threads; a failure closes the rest.
  const networks: NetworkRuntime[] = [];
  const closeAll = async (): Promise<void> => {
    await Promise.allSettled(networks.map((n) => n.close()));
  };
  try {
    if (specs.length === 0) {
      networks.push(
        await openNetwork({
          name: '',
          datadir: opts.datadir,
          implicit: true,
          config,
          rpcConfig,
          log: quiet,
          shared,
          ...followOf(''),
        }),
      );
    }
    for (const n of specs) {
      networks.push(
        await openNetwork({
          name: n.name,
          datadir: n.datadir,
          config,
          rpcConfig,
          log: quiet,
          shared,
          ...followOf(n.name),
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
      ...(defaultNetwork !== undefined ? { defaultNetwork } : {}),
      config,
      host: opts.host,
      port,
      log,
      ledger: { keys: ledger.keys, credits: ledger.credits },
      usage: ledger.usage,
      ...(failoverUrl !== undefined ? { failoverUrl } : {}),
      ...(metricsPort !== undefined ? { metricsPort } : {}),
      ...(extras.peerMetrics !== undefined ? { peerMetrics: extras.peerMetrics } : {}),
      ...(extras.thread !== undefined ? { thread: extras.thread } : {}),
      ...(extras.ledgerStatus !== undefined ? { ledgerStatus: extras.ledgerStatus } : {}),
      ...(accessLog !== undefined ? { access: accessLog } : {}),
    });
  } catch (err) {
    await closeAll();
    throw new CliError((err as Error).message);
  }
  const release = async (): Promise<void> => {
    await srv.router.close();
  };
  return {
    srv,
    drain: () => srv.close(),
    release,
    stop: async () => {
      await srv.close();
      await release();
    },
  };
}

/**
 * --threads: a positive integer, or `cores`; default (and `cores`): the number of cores
 * (availableParallelism()), whatever else is asked for (a follower included). `--threads 1` is
 * the single-thread server: no app threads, the ledger, store and follower on the main thread.
 */
export function parseThreads(value: string | undefined): number {
  if (value === undefined || value === 'cores') return availableParallelism();
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 256)
    throw new CliError(`--threads: expected a number of threads 1-256, got "${value}"`);
  return Number(value);
}

/** The ledger of this process, opened once on this thread (the main thread with --threads). */
async function openServeLedger(
  opts: ServeOptions,
  config: ServerConfig,
  threads: number,
  onLedger?: (l: OpenLedger, config: ServerConfig) => Promise<void>,
): Promise<OpenLedger> {
  const ledgerUrl = parseLedgerUrl(opts.ledger);
  const failure = parseLedgerFailure(opts.ledgerFailure);
  let ledger: OpenLedger | undefined;
  try {
    ledger = await openLedger({
      ...(ledgerUrl !== undefined ? { url: ledgerUrl } : {}),
      datadir: opts.datadir,
      failure,
      commandTimeoutMs: config.ledgerCommandTimeoutMs,
      journalMax: config.ledgerJournalMax,
      log,
      threads: threads > 1,
    });
    await onLedger?.(ledger, config);
    return ledger;
  } catch (err) {
    await ledger?.close();
    if (err instanceof LedgerUnavailableError) throw new CliError(err.message);
    throw err;
  }
}

/** The dashboard on the admin listener, when asked for (on this thread, beside the ledger it reads). */
async function startAdmin(
  opts: ServeOptions,
  ledger: OpenLedger,
  config: ServerConfig,
  rpcPort: number,
): Promise<RunningDashboard | undefined> {
  const adminPort = dashboardPort(opts);
  if (adminPort === undefined) return undefined;
  const adminTls = readTls(opts);
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const keys = ledger.manager(config);
  try {
    return await startDashboard({
      datadir: opts.datadir,
      keys,
      host: opts.adminHost ?? '127.0.0.1',
      port: adminPort,
      rpcUrl: `http://${hostForUrl}:${rpcPort}`,
      log,
      ...(adminTls !== undefined ? { tls: adminTls } : {}),
    });
  } catch (err) {
    throw new CliError(`cannot start the dashboard: ${(err as Error).message}`);
  }
}

function printBanner(
  opts: ServeOptions,
  ledger: OpenLedger,
  srv: { port: number; metricsPort: number | undefined },
  dash: RunningDashboard | undefined,
  threads: number,
): string {
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const config = readConfig(opts.datadir, opts.config);
  const failure = parseLedgerFailure(opts.ledgerFailure);
  process.stdout.write(
    `serve: ledger    ${ledger.engine === 'redis' ? `redis (shared; when unreachable: fail-${failure})` : `embedded (${opts.datadir})`}\n`,
  );
  process.stdout.write(`serve: listening on ${hostForUrl}:${srv.port}${threads > 1 ? ` (${threads} threads)` : ''}\n`);
  process.stdout.write(`serve: HTTP      POST http://${hostForUrl}:${srv.port}/v3/<API_KEY>\n`);
  process.stdout.write(`serve: WebSocket      ws://${hostForUrl}:${srv.port}/ws/v3/<API_KEY>\n`);
  process.stdout.write(`serve: health    GET  http://${hostForUrl}:${srv.port}/health\n`);
  if (srv.metricsPort !== undefined) {
    process.stdout.write(
      `serve: metrics   GET  http://${config.metricsHost}:${srv.metricsPort}/metrics${threads > 1 ? ' (all threads)' : ''}\n`,
    );
  }
  if (opts.failoverUrl !== undefined)
    process.stdout.write('serve: failover partner configured for eth_getBlockByHash (growth, custom plans)\n');
  if (dash !== undefined) {
    process.stdout.write(`serve: dashboard ${dash.url}\n`);
    if (!hasAdminToken(opts.datadir))
      processLog.warn(`no admin token yet: create one with node-cli admin token create --datadir ${opts.datadir}`);
  }
  if (opts.follow !== undefined)
    process.stdout.write(
      `serve: following ${redactUrl(opts.follow)} (reorg depth ${parseReorgDepth(opts.reorgDepth)})\n`,
    );
  const { specs, defaultNetwork } = networkSpecs(opts, config);
  if (specs.length > 0) {
    // *.localhost names the loopback in browsers and curl; elsewhere use DNS names whose first label is the network.
    const shown =
      opts.host === '127.0.0.1' || opts.host === '::1' || opts.host === 'localhost' ? 'localhost' : hostForUrl;
    for (const n of specs) {
      const dflt = `${n.name === defaultNetwork ? ' (default: also bare hosts)' : ''}${n.follow !== undefined ? ` following ${redactUrl(n.follow)}` : ''}`;
      process.stdout.write(
        `serve: network ${n.name.padEnd(10)} http://${n.name}.${shown}:${srv.port}/v3/<API_KEY>  ws://${n.name}.${shown}:${srv.port}/ws/v3/<API_KEY>  ${n.datadir}${dflt}\n`,
      );
    }
    process.stdout.write(`serve: keys and usage (one account across networks) in ${opts.datadir}\n`);
  }
  return hostForUrl;
}

/** Runs `stop` on the first SIGTERM/SIGINT (at once if one came during startup); a second one exits at once (signals.ts). */
async function untilSignal(signals: StopSignals, stop: () => Promise<void>): Promise<void> {
  signals.markStarted();
  await signals.next();
  try {
    await stop();
    log('stopped cleanly');
  } catch (err) {
    log(`error while stopping: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}

/**
 * Serves until a signal; `banner` receives the bound address once listening; `onLedger` runs once
 * the ledger is open, before the server starts (`start` makes its development key there).
 */
export async function serve(
  opts: ServeOptions,
  banner?: (srv: { port: number }, host: string) => void,
  onLedger?: (l: OpenLedger, config: ServerConfig) => Promise<void>,
): Promise<void> {
  // First the log (a bad --log-format is refused here), then: a signal from now on stops the
  // process cleanly, whatever startup is doing (one that came while the modules loaded is logged
  // in the format asked for).
  configureLog(opts);
  const signals = new StopSignals(log);
  const threads = parseThreads(opts.threads);
  // Option errors before anything is opened.
  parsePort('--port', opts.port);
  if (opts.metricsPort !== undefined) parsePort('--metrics-port', opts.metricsPort);
  parseFailoverUrl(opts.failoverUrl);
  if (dashboardPort(opts) !== undefined) readTls(opts);
  parseLedgerUrl(opts.ledger);
  parseLedgerFailure(opts.ledgerFailure);
  const config = readConfig(opts.datadir, opts.config);
  networkSpecs(opts, config);
  followPlan(opts, config);
  const ledger = await openServeLedger(opts, config, threads, onLedger);
  if (signals.received !== undefined) {
    // Stopped before anything serves: nothing to drain.
    await ledger.close();
    log('stopped cleanly');
  } else if (threads > 1) {
    await serveThreads(opts, threads, ledger, config, signals, banner);
  } else {
    let app: App;
    try {
      const failure = parseLedgerFailure(opts.ledgerFailure);
      app = await startApp(opts, () => ({ keys: ledger.keys, credits: ledger.ledger(), usage: ledger.usageRecord() }), {
        ledgerStatus: async () => ledgerView(ledger, failure),
      });
    } catch (err) {
      await ledger.close();
      throw err;
    }
    let dash: RunningDashboard | undefined;
    try {
      dash = await startAdmin(opts, ledger, config, app.srv.port);
    } catch (err) {
      await app.stop();
      await ledger.close();
      throw err;
    }
    const host = printBanner(opts, ledger, app.srv, dash, 1);
    banner?.(app.srv, host);
    await untilSignal(signals, async () => {
      await app.drain();
      await dash?.close();
      await app.release();
      await ledger.close();
    });
  }
  // Idle keep-alive clients must not keep us alive past a clean stop.
  process.exit(process.exitCode ?? 0);
}

/** A free port on `host`, for --threads with --port 0. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * `--threads N`: N app threads (app-thread.ts), each a whole server (uWS app, its own shared
 * handle on the datadir, log workers, key registry) listening on the same port (uWS sets
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
  opts: ServeOptions,
  threads: number,
  ledger: OpenLedger,
  config: ServerConfig,
  signals: StopSignals,
  banner?: (srv: { port: number }, host: string) => void,
): Promise<void> {
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
  const workers: Worker[] = [];
  /** Each worker's end, recorded at its start: a phase must not wait on a thread that already ended. */
  const exits = new Map<Worker, Promise<void>>();
  const anchors: ChainStore[] = [];
  const ingests = new Map<string, IngestThread>();
  let failed: ((err: Error) => void) | undefined;
  const failure = new Promise<never>((_, reject) => (failed = reject));
  failure.catch(() => undefined);
  let stopping = false;
  const startThread = (index: number, port: string): Promise<AppThreadListening> => {
    const link = host.link();
    const followFeeds = [...ingests].map(([network, ingest]): [string, MessagePort] => [network, ingest.port()]);
    const data: AppThreadData = {
      opts: { ...opts, port, ...(index === 0 ? {} : { metricsPort: undefined }) },
      index,
      threads,
      link,
      followFeeds,
    };
    const w = new Worker(new URL('./app-thread.js', import.meta.url), {
      workerData: data,
      transferList: [...linkPorts(link), ...followFeeds.map(([, p]) => p)],
    });
    workers.push(w);
    exits.set(w, new Promise<void>((r) => w.once('exit', () => r())));
    return new Promise<AppThreadListening>((resolve, reject) => {
      w.on('message', (m: AppThreadMessage) => {
        if (m.type === 'listening') resolve(m);
        else if (m.type === 'peer-metrics') {
          void peerCounts(w).then((t) =>
            w.postMessage({
              type: 'peer-metrics',
              id: m.id,
              threads: t,
              ledger: combineLedgerViews([
                ledgerView(ledger, parseLedgerFailure(opts.ledgerFailure)),
                ...workers.filter((o) => o !== w).map((o) => peerLedgers.get(o)),
              ]),
            } satisfies AppThreadCommand),
          );
        }
      });
      w.on('error', (err) => {
        reject(err);
        failed?.(err);
      });
      w.on('exit', (code) => {
        const err = new Error(`app thread ${index} exited with code ${code}`);
        reject(err);
        if (!stopping) failed?.(err);
      });
    });
  };
  // Every app thread's metrics counts but `asker`'s; a thread that does not answer within 2 s
  // (busy, stopping) is left out of that scrape.
  let nextAsk = 0;
  /** Each app thread's own ledger state, as its last metrics answer gave it. */
  const peerLedgers = new Map<Worker, LedgerView | undefined>();
  const peerCounts = (asker: Worker): Promise<PeerMetrics[]> =>
    Promise.all(
      workers
        .filter((w) => w !== asker)
        .map(
          (w) =>
            new Promise<PeerMetrics | undefined>((resolve) => {
              const id = nextAsk++;
              const timer = setTimeout(() => done(undefined), 2000);
              const onMessage = (m: AppThreadMessage): void => {
                if (m.type === 'metrics' && m.id === id) {
                  peerLedgers.set(w, m.ledger);
                  done({ thread: workers.indexOf(w), metrics: m.counts });
                }
              };
              function done(v: PeerMetrics | undefined): void {
                clearTimeout(timer);
                w.off('message', onMessage);
                resolve(v);
              }
              w.on('message', onMessage);
              w.postMessage({ type: 'metrics', id } satisfies AppThreadCommand);
            }),
        ),
    ).then((all) => all.filter((t): t is PeerMetrics => t !== undefined));
  // Two phases: every thread drains (stops accepting, finishes in-flight requests) before any
  // closes its store: a thread closing its handle on the shared LevelDB while another thread's
  // reads were running crashed the process (SIGSEGV: see the first-opener note above), as did
  // terminating a thread that holds uWS while another serves. So nothing is terminated either:
  // the threads end with the process, which serve exits right after.
  const phase = (command: 'drain' | 'release', reply: 'drained' | 'stopped'): Promise<void[]> =>
    Promise.all(
      workers.map(async (w) => {
        const exited = exits.get(w) ?? Promise.resolve();
        const done = new Promise<void>((r) =>
          w.on('message', (m: AppThreadMessage) => {
            if (m.type === reply) r();
          }),
        );
        w.postMessage({ type: command } satisfies AppThreadCommand);
        await Promise.race([done, exited]);
      }),
    );
  let dash: RunningDashboard | undefined;
  // Drain the app threads (no request runs any more; commits still reach them, harmlessly), then
  // each releases its stores (and closes its ports of the ingest), then the ingest threads stop,
  // then the anchors close: the first opener of each datadir closes last.
  const stopAll = async (): Promise<void> => {
    stopping = true;
    await phase('drain', 'drained');
    await dash?.close();
    await phase('release', 'stopped');
    await Promise.allSettled([...ingests.values()].map((i) => i.stop()));
    await Promise.allSettled(anchors.map((a) => a.close()));
    host.close();
    await ledger.close();
  };
  let first: AppThreadListening;
  try {
    // Anchors (see above): a datadir that does not open here (missing, empty, busy) is left to
    // the app threads, which fail with the usual message, or to its ingest (an empty followed datadir).
    for (const datadir of new Set(servedDatadirs(opts, config))) {
      const anchor = await LevelChainStore.open(datadir, { shared: true }).catch(() => undefined);
      if (anchor !== undefined) anchors.push(anchor);
    }
    for (const f of followPlan(opts, config))
      ingests.set(f.network, new IngestThread(ingestWorkerData(f.datadir, f.follow)));
    // uWS sets SO_REUSEPORT only on an explicit port: with --port 0 one is picked here first.
    const port = parsePort('--port', opts.port) === 0 ? String(await freePort(opts.host)) : opts.port;
    first = await startThread(0, port);
    await Promise.all(Array.from({ length: threads - 1 }, (_, i) => startThread(i + 1, port)));
    dash = await startAdmin(opts, ledger, config, first.port);
  } catch (err) {
    await stopAll();
    throw err instanceof CliError ? err : new CliError((err as Error).message);
  }
  const hostForUrl = printBanner(opts, ledger, first, dash, threads);
  banner?.({ port: first.port }, hostForUrl);
  await Promise.race([
    untilSignal(signals, stopAll),
    failure.catch(async (err: unknown) => {
      processLog.error(`${(err as Error).message}; stopping`);
      process.exitCode = 1;
      await stopAll();
    }),
  ]);
}
