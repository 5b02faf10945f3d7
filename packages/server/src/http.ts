// HTTP JSON-RPC: `POST /v3/<KEY>`. The key, its secret and the network are checked before the
// body is read (listener.ts); the body is read under the size limit, handed to the network's rpc
// service with the gate's middleware, and the reply written: short ones at once from the
// scratch buffer, long ones streamed under backpressure (reply.ts endLong). Any other path or
// method gets a JSON-RPC error with 404, 405 or 401.
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { RpcReply } from '@chainnode/rpc';
import type { Listener } from './listener.js';
import { Gate } from './middleware.js';
import type { RequestContext } from './middleware.js';
import type { Metrics } from './metrics.js';
import {
  BODY_BUSY,
  BODY_METHOD,
  BODY_MISSING_KEY,
  BODY_NOT_FOUND,
  BODY_TOO_LARGE,
  BODY_UNWRITABLE,
  OK,
  REFUSAL_STATUS,
  REQ_AUTHORIZATION,
  REQ_CONTENT_LENGTH,
  REQ_HOST,
  REQ_ORIGIN,
  REQ_USER_AGENT,
  STREAM_ABOVE,
  encodeOrUndefined,
  endLong,
  errorBody,
  ownMemory,
  scratch,
} from './reply.js';

/** One HTTP request being answered: what its reply needs once the rpc service is done. */
interface Exchange {
  readonly l: Listener;
  readonly res: HttpResponse;
  readonly origin: string;
  /** The routed network's metrics once known (the listener's before). */
  m: Metrics;
  aborted: boolean;
  /** What the request's onAborted handler must call besides marking it aborted (a streamed reply's end). */
  onAbort?: () => void;
}

/** Registers `POST /v3/<KEY>` (and the keyless `/v3`, `/v3/`). */
export function serveRpcHttp(app: TemplatedApp, l: Listener): void {
  app.post('/v3/:key', (res, req) => rpcPost(l, res, req, req.getParameter(0) ?? ''));
  app.post('/v3', (res, req) => rpcPost(l, res, req, ''));
  app.post('/v3/', (res, req) => rpcPost(l, res, req, ''));
}

/** Registers the answer of every other path and method (registered last). */
export function serveNotFound(app: TemplatedApp, l: Listener): void {
  app.any('/*', (res, req) => {
    const url = req.getUrl();
    const method = req.getMethod();
    const origin = req.getHeader('origin');
    if (url === '/ws/v3' || url.startsWith('/ws/v3/') || url === '/v3' || url.startsWith('/v3/')) {
      // A WebSocket upgrade without a key, or a GET on an RPC path.
      if (method === 'get' && !url.startsWith('/ws/') && /^\/v3\/[^/]+$/.test(url))
        return l.send(res, '405 Method Not Allowed', origin, BODY_METHOD);
      if (/^\/(ws\/)?v3\/?$/.test(url))
        return l.send(res, '401 Unauthorized', origin, BODY_MISSING_KEY, method !== 'get');
      return l.send(res, '404 Not Found', origin, BODY_NOT_FOUND, method !== 'get');
    }
    l.send(res, '404 Not Found', origin, BODY_NOT_FOUND, method !== 'get' && method !== 'head');
  });
}

function rpcPost(l: Listener, res: HttpResponse, req: HttpRequest, key: string): void {
  const origin = req.getHeader(REQ_ORIGIN);
  const x: Exchange = { l, res, origin, m: l.metrics, aborted: false };
  res.onAborted(() => {
    x.aborted = true;
    x.onAbort?.();
  });
  const contentLength = req.getHeader(REQ_CONTENT_LENGTH);
  const host = req.getHeader(REQ_HOST);
  const hasBody = contentLength !== '' && contentLength !== '0';
  const userAgent = req.getHeader(REQ_USER_AGENT);
  const authorization = req.getHeader(REQ_AUTHORIZATION);
  const admitted = l.admit(res, { origin, host, authorization, key }, hasBody);
  if (admitted === undefined) return;
  const { net, rec } = admitted;
  const m = net.metrics;
  if (l.budget.over) {
    l.send(res, '503 Service Unavailable', origin, BODY_BUSY, true, m);
    return;
  }
  const max = l.config.maxBodyBytes;
  if (contentLength !== '' && Number(contentLength) > max) {
    l.send(res, '413 Payload Too Large', origin, BODY_TOO_LARGE(max), true, m);
    return;
  }
  x.m = m;
  readBody(x, max, (body) => {
    l.begin();
    const ctx: RequestContext = Gate.context(rec.hash, origin, userAgent);
    ctx.network = net;
    net.service.handle(body, l.gate.middleware(ctx), Gate.requestErrorCounter(ctx), rec.hash).then(
      // Request errors (5 credits each) are charged before the reply goes out; chargeRequestErrors never rejects.
      (reply) =>
        ctx.requestErrors > 0
          ? void l.gate.chargeRequestErrors(ctx).then(() => write(x, ctx, reply))
          : write(x, ctx, reply),
      () => fail(x),
    );
  });
}

/** Reads the body (at most `max` bytes: else 413) and hands it to `got` as text. */
function readBody(x: Exchange, max: number, got: (body: string) => void): void {
  const { l, res, origin, m } = x;
  let chunks: Buffer[] | undefined;
  let size = 0;
  let finished = false;
  res.onData((chunk, isLast) => {
    if (finished) return;
    size += chunk.byteLength;
    if (size > max) {
      finished = true;
      if (!x.aborted) res.cork(() => l.send(res, '413 Payload Too Large', origin, BODY_TOO_LARGE(max), true, m));
      return;
    }
    let body: string;
    if (isLast && chunks === undefined) body = Buffer.from(chunk).toString('utf8');
    else {
      (chunks ??= []).push(Buffer.from(chunk.slice(0))); // copy: uWS neuters the chunk on return
      if (!isLast) return;
      body = Buffer.concat(chunks).toString('utf8');
    }
    finished = true;
    got(body);
  });
}

/**
 * Writes the rpc service's reply. The request stays in flight until the whole body is with the
 * socket: a long one is streamed, and its `finish` runs when the last byte is written (or the
 * client goes away).
 */
function write(x: Exchange, ctx: RequestContext, reply: RpcReply): void {
  const { l, res, origin, m } = x;
  let released = false;
  const finish = (): void => {
    if (released) return;
    released = true;
    l.done();
  };
  let streaming = false;
  try {
    if (x.aborted) return;
    const status = !reply.batch && ctx.refusal !== undefined ? REFUSAL_STATUS[ctx.refusal] : OK;
    const { encode } = reply;
    let long: string | Uint8Array;
    if (encode !== undefined) {
      const small = (reply.size ?? Infinity) <= STREAM_ABOVE;
      const bytes = encodeOrUndefined(encode, small ? scratch : ownMemory);
      if (bytes === undefined) {
        res.cork(() => l.send(res, '500 Internal Server Error', origin, BODY_UNWRITABLE, l.shuttingDown, m));
        return;
      }
      if (small) {
        res.cork(() => l.send(res, status, origin, bytes, l.shuttingDown, m));
        return;
      }
      long = bytes;
    } else {
      const text = reply.body ?? '';
      if (text.length <= STREAM_ABOVE) {
        res.cork(() => l.send(res, status, origin, text, l.shuttingDown, m));
        return;
      }
      long = text;
    }
    // A streamed reply keeps its connection (close() ends it after the last byte).
    res.cork(() => {
      l.writeHead(res, status, origin);
      endLong(res, long, finish, (f) => (x.onAbort = f), l.budget);
    });
    streaming = true;
    m.response('http', Number(status.slice(0, 3)));
  } finally {
    if (!streaming) finish();
  }
}

function fail(x: Exchange): void {
  const { l, res, origin, m } = x;
  try {
    // handle() never throws by contract; answer without internals if it does.
    if (!x.aborted)
      res.cork(() => l.send(res, '500 Internal Server Error', origin, errorBody(-32603, 'internal error'), true, m));
  } finally {
    l.done();
  }
}
