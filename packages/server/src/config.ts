// Server configuration: plans (daily credit balances) and transport limits. A JSON file
// (`--config <file>`, else `<datadir>/server.json` when present) overrides the documented
// defaults below field by field; unknown fields are rejected so typos do not pass silently.
import { readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MAX_NETWORKS, networkNameProblem } from './network.js';

export const PLAN_NAMES = ['core', 'developer', 'team', 'growth', 'custom'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface PlanConfig {
  /** Credits per UTC day (HTTP 402 beyond, until 00:00 UTC). */
  dailyCredits: number;
  /** Credits per second, a token bucket holding one second of credits (HTTP 429 beyond); 0: no limit. */
  creditsPerSecond: number;
  /** Whether eth_getBlockByHash may be forwarded to the failover partner (spec 4.3). */
  failover: boolean;
}

/** One network of `serve` (README "Networks"): `--network <name>=<datadir>[,follow=<URL>]`. */
export interface NetworkConfig {
  name: string;
  /** Datadir holding the network's imported chain (relative paths: to the working directory). */
  datadir: string;
  /** Upstream JSON-RPC endpoint to follow (validated here; whether the build can follow is the CLI's business). */
  follow?: string;
}

export interface ServerConfig {
  plans: Record<PlanName, PlanConfig>;
  /** Largest accepted HTTP body; larger bodies get 413. */
  maxBodyBytes: number;
  /** Most calls in one JSON array batch (passed to the rpc service). */
  maxBatchSize: number;
  /** Largest accepted WebSocket message; larger ones close the connection (1009). */
  wsMaxPayloadBytes: number;
  /**
   * Per-connection budget of reply bytes in flight (buffered towards a slow WebSocket reader):
   * above it the connection's next messages wait; a reply that would take it past twice this
   * closes it (1008).
   */
  wsMaxBackpressureBytes: number;
  /** Messages waiting while a WebSocket is backpressured; beyond this the socket is closed (1013). */
  wsMaxQueuedMessages: number;
  /** Bytes of request text waiting on one WebSocket; beyond this the socket is closed (1013). */
  wsMaxQueuedBytes: number;
  /** A WebSocket whose buffered replies have not gone down for this long is closed (1008). */
  wsSlowReaderTimeoutSeconds: number;
  /**
   * Process budget of reply bytes in flight (every connection's buffered replies together):
   * over it no new request starts (WebSocket messages wait, HTTP gets 503 -32005) and the
   * connections holding more than wsMaxBackpressureBytes are closed (1008).
   */
  maxReplyBytesInFlight: number;
  /** Largest answer of one batch (rpc maxBatchResponseBytes; geth's 25 MB). */
  maxBatchResponseBytes: number;
  /** Batches answered at once (rpc maxConcurrentBatches); more wait their turn. */
  maxConcurrentBatches: number;
  /** Seconds a WebSocket may stay silent before it is closed (uWS granularity ~4 s). */
  wsIdleTimeoutSeconds: number;
  /** Allowed CORS origins; ["*"] allows any (API keys are in the path, no cookies involved). */
  corsOrigins: string[];
  /** How long eth_getBlockByHash may take locally before a failover-plan call is forwarded. */
  failoverTimeoutMs: number;
  /** Metrics listener; port 0 means off. Loopback unless configured otherwise. */
  metricsHost: string;
  metricsPort: number;
  /** Longest wait for in-flight requests on SIGTERM/SIGINT before closing anyway. */
  shutdownGraceMs: number;
  /**
   * Worker threads that answer eth_getLogs (each opens the datadir), so a heavy query never
   * runs on the event loop that answers everything else. 0: answered inline.
   */
  logWorkers: number;
  /**
   * Most eth_getLogs calls waiting for or running in the log workers at once; more are
   * refused at once with -32005 "too many concurrent log queries" (not charged).
   */
  logQueueLimit: number;
  /** Networks served by one process, chosen by Host; empty: the one chain of --datadir. */
  networks: NetworkConfig[];
  /** The network answering bare hosts (IP literals, `localhost`); absent: those get 404. */
  defaultNetwork?: string;
  /** Timeout (ms) of each Redis ledger command; a debit slower than this counts as Redis being away. */
  ledgerCommandTimeoutMs: number;
  /** Most charges a replica journals locally while Redis is away (fail-open); beyond, paid calls are refused. */
  ledgerJournalMax: number;
  /** eth_subscribe: most subscriptions one WebSocket may hold (more: -32005). */
  subscriptionsPerConnection: number;
  /** eth_subscribe: most subscriptions one API key may hold over all its WebSockets (more: -32005). */
  subscriptionsPerKey: number;
  /**
   * A subscriber whose socket holds more than this many unsent bytes when a notification is due
   * is disconnected (1008): notifications never pile up in memory for a reader that does not read.
   */
  wsMaxUnsentNotificationBytes: number;
}

/**
 * Documented defaults (README "Limits"): core, developer and team as on Infura's pricing page;
 * growth (legacy at Infura) and custom are ours to set.
 */
export const DEFAULT_CONFIG: ServerConfig = {
  plans: {
    core: { dailyCredits: 3_000_000, creditsPerSecond: 500, failover: false },
    developer: { dailyCredits: 15_000_000, creditsPerSecond: 4_000, failover: false },
    team: { dailyCredits: 75_000_000, creditsPerSecond: 40_000, failover: false },
    growth: { dailyCredits: 200_000_000, creditsPerSecond: 20_000, failover: true },
    custom: { dailyCredits: 1_000_000_000, creditsPerSecond: 0, failover: true },
  },
  maxBodyBytes: 1024 * 1024,
  maxBatchSize: 1000,
  wsMaxPayloadBytes: 1024 * 1024,
  wsMaxBackpressureBytes: 4 * 1024 * 1024,
  wsMaxQueuedMessages: 1024,
  wsMaxQueuedBytes: 1024 * 1024,
  wsSlowReaderTimeoutSeconds: 30,
  maxReplyBytesInFlight: 128 * 1024 * 1024,
  maxBatchResponseBytes: 25_000_000,
  maxConcurrentBatches: 2,
  wsIdleTimeoutSeconds: 120,
  corsOrigins: ['*'],
  failoverTimeoutMs: 2_000,
  metricsHost: '127.0.0.1',
  metricsPort: 0,
  shutdownGraceMs: 10_000,
  logWorkers: 1,
  logQueueLimit: 64,
  networks: [],
  ledgerCommandTimeoutMs: 1_000,
  ledgerJournalMax: 200_000,
  subscriptionsPerConnection: 100,
  subscriptionsPerKey: 1000,
  wsMaxUnsentNotificationBytes: 4 * 1024 * 1024,
};

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function nonNegInt(where: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new ConfigError(`${where}: expected a non-negative integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

/** Merges a parsed config object over the defaults, validating every field. */
export function parseConfig(raw: unknown, source = 'config'): ServerConfig {
  if (!isRecord(raw)) throw new ConfigError(`${source}: expected a JSON object`);
  const out: ServerConfig = structuredClone(DEFAULT_CONFIG);
  for (const [k, v] of Object.entries(raw)) {
    const where = `${source}: ${k}`;
    switch (k) {
      case 'plans': {
        if (!isRecord(v)) throw new ConfigError(`${where}: expected an object of plans`);
        for (const [name, p] of Object.entries(v)) {
          if (!isPlanName(name)) {
            throw new ConfigError(`${where}.${name}: unknown plan (expected one of ${PLAN_NAMES.join(', ')})`);
          }
          if (!isRecord(p)) throw new ConfigError(`${where}.${name}: expected an object`);
          const plan = out.plans[name];
          for (const [pk, pv] of Object.entries(p)) {
            if (pk === 'dailyCredits') plan.dailyCredits = nonNegInt(`${where}.${name}.dailyCredits`, pv);
            else if (pk === 'creditsPerSecond')
              plan.creditsPerSecond = nonNegInt(`${where}.${name}.creditsPerSecond`, pv);
            else if (pk === 'failover') {
              if (typeof pv !== 'boolean') throw new ConfigError(`${where}.${name}.failover: expected a boolean`);
              plan.failover = pv;
            } else throw new ConfigError(`${where}.${name}.${pk}: unknown field`);
          }
        }
        break;
      }
      case 'corsOrigins':
        if (!Array.isArray(v) || !v.every((o) => typeof o === 'string')) {
          throw new ConfigError(`${where}: expected an array of origin strings`);
        }
        out.corsOrigins = v as string[];
        break;
      case 'metricsHost':
        if (typeof v !== 'string' || v === '') throw new ConfigError(`${where}: expected a host name`);
        out.metricsHost = v;
        break;
      case 'maxBodyBytes':
      case 'maxBatchSize':
      case 'wsMaxPayloadBytes':
      case 'wsMaxBackpressureBytes':
      case 'wsMaxQueuedMessages':
      case 'wsMaxQueuedBytes':
      case 'wsSlowReaderTimeoutSeconds':
      case 'maxReplyBytesInFlight':
      case 'maxBatchResponseBytes':
      case 'maxConcurrentBatches':
      case 'wsIdleTimeoutSeconds':
      case 'failoverTimeoutMs':
      case 'metricsPort':
      case 'shutdownGraceMs':
      case 'logWorkers':
      case 'logQueueLimit':
      case 'ledgerCommandTimeoutMs':
      case 'ledgerJournalMax':
      case 'subscriptionsPerConnection':
      case 'subscriptionsPerKey':
      case 'wsMaxUnsentNotificationBytes':
        out[k] = nonNegInt(where, v);
        break;
      case 'networks': {
        if (!isRecord(v))
          throw new ConfigError(`${where}: expected an object {"<name>": {"datadir": "...", "follow"?: "<URL>"}}`);
        out.networks = Object.entries(v).map(([name, n]) => {
          if (!isRecord(n)) throw new ConfigError(`${where}.${name}: expected {"datadir": "...", "follow"?: "<URL>"}`);
          const spec: Record<string, string> = {};
          for (const [nk, nv] of Object.entries(n)) {
            if (nk !== 'datadir' && nk !== 'follow') throw new ConfigError(`${where}.${name}.${nk}: unknown field`);
            if (typeof nv !== 'string') throw new ConfigError(`${where}.${name}.${nk}: expected a string`);
            spec[nk] = nv;
          }
          return checkNetwork(`${where}.${name}`, name, spec['datadir'], spec['follow']);
        });
        checkNetworks(where, out.networks);
        break;
      }
      case 'defaultNetwork':
        if (typeof v !== 'string' || networkNameProblem(v) !== undefined)
          throw new ConfigError(`${where}: expected a network name`);
        out.defaultNetwork = v;
        break;
      default:
        throw new ConfigError(`${where}: unknown field`);
    }
  }
  if (out.maxBatchSize < 1) throw new ConfigError(`${source}: maxBatchSize must be at least 1`);
  if (out.maxConcurrentBatches < 1) throw new ConfigError(`${source}: maxConcurrentBatches must be at least 1`);
  if (out.maxBatchResponseBytes < 1) throw new ConfigError(`${source}: maxBatchResponseBytes must be at least 1`);
  if (out.logQueueLimit < 1) throw new ConfigError(`${source}: logQueueLimit must be at least 1`);
  if (out.ledgerCommandTimeoutMs < 1) throw new ConfigError(`${source}: ledgerCommandTimeoutMs must be at least 1`);
  if (out.logWorkers > 64) throw new ConfigError(`${source}: logWorkers must be at most 64`);
  if (
    out.defaultNetwork !== undefined &&
    out.networks.length > 0 &&
    !out.networks.some((n) => n.name === out.defaultNetwork)
  ) {
    throw new ConfigError(`${source}: defaultNetwork "${out.defaultNetwork}" is not among networks`);
  }
  return out;
}

/** Validates one network: its name, a datadir, an optional http(s)/ws(s) follow URL. */
export function checkNetwork(
  where: string,
  name: string,
  datadir: string | undefined,
  follow: string | undefined,
): NetworkConfig {
  const problem = networkNameProblem(name);
  if (problem !== undefined) throw new ConfigError(`${where}: ${problem}`);
  if (datadir === undefined || datadir === '') throw new ConfigError(`${where}: a datadir is required`);
  if (follow === undefined) return { name, datadir };
  let u: URL;
  try {
    u = new URL(follow);
  } catch {
    throw new ConfigError(`${where}: follow: expected the URL of a JSON-RPC endpoint (http, https, ws or wss)`);
  }
  if (!['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol))
    throw new ConfigError(`${where}: follow: expected an http(s):// or ws(s):// URL`);
  return { name, datadir, follow };
}

/** Names unique, datadirs distinct (LevelDB admits one opener), at most MAX_NETWORKS. */
export function checkNetworks(where: string, networks: readonly NetworkConfig[]): void {
  if (networks.length > MAX_NETWORKS) throw new ConfigError(`${where}: at most ${MAX_NETWORKS} networks`);
  const names = new Set<string>();
  const dirs = new Map<string, string>();
  for (const n of networks) {
    if (names.has(n.name)) throw new ConfigError(`${where}: network "${n.name}" given twice`);
    names.add(n.name);
    const dir = resolve(n.datadir);
    const other = dirs.get(dir);
    if (other !== undefined)
      throw new ConfigError(`${where}: networks "${other}" and "${n.name}" share the datadir ${n.datadir}`);
    dirs.set(dir, n.name);
  }
}

/** `--config <file>` if given, else `<datadir>/server.json` if present, else the defaults. */
export function loadConfig(datadir: string, file?: string): ServerConfig {
  const path = file ?? join(datadir, 'server.json');
  if (file === undefined && !existsSync(path)) return structuredClone(DEFAULT_CONFIG);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config ${path} is not valid JSON: ${(err as Error).message}`);
  }
  return parseConfig(raw, path);
}
