// WebSocket JSON-RPC: `/ws/v3/<KEY>`. The upgrade is checked as an HTTP request is (listener.ts);
// each socket then runs its messages through the network's rpc service (or its connection, which
// owns its eth_subscribe subscriptions and their WsNotifier), at most MAX_WS_INFLIGHT at once, the
// rest queued up to the configured limits. Shedding keeps reply bytes within budget: a socket
// over its own budget, over the queue limits, not reading for wsSlowReaderTimeoutSeconds, or
// holding the most unread bytes while the process is over its budget, is closed.
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from 'uWebSockets.js';
import type { RpcConnectionApi, SubscriptionConnection } from '@chainnode/rpc';
import type { Listener } from './listener.js';
import type { CutReason } from './metrics.js';
import { Gate } from './middleware.js';
import type { RequestContext } from './middleware.js';
import { WsNotifier } from './notifier.js';
import { BODY_UNWRITABLE, encodeOrUndefined, errorBody, scratch } from './reply.js';
import type { NetworkRuntime } from './router.js';

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

type Ws = WebSocket<WsData>;

const MAX_WS_INFLIGHT = 256;
const CLOSE_POLICY = 1008;
/** Over the process budget, connections that have not read for this long may be closed. */
const SHED_STALLED_MS = 1000;
const REASON_CONNECTION_BUDGET = "reply bytes in flight over this connection's budget: read your replies";
const REASON_PROCESS_BUDGET = 'server reply budget exhausted: this connection holds the most unread replies';
const REASON_SLOW_READER = 'slow reader: buffered replies not read in time';
const REASON_QUEUE = 'too many queued messages: read your replies';

/** The server's WebSockets: registered on the app by serve(), closed by closeAll() on shutdown. */
export class WebSockets {
  private readonly sockets = new Set<Ws>();
  /** Open WebSockets by key hash: all of a key's sockets close once its daily credits run out. */
  private readonly socketsByKey = new Map<string, Set<Ws>>();
  private readonly sweep: NodeJS.Timeout;

  constructor(private readonly l: Listener) {
    // Slow readers: buffered replies that have not gone down for wsSlowReaderTimeoutSeconds.
    this.sweep = setInterval(() => this.sweepSlowReaders(), 1000);
    this.sweep.unref();
  }

  serve(app: TemplatedApp): void {
    const { config } = this.l;
    app.ws<WsData>('/ws/v3/:key', {
      maxPayloadLength: config.wsMaxPayloadBytes,
      idleTimeout: config.wsIdleTimeoutSeconds,
      maxBackpressure: config.wsMaxBackpressureBytes * 2,
      closeOnBackpressureLimit: 1,
      sendPingsAutomatically: true,
      compression: uWS.DISABLED,
      upgrade: (res, req, context) => this.upgrade(res, req, context),
      open: (ws) => this.open(ws),
      message: (ws, message) => this.message(ws, message),
      drain: (ws) => {
        this.l.budget.update(ws, ws.getBufferedAmount());
        this.pump(ws, ws.getUserData());
      },
      close: (ws) => this.close(ws),
    });
  }

  /** Stops the slow-reader sweep (shutdown). */
  stop(): void {
    clearInterval(this.sweep);
  }

  /** Closes every socket (1001): the end of a shutdown. */
  closeAll(): void {
    for (const ws of [...this.sockets]) ws.end(1001, 'server shutting down');
  }

  private upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
    const key = req.getParameter(0) ?? '';
    const secKey = req.getHeader('sec-websocket-key');
    const secProtocol = req.getHeader('sec-websocket-protocol');
    const secExtensions = req.getHeader('sec-websocket-extensions');
    const origin = req.getHeader('origin');
    const host = req.getHeader('host');
    const userAgent = req.getHeader('user-agent');
    const authorization = req.getHeader('authorization');
    const admitted = this.l.admit(res, { origin, host, authorization, key }, true);
    if (admitted === undefined) return;
    const { net, rec } = admitted;
    net.metrics.response('ws', 101);
    res.upgrade<WsData>(
      { keyHash: rec.hash, net, origin, userAgent, ctxClosed: false, inflight: 0, queue: [], queuedChars: 0 },
      secKey,
      secProtocol,
      secExtensions,
      context,
    );
  }

  private open(ws: Ws): void {
    const { l } = this;
    this.sockets.add(ws);
    const data = ws.getUserData();
    let set = this.socketsByKey.get(data.keyHash);
    if (!set) this.socketsByKey.set(data.keyHash, (set = new Set()));
    set.add(ws);
    data.net.metrics.wsOpen++;
    const service = data.net.service;
    if (service.connect === undefined) return;
    const notifier = new WsNotifier(
      {
        send: (texts) => {
          ws.cork(() => {
            for (const text of texts) ws.send(text, false, false);
          });
          // Notification bytes count in the process reply budget like replies do.
          if (data.ctxClosed) return;
          l.budget.update(ws, ws.getBufferedAmount());
          if (l.budget.over) this.shed();
        },
        bufferedAmount: () => ws.getBufferedAmount(),
        closed: () => data.ctxClosed,
        end: (code, reason) => ws.end(code, reason),
        dailyLimitReached: () => this.closeKeySockets(data.keyHash),
      },
      data.keyHash,
      {
        config: l.config,
        charges: l.charges,
        metrics: data.net.metrics,
        log: l.log,
        network: data.net,
      },
    );
    data.subs = l.hubOf(data.net).connect(data.keyHash, notifier);
    data.rpc = service.connect(data.subs);
  }

  private message(ws: Ws, message: ArrayBuffer): void {
    const { config, budget } = this.l;
    const data = ws.getUserData();
    const text = Buffer.from(message).toString('utf8'); // copy now: the buffer is neutered on return
    if (
      data.queue.length > 0 ||
      data.inflight >= MAX_WS_INFLIGHT ||
      ws.getBufferedAmount() > config.wsMaxBackpressureBytes ||
      budget.over
    ) {
      if (data.queue.length >= config.wsMaxQueuedMessages || data.queuedChars + text.length > config.wsMaxQueuedBytes) {
        this.cut(ws, 1013, REASON_QUEUE, 'queue');
        return;
      }
      data.queue.push(text);
      data.queuedChars += text.length;
      if (budget.over) budget.whenUnder((data.resume ??= () => this.pump(ws, data)));
      return;
    }
    this.run(ws, data, text);
  }

  private close(ws: Ws): void {
    const data = ws.getUserData();
    data.ctxClosed = true;
    data.queue.length = 0;
    if (data.resume) this.l.budget.forget(data.resume);
    this.l.budget.release(ws);
    data.subs?.close(); // frees its subscriptions at once
    this.sockets.delete(ws);
    const set = this.socketsByKey.get(data.keyHash);
    set?.delete(ws);
    if (set?.size === 0) this.socketsByKey.delete(data.keyHash);
    data.net.metrics.wsOpen--;
  }

  /** Sends a reply within the connection's budget, or closes the connection (1008). */
  private sendWs(ws: Ws, reply: string | Uint8Array): void {
    const { config, budget } = this.l;
    const buffered = ws.getBufferedAmount();
    const length = typeof reply === 'string' ? reply.length : reply.byteLength;
    if (buffered > 0 && buffered + length > 2 * config.wsMaxBackpressureBytes) {
      this.cut(ws, CLOSE_POLICY, REASON_CONNECTION_BUDGET, 'connection_budget');
      return;
    }
    ws.send(reply, false, false); // a text frame either way
    if (ws.getUserData().ctxClosed) return;
    budget.update(ws, ws.getBufferedAmount());
    if (budget.over) this.shed();
  }

  /** Closes every WebSocket of a key on this replica (its daily credits ran out). */
  private closeKeySockets(keyHash: string): void {
    for (const s of [...(this.socketsByKey.get(keyHash) ?? [])]) {
      if (!s.getUserData().ctxClosed) s.end(CLOSE_POLICY, 'daily credit limit reached');
    }
  }

  private cut(ws: Ws, code: number, reason: string, label: CutReason): void {
    const { cuts } = this.l.metrics;
    cuts.set(label, (cuts.get(label) ?? 0) + 1);
    ws.end(code, reason);
  }

  /**
   * Over the process budget: close connections that have not read for a second, largest holding
   * first, until under it (readers that are draining keep going).
   */
  private shed(): void {
    const { budget } = this.l;
    for (const c of budget.stalledLargestFirst(SHED_STALLED_MS)) {
      const ws = c as Ws;
      if (!this.sockets.has(ws)) continue;
      this.cut(ws, CLOSE_POLICY, REASON_PROCESS_BUDGET, 'process_budget');
      if (!budget.over) break;
    }
  }

  private sweepSlowReaders(): void {
    const { config, budget } = this.l;
    for (const c of budget.holders()) {
      const ws = c as Ws;
      if (this.sockets.has(ws)) budget.update(ws, ws.getBufferedAmount()); // drain may not report the last bytes
    }
    for (const c of budget.stalled(config.wsSlowReaderTimeoutSeconds * 1000)) {
      const ws = c as Ws;
      if (this.sockets.has(ws)) this.cut(ws, CLOSE_POLICY, REASON_SLOW_READER, 'slow_reader');
    }
    if (budget.over) this.shed();
  }

  private pump(ws: Ws, data: WsData): void {
    const { config, budget } = this.l;
    while (
      !data.ctxClosed &&
      data.queue.length > 0 &&
      data.inflight < MAX_WS_INFLIGHT &&
      ws.getBufferedAmount() <= config.wsMaxBackpressureBytes &&
      !budget.over
    ) {
      const text = data.queue.shift() as string;
      data.queuedChars -= text.length;
      this.run(ws, data, text);
    }
    if (!data.ctxClosed && data.queue.length > 0 && budget.over)
      budget.whenUnder((data.resume ??= () => this.pump(ws, data)));
  }

  private run(ws: Ws, data: WsData, text: string): void {
    const { l } = this;
    data.inflight++;
    l.begin();
    const ctx: RequestContext = Gate.context(data.keyHash, data.origin, data.userAgent);
    ctx.network = data.net;
    (data.rpc ?? data.net.service)
      .handle(text, l.gate.middleware(ctx), Gate.requestErrorCounter(ctx), data.keyHash)
      .then((reply) => (ctx.requestErrors > 0 ? l.gate.chargeRequestErrors(ctx).then(() => reply) : reply))
      .then(
        (reply) => {
          if (data.ctxClosed) return;
          const { encode } = reply;
          if (encode !== undefined) {
            const bytes = encodeOrUndefined(encode, scratch) ?? BODY_UNWRITABLE;
            ws.cork(() => this.sendWs(ws, bytes));
          } else {
            const { body } = reply;
            if (body !== undefined) ws.cork(() => this.sendWs(ws, body)); // a text frame either way
          }
          // Subscriptions created by this message may speak from now on (after their ids went
          // out; if sendWs cut the connection instead, close() already freed them).
          if (!data.ctxClosed) reply.sent?.();
          // Daily credits exhausted: after the 402 error, every socket of the key on this
          // replica is closed (Infura severs them); other replicas close theirs on their next 402.
          if (ctx.refusal === 402) this.closeKeySockets(data.keyHash);
        },
        () => {
          if (!data.ctxClosed) ws.cork(() => this.sendWs(ws, errorBody(-32603, 'internal error')));
        },
      )
      .finally(() => {
        data.inflight--;
        l.done();
        if (!data.ctxClosed) this.pump(ws, data);
      });
  }
}
