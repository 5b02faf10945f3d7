// From the flags of `serve` (and `start`), as text, with the config file's values for every flag
// not given (the CLI merges them: flag > file > default) to the runtime's typed RuntimeConfig:
// every text checked here, next to the schema the flags come from (fields.ts), so a bad option is
// refused in one line (a ConfigError naming the flag) before anything is opened, and the CLI
// parses nothing.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseRedisUrl } from '@chainnode/accounts/settings';
import { defaultLogFormat } from '@chainnode/server/settings';
import type { LogFormat } from '@chainnode/server/settings';
import type { DashboardConfig, FollowedDatadir, RuntimeConfig } from '../config.js';
import { DEFAULT_ADMIN_PORT, SERVER_FIELDS, checkNetwork, checkNetworks, followWsProblem } from './fields.js';
import type { NetworkConfig } from './fields.js';
import { loadConfig } from './file.js';
import type { ServerConfig } from './file.js';
import {
  isUpstreamUrl,
  parseCheckpoint,
  parseIngestMode,
  parseJoinState,
  parseReorgDepth,
  parseStartBlock,
} from './follow.js';
import { parseStateTrieFlag, parseTraceFramesFlag } from './follow.js';
import { ConfigError, flagName } from './schema.js';
import type { ConfigField } from './schema.js';

/** The options of `serve` (and `start`) as the CLI hands them over: flag text, file values merged in. */
export interface ServeFlags {
  datadir: string;
  host: string;
  port: string;
  config?: string;
  failoverUrl?: string;
  metricsPort?: string | undefined;
  /** `--network <name>=<datadir>[,follow=<URL>]`, repeatable. */
  network?: string[];
  /** `--default-network <name>`: the network answering bare hosts. */
  defaultNetwork?: string;
  /** redis://host:port[/db]: keys and credits shared through Redis; default the embedded ledger. */
  ledger?: string;
  ledgerFailure?: string;
  dashboard?: boolean;
  adminHost?: string;
  adminPort?: string;
  adminTlsCert?: string;
  adminTlsKey?: string;
  /** serve --follow <URL>: follow a live upstream while serving. */
  follow?: string;
  genesis?: string;
  /** --ingest execute|replicate (with --follow). */
  ingest?: string;
  /** --start-block <N|head-K> and --checkpoint <hash> (with --follow): join the chain there. */
  startBlock?: string;
  checkpoint?: string;
  /** --join-state proofs|download (with --start-block). */
  joinState?: string;
  /** --follow-ws <URL> (with an http(s):// --follow): the upstream's WebSocket, for its subscriptions. */
  followWs?: string;
  /** --history-upstream <URL> (with --follow): history below a joined datadir's first block. */
  historyUpstream?: string;
  /** --state-trie window=<N>|archive (with --follow): a new datadir's state trie retention. */
  stateTrie?: string;
  /** --trace-frames on|off (with --follow). */
  traceFrames?: string;
  reorgDepth?: string;
  pollMs?: string;
  /** `--log-format json|text` (default: text on a terminal, json otherwise). */
  logFormat?: string;
  /** `--log-level debug|info|warn|error|silent` (default info). */
  logLevel?: string;
  /** `--access-log`: one log record per call (method, key id, outcome, credits, duration). */
  accessLog?: boolean;
  /** App threads on the port (default and `cores`: one per core; 1: the single-thread server). */
  threads?: string;
}

/** `--ledger`: undefined (embedded) or a checked redis:// URL. */
export function parseLedgerUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    return parseRedisUrl(value);
  } catch (err) {
    throw new ConfigError((err as Error).message); // accounts' own error, as one line
  }
}

export function parseFailoverUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new ConfigError('--failover-url: expected an http(s) URL of a JSON-RPC endpoint');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new ConfigError('--failover-url: expected an http:// or https:// URL');
  return value;
}

/**
 * A flag's text read by its field of server.json (SERVER_FIELDS: one declaration of each
 * setting's type, bounds and default), as the field reads a JSON value: digits as a number.
 */
function fromFlag<K extends keyof ServerConfig>(name: K, text: string): ServerConfig[K] {
  const value = /^[0-9]{1,15}$/.test(text) ? Number(text) : text;
  return (SERVER_FIELDS[name] as ConfigField<ServerConfig[K]>).parse(value, flagName(name));
}

/** A flag's value: read by its field when given, else the field's default. */
function flagValue<K extends keyof ServerConfig>(name: K, text: string | undefined): ServerConfig[K] {
  return text === undefined ? (SERVER_FIELDS[name] as ConfigField<ServerConfig[K]>).default : fromFlag(name, text);
}

/**
 * --threads: `cores` (the default) is the number of cores (availableParallelism()), whatever else
 * is asked for (a follower included). `--threads 1` is the single-thread server: no app threads,
 * the ledger, store and follower on the main thread.
 */
function threadsOf(value: string | undefined): number {
  const threads = flagValue('threads', value);
  return threads === 'cores' ? availableParallelism() : threads;
}

/** Parses one `--network <name>=<datadir>[,follow=<URL>[,ingest=execute|replicate][,history=<URL>][,ws=<URL>]]`. */
export function parseNetworkSpec(spec: string): NetworkConfig {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new ConfigError(`--network ${spec}: expected <name>=<datadir>[,follow=<URL>]`);
  const name = spec.slice(0, eq);
  const rest = spec.slice(eq + 1);
  // The datadir is everything up to the first ",follow=" (a datadir may contain commas otherwise).
  const at = rest.indexOf(',follow=');
  const datadir = at < 0 ? rest : rest.slice(0, at);
  let follow = at < 0 ? undefined : rest.slice(at + ',follow='.length);
  // `,ingest=<mode>`, `,history=<URL>` and `,ws=<URL>` trail the follow URL, in any order.
  const trailing = /,(ingest|history|ws)=([^,]*)$/;
  const given: { ingest?: string; history?: string; ws?: string } = {};
  for (let m = follow === undefined ? null : trailing.exec(follow); m !== null; ) {
    given[m[1] as 'ingest' | 'history' | 'ws'] ??= m[2] as string;
    follow = (follow as string).slice(0, m.index);
    m = trailing.exec(follow);
  }
  return checkNetwork(`--network ${name}`, name, datadir, follow, given.ingest, given.history, given.ws);
}

/** The networks to serve: `--network` flags (they replace the config's), else the config's. */
export function resolveNetworks(flags: readonly string[] | undefined, config: ServerConfig): NetworkConfig[] {
  const list = flags !== undefined && flags.length > 0 ? flags.map(parseNetworkSpec) : config.networks;
  checkNetworks('--network', list);
  return list;
}

/** The networks `opts` asks for, checked (`--network` flags replace the config's). */
function networkSpecs(
  opts: ServeFlags,
  config: ServerConfig,
): { specs: NetworkConfig[]; defaultNetwork: string | undefined } {
  const specs = resolveNetworks(opts.network, config);
  if (specs.length > 0 && opts.follow !== undefined)
    throw new ConfigError(
      '--follow: with networks, give each network its own: --network <name>=<datadir>,follow=<URL>',
    );
  if (opts.follow !== undefined && !isUpstreamUrl(opts.follow))
    throw new ConfigError('--follow: expected an http(s):// or ws(s):// JSON-RPC URL');
  if (opts.genesis !== undefined && opts.follow === undefined)
    throw new ConfigError('--genesis: only with --follow <URL>');
  const defaultNetwork = opts.defaultNetwork ?? (specs.length > 0 ? config.defaultNetwork : undefined);
  if (defaultNetwork !== undefined) {
    if (specs.length === 0) throw new ConfigError('--default-network needs --network (or networks in the config)');
    if (!specs.some((n) => n.name === defaultNetwork))
      throw new ConfigError(
        `--default-network ${defaultNetwork}: not among the networks (${specs.map((n) => n.name).join(', ')})`,
      );
  }
  return { specs, defaultNetwork };
}

/** `--history-upstream <URL>`: an http(s):// JSON-RPC endpoint. */
function parseHistoryUpstream(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^https?:\/\/[^/\s]/i.test(value))
    throw new ConfigError(`--history-upstream: expected an http(s):// URL of a JSON-RPC endpoint`);
  return value;
}

/** The datadirs `opts` follows (`--follow`, or networks with `follow=<URL>`), options checked. */
function followPlan(opts: ServeFlags, specs: readonly NetworkConfig[]): FollowedDatadir[] {
  const reorgDepth = parseReorgDepth(opts.reorgDepth);
  const pollMs = flagValue('pollMs', opts.pollMs);
  const ingest = parseIngestMode(opts.ingest);
  const startBlock = parseStartBlock(opts.startBlock);
  const checkpoint = parseCheckpoint(opts.checkpoint);
  const joinState = parseJoinState(opts.joinState);
  const stateTrie = parseStateTrieFlag(opts.stateTrie);
  if (stateTrie !== undefined && (startBlock !== undefined || checkpoint !== undefined) && joinState !== 'download')
    throw new ConfigError(
      '--state-trie: a datadir joining its chain (--start-block) proves its state on demand and holds no state trie of its own (unless --join-state download)',
    );
  const traceFrames = parseTraceFramesFlag(opts.traceFrames);
  const trie = {
    ...(stateTrie !== undefined ? { stateTrie } : {}),
    ...(traceFrames !== undefined ? { traceFrames } : {}),
  };
  if (specs.length === 0) {
    if (opts.follow === undefined) {
      if (opts.ingest !== undefined) throw new ConfigError('--ingest: only with --follow <URL>');
      if (stateTrie !== undefined) throw new ConfigError('--state-trie: only with --follow <URL> (or sync)');
      if (traceFrames !== undefined) throw new ConfigError('--trace-frames: only with --follow <URL> (or sync)');
      if (startBlock !== undefined || checkpoint !== undefined)
        throw new ConfigError('--start-block, --checkpoint: only with --follow <URL>');
      if (joinState !== undefined) throw new ConfigError('--join-state: only with --follow <URL>');
      if (opts.historyUpstream !== undefined) throw new ConfigError('--history-upstream: only with --follow <URL>');
      if (opts.followWs !== undefined) throw new ConfigError('--follow-ws: only with --follow <URL>');
      return [];
    }
    const history = parseHistoryUpstream(opts.historyUpstream);
    const wsProblem = followWsProblem(opts.follow, opts.followWs);
    if (wsProblem !== undefined) throw new ConfigError(`--follow-ws: ${wsProblem}`);
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
          ...(joinState !== undefined ? { joinState } : {}),
          ...(history !== undefined ? { historyUpstream: history } : {}),
          ...(opts.followWs !== undefined ? { wsUrl: opts.followWs } : {}),
          ...trie,
        },
      },
    ];
  }
  if (opts.historyUpstream !== undefined)
    throw new ConfigError('--history-upstream: with --network, give each network its own ,history=<URL>');
  if (opts.followWs !== undefined)
    throw new ConfigError('--follow-ws: with --network, give each network its own ,ws=<URL>');
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
              ...(n.ws !== undefined ? { wsUrl: n.ws } : {}),
              ...trie,
            },
          },
        ],
  );
}

/** The dashboard's listener, when asked for (`--dashboard`, or `--admin-port`: default port DEFAULT_ADMIN_PORT). */
function dashboardOf(opts: ServeFlags): DashboardConfig | undefined {
  const port =
    opts.adminPort !== undefined
      ? fromFlag('adminPort', opts.adminPort)
      : opts.dashboard === true
        ? DEFAULT_ADMIN_PORT
        : undefined;
  if (port === undefined) return undefined;
  if (opts.adminTlsCert === undefined && opts.adminTlsKey === undefined)
    return { host: opts.adminHost ?? '127.0.0.1', port };
  if (opts.adminTlsCert === undefined || opts.adminTlsKey === undefined)
    throw new ConfigError('--admin-tls-cert and --admin-tls-key go together');
  let tls: { cert: string; key: string };
  try {
    tls = { cert: readFileSync(opts.adminTlsCert, 'utf8'), key: readFileSync(opts.adminTlsKey, 'utf8') };
  } catch (err) {
    throw new ConfigError(`cannot read the admin TLS files: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  return { host: opts.adminHost ?? '127.0.0.1', port, tls };
}

function logOf(opts: ServeFlags): RuntimeConfig['log'] {
  return {
    format: opts.logFormat === undefined ? defaultLogFormat() : (fromFlag('logFormat', opts.logFormat) as LogFormat),
    level: flagValue('logLevel', opts.logLevel),
    access: opts.accessLog === true,
  };
}

/** serve's options as the runtime takes them; a bad option is a ConfigError naming it. */
export function runtimeConfigOf(opts: ServeFlags): RuntimeConfig {
  // The log first: an error below is then printed in the format asked for.
  const log = logOf(opts);
  const threads = threadsOf(opts.threads);
  const port = fromFlag('port', opts.port);
  const metricsPort = opts.metricsPort === undefined ? undefined : fromFlag('metricsPort', opts.metricsPort);
  const failoverUrl = parseFailoverUrl(opts.failoverUrl);
  const dashboard = dashboardOf(opts);
  const ledgerUrl = parseLedgerUrl(opts.ledger);
  const failure = flagValue('ledgerFailure', opts.ledgerFailure);
  const server = loadConfig(opts.datadir, opts.config);
  const { specs, defaultNetwork } = networkSpecs(opts, server);
  const follows = followPlan(opts, specs);
  return {
    datadir: opts.datadir,
    server,
    host: opts.host,
    port,
    ...(metricsPort !== undefined ? { metricsPort } : {}),
    ...(failoverUrl !== undefined ? { failoverUrl } : {}),
    networks: specs,
    ...(defaultNetwork !== undefined ? { defaultNetwork } : {}),
    follows,
    ledger: { ...(ledgerUrl !== undefined ? { url: ledgerUrl } : {}), failure },
    ...(dashboard !== undefined ? { dashboard } : {}),
    log,
    threads,
  };
}
