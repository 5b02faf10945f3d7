// CORS: keys travel in the path and no cookies are used, so "*" is the default
// (config.corsOrigins). Every response carries the allow-origin header; OPTIONS preflights are
// answered here for any path.
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Metrics } from './metrics.js';
import { H_ALLOW_ORIGIN, H_VARY, V_ANY, V_ORIGIN } from './reply.js';

/** Writes the CORS headers of a response to a request from `origin`. */
export function corsWriter(corsOrigins: readonly string[]): (res: HttpResponse, origin: string) => void {
  const anyOrigin = corsOrigins.includes('*');
  const allowed = new Set(corsOrigins);
  return (res, origin) => {
    if (anyOrigin) res.writeHeader(H_ALLOW_ORIGIN, V_ANY);
    else if (origin !== '' && allowed.has(origin)) {
      res.writeHeader(H_ALLOW_ORIGIN, origin);
      res.writeHeader(H_VARY, V_ORIGIN);
    }
  };
}

/** What a preflight needs of the listener: its CORS headers and its response count. */
export interface PreflightHost {
  writeCors(res: HttpResponse, origin: string): void;
  readonly metrics: Pick<Metrics, 'response'>;
}

/** Answers CORS preflights (OPTIONS on any path) with 204. */
export function servePreflight(app: TemplatedApp, l: PreflightHost): void {
  app.options('/*', (res, req) => {
    const origin = req.getHeader('origin');
    const reqHeaders = req.getHeader('access-control-request-headers');
    res.writeStatus('204 No Content');
    l.writeCors(res, origin);
    res.writeHeader('Access-Control-Allow-Methods', 'POST, GET, OPTIONS');
    res.writeHeader(
      'Access-Control-Allow-Headers',
      reqHeaders !== '' && reqHeaders.length < 1024 ? reqHeaders : 'content-type',
    );
    res.writeHeader('Access-Control-Max-Age', '86400');
    res.endWithoutBody();
    l.metrics.response('http', 204);
  });
}
