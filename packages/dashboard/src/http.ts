// The admin listener: the dashboard page (static files of this package, uPlot from
// node_modules) and its JSON API, on its own address (127.0.0.1 by default), separate from the
// public JSON-RPC port. Low traffic, so node:http (or node:https with a certificate) is enough.
//
// The API is one typed route table (routes.ts): method, path pattern, whether a session is
// needed, whether the call changes state (then Origin/Sec-Fetch-Site and the CSRF token are
// checked, api.ts); the page's files are static.ts.
// Nothing here logs a request line, a body or a header: bodies and answers may carry keys and
// secrets, and only the create/rotate/secret answers ever do.
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { KeyActionError } from '@chainnode/accounts';
import type { KeyManager } from '@chainnode/accounts';
import { LoginThrottle, Sessions } from './admin.js';
import { handleApi } from './api.js';
import { HttpError, sendJson } from './respond.js';
import { apiRoutes } from './routes.js';
import { StaticFiles } from './static.js';

export interface DashboardOptions {
  datadir: string;
  keys: KeyManager;
  host: string;
  port: number;
  /** PEM certificate and key: serve over TLS (and mark the cookie Secure). */
  tls?: { cert: string; key: string };
  /** The public JSON-RPC base URL shown on the page (e.g. http://127.0.0.1:8545). */
  rpcUrl?: string;
  /** Operational messages (never a token, key or secret). */
  log?: (line: string) => void;
}

export interface RunningDashboard {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export async function startDashboard(o: DashboardOptions): Promise<RunningDashboard> {
  const sessions = new Sessions();
  const secure = o.tls !== undefined;
  const scheme = secure ? 'https' : 'http';
  const files = new StaticFiles();
  const routes = apiRoutes({
    datadir: o.datadir,
    keys: o.keys,
    sessions,
    throttle: new LoginThrottle(),
    secure,
    rpcUrl: o.rpcUrl,
  });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://x').pathname; // only the path is used; the query is ignored
    if (!path.startsWith('/api/')) files.serve(path, req.method ?? 'GET', res);
    else await handleApi(req, res, path, routes, sessions, scheme);
  };

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) return sendJson(res, err.status, { error: err.message }, err.headers);
      if (err instanceof KeyActionError) return sendJson(res, err.status, { error: err.message });
      o.log?.(`dashboard: internal error: ${(err as Error).name}`);
      sendJson(res, 500, { error: 'internal error' });
    });
  };

  const server: Server = o.tls
    ? createHttpsServer({ cert: o.tls.cert, key: o.tls.key }, listener)
    : createHttpServer(listener);
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.maxHeadersCount = 100;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    port,
    url: `${scheme}://${hostForUrl}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        sessions.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
