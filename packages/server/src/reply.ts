// The bytes of the transport's replies: status lines, header names and values, the error bodies
// the transport itself answers with (before or around the rpc service), and the writing of a
// reply body (one scratch buffer for short ones; long ones streamed under backpressure).
import type { HttpResponse } from 'uWebSockets.js';
import type { KeyRecord } from '@chainnode/accounts';
import type { RpcReply } from '@chainnode/rpc';
import { networkNotAllowedMessage } from './middleware.js';
import type { ReplyBudget } from './reply-budget.js';
import { NetworkRouter } from './router.js';

export const OK = '200 OK';
/** Status of a single request refused by a limit or by an unavailable ledger. */
export const REFUSAL_STATUS = {
  402: '402 Payment Required',
  403: '403 Forbidden',
  429: '429 Too Many Requests',
  503: '503 Service Unavailable',
} as const;
// Header names and values of every RPC response, as bytes once: uWS converts a JS string
// argument to UTF-8 on each call, and these run for every request.
const ascii = (text: string): Uint8Array => Buffer.from(text, 'latin1');
export const H_ALLOW_ORIGIN = ascii('Access-Control-Allow-Origin');
export const H_VARY = ascii('Vary');
export const H_CONTENT_TYPE = ascii('Content-Type');
export const V_ANY = ascii('*');
export const V_ORIGIN = ascii('Origin');
export const V_JSON = ascii('application/json');
export const REQ_ORIGIN = ascii('origin');
export const REQ_CONTENT_LENGTH = ascii('content-length');
export const REQ_USER_AGENT = ascii('user-agent');
export const REQ_AUTHORIZATION = ascii('authorization');
export const REQ_HOST = ascii('host');
/** Reply bodies longer than this (UTF-16 units, or bytes) are streamed under backpressure (see endLong). */
export const STREAM_ABOVE = 256 * 1024;
/**
 * Replies that can encode themselves (RpcReply.encode) are written into this buffer and handed to
 * uWS at once; uWS copies what it does not send right away, so one buffer serves every reply
 * (no allocation per response). It grows to the largest reply written so far, up to
 * SCRATCH_MAX (one per app thread: module state), and stays: a fresh buffer for each
 * answer of a few hundred KB (a getLogs answer) is fresh memory every time, and the page faults
 * of touching it measured costlier than the copy into it. Longer replies get their own.
 */
const SCRATCH_MAX = STREAM_ABOVE + 64 * 1024;
let SCRATCH = Buffer.allocUnsafeSlow(64 * 1024);
export const scratch = (length: number): Buffer => {
  if (length > SCRATCH.length && length <= SCRATCH_MAX)
    SCRATCH = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(length, 2 * SCRATCH.length)));
  return length <= SCRATCH.length ? SCRATCH.subarray(0, length) : Buffer.allocUnsafe(length);
};
/** Memory of its own for a reply that outlives the call (a streamed one). */
export const ownMemory = (length: number): Buffer => Buffer.allocUnsafe(length);

/**
 * Ends `res` with a long body: whatever the socket does not take at once is written from
 * onWritable, and `finished` runs once all of it has been handed to the socket (or the client
 * went away). res.end() would keep the rest inside uWS, where closing the app on shutdown cut
 * it off: a multi-megabyte eth_getLogs answer in flight at SIGTERM arrived truncated.
 * `onAbort` registers what the request's onAborted handler must call.
 */
export function endLong(
  res: HttpResponse,
  body: string | Uint8Array,
  finished: () => void,
  onAbort: (f: () => void) => void,
  budget: ReplyBudget<unknown>,
): void {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const total = buf.length;
  const base = res.getWriteOffset();
  const [, done] = res.tryEnd(buf, total);
  if (done) {
    finished();
    return;
  }
  // The rest stays in `buf` until the socket takes it: reply bytes in flight.
  budget.update(res, total - (res.getWriteOffset() - base));
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    budget.release(res);
    finished();
  };
  onAbort(end);
  res.onWritable((offset) => {
    const [ok, done2] = res.tryEnd(buf.subarray(offset - base), total);
    if (done2) end();
    else budget.update(res, total - (res.getWriteOffset() - base));
    return ok;
  });
}

export function errorBody(code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } });
}

/** A reply whose bytes could not be made (see encodeOrUndefined). */
export const BODY_UNWRITABLE = errorBody(-32603, 'internal error');

/**
 * RpcReply.encode, or undefined if it throws: a reply that reads a file slice as it is written (a
 * getLogs answer from a sealed log segment) fails only on a damaged datadir, and then the caller
 * gets an internal error instead of the thread dying on an unhandled rejection.
 */
export function encodeOrUndefined(
  encode: NonNullable<RpcReply['encode']>,
  alloc: Parameters<NonNullable<RpcReply['encode']>>[0],
): Uint8Array | undefined {
  try {
    return encode(alloc);
  } catch {
    return undefined;
  }
}

export const BODY_MISSING_KEY = errorBody(
  -32001,
  'missing API key: use /v3/<API_KEY> (HTTP) or /ws/v3/<API_KEY> (WebSocket)',
);
export const BODY_UNKNOWN_KEY = errorBody(-32001, 'invalid API key');
const BODY_REVOKED_KEY = errorBody(-32001, 'API key revoked');
export const BODY_TOO_LARGE = (max: number): string =>
  errorBody(-32600, `request body too large: the limit is ${max} bytes`);
export const BODY_SHUTTING_DOWN = errorBody(-32603, 'server is shutting down');
export const BODY_NOT_FOUND = errorBody(
  -32601,
  'not found: POST JSON-RPC to /v3/<API_KEY>, or connect to /ws/v3/<API_KEY>',
);
export const BODY_METHOD = errorBody(-32600, 'method not allowed: use POST with a JSON body');
// Infura answers a host it serves no network on with 404, and a project that has not enabled a
// network with 403 / -32002 (docs/networks.md). Neither is charged.
export const BODY_UNKNOWN_NETWORK = (host: string, names: string[]): string =>
  errorBody(
    -32601,
    `unknown network "${NetworkRouter.askedFor(host)}": this server serves ${names.join(', ')} (use http://<network>.<host>/v3/<API_KEY>)`,
  );
export const BODY_NETWORK_NOT_ALLOWED = (network: string): string =>
  errorBody(-32002, networkNotAllowedMessage(network));
export const BODY_SECRET_MISSING = errorBody(
  -32001,
  'project secret required: send it as the HTTP basic auth password with an empty user name',
);
export const BODY_SECRET_WRONG = errorBody(-32001, 'invalid project id or project secret');
export const BODY_BUSY = errorBody(
  -32005,
  'server busy: reply bytes in flight are over the process budget, retry later',
);

export function keyProblem(rec: KeyRecord | undefined, key: string): string | undefined {
  if (key === '') return BODY_MISSING_KEY;
  if (!rec) return BODY_UNKNOWN_KEY;
  if (rec.revokedAt !== undefined) return BODY_REVOKED_KEY;
  return undefined;
}
