// Server configuration: plans (daily credit balances), transport limits, the rpc settings a
// deployment tunes, and every setting of `serve` that is also a flag (listeners, ledger, follow,
// logs, threads). A JSON file (`--config <file>`, else `<datadir>/server.json` when present)
// overrides the defaults field by field; unknown fields are rejected so typos do not pass
// silently. A flag given on the command line overrides the file: flag > file > default.
//
// SERVER_FIELDS below is the one description of that file and of those flags: each field's type
// and check, its default, unit and range, its flag (`flag`: the field's name in kebab case), and
// the line both generated references (docs/reference/configuration.md and cli.md) print.
// parseConfig, DEFAULT_CONFIG, the ServerConfig type, rpcConfigOf (the fields the rpc service
// takes) and the CLI's serve options all derive from it.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_RPC_CONFIG } from '@chainnode/rpc';
import type { RpcConfig } from '@chainnode/rpc';
import { DEFAULT_PLANS, PLAN_NAMES, isPlanName, networkNameProblem } from '@chainnode/accounts';
import type { PlanConfig, PlanName } from '@chainnode/accounts';
import { MAX_NETWORKS } from './router.js';
import { LOG_FORMATS, LOG_LEVELS } from './log.js';

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
  /** The `serve` flag that sets this field too (its name: the field's in kebab case). */
  readonly flag?: FlagSpec;
  /** The field's former name, still accepted in a file (one or the other, not both). */
  readonly alias?: string;
}

/**
 * A field that is also a flag of `serve` (and `start`, unless `serveOnly`): `--<kebab-name>
 * <arg>`, or a switch without `arg`. Commander hands flags over as text: `text` is a file value in
 * that form (what the flag would have said), undefined when it means the flag is absent.
 */
export interface FlagSpec {
  /** The value's name in the usage (`--port <port>`); absent: a switch. */
  readonly arg?: string;
  /** Only `serve` has it (the follow and network flags), not `start`. */
  readonly serveOnly?: boolean;
  /** Left out of --help (still in the references). */
  readonly hidden?: boolean;
  /** The flag's text for a file value (default: String(value)). */
  readonly text?: (value: never) => string | boolean | undefined;
}

/** `--kebab-case` of a field name. */
export function flagName(field: string): string {
  return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
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
  alias?: string;
  defaultText?: string;
  unit?: string;
  min?: number;
  max?: number;
  flag?: FlagSpec;
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

function boolean(spec: { doc: string; default: boolean; defaultText?: string; flag?: FlagSpec }): ConfigField<boolean> {
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
function optionalString(spec: { doc: string; defaultText?: string; flag?: FlagSpec }): ConfigField<string | undefined> {
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

/** A non-empty string field with a default. */
function text(spec: { doc: string; default: string; flag?: FlagSpec }): ConfigField<string> {
  return {
    type: 'string',
    ...spec,
    parse: (v, where) => {
      if (typeof v !== 'string' || v === '') throw new ConfigError(`${where}: expected a non-empty string`);
      return v;
    },
  };
}

function enumParse<V extends string>(values: readonly V[]): (v: unknown, where: string) => V {
  return (v, where) => {
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v))
      throw new ConfigError(
        `${where}: expected one of ${values.map((x) => JSON.stringify(x)).join(', ')}, got ${JSON.stringify(v)}`,
      );
    return v as V;
  };
}

const enumType = (values: readonly string[]): string => values.map((v) => JSON.stringify(v)).join(' | ');

/** One of `values`, with a default. */
function oneOf<V extends string>(
  values: readonly V[],
  spec: { doc: string; default: V; flag?: FlagSpec },
): ConfigField<V> {
  return { type: enumType(values), ...spec, parse: enumParse(values) };
}

/** One of `values`, absent unless set. */
function optionalOneOf<V extends string>(
  values: readonly V[],
  spec: { doc: string; defaultText?: string; flag?: FlagSpec },
): ConfigField<V | undefined> {
  const parse = enumParse(values);
  return { type: enumType(values), ...spec, default: undefined, parse: (v, where) => parse(v, where) };
}

/** A TCP port, 0 to 65535, without a default (absent unless set). */
function optionalPort(spec: { doc: string; defaultText?: string; flag: FlagSpec }): ConfigField<number | undefined> {
  return {
    type: 'integer',
    unit: 'port',
    max: 65535,
    default: undefined,
    ...spec,
    parse: (v, where) => {
      const n = nonNegInt(where, v);
      if (n > 65535) throw new ConfigError(`${where} must be at most 65535`);
      return n;
    },
  };
}

/**
 * Reads `raw`'s fields into `out` (which holds the defaults): each through its field's parse,
 * an unknown name is an error, a field's former name (alias) is read as the field. `path(k)` names
 * field k in messages.
 */
function readFields(
  schema: ConfigSchema,
  raw: Record<string, unknown>,
  path: (k: string) => string,
  out: object,
): void {
  const target = out as Record<string, unknown>;
  for (const [given, v] of Object.entries(raw)) {
    const k = canonicalName(schema, given);
    if (k !== given && Object.hasOwn(raw, k))
      throw new ConfigError(`${path(given)}: the former name of ${k}, which is set too`);
    const field = Object.hasOwn(schema, k) ? schema[k] : undefined;
    if (field === undefined) {
      const camel = k.replace(/^-+/, '').replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
      const hint = camel !== k && Object.hasOwn(schema, camel) ? ` (did you mean "${camel}"?)` : '';
      throw new ConfigError(`${path(k)}: unknown field${hint}`);
    }
    target[k] = field.parse(v, path(given));
  }
}

/** A field's name for `name`, its own or its former one (alias); other names as they are. */
function canonicalName(schema: ConfigSchema, name: string): string {
  if (Object.hasOwn(schema, name)) return name;
  return Object.entries(schema).find(([, f]) => f.alias === name)?.[0] ?? name;
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
  follow: optionalString({
    doc: 'Upstream JSON-RPC endpoint to follow: an http(s):// or ws(s):// URL.',
  }),
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

/** `threads`: 1 to 256, or "cores" (one per core). */
function parseThreadsField(v: unknown, where: string): number | 'cores' {
  if (v === 'cores') return v;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 256)
    throw new ConfigError(`${where}: expected a number of threads 1-256 or "cores", got ${JSON.stringify(v)}`);
  return v;
}

/** `startBlock`: a block number above 0, or "head-K". */
function parseStartBlockField(v: unknown, where: string): string {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return String(v);
  if (typeof v === 'string' && /^(head-[0-9]+|0x[0-9a-fA-F]+|[0-9]+)$/.test(v) && !/^(0x)?0+$/.test(v)) return v;
  throw new ConfigError(`${where}: expected a block number above 0 or "head-K", got ${JSON.stringify(v)}`);
}

/** Every field of server.json. */
export const SERVER_FIELDS = {
  // The process: listeners, ledger, logs, threads, following. Each is also a flag of serve.
  host: text({ doc: 'Address the JSON-RPC listener binds to.', default: '127.0.0.1', flag: { arg: 'host' } }),
  port: integer({
    doc: 'Port of the JSON-RPC listener (HTTP and WebSocket); 0: any free port.',
    unit: 'port',
    max: 65535,
    default: 8545,
    flag: { arg: 'port' },
  }),
  failoverUrl: optionalString({
    defaultText: 'none (no failover)',
    doc: 'Partner JSON-RPC endpoint (http(s)://) for eth_getBlockByHash of failover-plan keys during an outage.',
    flag: { arg: 'url' },
  }),
  ledger: optionalString({
    doc: 'Keys and credits shared by every replica in Redis: redis://host:port[/db].',
    defaultText: 'embedded in the datadir',
    flag: { arg: 'url' },
  }),
  ledgerFailure: oneOf(['open', 'closed'], {
    doc: 'While the Redis ledger is unreachable: open (serve, journal locally, replay later) or closed (refuse paid calls).',
    default: 'open',
    flag: { arg: 'mode' },
  }),
  dashboard: boolean({
    doc: 'Serve the developer dashboard on the admin listener (`adminHost`, `adminPort`).',
    default: false,
    flag: {},
  }),
  adminHost: text({ doc: 'Address of the admin listener (dashboard).', default: '127.0.0.1', flag: { arg: 'host' } }),
  adminPort: optionalPort({
    doc: 'Port of the admin listener (implies `dashboard`; 0: any free port).',
    defaultText: '8546 with `dashboard`',
    flag: { arg: 'port' },
  }),
  adminTlsCert: optionalString({
    defaultText: 'none (plain HTTP)',
    doc: 'PEM certificate file: serve the dashboard over TLS (with `adminTlsKey`).',
    flag: { arg: 'file' },
  }),
  adminTlsKey: optionalString({
    doc: 'PEM private key file of `adminTlsCert`.',
    defaultText: 'none',
    flag: { arg: 'file' },
  }),
  logFormat: optionalOneOf(LOG_FORMATS, {
    doc: 'The log on stderr: one JSON object per line, or `serve: …` text lines.',
    defaultText: 'text on a terminal, json otherwise',
    flag: { arg: 'format' },
  }),
  logLevel: oneOf(LOG_LEVELS, {
    doc: 'Least severe log level written (silent: nothing).',
    default: 'info',
    flag: { arg: 'level' },
  }),
  accessLog: boolean({
    doc: 'Log one record per call: method, key id (never the key), outcome, credits, duration.',
    default: false,
    flag: {},
  }),
  threads: field<number | 'cores'>({
    type: 'integer | "cores"',
    doc: 'App threads serving the port, each with the store open and its own caches; credits exact across them; 1: a single-thread server.',
    defaultText: '`"cores"` (one per core)',
    default: 'cores',
    unit: 'threads',
    parse: parseThreadsField,
    flag: { arg: 'n' },
  }),
  follow: optionalString({
    defaultText: 'none (the datadir as it is)',
    doc: 'Follow a live JSON-RPC upstream (http(s):// or ws(s)://) while serving; every block is verified before it is written.',
    flag: { arg: 'URL', serveOnly: true },
  }),
  genesis: optionalString({
    defaultText: "the datadir's",
    doc: 'genesis.json of the followed chain (required for an empty datadir).',
    flag: { arg: 'file', serveOnly: true },
  }),
  ingest: optionalOneOf(['execute', 'replicate'], {
    doc: "With `follow`: execute (run every block with the EVM) or replicate (verify the upstream's transactions, receipts and state changes against every root).",
    defaultText: 'execute',
    flag: { arg: 'mode', serveOnly: true },
  }),
  startBlock: field<string | undefined>({
    type: 'integer | string',
    doc: 'With `follow` and an empty datadir: join the chain at block N, or the upstream\'s head minus K (`"head-K"`); history from there on, state proven on demand.',
    default: undefined,
    defaultText: 'none (from genesis, or where the datadir is)',
    parse: parseStartBlockField,
    flag: { arg: 'N|head-K', serveOnly: true },
  }),
  checkpoint: optionalString({
    defaultText: 'none',
    doc: 'With `startBlock`: the hash the start block must have.',
    flag: { arg: 'hash', serveOnly: true },
  }),
  historyUpstream: optionalString({
    doc: 'With `follow`, for a datadir that joined its chain at block N: answer history below N (blocks, transactions, receipts, logs, state) from this http(s):// upstream, verified by hash links down from N and by proofs (also `,history=` in `--network`).',
    defaultText: 'none (below N: pruned history)',
    flag: { arg: 'URL', serveOnly: true },
  }),
  reorgDepth: integer({
    doc: 'Deepest upstream reorg followed before the ingest stops (every followed network).',
    unit: 'blocks',
    default: 64,
    flag: { arg: 'n', serveOnly: true },
  }),
  pollMs: integer({
    doc: 'Upstream poll interval when caught up.',
    unit: 'ms',
    min: 10,
    default: 1000,
    flag: { arg: 'ms', serveOnly: true, hidden: true },
  }),
  // Policy: plans and limits.
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
  /** Port 0 means off in the file; `--metrics-port 0` is any free port. */
  metricsPort: integer({
    doc: 'Port of the Prometheus metrics listener (on `metricsHost`); 0: off (`--metrics-port 0`: any free port).',
    unit: 'port',
    max: 65535,
    default: 0,
    flag: { arg: 'port', text: (v: number) => (v === 0 ? undefined : String(v)) },
  }),
  /** Longest wait for in-flight requests on SIGTERM/SIGINT before closing anyway. */
  shutdownGraceMs: integer({
    doc: 'Longest wait for in-flight requests on SIGTERM/SIGINT before closing anyway.',
    unit: 'ms',
    default: 10_000,
  }),
  /**
   * Worker threads that answer the offloaded methods (eth_getLogs, eth_call, eth_estimateGas,
   * eth_createAccessList, chainnode_getStateDiff; each worker opens the datadir), so a heavy call
   * never runs on the event loop that answers everything else. 0: answered inline.
   */
  offloadWorkers: integer({
    doc: 'Worker threads answering the offloaded methods (eth_getLogs, eth_call, eth_estimateGas, eth_createAccessList, chainnode_getStateDiff; each opens the datadir); 0: answered on the event loop.',
    unit: 'threads',
    max: 64,
    default: 1,
    alias: 'logWorkers',
  }),
  /**
   * Most offloaded calls waiting for or running in the offload workers at once; more are
   * refused at once with -32005 "too many concurrent offloaded queries" (not charged).
   */
  offloadQueueLimit: integer({
    doc: 'Most offloaded calls queued for or running in the offload workers; more get -32005 (not charged).',
    unit: 'calls',
    min: 1,
    default: 64,
    alias: 'logQueueLimit',
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
    flag: { arg: 'name', serveOnly: true },
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

/** A read configuration: the values, and the fields the file set (the rest are defaults). */
export interface ConfigFile {
  config: ServerConfig;
  /** The file read; undefined when there was none (the defaults). */
  path: string | undefined;
  set: ReadonlySet<keyof ServerConfig>;
}

/** `--config <file>` if given, else `<datadir>/server.json` if present, else the defaults. */
export function loadConfig(datadir: string, file?: string): ServerConfig {
  return readConfigFile(datadir, file).config;
}

/**
 * The flags of `serve` a file sets, as the flags' text (see FlagSpec): what `serve` takes from
 * the file for every flag not given on the command line (flag > file > default).
 */
export function flagsFromFile(file: ConfigFile): Map<keyof ServerConfig, string | boolean> {
  const out = new Map<keyof ServerConfig, string | boolean>();
  for (const name of file.set) {
    if ((SERVER_FIELDS[name] as ConfigField<unknown>).flag === undefined) continue;
    const text = flagText(SERVER_FIELDS[name] as ConfigField<unknown>, file.config[name]);
    if (text !== undefined) out.set(name, text);
  }
  return out;
}

/** A field's value as its flag would say it (undefined: as if the flag were absent). */
export function flagText(field: ConfigField<unknown>, value: unknown): string | boolean | undefined {
  if (field.flag?.text !== undefined) return (field.flag.text as (v: unknown) => string | boolean | undefined)(value);
  return typeof value === 'boolean' ? value : String(value);
}

/** loadConfig, with the fields the file set. */
export function readConfigFile(datadir: string, file?: string): ConfigFile {
  const path = file ?? join(datadir, 'server.json');
  if (file === undefined && !existsSync(path))
    return { config: structuredClone(DEFAULT_CONFIG), path: undefined, set: new Set() };
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
  const config = parseConfig(raw, path);
  const set = Object.keys(raw as object).map((k) => canonicalName(SERVER_FIELDS, k) as keyof ServerConfig);
  return { config, path, set: new Set(set) };
}
