// The state every room of the server shares (http.ts, ws.ts, health.ts, cors.ts,
// metrics-listener.ts): the networks and their router, the key set, the gate around dispatch,
// one subscription hub per network, the process reply budget, the count of requests in flight
// (shutdown waits for them) and whether the server is shutting down. It also answers what the
// HTTP and WebSocket doors ask alike: which network and key a request is for, or the refusal.
import type { HttpResponse } from 'uWebSockets.js';
import { Charges, KeyRegistry, REQUEST_METHOD, checkSecret, keyAllowsNetwork } from '@chainnode/accounts';
import type { CreditLedger, KeyRecord, UsageRecord } from '@chainnode/accounts';
import { SubscriptionHub } from '@chainnode/rpc';
import type { TransportConfig } from './config.js';
import { corsWriter } from './cors.js';
import { Metrics } from './metrics.js';
import { Gate } from './middleware.js';
import type { ServerOptions } from './options.js';
import {
  BODY_NETWORK_NOT_ALLOWED,
  BODY_SECRET_MISSING,
  BODY_SECRET_WRONG,
  BODY_SHUTTING_DOWN,
  BODY_UNKNOWN_KEY,
  BODY_UNKNOWN_NETWORK,
  H_CONTENT_TYPE,
  OK,
  V_JSON,
  keyProblem,
} from './reply.js';
import { ReplyBudget } from './reply-budget.js';
import { IMPLICIT_NETWORK, NetworkRouter, NetworkRuntime } from './router.js';

/** What a request names before its body is read: the headers the doors check, and the key. */
export interface Door {
  origin: string;
  host: string;
  authorization: string;
  /** The API key from the path ('' when the path has none). */
  key: string;
}

export class Listener {
  /** Requests and messages being answered: shutdown waits for them (up to the grace period). */
  inflight = 0;
  shuttingDown = false;
  /**
   * Responses that reach no network (unknown network, preflight, process health) and the
   * process-wide series (reply budgets); a server started without networks has one set of
   * series, unlabelled, as before.
   */
  readonly metrics: Metrics;
  /** The one door to the ledger, for the gate's calls and request errors and the notifiers' batches. */
  readonly charges: Charges;
  readonly gate: Gate;
  readonly budget: ReplyBudget<unknown>;
  readonly ledger: CreditLedger;
  readonly usage: UsageRecord;
  /** Writes the CORS headers of a response to `origin`. */
  readonly writeCors: (res: HttpResponse, origin: string) => void;
  private idleWaiter: (() => void) | undefined;
  /**
   * One subscription hub per network: each reads its own store and follows its own commits.
   * The per-key subscription limit therefore holds per network.
   */
  private readonly hubs = new Map<NetworkRuntime, SubscriptionHub>();
  private readonly detachers: (() => void)[] = [];

  private constructor(
    readonly opts: ServerOptions,
    readonly config: TransportConfig,
    readonly log: (line: string) => void,
    readonly router: NetworkRouter,
    readonly keys: KeyRegistry,
  ) {
    this.metrics = router.single ? (router.networks[0] as NetworkRuntime).metrics : new Metrics(undefined, true);
    this.ledger = opts.ledger.credits;
    this.usage = opts.usage;
    this.charges = new Charges({ config, keys, ledger: this.ledger, usage: this.usage });
    this.gate = new Gate({
      config,
      charges: this.charges,
      metrics: this.metrics,
      log,
      ...(opts.failoverUrl !== undefined ? { failoverUrl: opts.failoverUrl } : {}),
      ...(opts.access !== undefined ? { access: opts.access } : {}),
    });
    for (const net of router.networks) {
      // newPendingTransactions read the pending-transaction journal of the network's filters.
      const journal = net.service.filters?.state;
      const hub = new SubscriptionHub(net.store, {
        limits: { perConnection: config.subscriptionsPerConnection, perKey: config.subscriptionsPerKey },
        log,
        ...(journal !== undefined ? { pending: journal } : {}),
      });
      this.hubs.set(net, hub);
      net.metrics.subscriptions = () => {
        const { heads, pending } = hub.indexStats();
        return { newHeads: heads, logs: hub.size - heads - pending, newPendingTransactions: pending };
      };
      if (net.chainEvents !== undefined) this.detachers.push(hub.attach(net.chainEvents));
      // Filters (eth_newFilter, …) keep the logs of the blocks reorgs remove, for removed:true.
      const filters = net.service.filters;
      if (net.chainEvents !== undefined && filters !== undefined) this.detachers.push(filters.attach(net.chainEvents));
    }
    this.budget = new ReplyBudget<unknown>(config.maxReplyBytesInFlight);
    this.writeCors = corsWriter(config.corsOrigins);
  }

  static async open(opts: ServerOptions): Promise<Listener> {
    const log = opts.log ?? (() => {});
    const router =
      opts.networks !== undefined
        ? new NetworkRouter(
            opts.networks,
            opts.defaultNetwork !== undefined ? { defaultNetwork: opts.defaultNetwork } : {},
          )
        : new NetworkRouter([singleNetwork(opts)]);
    const keys = await KeyRegistry.open(opts.ledger.keys, log);
    return new Listener(opts, opts.config, log, router, keys);
  }

  hubOf(net: NetworkRuntime): SubscriptionHub {
    return this.hubs.get(net) as SubscriptionHub;
  }

  /** The first (or only) network's hub. */
  get subscriptions(): SubscriptionHub {
    return this.hubOf(this.router.networks[0] as NetworkRuntime);
  }

  /** A request or message is being answered. */
  begin(): void {
    this.inflight++;
  }

  /** A request or message has been answered. */
  done(): void {
    this.inflight--;
    if (this.inflight === 0 && this.idleWaiter) this.idleWaiter();
  }

  /** Shutdown begins: new requests are refused and the networks' commits are no longer followed. */
  beginShutdown(): void {
    this.shuttingDown = true;
    for (const detach of this.detachers) detach();
  }

  /**
   * Resolves once nothing is in flight, or after the shutdown grace period (then the requests
   * still in flight are logged: their connections close with the server).
   */
  async idle(): Promise<void> {
    if (this.inflight === 0) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        const n = this.inflight;
        if (n > 0)
          this.log(
            `shutdown grace of ${this.config.shutdownGraceMs} ms over with ${n} request${n === 1 ? '' : 's'} in flight: closing ${n === 1 ? 'its connection' : 'their connections'}`,
          );
        resolve();
      }, this.config.shutdownGraceMs);
      this.idleWaiter = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  writeHead(res: HttpResponse, status: string, origin: string): void {
    if (status !== OK) res.writeStatus(status); // uWS answers 200 OK unless told otherwise
    this.writeCors(res, origin);
    res.writeHeader(H_CONTENT_TYPE, V_JSON);
  }

  send(
    res: HttpResponse,
    status: string,
    origin: string,
    body: string | Uint8Array,
    close = false,
    m = this.metrics,
  ): void {
    this.writeHead(res, status, origin);
    res.end(body, close);
    m.response('http', Number(status.slice(0, 3)));
  }

  /**
   * The network and key of a request (HTTP POST or WebSocket upgrade), or undefined once the
   * refusal has been sent: shutting down (503), unknown network (404), missing, unknown or
   * revoked key or wrong secret (401), key not allowed on the network (403). `close` closes the
   * connection after a refusal (not after a shutdown's, which always closes).
   */
  admit(res: HttpResponse, door: Door, close: boolean): { net: NetworkRuntime; rec: KeyRecord } | undefined {
    const { origin, host, key } = door;
    if (this.shuttingDown) {
      this.send(res, '503 Service Unavailable', origin, BODY_SHUTTING_DOWN, true);
      return undefined;
    }
    const net = this.router.route(host);
    if (net === undefined) {
      this.send(res, '404 Not Found', origin, BODY_UNKNOWN_NETWORK(host, this.router.names()), close);
      return undefined;
    }
    const rec = key === '' ? undefined : this.keys.lookup(key);
    const problem =
      keyProblem(rec, key) ?? (rec !== undefined ? this.secretProblem(rec, door.authorization) : undefined);
    if (problem !== undefined || rec === undefined) {
      this.send(res, '401 Unauthorized', origin, problem ?? BODY_UNKNOWN_KEY, close, net.metrics);
      return undefined;
    }
    if (!keyAllowsNetwork(rec, net.name)) {
      this.usage.record({ key: rec.id, method: REQUEST_METHOD, credits: 0, error: '4xx' });
      this.send(res, '403 Forbidden', origin, BODY_NETWORK_NOT_ALLOWED(net.name), close, net.metrics);
      return undefined;
    }
    return { net, rec };
  }

  /** The key's secret, checked before the body is read; a refusal is a 4xx in the key's usage. */
  private secretProblem(rec: KeyRecord, authorization: string): string | undefined {
    const s = checkSecret(rec, authorization);
    if (s === 'ok') return undefined;
    this.usage.record({ key: rec.id, method: REQUEST_METHOD, credits: 0, error: '4xx' });
    return s === 'missing' ? BODY_SECRET_MISSING : BODY_SECRET_WRONG;
  }
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
