// The process's settings, declared once: every field of server.json (SERVER_FIELDS), of a plan in
// `plans` and of a network in `networks`. A JSON file (`--config <file>`, else
// `<datadir>/server.json` when present) overrides the defaults field by field; unknown fields are
// rejected so typos do not pass silently. A flag given on the command line overrides the file:
// flag > file > default.
//
// SERVER_FIELDS is the one description of that file and of those flags: each field's type and
// check, its default, unit and range, its flag (`flag`: the field's name in kebab case), and the
// line both generated references (docs/reference/configuration.md and cli.md) print. parseConfig,
// DEFAULT_CONFIG, the ServerConfig type, rpcConfigOf (the fields the rpc service takes),
// transportConfigOf (the fields the server takes) and the CLI's serve options derive from it.
import { resolve } from 'node:path';
import { DEFAULT_PLANS, PLAN_NAMES, isPlanName, networkNameProblem } from '@chainnode/accounts/settings';
import type { LedgerFailureMode, PlanConfig, PlanName } from '@chainnode/accounts/settings';
import type { IngestMode, JoinState } from '@chainnode/ingest';
import { DEFAULT_TRANSPORT_CONFIG, LOG_FORMATS, LOG_LEVELS, MAX_NETWORKS } from '@chainnode/server/settings';
import type { TransportConfig } from '@chainnode/server/settings';
import { DEFAULT_FILTER_LIMITS, FILTER_TIMEOUT_MS } from '@chainnode/rpc/settings';
import {
  ConfigError,
  boolean,
  field,
  integer,
  isRecord,
  oneOf,
  optionalOneOf,
  optionalPort,
  optionalString,
  readFields,
  rpcInteger,
  text,
  transportInteger,
} from './schema.js';
import type { ConfigField, ConfigSchema, ConfigValues } from './schema.js';
import { parseStateTrieFlag } from './follow.js';

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

/** How a joined datadir gets its state (ingest's JoinState). */
const JOIN_STATES = ['proofs', 'download'] as const satisfies readonly JoinState[];

/** How followed blocks become state (ingest's IngestMode). */
const INGEST_MODES = ['execute', 'replicate'] as const satisfies readonly IngestMode[];

/** The fields of one network in `networks` (docs/networks.md). */
export const NETWORK_FIELDS = {
  /** Relative paths: to the working directory. */
  datadir: optionalString({ doc: "Datadir holding the network's imported chain (required).", defaultText: 'required' }),
  /** Validated here; whether the build can follow is the CLI's business. */
  follow: optionalString({
    doc: 'Upstream JSON-RPC endpoint to follow: an http(s):// or ws(s):// URL.',
  }),
  /** With `follow`. The reference names its type as a string. */
  ingest: {
    ...optionalOneOf(INGEST_MODES, {
      doc: 'How followed blocks become state: "execute" (run them with the EVM) or "replicate" (verify the upstream\'s state changes against every root).',
      defaultText: 'execute',
    }),
    type: 'string',
  },
  /** With `follow`: history below a joined datadir's first block, fetched and verified. */
  history: optionalString({
    doc: 'With follow, for a datadir that joined its chain at block N: an http(s):// JSON-RPC endpoint answering history below N (blocks, transactions, receipts, logs, state), verified by hash links down from N and by proofs.',
  }),
  /** With an http(s):// `follow`: the same upstream's WebSocket endpoint, for its subscriptions only. */
  ws: optionalString({
    doc: "With an http(s):// follow URL: the same upstream's ws(s):// endpoint, subscribed to only: its new heads wake the follower between polls, its pending transactions feed newPendingTransactions; requests stay on HTTP.",
  }),
} satisfies ConfigSchema;

type NetworkValues = ConfigValues<typeof NETWORK_FIELDS>;

/**
 * One network of `serve`: `--network <name>=<datadir>[,follow=<URL>]` or an entry of `networks`:
 * its name, a datadir, and the other fields of NETWORK_FIELDS when set.
 */
export type NetworkConfig = { name: string; datadir: NonNullable<NetworkValues['datadir']> } & {
  [K in Exclude<keyof NetworkValues, 'datadir'>]?: NonNullable<NetworkValues[K]>;
};

function parseNetworks(v: unknown, where: string): NetworkConfig[] {
  if (!isRecord(v))
    throw new ConfigError(`${where}: expected an object {"<name>": {"datadir": "...", "follow"?: "<URL>"}}`);
  const networks = Object.entries(v).map(([name, n]) => {
    if (!isRecord(n)) throw new ConfigError(`${where}.${name}: expected {"datadir": "...", "follow"?: "<URL>"}`);
    const spec: Partial<ConfigValues<typeof NETWORK_FIELDS>> = {};
    readFields(NETWORK_FIELDS, n, (k) => `${where}.${name}.${k}`, spec);
    return checkNetwork(`${where}.${name}`, name, spec.datadir, spec.follow, spec.ingest, spec.history, spec.ws);
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

/** The admin listener's port when `dashboard` is on and `adminPort` is not set. */
export const DEFAULT_ADMIN_PORT = 8546;

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
  ledgerFailure: oneOf(['open', 'closed'] satisfies LedgerFailureMode[], {
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
    defaultText: `${DEFAULT_ADMIN_PORT} with \`dashboard\``,
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
  ingest: optionalOneOf(INGEST_MODES, {
    doc: "With `follow`: execute (run every block with the EVM) or replicate (verify the upstream's transactions, receipts and state changes against every root).",
    defaultText: 'execute',
    flag: { arg: 'mode', serveOnly: true },
  }),
  startBlock: field<string | undefined>({
    type: 'integer | string',
    doc: 'With `follow` and an empty datadir: join the chain at block N, or the upstream\'s head minus K (`"head-K"`); history from there on, state proven on demand (or downloaded: `joinState`).',
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
  joinState: optionalOneOf(JOIN_STATES, {
    doc: "With `startBlock` (and `sync --start-block`): how the joined datadir gets its state. `proofs`: proven on demand, a proof from the upstream per path first read; `download`: the start block's whole state downloaded from a chainnode primary (every trie node checked by its hash), then every later block replicated with its state changes, so every read from the start block on is local. Fixed when the datadir joins.",
    defaultText: 'proofs',
    flag: { arg: 'proofs|download', serveOnly: true },
  }),
  stateTrie: field<string | undefined>({
    type: 'string',
    doc: 'With `follow` (and `sync`), a new datadir keeps the state trie of its last N blocks (`"window=<N>"`: below them state from the flat history, no proofs) or of every block (`"archive"`); fixed at creation.',
    default: undefined,
    defaultText: '`"window=90000"`, else the datadir\'s',
    parse: (v, where) => {
      if (typeof v !== 'string') throw new ConfigError(`${where}: expected "archive" or "window=<N>"`);
      parseStateTrieFlag(v, where);
      return v;
    },
    flag: { arg: 'window=N|archive', serveOnly: true },
  }),
  traceFrames: optionalOneOf(['on', 'off'] as const, {
    doc: "With `follow` (and `sync`) executing: record every executed block's call frames and state changes, so callTracer, prestateTracer's diffMode, trace_* and ots_* answer without re-executing (`on`), or not (`off`: they re-execute); kept in the datadir until given again.",
    defaultText: "`on`, else the datadir's",
    flag: { arg: 'on|off', serveOnly: true },
  }),
  followWs: optionalString({
    doc: "With an http(s):// follow URL: the same upstream's ws(s):// endpoint, subscribed to only: its new heads wake the follower between polls (a block is fetched as soon as it is announced), its pending transactions feed newPendingTransactions; requests stay on HTTP (also `,ws=` in `--network`).",
    defaultText: 'none (a ws(s):// follow URL subscribes on itself; else polls only)',
    flag: { arg: 'URL', serveOnly: true },
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
    default: DEFAULT_TRANSPORT_CONFIG.plans,
    defaultText: 'see [Plans](#plans)',
    parse: parsePlans,
  }),
  /** Larger bodies get 413. */
  maxBodyBytes: transportInteger('maxBodyBytes', { doc: 'Largest accepted HTTP body (413 beyond).', unit: 'bytes' }),
  /** Passed to the rpc service; a larger batch gets -32600. */
  maxBatchSize: rpcInteger('maxBatchSize', {
    doc: 'Most calls in one JSON array batch (-32600 "batch too large" beyond).',
    unit: 'calls',
    min: 1,
  }),
  /** Larger messages close the connection (1009). */
  wsMaxPayloadBytes: transportInteger('wsMaxPayloadBytes', {
    doc: 'Largest accepted WebSocket message (the connection is closed, 1009, beyond).',
    unit: 'bytes',
  }),
  /**
   * Per-connection budget of reply bytes in flight (buffered towards a slow WebSocket reader):
   * above it the connection's next messages wait; a reply that would take it past twice this
   * closes it (1008).
   */
  wsMaxBackpressureBytes: transportInteger('wsMaxBackpressureBytes', {
    doc: 'Reply bytes buffered towards one WebSocket above which its next messages wait; past twice this it is closed (1008).',
    unit: 'bytes',
  }),
  /** Beyond this the socket is closed (1013). */
  wsMaxQueuedMessages: transportInteger('wsMaxQueuedMessages', {
    doc: 'Messages waiting while a WebSocket is backpressured (closed, 1013, beyond).',
    unit: 'messages',
  }),
  /** Beyond this the socket is closed (1013). */
  wsMaxQueuedBytes: transportInteger('wsMaxQueuedBytes', {
    doc: 'Bytes of request text waiting on one WebSocket (closed, 1013, beyond).',
    unit: 'bytes',
  }),
  /** A WebSocket whose buffered replies have not gone down for this long is closed (1008). */
  wsSlowReaderTimeoutSeconds: transportInteger('wsSlowReaderTimeoutSeconds', {
    doc: 'A WebSocket whose buffered replies have not gone down for this long is closed (1008).',
    unit: 'seconds',
  }),
  /**
   * Process budget of reply bytes in flight (every connection's buffered replies together):
   * over it no new request starts (WebSocket messages wait, HTTP gets 503 -32005) and the
   * connections holding more than wsMaxBackpressureBytes are closed (1008).
   */
  maxReplyBytesInFlight: transportInteger('maxReplyBytesInFlight', {
    doc: 'Reply bytes buffered towards all clients together above which no new request starts (HTTP 503 -32005).',
    unit: 'bytes',
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
  /** Per network and app thread (docs/decisions/execution.md). */
  callCacheBytes: rpcInteger('callCacheBytes', {
    doc: 'Bytes of eth_call, eth_estimateGas and eth_createAccessList answers kept by block hash and params (an answer is kept on its second ask), per network and app thread; 0: none kept.',
    unit: 'bytes',
  }),
  /** geth's maxSimulateBlocks. */
  simulateMaxBlocks: rpcInteger('simulateMaxBlocks', {
    doc: 'Most blocks one eth_simulateV1 may simulate, the gaps between its block numbers included; more get -38026 `too many blocks`.',
    unit: 'blocks',
    min: 1,
  }),
  /** geth's maxSimulateTotalCalls. */
  simulateMaxCalls: rpcInteger('simulateMaxCalls', {
    doc: 'Most calls one eth_simulateV1 may carry over all its blocks (at most 5,000 in one block, as geth); more get -38026 `too many calls`.',
    unit: 'calls',
    min: 1,
  }),
  /** geth has none: a struct-log trace of a big transaction runs to gigabytes. */
  traceMaxBytes: rpcInteger('traceMaxBytes', {
    doc: 'Largest answer of one debug_trace* or trace_* call (struct logs grow by hundreds of bytes per opcode); past it the trace stops with -32003 `response too large`.',
    unit: 'bytes',
    min: 1,
  }),
  /** reth's max_trace_filter_blocks (100), Erigon's trace filter range; Infura allows 100 blocks. */
  traceFilterMaxBlocks: rpcInteger('traceFilterMaxBlocks', {
    doc: 'Most blocks one trace_filter may cover, fromBlock and toBlock counted (each block of the range is re-executed); more get -32602 `Block range too large`.',
    unit: 'blocks',
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
  wsIdleTimeoutSeconds: transportInteger('wsIdleTimeoutSeconds', {
    doc: 'A WebSocket silent for this long is closed (granularity about 4 s).',
    unit: 'seconds',
  }),
  /** ["*"] allows any (API keys are in the path, no cookies involved). */
  corsOrigins: field<string[]>({
    type: 'string[]',
    doc: 'Allowed CORS origins; `["*"]` allows any (API keys are in the path, no cookies involved).',
    default: DEFAULT_TRANSPORT_CONFIG.corsOrigins,
    parse: (v, where) => {
      if (!Array.isArray(v) || !v.every((o) => typeof o === 'string')) {
        throw new ConfigError(`${where}: expected an array of origin strings`);
      }
      return v as string[];
    },
  }),
  /** How long eth_getBlockByHash may take locally before a failover-plan call is forwarded. */
  failoverTimeoutMs: transportInteger('failoverTimeoutMs', {
    doc: 'How long eth_getBlockByHash may take locally before a failover-plan call is forwarded.',
    unit: 'ms',
  }),
  /** Loopback unless configured otherwise. */
  metricsHost: field<string>({
    type: 'string',
    doc: 'Address of the Prometheus metrics listener.',
    default: DEFAULT_TRANSPORT_CONFIG.metricsHost,
    parse: (v, where) => {
      if (typeof v !== 'string' || v === '') throw new ConfigError(`${where}: expected a host name`);
      return v;
    },
  }),
  /** Port 0 means off in the file; `--metrics-port 0` is any free port. */
  metricsPort: transportInteger('metricsPort', {
    doc: 'Port of the Prometheus metrics listener (on `metricsHost`); 0: off (`--metrics-port 0`: any free port).',
    unit: 'port',
    max: 65535,
    flag: { arg: 'port', text: (v: number) => (v === 0 ? undefined : String(v)) },
  }),
  /** Longest wait for in-flight requests on SIGTERM/SIGINT before closing anyway. */
  shutdownGraceMs: transportInteger('shutdownGraceMs', {
    doc: 'Longest wait for in-flight requests on SIGTERM/SIGINT before closing anyway.',
    unit: 'ms',
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
  /** Polled filters (eth_newFilter, eth_newBlockFilter, eth_newPendingTransactionFilter) one key may hold; more: -32005. */
  filtersPerKey: integer({
    doc: 'Most live polled filters (eth_newFilter and the rest) one API key may hold per network (-32005 beyond).',
    unit: 'filters',
    min: 1,
    default: DEFAULT_FILTER_LIMITS.perKey,
  }),
  /** Over all keys, in this process (with Redis: per key only, the keys expire by themselves). */
  filtersTotal: integer({
    doc: 'Most live polled filters per network in one process, over all keys (-32005 beyond); not applied to filters kept in Redis.',
    unit: 'filters',
    min: 1,
    default: DEFAULT_FILTER_LIMITS.total,
  }),
  /** geth's 5 minutes; shorter in tests of expiry (with Redis, each replica's own value applies to the polls it answers). */
  filterTimeoutMs: integer({
    doc: "How long a polled filter lives after its creation and after each eth_getFilterChanges (geth's 5 minutes); then `filter not found`.",
    unit: 'ms',
    min: 1000,
    default: FILTER_TIMEOUT_MS,
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
  /** 0: every paid call decided in Redis. */
  ledgerLeaseCredits: integer({
    doc: "Redis ledger: largest slice of a key's daily balance a replica reserves and spends in-process (credit leases); 0: every paid call is decided in Redis.",
    unit: 'credits',
    default: 0,
  }),
  /** More: -32005. */
  subscriptionsPerConnection: transportInteger('subscriptionsPerConnection', {
    doc: 'eth_subscribe: most subscriptions one WebSocket may hold (-32005 beyond).',
    unit: 'subscriptions',
  }),
  /** Over all the key's WebSockets; more: -32005. */
  subscriptionsPerKey: transportInteger('subscriptionsPerKey', {
    doc: 'eth_subscribe: most subscriptions one API key may hold over all its WebSockets (-32005 beyond).',
    unit: 'subscriptions',
  }),
  /**
   * A subscriber whose socket holds more than this many unsent bytes when a notification is due
   * is disconnected (1008): notifications never pile up in memory for a reader that does not read.
   */
  wsMaxUnsentNotificationBytes: transportInteger('wsMaxUnsentNotificationBytes', {
    doc: 'A subscriber holding more unsent bytes than this when a notification is due is disconnected (1008).',
    unit: 'bytes',
  }),
} satisfies ConfigSchema & { [K in keyof TransportConfig]: ConfigField<TransportConfig[K]> };

/** Validates one network: its name, a datadir, an optional http(s)/ws(s) follow URL. */
export function checkNetwork(
  where: string,
  name: string,
  datadir: string | undefined,
  follow: string | undefined,
  ingest?: string | undefined,
  history?: string | undefined,
  ws?: string | undefined,
): NetworkConfig {
  const problem = networkNameProblem(name);
  if (problem !== undefined) throw new ConfigError(`${where}: ${problem}`);
  if (datadir === undefined || datadir === '') throw new ConfigError(`${where}: a datadir is required`);
  if (ingest !== undefined && ingest !== 'execute' && ingest !== 'replicate')
    throw new ConfigError(`${where}: ingest: expected "execute" or "replicate", got "${ingest}"`);
  if (follow === undefined) {
    if (ingest !== undefined) throw new ConfigError(`${where}: ingest: only with follow`);
    if (history !== undefined) throw new ConfigError(`${where}: history: only with follow`);
    if (ws !== undefined) throw new ConfigError(`${where}: ws: only with follow`);
    return { name, datadir };
  }
  if (history !== undefined && !/^https?:\/\/[^/\s]/i.test(history))
    throw new ConfigError(`${where}: history: expected an http(s):// URL`);
  const wsProblem = followWsProblem(follow, ws);
  if (wsProblem !== undefined) throw new ConfigError(`${where}: ws: ${wsProblem}`);
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
    ...(ws !== undefined ? { ws } : {}),
  };
}

/** What is wrong with `ws` as the subscription endpoint of follow URL `follow`; undefined when nothing. */
export function followWsProblem(follow: string, ws: string | undefined): string | undefined {
  if (ws === undefined) return undefined;
  if (!/^wss?:\/\/[^/\s]/i.test(ws)) return 'expected a ws(s):// URL';
  if (/^wss?:/i.test(follow)) return 'the follow URL is a WebSocket already: it subscribes on itself';
  return undefined;
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
