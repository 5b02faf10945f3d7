// The JSON API as one typed route table: method, path pattern, whether a session is needed,
// whether the call changes state (then Origin/Sec-Fetch-Site and the CSRF token are checked,
// api.ts), and the handler. Session routes (login, logout, session) and key routes (the
// KeyManager's actions).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyManager } from '@chainnode/accounts';
import { clearCookie, setCookie, verifyAdminToken } from './admin.js';
import type { LoginThrottle, Session, Sessions } from './admin.js';
import { HttpError } from './respond.js';

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  params: string[];
  body: unknown;
  session: Session | undefined;
  cookie: string | undefined;
}

export interface Route {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: RegExp;
  /** A valid session is required (else 401). */
  auth: boolean;
  /** Changes state: same-origin check, and (with auth) the CSRF token. */
  mutates: boolean;
  handler: (ctx: Ctx) => unknown;
}

/** What the routes act on. */
export interface RouteDeps {
  datadir: string;
  keys: KeyManager;
  sessions: Sessions;
  throttle: LoginThrottle;
  /** Served over TLS: the session cookie is Secure. */
  secure: boolean;
  rpcUrl: string | undefined;
}

const ID = '([0-9a-f]{12})';

const str = (v: unknown, field: string): string => {
  if (typeof v !== 'string') throw new HttpError(400, `${field}: expected a string`);
  return v;
};
const obj = (v: unknown): Record<string, unknown> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new HttpError(400, 'expected a JSON object');
  return v as Record<string, unknown>;
};

export function apiRoutes(d: RouteDeps): Route[] {
  return [...sessionRoutes(d), ...keyRoutes(d.keys)];
}

function sessionRoutes({ datadir, sessions, throttle, secure, rpcUrl }: RouteDeps): Route[] {
  return [
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
        if (!verifyAdminToken(datadir, token)) {
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
        session ? { loggedIn: true, csrf: session.csrf, rpcUrl: rpcUrl ?? null } : { loggedIn: false },
    },
  ];
}

function keyRoutes(km: KeyManager): Route[] {
  /** A route on one key (its id the path's one parameter). */
  const onKey = (
    method: Route['method'],
    tail: string,
    mutates: boolean,
    act: (id: string, ctx: Ctx) => unknown,
  ): Route => ({
    method,
    path: new RegExp(`^/api/keys/${ID}${tail}$`),
    auth: true,
    mutates,
    handler: (ctx) => act(ctx.params[0] as string, ctx),
  });
  return [
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
    onKey('GET', '', false, (id) => km.get(id)),
    onKey('PATCH', '', true, (id, { body }) => km.update(id, obj(body))),
    onKey('POST', '/revoke', true, (id) => km.revoke(id)),
    onKey('POST', '/rotate', true, (id) => km.rotate(id)),
    onKey('POST', '/secret', true, (id) => km.createSecret(id)),
    onKey('DELETE', '/secret', true, (id) => km.deleteSecret(id)),
    onKey('GET', '/usage', false, (id) => km.usage(id)),
  ];
}
