// The metrics listener: `GET /metrics` (Prometheus text) on its own port, loopback by default and
// off unless a port is configured or given. Each scrape refreshes every network's head and disk
// gauges and the Redis ledger's, and with app threads (serve --threads) thread 0 adds the other
// threads' counts to its own (only thread 0 listens).
import uWS from 'uWebSockets.js';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Listener } from './listener.js';
import { Metrics } from './metrics.js';
import type { PeerMetrics, ThreadMetrics } from './options.js';

export interface MetricsListener {
  readonly port: number;
  /** Stops listening (shutdown begins). */
  stopListening(): void;
  /** Closes the listener's app (shutdown ends). */
  close(): void;
}

/** Every Metrics instance of the server by name ('' the unlabelled one): what /metrics renders. */
function metricsInstances(l: Listener): [string, Metrics][] {
  return l.router.single
    ? [['', l.metrics]]
    : [['', l.metrics], ...l.router.networks.map((n): [string, Metrics] => [n.name, n.metrics])];
}

/** The server's metrics counts (serve --threads: what thread 0 adds to its own at /metrics). */
export function metricsCounts(l: Listener): ThreadMetrics {
  l.metrics.replyBytesInFlight = l.budget.bytes;
  return metricsInstances(l).map(([name, m]) => [name, m.counts()]);
}

/** Starts the metrics listener, or undefined when it is off (or this is not thread 0). */
export async function startMetricsListener(
  l: Listener,
  listen: (app: TemplatedApp, host: string, port: number) => Promise<us_listen_socket>,
): Promise<MetricsListener | undefined> {
  const { opts, config } = l;
  // With app threads only thread 0 listens (it adds the other threads' counts).
  const wantPort =
    opts.thread !== undefined && opts.thread > 0
      ? undefined
      : (opts.metricsPort ?? (config.metricsPort !== 0 ? config.metricsPort : undefined));
  // Off unless a port is configured or given (--metrics-port; 0 there means ephemeral).
  if (wantPort === undefined) return undefined;
  const app = uWS.App();
  app.get('/metrics', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    void scrape(l).then((text) => {
      if (aborted) return;
      res.cork(() => {
        res.writeHeader('Content-Type', 'text/plain; version=0.0.4').end(text);
      });
    });
  });
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end('not found\n');
  });
  const socket = await listen(app, config.metricsHost, wantPort);
  return {
    port: uWS.us_socket_local_port(socket as never),
    stopListening: () => uWS.us_listen_socket_close(socket),
    close: () => (app as TemplatedApp & { close?: () => void }).close?.(),
  };
}

/** One scrape's text: every instance summed with the peers' counts, and the per-thread calls. */
async function scrape(l: Listener): Promise<string> {
  const { opts, metrics, router } = l;
  metrics.replyBytesInFlight = l.budget.bytes;
  // Refreshes each network's head gauge (health() never rejects); peers' counts never reject either.
  const peers = opts.peerMetrics?.().catch(() => []) ?? Promise.resolve([]);
  const ledgerView = opts.ledgerStatus?.().then(
    (v) => {
      metrics.ledger = v;
    },
    () => undefined,
  );
  const [others] = await Promise.all([
    peers,
    ledgerView,
    ...router.networks.map((n) => n.health()),
    ...router.networks.map((n) => n.refreshDisk()),
  ]);
  const all = metricsInstances(l).map(([name, m]) =>
    others.length === 0 ? m : m.sum(others.flatMap((t) => t.metrics.filter(([n]) => n === name).map(([, c]) => c))),
  );
  let text = Metrics.renderAll(all);
  if (opts.thread !== undefined) {
    const mine: PeerMetrics = { thread: opts.thread, metrics: metricsCounts(l) };
    text += Metrics.renderThreadCalls([mine, ...others].map((t) => [t.thread, t.metrics.map(([, c]) => c)]));
  }
  return text;
}
