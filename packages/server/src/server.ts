// The uWebSockets.js transport: HTTP `POST /v3/<KEY>`, WebSocket `/ws/v3/<KEY>`, `GET /health`,
// CORS preflight, and a separate (loopback, off by default) metrics listener. It authenticates
// the key from the path, reads bodies under a size limit, hands the text to the rpc service
// with the credit/failover/metrics middleware, and writes the reply. URLs are never logged:
// they carry API keys. Several networks: the request's Host picks the network's runtime (its rpc
// service, store, metrics) through the NetworkRouter (router.ts) before anything else; keys,
// credits and limits are shared by all networks.
//
// uWS rules followed here: `res.onAborted` before anything asynchronous; everything needed
// from `req` is copied at once (it dies when the handler returns); writes after an await go
// through `res.cork`; WebSocket sends respect `getBufferedAmount()`.
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_listen_socket } from 'uWebSockets.js';
import type { ChainEvents, ChainStore } from '@chainnode/core';
import { SubscriptionHub } from '@chainnode/rpc';
import type { RpcConnectionApi, RpcReply, RpcServiceApi, SubscriptionConnection } from '@chainnode/rpc';
import type { ServerConfig } from './config.js';
import { Gate } from './middleware.js';
import type { RequestContext } from './middleware.js';
import { KeyRegistry, REQUEST_METHOD, checkSecret, keyAllowsNetwork } from '@chainnode/accounts';
import type { CreditLedger, KeyRecord, KeyStore, UsageRecord } from '@chainnode/accounts';
import { Metrics } from './metrics.js';
import { ReplyBudget } from './reply-budget.js';
import type { CutReason, IngestStatusView, LedgerView, MetricsCounts } from './metrics.js';
import { WsNotifier } from './notifier.js';
import { networkNotAllowedMessage } from './middleware.js';
import type { AccessRecord } from './middleware.js';
import { IMPLICIT_NETWORK, NetworkRouter, NetworkRuntime } from './router.js';

export interface ServerOptions {
  /** One chain (the server answers every Host from it): `service` + `store`, or else `networks`. */
  service?: RpcServiceApi;
  /** For /health and the head-block gauge (the rpc service has its own reference). */
  store?: ChainStore;
  /** Several chains, chosen by the request's Host; the caller closes them after close(). */
  networks?: NetworkRuntime[];
  /** The network answering bare hosts (IP literals, `localhost`, no Host); none: those get 404. */
  defaultNetwork?: string;
  config: ServerConfig;
  host: string;
  port: number;
  failoverUrl?: string;
  /** Enables the metrics listener on this port (0: ephemeral), overriding config.metricsPort. */
  metricsPort?: number;
  /** Operational messages (never containing keys). */
  log?: (line: string) => void;
  /**
   * Where keys and credits live: an engine of @chainnode/accounts (openLedger: embedded in a
   * datadir, or Redis), wired by the caller. The caller keeps ownership: close() closes neither.
   */
  ledger: { keys: KeyStore; credits: CreditLedger };
  /** The per-key usage record of the same engine (the caller keeps ownership). */
  usage: UsageRecord;
  /**
   * Commits of a follower's ingest (serve --follow), published on this thread after the store's
   * caches dropped what each commit made stale: they drive eth_subscribe notifications. Without
   * it subscriptions are accepted and stay silent (a static chain has no new blocks).
   */
  chainEvents?: ChainEvents;
  /** State of a follower's ingest, for /health and the metrics (serve --follow). */
  ingestStatus?: () => IngestStatusView;
  /**
   * serve --threads: the counts of the process's other app threads (their metricsCounts()),
   * added to this server's own at /metrics, so the one metrics listener covers every thread.
   */
  peerMetrics?: () => Promise<PeerMetrics[]>;
  /** serve --threads: this app thread's index (thread 0 serves /metrics). */
  thread?: number;
  /** The access log (`--access-log`): one record per call; off when absent. */
  access?: (rec: AccessRecord) => void;
  /** The Redis ledger's state for its gauges, read at each scrape (absent: the embedded ledger). */
  ledgerStatus?: () => Promise<LedgerView | undefined>;
}

/** One server's metrics counts: per instance, '' for the unlabelled one, else the network's name. */
export type ThreadMetrics = [instance: string, counts: MetricsCounts][];

/** Another app thread's counts, with its index. */
export interface PeerMetrics {
  thread: number;
  metrics: ThreadMetrics;
}

export interface RunningServer {
  readonly port: number;
  /** Port of the metrics listener, when enabled. */
  readonly metricsPort: number | undefined;
  readonly metrics: Metrics;
  /** This server's metrics counts (serve --threads: what thread 0 adds to its own at /metrics). */
  metricsCounts(): ThreadMetrics;
  readonly router: NetworkRouter;
  /** The live key set, credit ledger and usage record (the dashboard reads them in-process). */
  readonly keys: KeyRegistry;
  readonly ledger: CreditLedger;
  readonly usage: UsageRecord;
  /** Every eth_subscribe subscription of this server (size, per-key counts). */
  readonly subscriptions: SubscriptionHub;
  /** Stops accepting, lets in-flight requests finish (up to the grace period), closes WebSockets. */
  close(): Promise<void>;
}

interface WsData {
  keyHash: string;
  net: NetworkRuntime;
  origin: string;
  userAgent: string;
  ctxClosed: boolean;
  inflight: number;
  queue: string[];
  /** UTF-16 units of request text in `queue`. */
  queuedChars: number;
  /** Pumps this socket's queue (registered with the reply budget while the process is over it). */
  resume?: () => void;
  /** The connection's subscriptions and the rpc connection that may create them (set on open). */
  subs?: SubscriptionConnection;
  rpc?: RpcConnectionApi;
}

const OK = '200 OK';
/** Status of a single request refused by a limit or by an unavailable ledger. */
const REFUSAL_STATUS = {
  402: '402 Payment Required',
  403: '403 Forbidden',
  429: '429 Too Many Requests',
  503: '503 Service Unavailable',
} as const;
// Header names and values of every RPC response, as bytes once: uWS converts a JS string
// argument to UTF-8 on each call, and these run for every request.
const ascii = (text: string): Uint8Array => Buffer.from(text, 'latin1');
const H_ALLOW_ORIGIN = ascii('Access-Control-Allow-Origin');
const H_VARY = ascii('Vary');
const H_CONTENT_TYPE = ascii('Content-Type');
const V_ANY = ascii('*');
const V_ORIGIN = ascii('Origin');
const V_JSON = ascii('application/json');
const REQ_ORIGIN = ascii('origin');
const REQ_CONTENT_LENGTH = ascii('content-length');
const REQ_USER_AGENT = ascii('user-agent');
const REQ_AUTHORIZATION = ascii('authorization');
const MAX_WS_INFLIGHT = 256;
/** Reply bodies longer than this (UTF-16 units, or bytes) are streamed under backpressure (see endLong). */
const STREAM_ABOVE = 256 * 1024;
/**
 * Replies that can encode themselves (RpcReply.encode) are written into this buffer and handed to
 * uWS at once; uWS copies what it does not send right away, so one buffer serves every reply
 * (no allocation per response). It grows to the largest reply written so far, up to
 * SCRATCH_MAX (one per app thread: module state), and stays: a fresh buffer for each
 * answer of a few hundred KB (a getLogs answer) is fresh memory every time, and the page faults
 * of touching it measured costlier than the copy into it. Longer replies get their own.
 */
const SCRATCH_MAX = STREAM_ABOVE + 64 * 1024;
let SCRATCH = Buffer.allocUnsafeSlow(64 * 1024);
const scratch = (length: number): Buffer => {
  if (length > SCRATCH.length && length <= SCRATCH_MAX)
    SCRATCH = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(length, 2 * SCRATCH.length)));
  return length <= SCRATCH.length ? SCRATCH.subarray(0, length) : Buffer.allocUnsafe(length);
};
/** Memory of its own for a reply that outlives the call (a streamed one). */
const ownMemory = (length: number): Buffer => Buffer.allocUnsafe(length);

/**
 * Ends `res` with a long body: whatever the socket does not take at once is written from
 * onWritable, and `finished` runs once all of it has been handed to the socket (or the client
 * went away). res.end() would keep the rest inside uWS, where closing the app on shutdown cut
 * it off: a multi-megabyte eth_getLogs answer in flight at SIGTERM arrived truncated.
 * `onAbort` registers what the request's onAborted handler must call.
 */
function endLong(
  res: HttpResponse,
  body: string | Uint8Array,
  finished: () => void,
  onAbort: (f: () => void) => void,
  budget: ReplyBudget<unknown>,
): void {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const total = buf.length;
  const base = res.getWriteOffset();
  const [, done] = res.tryEnd(buf, total);
  if (done) {
    finished();
    return;
  }
  // The rest stays in `buf` until the socket takes it: reply bytes in flight.
  budget.update(res, total - (res.getWriteOffset() - base));
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    budget.release(res);
    finished();
  };
  onAbort(end);
  res.onWritable((offset) => {
    const [ok, done2] = res.tryEnd(buf.subarray(offset - base), total);
    if (done2) end();
    else budget.update(res, total - (res.getWriteOffset() - base));
    return ok;
  });
}

function errorBody(code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } });
}

/** A reply whose bytes could not be made (see encodeOrUndefined). */
const BODY_UNWRITABLE = errorBody(-32603, 'internal error');

/**
 * RpcReply.encode, or undefined if it throws: a reply that reads a file slice as it is written (a
 * getLogs answer from a sealed log segment) fails only on a damaged datadir, and then the caller
 * gets an internal error instead of the thread dying on an unhandled rejection.
 */
function encodeOrUndefined(
  encode: NonNullable<RpcReply['encode']>,
  alloc: Parameters<NonNullable<RpcReply['encode']>>[0],
): Uint8Array | undefined {
  try {
    return encode(alloc);
  } catch {
    return undefined;
  }
}

const BODY_MISSING_KEY = errorBody(-32001, 'missing API key: use /v3/<API_KEY> (HTTP) or /ws/v3/<API_KEY> (WebSocket)');
const BODY_UNKNOWN_KEY = errorBody(-32001, 'invalid API key');
const BODY_REVOKED_KEY = errorBody(-32001, 'API key revoked');
const BODY_TOO_LARGE = (max: number): string => errorBody(-32600, `request body too large: the limit is ${max} bytes`);
const BODY_SHUTTING_DOWN = errorBody(-32603, 'server is shutting down');
const BODY_NOT_FOUND = errorBody(-32601, 'not found: POST JSON-RPC to /v3/<API_KEY>, or connect to /ws/v3/<API_KEY>');
const BODY_METHOD = errorBody(-32600, 'method not allowed: use POST with a JSON body');
// Infura answers a host it serves no network on with 404, and a project that has not enabled a
// network with 403 / -32002 (docs/networks.md). Neither is charged.
const BODY_UNKNOWN_NETWORK = (host: string, names: string[]): string =>
  errorBody(
    -32601,
    `unknown network "${NetworkRouter.askedFor(host)}": this server serves ${names.join(', ')} (use http://<network>.<host>/v3/<API_KEY>)`,
  );
const BODY_NETWORK_NOT_ALLOWED = (network: string): string => errorBody(-32002, networkNotAllowedMessage(network));
const REQ_HOST = ascii('host');
const BODY_SECRET_MISSING = errorBody(
  -32001,
  'project secret required: send it as the HTTP basic auth password with an empty user name',
);
const BODY_SECRET_WRONG = errorBody(-32001, 'invalid project id or project secret');
const BODY_BUSY = errorBody(-32005, 'server busy: reply bytes in flight are over the process budget, retry later');
const CLOSE_POLICY = 1008;
/** Over the process budget, connections that have not read for this long may be closed. */
const SHED_STALLED_MS = 1000;
const REASON_CONNECTION_BUDGET = "reply bytes in flight over this connection's budget: read your replies";
const REASON_PROCESS_BUDGET = 'server reply budget exhausted: this connection holds the most unread replies';
const REASON_SLOW_READER = 'slow reader: buffered replies not read in time';
const REASON_QUEUE = 'too many queued messages: read your replies';

function keyProblem(rec: KeyRecord | undefined, key: string): string | undefined {
  if (key === '') return BODY_MISSING_KEY;
  if (!rec) return BODY_UNKNOWN_KEY;
  if (rec.revokedAt !== undefined) return BODY_REVOKED_KEY;
  return undefined;
}

function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (sock) => {
      if (sock) resolve(sock);
      else reject(new Error(`cannot listen on ${host}:${port} (address in use or not available)`));
    });
  });
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config } = opts;
  const log = opts.log ?? (() => {});
  const router =
    opts.networks !== undefined
      ? new NetworkRouter(
          opts.networks,
          opts.defaultNetwork !== undefined ? { defaultNetwork: opts.defaultNetwork } : {},
        )
      : new NetworkRouter([singleNetwork(opts)]);
  // Responses that reach no network (unknown network, preflight, process health) and the
  // process-wide series (reply budgets); a server started without networks has one set of
  // series, unlabelled, as before.
  const metrics = router.single ? (router.networks[0] as NetworkRuntime).metrics : new Metrics(undefined, true);
  const ledger: CreditLedger = opts.ledger.credits;
  const keys = await KeyRegistry.open(opts.ledger.keys, log);
  const usage = opts.usage;
  const gate = new Gate({
    config,
    keys,
    ledger,
    metrics,
    log,
    usage,
    ...(opts.failoverUrl !== undefined ? { failoverUrl: opts.failoverUrl } : {}),
    ...(opts.access !== undefined ? { access: opts.access } : {}),
  });
  /** The key's secret, checked before the body is read; a refusal is a 4xx in the key's usage. */
  const secretProblem = (rec: KeyRecord, authorization: string): string | undefined => {
    const s = checkSecret(rec, authorization);
    if (s === 'ok') return undefined;
    usage.record({ key: rec.id, method: REQUEST_METHOD, credits: 0, error: '4xx' });
    return s === 'missing' ? BODY_SECRET_MISSING : BODY_SECRET_WRONG;
  };
  // One subscription hub per network: each reads its own store and follows its own commits.
  // The per-key subscription limit therefore holds per network.
  const hubs = new Map<NetworkRuntime, SubscriptionHub>();
  const detachers: (() => void)[] = [];
  for (const net of router.networks) {
    const hub = new SubscriptionHub(net.store, {
      limits: { perConnection: config.subscriptionsPerConnection, perKey: config.subscriptionsPerKey },
      log,
    });
    hubs.set(net, hub);
    if (net.chainEvents !== undefined) detachers.push(hub.attach(net.chainEvents));
  }
  const hubOf = (net: NetworkRuntime): SubscriptionHub => hubs.get(net) as SubscriptionHub;
  /** The first (or only) network's hub. */
  const subscriptions = hubOf(router.networks[0] as NetworkRuntime);

  const budget = new ReplyBudget<unknown>(config.maxReplyBytesInFlight);
  let inflight = 0;
  let shuttingDown = false;
  let idleWaiter: (() => void) | undefined;
  const sockets = new Set<WebSocket<WsData>>();
  /** Open WebSockets by key hash: all of a key's sockets close once its daily credits run out. */
  const socketsByKey = new Map<string, Set<WebSocket<WsData>>>();
  const done = (): void => {
    inflight--;
    if (inflight === 0 && idleWaiter) idleWaiter();
  };

  // CORS: keys travel in the path and no cookies are used, so "*" is the default.
  const anyOrigin = config.corsOrigins.includes('*');
  const allowed = new Set(config.corsOrigins);
  const writeCors = (res: HttpResponse, origin: string): void => {
    if (anyOrigin) res.writeHeader(H_ALLOW_ORIGIN, V_ANY);
    else if (origin !== '' && allowed.has(origin)) {
      res.writeHeader(H_ALLOW_ORIGIN, origin);
      res.writeHeader(H_VARY, V_ORIGIN);
    }
  };

  const writeHead = (res: HttpResponse, status: string, origin: string): void => {
    if (status !== OK) res.writeStatus(status); // uWS answers 200 OK unless told otherwise
    writeCors(res, origin);
    res.writeHeader(H_CONTENT_TYPE, V_JSON);
  };

  const send = (
    res: HttpResponse,
    status: string,
    origin: string,
    body: string | Uint8Array,
    close = false,
    m = metrics,
  ): void => {
    writeHead(res, status, origin);
    res.end(body, close);
    m.response('http', Number(status.slice(0, 3)));
  };

  const app = uWS.App();

  app.options('/*', (res, req) => {
    const origin = req.getHeader('origin');
    const reqHeaders = req.getHeader('access-control-request-headers');
    res.writeStatus('204 No Content');
    writeCors(res, origin);
    res.writeHeader('Access-Control-Allow-Methods', 'POST, GET, OPTIONS');
    res.writeHeader(
      'Access-Control-Allow-Headers',
      reqHeaders !== '' && reqHeaders.length < 1024 ? reqHeaders : 'content-type',
    );
    res.writeHeader('Access-Control-Max-Age', '86400');
    res.endWithoutBody();
    metrics.response('http', 204);
  });

  const rpcPost = (res: HttpResponse, req: HttpRequest, key: string): void => {
    let aborted = false;
    let onAbort: (() => void) | undefined;
    res.onAborted(() => {
      aborted = true;
      onAbort?.();
    });
    const origin = req.getHeader(REQ_ORIGIN);
    const contentLength = req.getHeader(REQ_CONTENT_LENGTH);
    const host = req.getHeader(REQ_HOST);
    const hasBody = contentLength !== '' && contentLength !== '0';
    const userAgent = req.getHeader(REQ_USER_AGENT);
    const authorization = req.getHeader(REQ_AUTHORIZATION);
    if (shuttingDown) {
      send(res, '503 Service Unavailable', origin, BODY_SHUTTING_DOWN, true);
      return;
    }
    const net = router.route(host);
    if (net === undefined) {
      send(res, '404 Not Found', origin, BODY_UNKNOWN_NETWORK(host, router.names()), hasBody);
      return;
    }
    const m = net.metrics;
    const rec = key === '' ? undefined : keys.lookup(key);
    const problem = keyProblem(rec, key) ?? (rec !== undefined ? secretProblem(rec, authorization) : undefined);
    if (problem !== undefined || rec === undefined) {
      send(res, '401 Unauthorized', origin, problem ?? BODY_UNKNOWN_KEY, hasBody, m);
      return;
    }
    if (!keyAllowsNetwork(rec, net.name)) {
      usage.record({ key: rec.id, method: REQUEST_METHOD, credits: 0, error: '4xx' });
      send(res, '403 Forbidden', origin, BODY_NETWORK_NOT_ALLOWED(net.name), hasBody, m);
      return;
    }
    if (budget.over) {
      send(res, '503 Service Unavailable', origin, BODY_BUSY, true, m);
      return;
    }
    const max = config.maxBodyBytes;
    if (contentLength !== '' && Number(contentLength) > max) {
      send(res, '413 Payload Too Large', origin, BODY_TOO_LARGE(max), true, m);
      return;
    }
    const keyHash = rec.hash;
    let chunks: Buffer[] | undefined;
    let size = 0;
    let finished = false;
    res.onData((chunk, isLast) => {
      if (finished) return;
      size += chunk.byteLength;
      if (size > max) {
        finished = true;
        if (!aborted) res.cork(() => send(res, '413 Payload Too Large', origin, BODY_TOO_LARGE(max), true, m));
        return;
      }
      let body: string;
      if (isLast && chunks === undefined) body = Buffer.from(chunk).toString('utf8');
      else {
        (chunks ??= []).push(Buffer.from(chunk.slice(0))); // copy: uWS neuters the chunk on return
        if (!isLast) return;
        body = Buffer.concat(chunks).toString('utf8');
      }
      finished = true;
      inflight++;
      const ctx: RequestContext = Gate.context(keyHash, origin, userAgent);
      ctx.network = net;
      const write = (reply: RpcReply): void => {
        // In flight until the whole body is with the socket: a long one is streamed, and its
        // `finish` runs when the last byte is written (or the client goes away).
        let released = false;
        const finish = (): void => {
          if (released) return;
          released = true;
          done();
        };
        let streaming = false;
        try {
          if (aborted) return;
          const status = !reply.batch && ctx.refusal !== undefined ? REFUSAL_STATUS[ctx.refusal] : OK;
          const { encode } = reply;
          let long: string | Uint8Array;
          if (encode !== undefined) {
            const small = (reply.size ?? Infinity) <= STREAM_ABOVE;
            const bytes = encodeOrUndefined(encode, small ? scratch : ownMemory);
            if (bytes === undefined) {
              res.cork(() => send(res, '500 Internal Server Error', origin, BODY_UNWRITABLE, shuttingDown, m));
              return;
            }
            if (small) {
              res.cork(() => send(res, status, origin, bytes, shuttingDown, m));
              return;
            }
            long = bytes;
          } else {
            const text = reply.body ?? '';
            if (text.length <= STREAM_ABOVE) {
              res.cork(() => send(res, status, origin, text, shuttingDown, m));
              return;
            }
            long = text;
          }
          // A streamed reply keeps its connection (close() ends it after the last byte).
          res.cork(() => {
            writeHead(res, status, origin);
            endLong(res, long, finish, (f) => (onAbort = f), budget);
          });
          streaming = true;
          m.response('http', Number(status.slice(0, 3)));
        } finally {
          if (!streaming) finish();
        }
      };
      const fail = (): void => {
        try {
          // handle() never throws by contract; answer without internals if it does.
          if (!aborted)
            res.cork(() =>
              send(res, '500 Internal Server Error', origin, errorBody(-32603, 'internal error'), true, m),
            );
        } finally {
          done();
        }
      };
      net.service.handle(body, gate.middleware(ctx), Gate.requestErrorCounter(ctx)).then(
        // Request errors (5 credits each) are charged before the reply goes out; chargeRequestErrors never rejects.
        (reply) => (ctx.requestErrors > 0 ? void gate.chargeRequestErrors(ctx).then(() => write(reply)) : write(reply)),
        fail,
      );
    });
  };

  app.post('/v3/:key', (res, req) => rpcPost(res, req, req.getParameter(0) ?? ''));
  app.post('/v3', (res, req) => rpcPost(res, req, ''));
  app.post('/v3/', (res, req) => rpcPost(res, req, ''));

  app.get('/health', (res, req) => {
    const origin = req.getHeader('origin');
    const host = req.getHeader(REQ_HOST);
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    const reply = (ok: boolean, body: Record<string, unknown>): void => {
      if (!aborted)
        res.cork(() =>
          send(res, ok && !shuttingDown ? '200 OK' : '503 Service Unavailable', origin, JSON.stringify(body)),
        );
    };
    // A bare host of a multi-network server: every network (overall rule in NetworkRouter.health).
    if (router.isProcessHost(host)) {
      void router.health(shuttingDown).then(({ ok, body }) => reply(ok, body));
      return;
    }
    const net = router.route(host);
    if (net === undefined) return send(res, '404 Not Found', origin, BODY_UNKNOWN_NETWORK(host, router.names()));
    void net.health().then((h) => {
      const status = shuttingDown ? 'stopping' : h.status;
      reply(h.status === 'ok', router.single ? { ...h, status } : { network: net.name, ...h, status });
    });
  });

  app.ws<WsData>('/ws/v3/:key', {
    maxPayloadLength: config.wsMaxPayloadBytes,
    idleTimeout: config.wsIdleTimeoutSeconds,
    maxBackpressure: config.wsMaxBackpressureBytes * 2,
    closeOnBackpressureLimit: 1,
    sendPingsAutomatically: true,
    compression: uWS.DISABLED,
    upgrade: (res, req, context) => {
      const key = req.getParameter(0) ?? '';
      const secKey = req.getHeader('sec-websocket-key');
      const secProtocol = req.getHeader('sec-websocket-protocol');
      const secExtensions = req.getHeader('sec-websocket-extensions');
      const origin = req.getHeader('origin');
      const host = req.getHeader(REQ_HOST);
      const userAgent = req.getHeader('user-agent');
      const authorization = req.getHeader('authorization');
      if (shuttingDown) return send(res, '503 Service Unavailable', origin, BODY_SHUTTING_DOWN, true);
      const net = router.route(host);
      if (net === undefined)
        return send(res, '404 Not Found', origin, BODY_UNKNOWN_NETWORK(host, router.names()), true);
      const rec = key === '' ? undefined : keys.lookup(key);
      const problem = keyProblem(rec, key) ?? (rec !== undefined ? secretProblem(rec, authorization) : undefined);
      if (problem !== undefined || rec === undefined)
        return send(res, '401 Unauthorized', origin, problem ?? BODY_UNKNOWN_KEY, true, net.metrics);
      if (!keyAllowsNetwork(rec, net.name)) {
        usage.record({ key: rec.id, method: REQUEST_METHOD, credits: 0, error: '4xx' });
        return send(res, '403 Forbidden', origin, BODY_NETWORK_NOT_ALLOWED(net.name), true, net.metrics);
      }
      net.metrics.response('ws', 101);
      res.upgrade<WsData>(
        { keyHash: rec.hash, net, origin, userAgent, ctxClosed: false, inflight: 0, queue: [], queuedChars: 0 },
        secKey,
        secProtocol,
        secExtensions,
        context,
      );
    },
    open: (ws) => {
      sockets.add(ws);
      const data = ws.getUserData();
      let set = socketsByKey.get(data.keyHash);
      if (!set) socketsByKey.set(data.keyHash, (set = new Set()));
      set.add(ws);
      data.net.metrics.wsOpen++;
      const service = data.net.service;
      if (service.connect !== undefined) {
        const notifier = new WsNotifier(
          {
            send: (texts) => {
              ws.cork(() => {
                for (const text of texts) ws.send(text, false, false);
              });
              // Notification bytes count in the process reply budget like replies do.
              if (data.ctxClosed) return;
              budget.update(ws, ws.getBufferedAmount());
              if (budget.over) shed();
            },
            bufferedAmount: () => ws.getBufferedAmount(),
            closed: () => data.ctxClosed,
            end: (code, reason) => ws.end(code, reason),
            dailyLimitReached: () => closeKeySockets(data.keyHash),
          },
          data.keyHash,
          {
            config,
            keys,
            ledger,
            metrics: data.net.metrics,
            log,
            usage,
            ...(data.net.implicit ? {} : { network: data.net.name }),
          },
        );
        data.subs = hubOf(data.net).connect(data.keyHash, notifier);
        data.rpc = service.connect(data.subs);
      }
    },
    message: (ws, message) => {
      const data = ws.getUserData();
      const text = Buffer.from(message).toString('utf8'); // copy now: the buffer is neutered on return
      if (
        data.queue.length > 0 ||
        data.inflight >= MAX_WS_INFLIGHT ||
        ws.getBufferedAmount() > config.wsMaxBackpressureBytes ||
        budget.over
      ) {
        if (
          data.queue.length >= config.wsMaxQueuedMessages ||
          data.queuedChars + text.length > config.wsMaxQueuedBytes
        ) {
          cut(ws, 1013, REASON_QUEUE, 'queue');
          return;
        }
        data.queue.push(text);
        data.queuedChars += text.length;
        if (budget.over) budget.whenUnder((data.resume ??= () => pump(ws, data)));
        return;
      }
      runWs(ws, data, text);
    },
    drain: (ws) => {
      budget.update(ws, ws.getBufferedAmount());
      pump(ws, ws.getUserData());
    },
    close: (ws) => {
      const data = ws.getUserData();
      data.ctxClosed = true;
      data.queue.length = 0;
      if (data.resume) budget.forget(data.resume);
      budget.release(ws);
      data.subs?.close(); // frees its subscriptions at once
      sockets.delete(ws);
      const set = socketsByKey.get(data.keyHash);
      set?.delete(ws);
      if (set?.size === 0) socketsByKey.delete(data.keyHash);
      data.net.metrics.wsOpen--;
    },
  });

  /** Sends a reply within the connection's budget, or closes the connection (1008). */
  const sendWs = (ws: WebSocket<WsData>, reply: string | Uint8Array): void => {
    const buffered = ws.getBufferedAmount();
    const length = typeof reply === 'string' ? reply.length : reply.byteLength;
    if (buffered > 0 && buffered + length > 2 * config.wsMaxBackpressureBytes) {
      cut(ws, CLOSE_POLICY, REASON_CONNECTION_BUDGET, 'connection_budget');
      return;
    }
    ws.send(reply, false, false); // a text frame either way
    if (ws.getUserData().ctxClosed) return;
    budget.update(ws, ws.getBufferedAmount());
    if (budget.over) shed();
  };

  /** Closes every WebSocket of a key on this replica (its daily credits ran out). */
  const closeKeySockets = (keyHash: string): void => {
    for (const s of [...(socketsByKey.get(keyHash) ?? [])]) {
      if (!s.getUserData().ctxClosed) s.end(CLOSE_POLICY, 'daily credit limit reached');
    }
  };

  const cut = (ws: WebSocket<WsData>, code: number, reason: string, label: CutReason): void => {
    metrics.cuts.set(label, (metrics.cuts.get(label) ?? 0) + 1);
    ws.end(code, reason);
  };

  /**
   * Over the process budget: close connections that have not read for a second, largest holding
   * first, until under it (readers that are draining keep going).
   */
  const shed = (): void => {
    for (const c of budget.stalledLargestFirst(SHED_STALLED_MS)) {
      const ws = c as WebSocket<WsData>;
      if (!sockets.has(ws)) continue;
      cut(ws, CLOSE_POLICY, REASON_PROCESS_BUDGET, 'process_budget');
      if (!budget.over) break;
    }
  };

  // Slow readers: buffered replies that have not gone down for wsSlowReaderTimeoutSeconds.
  const sweep = setInterval(() => {
    for (const c of budget.holders()) {
      const ws = c as WebSocket<WsData>;
      if (sockets.has(ws)) budget.update(ws, ws.getBufferedAmount()); // drain may not report the last bytes
    }
    for (const c of budget.stalled(config.wsSlowReaderTimeoutSeconds * 1000)) {
      const ws = c as WebSocket<WsData>;
      if (sockets.has(ws)) cut(ws, CLOSE_POLICY, REASON_SLOW_READER, 'slow_reader');
    }
    if (budget.over) shed();
  }, 1000);
  sweep.unref();

  const pump = (ws: WebSocket<WsData>, data: WsData): void => {
    while (
      !data.ctxClosed &&
      data.queue.length > 0 &&
      data.inflight < MAX_WS_INFLIGHT &&
      ws.getBufferedAmount() <= config.wsMaxBackpressureBytes &&
      !budget.over
    ) {
      const text = data.queue.shift() as string;
      data.queuedChars -= text.length;
      runWs(ws, data, text);
    }
    if (!data.ctxClosed && data.queue.length > 0 && budget.over)
      budget.whenUnder((data.resume ??= () => pump(ws, data)));
  };

  const runWs = (ws: WebSocket<WsData>, data: WsData, text: string): void => {
    data.inflight++;
    inflight++;
    const ctx: RequestContext = Gate.context(data.keyHash, data.origin, data.userAgent);
    ctx.network = data.net;
    (data.rpc ?? data.net.service)
      .handle(text, gate.middleware(ctx), Gate.requestErrorCounter(ctx))
      .then((reply) => (ctx.requestErrors > 0 ? gate.chargeRequestErrors(ctx).then(() => reply) : reply))
      .then(
        (reply) => {
          if (data.ctxClosed) return;
          const { encode } = reply;
          if (encode !== undefined) {
            const bytes = encodeOrUndefined(encode, scratch) ?? BODY_UNWRITABLE;
            ws.cork(() => sendWs(ws, bytes));
          } else {
            const { body } = reply;
            if (body !== undefined) ws.cork(() => sendWs(ws, body)); // a text frame either way
          }
          // Subscriptions created by this message may speak from now on (after their ids went
          // out; if sendWs cut the connection instead, close() already freed them).
          if (!data.ctxClosed) reply.sent?.();
          // Daily credits exhausted: after the 402 error, every socket of the key on this
          // replica is closed (Infura severs them); other replicas close theirs on their next 402.
          if (ctx.refusal === 402) closeKeySockets(data.keyHash);
        },
        () => {
          if (!data.ctxClosed) ws.cork(() => sendWs(ws, errorBody(-32603, 'internal error')));
        },
      )
      .finally(() => {
        data.inflight--;
        done();
        if (!data.ctxClosed) pump(ws, data);
      });
  };

  app.any('/*', (res, req) => {
    const url = req.getUrl();
    const method = req.getMethod();
    const origin = req.getHeader('origin');
    if (url === '/ws/v3' || url.startsWith('/ws/v3/') || url === '/v3' || url.startsWith('/v3/')) {
      // A WebSocket upgrade without a key, or a GET on an RPC path.
      if (method === 'get' && !url.startsWith('/ws/') && /^\/v3\/[^/]+$/.test(url))
        return send(res, '405 Method Not Allowed', origin, BODY_METHOD);
      if (/^\/(ws\/)?v3\/?$/.test(url))
        return send(res, '401 Unauthorized', origin, BODY_MISSING_KEY, method !== 'get');
      return send(res, '404 Not Found', origin, BODY_NOT_FOUND, method !== 'get');
    }
    send(res, '404 Not Found', origin, BODY_NOT_FOUND, method !== 'get' && method !== 'head');
  });

  const listenSocket = await listen(app, opts.host, opts.port);
  const port = uWS.us_socket_local_port(listenSocket as never);

  // Every Metrics instance of this server by name ('' the unlabelled one): what /metrics renders.
  const metricsInstances = (): [string, Metrics][] =>
    router.single
      ? [['', metrics]]
      : [['', metrics], ...router.networks.map((n): [string, Metrics] => [n.name, n.metrics])];
  const metricsCounts = (): ThreadMetrics => {
    metrics.replyBytesInFlight = budget.bytes;
    return metricsInstances().map(([name, m]) => [name, m.counts()]);
  };
  let metricsSocket: us_listen_socket | undefined;
  let metricsPort: number | undefined;
  let metricsApp: TemplatedApp | undefined;
  // With app threads only thread 0 listens (it adds the other threads' counts).
  const wantMetricsPort =
    opts.thread !== undefined && opts.thread > 0
      ? undefined
      : (opts.metricsPort ?? (config.metricsPort !== 0 ? config.metricsPort : undefined));
  if (wantMetricsPort !== undefined) {
    // Off unless a port is configured or given (--metrics-port; 0 there means ephemeral).
    const mapp = uWS.App();
    metricsApp = mapp;
    mapp.get('/metrics', (res) => {
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      metrics.replyBytesInFlight = budget.bytes;
      // Refreshes each network's head gauge (health() never rejects); peers' counts never reject either.
      const peers = opts.peerMetrics?.().catch(() => []) ?? Promise.resolve([]);
      const ledgerView = opts.ledgerStatus?.().then(
        (v) => {
          metrics.ledger = v;
        },
        () => undefined,
      );
      void Promise.all([
        peers,
        ledgerView,
        ...router.networks.map((n) => n.health()),
        ...router.networks.map((n) => n.refreshDisk()),
      ]).then(([others]) => {
        if (aborted) return;
        const all = metricsInstances().map(([name, m]) =>
          others.length === 0
            ? m
            : m.sum(others.flatMap((t) => t.metrics.filter(([n]) => n === name).map(([, c]) => c))),
        );
        let text = Metrics.renderAll(all);
        if (opts.thread !== undefined) {
          const mine: PeerMetrics = { thread: opts.thread, metrics: metricsCounts() };
          text += Metrics.renderThreadCalls([mine, ...others].map((t) => [t.thread, t.metrics.map(([, c]) => c)]));
        }
        res.cork(() => {
          res.writeHeader('Content-Type', 'text/plain; version=0.0.4').end(text);
        });
      });
    });
    mapp.any('/*', (res) => {
      res.writeStatus('404 Not Found').end('not found\n');
    });
    metricsSocket = await listen(mapp, config.metricsHost, wantMetricsPort);
    metricsPort = uWS.us_socket_local_port(metricsSocket as never);
  }

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shuttingDown = true;
      clearInterval(sweep);
      for (const detach of detachers) detach();
      uWS.us_listen_socket_close(listenSocket);
      if (metricsSocket) uWS.us_listen_socket_close(metricsSocket);
      if (inflight > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, config.shutdownGraceMs);
          idleWaiter = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
      for (const ws of [...sockets]) ws.end(1001, 'server shutting down');
      keys.stop();
      // Idle keep-alive connections would hold the process open; this uWS build has app.close().
      await new Promise((r) => setImmediate(r));
      (app as TemplatedApp & { close?: () => void }).close?.();
      if (metricsApp) (metricsApp as TemplatedApp & { close?: () => void }).close?.();
    })();
    return closing;
  };

  return { port, metricsPort, metrics, metricsCounts, router, keys, ledger, usage, subscriptions, close };
}

/** The one network of a server given `service` + `store`: every Host, unlabelled metrics. */
function singleNetwork(opts: ServerOptions): NetworkRuntime {
  if (opts.service === undefined || opts.store === undefined)
    throw new Error('startServer: give service and store, or networks');
  return new NetworkRuntime({
    name: IMPLICIT_NETWORK,
    store: opts.store,
    service: opts.service,
    implicit: true,
    ...(opts.chainEvents !== undefined ? { chainEvents: opts.chainEvents } : {}),
    ...(opts.ingestStatus !== undefined ? { ingestStatus: opts.ingestStatus } : {}),
  });
}
