// `GET /health`: the routed network's health (its store's head, its follower's state), or on a
// bare host of a multi-network server every network's with an overall status
// (NetworkRouter.health). 503 while the server is shutting down.
import type { TemplatedApp } from 'uWebSockets.js';
import type { Listener } from './listener.js';
import { BODY_UNKNOWN_NETWORK, REQ_HOST } from './reply.js';

export function serveHealth(app: TemplatedApp, l: Listener): void {
  const { router } = l;
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
          l.send(res, ok && !l.shuttingDown ? '200 OK' : '503 Service Unavailable', origin, JSON.stringify(body)),
        );
    };
    // A bare host of a multi-network server: every network (overall rule in NetworkRouter.health).
    if (router.isProcessHost(host)) {
      void router.health(l.shuttingDown).then(({ ok, body }) => reply(ok, body));
      return;
    }
    const net = router.route(host);
    if (net === undefined) return l.send(res, '404 Not Found', origin, BODY_UNKNOWN_NETWORK(host, router.names()));
    void net.health().then((h) => {
      const status = l.shuttingDown ? 'stopping' : h.status;
      reply(h.status === 'ok', router.single ? { ...h, status } : { network: net.name, ...h, status });
    });
  });
}
