// The uWebSockets.js transport: HTTP `POST /v3/<KEY>`, WebSocket `/ws/v3/<KEY>`, `GET /health`,
// CORS preflight, and a separate (loopback, off by default) metrics listener. It authenticates
// the key from the path, reads bodies under a size limit, hands the text to the rpc service
// with the credit/failover/metrics middleware, and writes the reply. URLs are never logged:
// they carry API keys. Several networks: the request's Host picks the network's runtime (its rpc
// service, store, metrics) through the NetworkRouter (router.ts) before anything else; keys,
// credits and limits are shared by all networks.
//
// One room per concern, around one listener state (listener.ts: router, keys, gate, hubs, reply
// budget, requests in flight, shutting down): cors.ts (headers, preflight), http.ts (RPC over
// HTTP, streaming long replies), health.ts, ws.ts (WebSockets, their queues and shedding),
// metrics-listener.ts; reply.ts holds the bytes they write. This module starts them and stops
// them in order.
//
// uWS rules followed here: `res.onAborted` before anything asynchronous; everything needed
// from `req` is copied at once (it dies when the handler returns); writes after an await go
// through `res.cork`; WebSocket sends respect `getBufferedAmount()`.
import uWS from 'uWebSockets.js';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { servePreflight } from './cors.js';
import { serveHealth } from './health.js';
import { serveNotFound, serveRpcHttp } from './http.js';
import { Listener } from './listener.js';
import { metricsCounts, startMetricsListener } from './metrics-listener.js';
import type { RunningServer, ServerOptions } from './options.js';
import { WebSockets } from './ws.js';

export type { PeerMetrics, RunningServer, ServerOptions, ThreadMetrics } from './options.js';

function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (sock) => {
      if (sock) resolve(sock);
      else reject(new Error(`cannot listen on ${host}:${port} (address in use or not available)`));
    });
  });
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const l = await Listener.open(opts);
  const app = uWS.App();
  servePreflight(app, l);
  serveRpcHttp(app, l);
  serveHealth(app, l);
  const sockets = new WebSockets(l);
  sockets.serve(app);
  serveNotFound(app, l);

  const listenSocket = await listen(app, opts.host, opts.port);
  const port = uWS.us_socket_local_port(listenSocket as never);
  const metricsListener = await startMetricsListener(l, listen);

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      l.beginShutdown();
      sockets.stop();
      uWS.us_listen_socket_close(listenSocket);
      metricsListener?.stopListening();
      await l.idle();
      sockets.closeAll();
      l.keys.stop();
      // Idle keep-alive connections would hold the process open; this uWS build has app.close().
      await new Promise((r) => setImmediate(r));
      (app as TemplatedApp & { close?: () => void }).close?.();
      metricsListener?.close();
    })();
    return closing;
  };

  const { metrics, router, keys, ledger, usage, subscriptions } = l;
  return {
    port,
    metricsPort: metricsListener?.port,
    metrics,
    metricsCounts: () => metricsCounts(l),
    router,
    keys,
    ledger,
    usage,
    subscriptions,
    close,
  };
}
