// Server configuration: plans (daily credit balances), transport limits and the rpc settings a
// deployment tunes. A JSON file (`--config <file>`, else `<datadir>/server.json` when present)
// overrides the defaults field by field; unknown fields are rejected so typos do not pass
// silently.
//
// SERVER_FIELDS below is the one description of that file: each field's type and check, its
// default, unit and range, and the line the generated reference (docs/reference/configuration.md)
// prints. parseConfig, DEFAULT_CONFIG, the ServerConfig type and rpcConfigOf (the fields the rpc
// service takes) all derive from it.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_RPC_CONFIG } from '@chainnode/rpc';
import type { RpcConfig } from '@chainnode/rpc';
import { DEFAULT_PLANS, PLAN_NAMES, isPlanName, networkNameProblem } from '@chainnode/accounts';
import type { PlanConfig, PlanName } from '@chainnode/accounts';
import { MAX_NETWORKS } from './network.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The integer fields of RpcConfig: those a server field may be handed to. */
export type RpcIntegerField = { [K in keyof RpcConfig]: RpcConfig[K] extends number ? K : never }[keyof RpcConfig];

/** One field of a configuration object: how it is read, its default, and what the reference says of it. */
export interface ConfigField<T> {
  /** The JSON type, as the reference names it. */
  readonly type: string;
  /** One line for the reference. */
  readonly doc: string;
  /** Unit of a number (bytes, ms, …). */
  readonly unit?: string;
  /** Inclusive bounds of an integer, checked after its type ("<field> must be at least <min>"). */
  readonly min?: number;
  readonly max?: number;
  /** Value when the file does not set the field (undefined: absent). */
  readonly default: T;
  /** The default as the reference shows it, when the value itself does not say it. */
  readonly defaultText?: string;
  /** Checks the JSON value; throws ConfigError starting with `where` (the file and the field). */
  readonly parse: (value: unknown, where: string) => T;
  /** The RpcConfig field this one is handed to (rpcConfigOf). */
  readonly rpc?: RpcIntegerField;
}

/** A configuration object's fields by name. */
export type ConfigSchema = Readonly<Record<string, ConfigField<unknown>>>;

/** The values a schema describes (each field's parsed type). */
export type ConfigValues<S extends ConfigSchema> = {
  -readonly [K in keyof S]: S[K] extends ConfigField<infer T> ? T : never;
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function nonNegInt(where: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new ConfigError(`${where}: expected a non-negative integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

interface IntegerSpec {
  doc: string;
  defaultText?: string;
  unit?: string;
  min?: number;
  max?: number;
}

/** A field of type T (the helper fixes T for the schema's inference). */
function field<T>(spec: ConfigField<T>): ConfigField<T> {
  return spec;
}

/** A non-negative integer field, optionally bounded. */
function integer(spec: IntegerSpec & { default: number }): ConfigField<number> {
  const { min, max } = spec;
  return {
    type: 'integer',
    ...spec,
    parse: (v, where) => {
      const n = nonNegInt(where, v);
      if (min !== undefined && n < min) throw new ConfigError(`${where} must be at least ${min}`);
      if (max !== undefined && n > max) throw new ConfigError(`${where} must be at most ${max}`);
      return n;
    },
  };
}

/** An integer field handed to the rpc service as RpcConfig[field]; its default is the rpc service's. */
function rpcInteger(field: RpcIntegerField, spec: IntegerSpec): ConfigField<number> {
  return { ...integer({ ...spec, default: DEFAULT_RPC_CONFIG[field] }), rpc: field };
}

function boolean(spec: { doc: string; default: boolean; defaultText?: string }): ConfigField<boolean> {
  return {
    type: 'boolean',
    ...spec,
    parse: (v, where) => {
      if (typeof v !== 'boolean') throw new ConfigError(`${where}: expected a boolean`);
      return v;
    },
  };
}

/** A string field without a default (absent unless set). */
function optionalString(spec: { doc: string; defaultText?: string }): ConfigField<string | undefined> {
  return {
    type: 'string',
    ...spec,
    default: undefined,
    parse: (v, where) => {
      if (typeof v !== 'string') throw new ConfigError(`${where}: expected a string`);
      return v;
    },
  };
}

/**
 * Reads `raw`'s fields into `out` (which holds the defaults): each through its field's parse,
 * an unknown name is an error. `path(k)` names field k in messages.
 */
function readFields(
  schema: ConfigSchema,
  raw: Record<string, unknown>,
  path: (k: string) => string,
  out: object,
): void {
  const target = out as Record<string, unknown>;
  for (const [k, v] of Object.entries(raw)) {
    const field = Object.hasOwn(schema, k) ? schema[k] : undefined;
    if (field === undefined) throw new ConfigError(`${path(k)}: unknown field`);
    target[k] = field.parse(v, path(k));
  }
}

/** The defaults of a schema (fields whose default is undefined are left out). */
function defaultsOf<S extends ConfigSchema>(schema: S): ConfigValues<S> {
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(schema)) if (f.default !== undefined) out[k] = structuredClone(f.default);
  return out as ConfigValues<S>;
}

// ---------------------------------------------------------------------------------------------
// Plans

/**
 * The fields of one plan in `plans`: exactly a PlanConfig (the plans themselves, their names,
 * defaults and the limits of a key, are @chainnode/accounts').
 */
export const PLAN_FIELDS = {
  /** HTTP 402 beyond, until 00:00 UTC. */
  dailyCredits: integer({
    doc: 'Credits per UTC day (HTTP 402 beyond, until 00:00 UTC).',
    unit: 'credits',
    default: 0,
    defaultText: 'per plan',
  }),
  /** A token bucket holding one second of credits (HTTP 429 beyond). */
  creditsPerSecond: integer({
    doc: 'Credits per second, a token bucket holding one second of credits (HTTP 429 beyond); 0: no limit.',
    unit: 'credits/s',
    default: 0,
    defaultText: 'per plan',
  }),
  /** Spec 4.3. */
  failover: boolean({
    doc: 'Whether eth_getBlockByHash may be forwarded to the failover partner (`--failover-url`).',
    default: false,
    defaultText: 'per plan',
  }),
} satisfies ConfigSchema & { [K in keyof PlanConfig]: ConfigField<PlanConfig[K]> };

function parsePlans(v: unknown, where: string): Record<PlanName, PlanConfig> {
  if (!isRecord(v)) throw new ConfigError(`${where}: expected an object of plans`);
  const out = structuredClone(DEFAULT_PLANS) as Record<PlanName, PlanConfig>;
  for (const [name, p] of Object.entries(v)) {
    if (!isPlanName(name)) {
      throw new ConfigError(`${where}.${name}: unknown plan (expected one of ${PLAN_NAMES.join(', ')})`);
    }
    if (!isRecord(p)) throw new ConfigError(`${where}.${name}: expected an object`);
    readFields(PLAN_FIELDS, p, (k) => `${where}.${name}.${k}`, out[name]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Networks

/** The fields of one network in `networks` (docs/networks.md). */
export const NETWORK_FIELDS = {
  /** Relative paths: to the working directory. */
  datadir: optionalString({ doc: "Datadir holding the network's imported chain (required).", defaultText: 'required' }),
  /** Validated here; whether the build can follow is the CLI's business. */
  follow: optionalString({ doc: 'Upstream JSON-RPC endpoint to follow: an http(s):// or ws(s):// URL.' }),
  ingest: optionalString({
    doc: 'How followed blocks become state: "execute" (run them with the EVM) or "replicate" (verify the upstream\'s state changes against every root).',
    defaultText: 'execute',
  }),
  history: optionalString({
    doc: 'With follow, for a datadir that joined its chain at block N: an http(s):// JSON-RPC endpoint answering history below N (blocks, transactions, receipts, logs, state), verified by hash links down from N and by proofs.',
  }),
} satisfies ConfigSchema;

/** One network of `serve`: `--network <name>=<datadir>[,follow=<URL>]` or an entry of `networks`. */
export interface NetworkConfig {
  name: string;
  /** Datadir holding the network's imported chain (relative paths: to the working directory). */
  datadir: string;
  /** Upstream JSON-RPC endpoint to follow (validated here; whether the build can follow is the CLI's business). */
  follow?: string;
  /** How followed blocks become state (with `follow`). */
  ingest?: 'execute' | 'replicate';
  /** History below a joined datadir's first block, fetched and verified (with `follow`). */
  history?: string;
}

function parseNetworks(v: unknown, where: string): NetworkConfig[] {
  if (!isRecord(v))
    throw new ConfigError(`${where}: expected an object {"<name>": {"datadir": "...", "follow"?: "<URL>"}}`);
  const networks = Object.entries(v).map(([name, n]) => {
    if (!isRecord(n)) throw new ConfigError(`${where}.${name}: expected {"datadir": "...", "follow"?: "<URL>"}`);
    const spec: Partial<ConfigValues<typeof NETWORK_FIELDS>> = {};
    readFields(NETWORK_FIELDS, n, (k) => `${where}.${name}.${k}`, spec);
    return checkNetwork(`${where}.${name}`, name, spec.datadir, spec.follow, spec.ingest, spec.history);
  });
  checkNetworks(where, networks);
  return networks;
}

// ---------------------------------------------------------------------------------------------
// The server's fields

/** Every field of server.json. */
export const SERVER_FIELDS = {
  plans: field<Record<PlanName, PlanConfig>>({
    type: 'object',
    doc: 'Daily credits, credits per second and failover per plan; a plan given replaces only the figures it sets.',
    default: DEFAULT_PLANS as Record<PlanName, PlanConfig>,
    defaultText: 'see [Plans](#plans)',
    parse: parsePlans,
  }),
  /** Larger bodies get 413. */
  maxBodyBytes: integer({ doc: 'Largest accepted HTTP body (413 beyond).', unit: 'bytes', default: 1024 * 1024 }),
  /** Passed to the rpc service; a larger batch gets -32600. */
  maxBatchSize: rpcInteger('maxBatchSize', {
    doc: 'Most calls in one JSON array batch (-32600 "batch too large" beyond).',
    unit: 'calls',
    min: 1,
  }),
  /** Larger messages close the connection (1009). */
  wsMaxPayloadBytes: integer({
    doc: 'Largest accepted WebSocket message (the connection is closed, 1009, beyond).',
    unit: 'bytes',
    default: 1024 * 1024,
  }),
  /**
   * Per-connection budget of reply bytes in flight (buffered towards a slow WebSocket reader):
   * above it the connection's next messages wait; a reply that would take it past twice this
   * closes it (1008).
   */
  wsMaxBackpressureBytes: integer({
    doc: 'Reply bytes buffered towards one WebSocket above which its next messages wait; past twice this it is closed (1008).',
    unit: 'bytes',
    default: 4 * 1024 * 1024,
  }),
  /** Beyond this the socket is closed (1013). */
  wsMaxQueuedMessages: integer({
    doc: 'Messages waiting while a WebSocket is backpressured (closed, 1013, beyond).',
    unit: 'messages',
    default: 1024,
  }),
  /** Beyond this the socket is closed (1013). */
  wsMaxQueuedBytes: integer({
    doc: 'Bytes of request text waiting on one WebSocket (closed, 1013, beyond).',
    unit: 'bytes',
    default: 1024 * 1024,
  }),
  /** A WebSocket whose buffered replies have not gone down for this long is closed (1008). */
  wsSlowReaderTimeoutSeconds: integer({
    doc: 'A WebSocket whose buffered replies have not gone down for this long is closed (1008).',
    unit: 'seconds',
    default: 30,
  }),
  /**
   * Process budget of reply bytes in flight (every connection's buffered replies together):
   * over it no new request starts (WebSocket messages wait, HTTP gets 503 -32005) and the
   * connections holding more than wsMaxBackpressureBytes are closed (1008).
   */
  maxReplyBytesInFlight: integer({
    doc: 'Reply bytes buffered towards all clients together above which no new request starts (HTTP 503 -32005).',
    unit: 'bytes',
    default: 128 * 1024 * 1024,
  }),
  /** rpc maxBatchResponseBytes (geth's 25 MB): the calls past it get -32003 "response too large". */
  maxBatchResponseBytes: rpcInteger('maxBatchResponseBytes', {
    doc: 'Largest answer of one batch; the calls past it get -32003 "response too large".',
    unit: 'bytes',
    min: 1,
  }),
  /** rpc maxConcurrentBatches: more wait their turn. */
  maxConcurrentBatches: rpcInteger('maxConcurrentBatches', {
    doc: 'Batches answered at once; more wait their turn in arrival order.',
    unit: 'batches',
    min: 1,
  }),
  /** geth's RPCGasCap for eth_call, eth_estimateGas and eth_createAccessList. */
  callGasCap: rpcInteger('callGasCap', {
    doc: 'Most gas one eth_call, eth_estimateGas or eth_createAccessList may use; a larger or missing `gas` is capped to it.',
    unit: 'gas',
    min: 21000,
  }),
  /** geth's RPCEVMTimeout. */
  callTimeoutMs: rpcInteger('callTimeoutMs', {
    doc: 'Most wall time one eth_call, eth_estimateGas or eth_createAccessList may take; past it the call fails with -32000 `execution aborted`.',
    unit: 'ms',
    min: 1,
  }),
  /** `safe` resolves to head - safeDepth (there is no consensus client), clamped at genesis. */
  safeDepth: rpcInteger('safeDepth', {
    doc: 'The `safe` block tag resolves to the head minus this many blocks (clamped at genesis).',
    unit: 'blocks',
  }),
  /** `finalized` resolves to head - finalizedDepth, clamped at genesis. */
  finalizedDepth: rpcInteger('finalizedDepth', {
    doc: 'The `finalized` block tag resolves to the head minus this many blocks (clamped at genesis).',
    unit: 'blocks',
  }),
  /** uWS granularity ~4 s. */
  wsIdleTimeoutSeconds: integer({
    doc: 'A WebSocket silent for this long is closed (granularity about 4 s).',
    unit: 'seconds',
    default: 120,
  }),
  /** ["*"] allows any (API keys are in the path, no cookies involved). */
  corsOrigins: field<string[]>({
    type: 'string[]',
    doc: 'Allowed CORS origins; `["*"]` allows any (API keys are in the path, no cookies involved).',
    default: ['*'],
    parse: (v, where) => {
      if (!Array.isArray(v) || !v.every((o) => typeof o === 'string')) {
        throw new ConfigError(`${where}: expected an array of origin strings`);
      }
      return v as string[];
    },
  }),
  /** How long eth_getBlockByHash may take locally before a failover-plan call is forwarded. */
  failoverTimeoutMs: integer({
    doc: 'How long eth_getBlockByHash may take locally before a failover-plan call is forwarded.',
    unit: 'ms',
    default: 2_000,
  }),
  /** Loopback unless configured otherwise. */
  metricsHost: field<string>({
    type: 'string',
    doc: 'Address of the Prometheus metrics listener.',
    default: '127.0.0.1',
    parse: (v, where) => {
      if (typeof v !== 'string' || v === '') throw new ConfigError(`${where}: expected a host name`);
      return v;
    },
  }),
  /** Port 0 means off (`--metrics-port` overrides). */
  metricsPort: integer({ doc: 'Port of the Prometheus metrics listener; 0: off.', unit: 'port', default: 0 }),
  /** Longest wait for in-flight requests on SIGTERM/SIGINT before closing anyway. */
  shutdownGraceMs: integer({
    doc: 'Longest wait for in-flight requests on SIGTERM/SIGINT before closing anyway.',
    unit: 'ms',
    default: 10_000,
  }),
  /**
   * Worker threads that answer eth_getLogs (each opens the datadir), so a heavy query never
   * runs on the event loop that answers everything else. 0: answered inline.
   */
  logWorkers: integer({
    doc: 'Worker threads answering eth_getLogs (each opens the datadir); 0: answered on the event loop.',
    unit: 'threads',
    max: 64,
    default: 1,
  }),
  /**
   * Most eth_getLogs calls waiting for or running in the log workers at once; more are
   * refused at once with -32005 "too many concurrent log queries" (not charged).
   */
  logQueueLimit: integer({
    doc: 'Most eth_getLogs calls queued for or running in the log workers; more get -32005 (not charged).',
    unit: 'calls',
    min: 1,
    default: 64,
  }),
  /** Empty: the one chain of --datadir. `--network` flags replace these. */
  networks: field<NetworkConfig[]>({
    type: 'object',
    doc: 'Networks served by one process, chosen by Host: {"<name>": {"datadir": "...", "follow"?: "<URL>"}}.',
    default: [],
    defaultText: 'none (the one chain of `--datadir`)',
    parse: parseNetworks,
  }),
  /** Absent: bare hosts get 404. */
  defaultNetwork: field<string | undefined>({
    type: 'string',
    doc: 'The network answering bare hosts (IP literals, `localhost`); must be one of `networks`.',
    default: undefined,
    defaultText: 'none (bare hosts get 404)',
    parse: (v, where) => {
      if (typeof v !== 'string' || networkNameProblem(v) !== undefined)
        throw new ConfigError(`${where}: expected a network name`);
      return v;
    },
  }),
  /** A debit slower than this counts as Redis being away. */
  ledgerCommandTimeoutMs: integer({
    doc: 'Timeout of each Redis ledger command; a slower debit counts as Redis being away.',
    unit: 'ms',
    min: 1,
    default: 1_000,
  }),
  /** Fail-open: beyond, paid calls are refused. */
  ledgerJournalMax: integer({
    doc: 'Most charges a replica journals locally while Redis is away; beyond, paid calls are refused.',
    unit: 'charges',
    default: 200_000,
  }),
  /** More: -32005. */
  subscriptionsPerConnection: integer({
    doc: 'eth_subscribe: most subscriptions one WebSocket may hold (-32005 beyond).',
    unit: 'subscriptions',
    default: 100,
  }),
  /** Over all the key's WebSockets; more: -32005. */
  subscriptionsPerKey: integer({
    doc: 'eth_subscribe: most subscriptions one API key may hold over all its WebSockets (-32005 beyond).',
    unit: 'subscriptions',
    default: 1000,
  }),
  /**
   * A subscriber whose socket holds more than this many unsent bytes when a notification is due
   * is disconnected (1008): notifications never pile up in memory for a reader that does not read.
   */
  wsMaxUnsentNotificationBytes: integer({
    doc: 'A subscriber holding more unsent bytes than this when a notification is due is disconnected (1008).',
    unit: 'bytes',
    default: 4 * 1024 * 1024,
  }),
} satisfies ConfigSchema;

export type ServerConfig = ConfigValues<typeof SERVER_FIELDS>;

/** Every default, from SERVER_FIELDS (listed in docs/reference/configuration.md). */
export const DEFAULT_CONFIG: ServerConfig = defaultsOf(SERVER_FIELDS);

/** Merges a parsed config object over the defaults, validating every field. */
export function parseConfig(raw: unknown, source = 'config'): ServerConfig {
  if (!isRecord(raw)) throw new ConfigError(`${source}: expected a JSON object`);
  const out: ServerConfig = structuredClone(DEFAULT_CONFIG);
  readFields(SERVER_FIELDS, raw, (k) => `${source}: ${k}`, out);
  if (
    out.defaultNetwork !== undefined &&
    out.networks.length > 0 &&
    !out.networks.some((n) => n.name === out.defaultNetwork)
  ) {
    throw new ConfigError(`${source}: defaultNetwork "${out.defaultNetwork}" is not among networks`);
  }
  return out;
}

/** The rpc service's settings from a server config: every field with `rpc` in SERVER_FIELDS. */
export function rpcConfigOf(config: ServerConfig): Partial<RpcConfig> {
  const out: Partial<Record<RpcIntegerField, number>> = {};
  for (const [name, field] of Object.entries(SERVER_FIELDS) as [keyof ServerConfig, ConfigField<unknown>][]) {
    if (field.rpc !== undefined) out[field.rpc] = config[name] as number;
  }
  return out;
}

/** Validates one network: its name, a datadir, an optional http(s)/ws(s) follow URL. */
export function checkNetwork(
  where: string,
  name: string,
  datadir: string | undefined,
  follow: string | undefined,
  ingest?: string | undefined,
  history?: string | undefined,
): NetworkConfig {
  const problem = networkNameProblem(name);
  if (problem !== undefined) throw new ConfigError(`${where}: ${problem}`);
  if (datadir === undefined || datadir === '') throw new ConfigError(`${where}: a datadir is required`);
  if (ingest !== undefined && ingest !== 'execute' && ingest !== 'replicate')
    throw new ConfigError(`${where}: ingest: expected "execute" or "replicate", got "${ingest}"`);
  if (follow === undefined) {
    if (ingest !== undefined) throw new ConfigError(`${where}: ingest: only with follow`);
    if (history !== undefined) throw new ConfigError(`${where}: history: only with follow`);
    return { name, datadir };
  }
  if (history !== undefined && !/^https?:\/\/[^/\s]/i.test(history))
    throw new ConfigError(`${where}: history: expected an http(s):// URL`);
  let u: URL;
  try {
    u = new URL(follow);
  } catch {
    throw new ConfigError(`${where}: follow: expected the URL of a JSON-RPC endpoint (http, https, ws or wss)`);
  }
  if (!['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol))
    throw new ConfigError(`${where}: follow: expected an http(s):// or ws(s):// URL`);
  return {
    name,
    datadir,
    follow,
    ...(ingest !== undefined ? { ingest } : {}),
    ...(history !== undefined ? { history } : {}),
  };
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
