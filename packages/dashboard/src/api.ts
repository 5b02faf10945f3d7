// One API request: the route by path and method (404 / 405), the same-origin check of a call that
// changes state, the session (401) and its CSRF token (403), the JSON body (64 KiB at most, JSON
// only: a form post is refused), then the route's handler and its answer as JSON.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CSRF_HEADER, csrfMatches, sameOrigin, sessionCookie } from './admin.js';
import type { Session, Sessions } from './admin.js';
import { HttpError, sendJson } from './respond.js';
import type { Route } from './routes.js';

const MAX_BODY = 64 * 1024;

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

/** The route of `path` and `method`, and its path parameters; else 404 (no such path) or 405. */
function findRoute(routes: readonly Route[], path: string, method: string): { route: Route; params: string[] } {
  let params: string[] = [];
  let pathMatched = false;
  const route = routes.find((r) => {
    const m = r.path.exec(path);
    if (!m) return false;
    pathMatched = true;
    if (r.method !== method) return false;
    params = m.slice(1);
    return true;
  });
  if (!route) throw new HttpError(pathMatched ? 405 : 404, pathMatched ? 'method not allowed' : 'no such API route');
  return { route, params };
}

/** The body of a POST or PATCH: JSON (an empty body is `{}`); undefined for other methods. */
async function jsonBody(req: IncomingMessage, method: string): Promise<unknown> {
  if (method !== 'POST' && method !== 'PATCH') return undefined;
  const ct = req.headers['content-type'] ?? '';
  const text = await readBody(req);
  if (text === '') return {};
  // JSON only: a form post (the classic CSRF vehicle) is refused outright.
  if (!/^application\/json\b/i.test(ct)) throw new HttpError(415, 'expected Content-Type: application/json');
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'the body is not valid JSON');
  }
}

/** Answers one request under /api/ (errors are thrown: HttpError, KeyActionError, or a bug). */
export async function handleApi(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  routes: readonly Route[],
  sessions: Sessions,
  scheme: 'http' | 'https',
): Promise<void> {
  const method = req.method ?? 'GET';
  const { route, params } = findRoute(routes, path, method);
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
  const body = await jsonBody(req, method);
  const out = await route.handler({ req, res, params, body, session, cookie });
  sendJson(res, 200, out);
}
