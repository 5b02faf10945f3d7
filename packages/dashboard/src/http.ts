// The admin listener: the dashboard page (static files of this package, uPlot from
// node_modules) and its JSON API, on its own address (127.0.0.1 by default), separate from the
// public JSON-RPC port. Low traffic, so node:http (or node:https with a certificate) is enough.
//
// The API is one typed route table (ROUTES): method, path pattern, whether a session is needed,
// whether the call changes state (then Origin/Sec-Fetch-Site and the CSRF token are checked).
// Nothing here logs a request line, a body or a header: bodies and answers may carry keys and
// secrets, and only the create/rotate/secret answers ever do.
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import {
  CSRF_HEADER,
  LoginThrottle,
  Sessions,
  clearCookie,
  csrfMatches,
  sameOrigin,
  sessionCookie,
  setCookie,
  verifyAdminToken,
} from './admin.js';
import type { Session } from './admin.js';
import { KeyActionError } from '@chainnode/accounts';
import type { KeyManager } from '@chainnode/accounts';

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

const MAX_BODY = 64 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  params: string[];
  body: unknown;
  session: Session | undefined;
  cookie: string | undefined;
}

type Handler = (ctx: Ctx) => unknown;

interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: RegExp;
  /** A valid session is required (else 401). */
  auth: boolean;
  /** Changes state: same-origin check, and (with auth) the CSRF token. */
  mutates: boolean;
  handler: Handler;
}

const ID = '([0-9a-f]{12})';

/** Static assets: path -> [file, content type]. Nothing else is served from disk. */
function assets(): Map<string, { file: string; type: string }> {
  const here = dirname(fileURLToPath(import.meta.url)); // dist/src
  const pub = join(here, '..', '..', 'public');
  const require = createRequire(import.meta.url);
  const uplotDir = join(dirname(require.resolve('uplot/package.json')), 'dist');
  return new Map([
    ['/', { file: join(pub, 'index.html'), type: 'text/html; charset=utf-8' }],
    ['/app.js', { file: join(pub, 'app.js'), type: 'text/javascript; charset=utf-8' }],
    ['/app.css', { file: join(pub, 'app.css'), type: 'text/css; charset=utf-8' }],
    [
      '/vendor/uPlot.iife.min.js',
      { file: join(uplotDir, 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
    ],
    ['/vendor/uPlot.min.css', { file: join(uplotDir, 'uPlot.min.css'), type: 'text/css; charset=utf-8' }],
  ]);
}

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new HttpError(413, `request body too large (limit ${MAX_BODY} bytes)`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startDashboard(o: DashboardOptions): Promise<RunningDashboard> {
  const sessions = new Sessions();
  const throttle = new LoginThrottle();
  const secure = o.tls !== undefined;
  const scheme = secure ? 'https' : 'http';
  const files = assets();
  const cache = new Map<string, Buffer>();
  const km = o.keys;

  const str = (v: unknown, field: string): string => {
    if (typeof v !== 'string') throw new HttpError(400, `${field}: expected a string`);
    return v;
  };
  const obj = (v: unknown): Record<string, unknown> => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new HttpError(400, 'expected a JSON object');
    return v as Record<string, unknown>;
  };

  const ROUTES: Route[] = [
    {
      method: 'POST',
      path: /^\/api\/login$/,
      auth: false,
      mutates: true,
      handler: ({ req, res, body }) => {
        const client = req.socket.remoteAddress ?? '?';
        const wait = throttle.retryAfter(client);
        if (wait > 0)
          throw new HttpError(429, 'too many login attempts; try again later', { 'Retry-After': String(wait) });
        const token = str(obj(body)['token'], 'token');
        if (!verifyAdminToken(o.datadir, token)) {
          throttle.failed(client);
          throw new HttpError(401, 'wrong admin token');
        }
        const { cookie, session } = sessions.create();
        res.setHeader('Set-Cookie', setCookie(cookie, secure));
        return { csrf: session.csrf };
      },
    },
    {
      method: 'POST',
      path: /^\/api\/logout$/,
      auth: true,
      mutates: true,
      handler: ({ res, cookie }) => {
        sessions.destroy(cookie);
        res.setHeader('Set-Cookie', clearCookie(secure));
        return { ok: true };
      },
    },
    // Not an error when logged out (200 {loggedIn:false}): the page asks on load, and a 401 there
    // would be a console error in every browser for the normal case.
    {
      method: 'GET',
      path: /^\/api\/session$/,
      auth: false,
      mutates: false,
      handler: ({ session }) =>
        session ? { loggedIn: true, csrf: session.csrf, rpcUrl: o.rpcUrl ?? null } : { loggedIn: false },
    },
    { method: 'GET', path: /^\/api\/plans$/, auth: true, mutates: false, handler: () => km.plans },
    { method: 'GET', path: /^\/api\/keys$/, auth: true, mutates: false, handler: () => km.list() },
    {
      method: 'POST',
      path: /^\/api\/keys$/,
      auth: true,
      mutates: true,
      handler: ({ body }) => {
        const b = obj(body);
        for (const k of Object.keys(b))
          if (!['name', 'plan', 'networks', 'limits'].includes(k)) throw new HttpError(400, `${k}: unknown field`);
        return km.create({
          name: str(b['name'], 'name'),
          plan: str(b['plan'], 'plan'),
          networks: b['networks'] === undefined || b['networks'] === null ? undefined : (b['networks'] as string[]),
          limits: b['limits'] === undefined || b['limits'] === null ? undefined : (obj(b['limits']) as never),
        });
      },
    },
    {
      method: 'GET',
      path: new RegExp(`^/api/keys/${ID}$`),
      auth: true,
      mutates: false,
      handler: ({ params }) => km.get(params[0] as string),
    },
    {
      method: 'PATCH',
      path: new RegExp(`^/api/keys/${ID}$`),
      auth: true,
      mutates: true,
      handler: ({ params, body }) => km.update(params[0] as string, obj(body)),
    },
    {
      method: 'POST',
      path: new RegExp(`^/api/keys/${ID}/revoke$`),
      auth: true,
      mutates: true,
      handler: ({ params }) => km.revoke(params[0] as string),
    },
    {
      method: 'POST',
      path: new RegExp(`^/api/keys/${ID}/rotate$`),
      auth: true,
      mutates: true,
      handler: ({ params }) => km.rotate(params[0] as string),
    },
    {
      method: 'POST',
      path: new RegExp(`^/api/keys/${ID}/secret$`),
      auth: true,
      mutates: true,
      handler: ({ params }) => km.createSecret(params[0] as string),
    },
    {
      method: 'DELETE',
      path: new RegExp(`^/api/keys/${ID}/secret$`),
      auth: true,
      mutates: true,
      handler: ({ params }) => km.deleteSecret(params[0] as string),
    },
    {
      method: 'GET',
      path: new RegExp(`^/api/keys/${ID}/usage$`),
      auth: true,
      mutates: false,
      handler: ({ params }) => km.usage(params[0] as string),
    },
  ];

  const sendJson = (
    res: ServerResponse,
    status: number,
    value: unknown,
    headers: Record<string, string> = {},
  ): void => {
    const text = JSON.stringify(value);
    res.writeHead(status, {
      ...SECURITY_HEADERS,
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      ...headers,
    });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://x'); // only the path is used; the query is ignored
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (!path.startsWith('/api/')) {
      const asset = files.get(path);
      if (!asset || (method !== 'GET' && method !== 'HEAD')) {
        res.writeHead(404, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
        res.end('not found\n');
        return;
      }
      let buf = cache.get(path);
      if (!buf) {
        buf = readFileSync(asset.file);
        cache.set(path, buf);
      }
      res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': asset.type, 'Cache-Control': 'no-cache' });
      res.end(method === 'HEAD' ? undefined : buf);
      return;
    }
    let params: string[] = [];
    let pathMatched = false;
    const route = ROUTES.find((r) => {
      const m = r.path.exec(path);
      if (!m) return false;
      pathMatched = true;
      if (r.method !== method) return false;
      params = m.slice(1);
      return true;
    });
    if (!route) throw new HttpError(pathMatched ? 405 : 404, pathMatched ? 'method not allowed' : 'no such API route');
    if (route.mutates) {
      const h = req.headers;
      const origin = typeof h['origin'] === 'string' ? h['origin'] : undefined;
      const site = typeof h['sec-fetch-site'] === 'string' ? h['sec-fetch-site'] : undefined;
      if (!sameOrigin({ origin, secFetchSite: site, host: h.host }, scheme))
        throw new HttpError(403, 'cross-origin request refused');
    }
    const cookie = sessionCookie(req.headers.cookie);
    const session = sessions.get(cookie);
    if (route.auth && !session) throw new HttpError(401, 'not logged in');
    if (route.auth && route.mutates) {
      const header = req.headers[CSRF_HEADER];
      if (!csrfMatches(session as Session, typeof header === 'string' ? header : undefined))
        throw new HttpError(403, 'missing or wrong CSRF token');
    }
    let body: unknown;
    if (method === 'POST' || method === 'PATCH') {
      const ct = req.headers['content-type'] ?? '';
      const text = await readBody(req);
      if (text !== '') {
        // JSON only: a form post (the classic CSRF vehicle) is refused outright.
        if (!/^application\/json\b/i.test(ct)) throw new HttpError(415, 'expected Content-Type: application/json');
        try {
          body = JSON.parse(text);
        } catch {
          throw new HttpError(400, 'the body is not valid JSON');
        }
      } else body = {};
    }
    const out = await route.handler({ req, res, params, body, session, cookie });
    sendJson(res, 200, out);
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
