// JSON-RPC 2.0 envelope: parse, validate each request, dispatch through the method table
// (wrapped by the caller's middleware), and serialize replies. Batches are answered member by
// member in order, each with its own id.
import {
  InvalidParamsError,
  InvalidRequestError,
  MethodNotFoundError,
  ParseError,
  ResponseTooLargeError,
  withProperty,
} from '@chainnode/core';
import type { RpcError } from '@chainnode/core';
import { INLINE_COST_LIMIT, INLINE_TRY_WORK, resolveConfig } from './config.js';
import { InlineTimeUp } from './call.js';
import { createFormatMemos } from './context.js';
import type { HandlerContext } from './context.js';
import { JsonText, stringifyResult } from './json-text.js';
import { Lanes } from '@chainnode/core';
import { toErrorObject } from './errors.js';
import type { JsonRpcErrorObject } from './errors.js';
import { isMethodName, METHODS } from './table.js';
import type { MethodDef } from './method.js';
import type { MethodName } from './table.js';
import { AnswerCache } from './call-cache.js';
import type { OffloadExecutor } from './offload.js';
import { rawIds } from './raw-ids.js';
import type {
  CallMiddleware,
  JsonRpcId,
  RpcConnectionApi,
  RpcReply,
  RpcServiceApi,
  RpcServiceFactory,
} from './service.js';
import type { SubscriptionConnection } from './subscriptions/hub.js';
import { FilterRegistry } from './filters/engine.js';

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: unknown }
  | { jsonrpc: '2.0'; id: JsonRpcId; error: JsonRpcErrorObject };

const passThrough: CallMiddleware = (_call, next) => next();
const noop = (): void => {};

export const createRpcService: RpcServiceFactory = (store, config, options) => {
  const ctx: HandlerContext = { store, config: resolveConfig(config), memo: createFormatMemos() };
  if (options?.forward !== undefined) ctx.forward = options.forward;
  if (ctx.config.callCacheBytes > 0) ctx.answers = new AnswerCache(ctx.config.callCacheBytes);
  const filters = options?.filters ?? new FilterRegistry();
  // One context per caller (a handful of keys), so a request allocates none.
  const callers = new Map<string, HandlerContext>();
  const ctxOf = (caller = ''): HandlerContext => {
    let c = callers.get(caller);
    if (c === undefined) callers.set(caller, (c = { ...ctx, filters: filters.scope(caller) }));
    return c;
  };
  const offload = options?.offload;
  const batchLanes = new Lanes(ctx.config.maxConcurrentBatches);
  const admission: Admission = {
    costLimit: options?.inlineCostLimit ?? INLINE_COST_LIMIT,
    tryWork: options?.inlineTryWork ?? INLINE_TRY_WORK,
  };
  const handleWith = async (
    ctx: HandlerContext,
    body: string,
    middleware: CallMiddleware,
    onRequestError: () => void,
  ): Promise<RpcReply> => {
    let message: unknown;
    try {
      message = JSON.parse(body);
    } catch {
      onRequestError();
      return { body: JSON.stringify(errorResponse(null, new ParseError())), batch: false };
    }
    if (!Array.isArray(message)) {
      const reply = await answer(ctx, offload, admission, message, false, middleware, onRequestError);
      if (reply === undefined) return { body: undefined, batch: false };
      const raw = hasNumericId(message) ? rawIds(body) : undefined;
      const rawId = typeof raw === 'string' ? raw : undefined;
      if ('result' in reply && reply.result instanceof JsonText && (reply.result.shared || reply.result.hasBytes))
        return textReply(reply, rawId, reply.result);
      return { body: serialize(reply, rawId), batch: false };
    }
    if (message.length === 0) {
      onRequestError();
      return { body: JSON.stringify(errorResponse(null, new InvalidRequestError('empty batch'))), batch: true };
    }
    const raws = message.some(hasNumericId) ? rawIds(body) : undefined;
    const rawAt = (i: number): string | undefined => (Array.isArray(raws) ? raws[i] : undefined);
    if (message.length > ctx.config.maxBatchSize) {
      // geth: one error in a one-element array, carrying the id of the first call.
      onRequestError();
      const first = message.findIndex((m) => callId(m) !== undefined);
      const reply = errorResponse(
        first < 0 ? null : (callId(message[first]) ?? null),
        new InvalidRequestError('batch too large'),
      );
      return { body: `[${serialize(reply, rawAt(first))}]`, batch: true };
    }
    // Offloaded calls (eth_getLogs) of a batch wait outside the lanes: a lane is for work here.
    const batchOffload: OffloadExecutor | undefined =
      offload === undefined
        ? undefined
        : { run: (method, params) => batchLanes.outside(() => offload.run(method, params)) };
    const replies = await batchLanes.run(async () => {
      const out: string[] = [];
      let size = 0;
      for (const [i, m] of message.entries()) {
        if (size > ctx.config.maxBatchResponseBytes) {
          // geth: the calls after the answers passed the limit are not run.
          if (!isNotification(m))
            out.push(serialize(errorResponse(callId(m) ?? null, new ResponseTooLargeError()), rawAt(i)));
          continue;
        }
        const reply = await answer(ctx, batchOffload, admission, m, true, middleware, onRequestError);
        if (reply === undefined) continue;
        const text = serialize(reply, rawAt(i));
        size += text.length + 1;
        out.push(text);
      }
      return out;
    });
    return { body: replies.length === 0 ? undefined : `[${replies.join(',')}]`, batch: true };
  };
  const api: RpcServiceApi = {
    filters,
    ...(ctx.answers !== undefined ? { answers: ctx.answers } : {}),
    handle: (body, middleware = passThrough, onRequestError = noop, caller) =>
      handleWith(ctxOf(caller), body, middleware, onRequestError),
    connect: (subscriptions: SubscriptionConnection): RpcConnectionApi => ({
      async handle(body, middleware = passThrough, onRequestError = noop, caller): Promise<RpcReply> {
        // Calls of one message run one after the other, so what a failed call created is exactly
        // what was created since its mark: its id never reaches the client, so it is dropped.
        const subs = subscriptions.forMessage();
        const guarded: CallMiddleware = async (call, next) => {
          const mark = subs.mark();
          try {
            return await middleware(call, next);
          } catch (err) {
            subs.rollback(mark);
            throw err;
          }
        };
        const reply = await handleWith(
          withProperty(ctxOf(caller), 'subscriptions', subs),
          body,
          guarded,
          onRequestError,
        );
        if (reply.encode === undefined && reply.body === undefined) {
          subs.activate(); // nothing to send (notifications only)
          return reply;
        }
        // Set on the reply itself: a copy would read (and so make) a memoised reply's body.
        reply.sent = () => subs.activate();
        return reply;
      },
    }),
  };
  return api;
};

function isValidId(id: unknown): id is JsonRpcId {
  return id === null || typeof id === 'string' || typeof id === 'number';
}

/** The id of a well-formed call; undefined for notifications and malformed messages. */
function callId(m: unknown): JsonRpcId | undefined {
  if (typeof m !== 'object' || m === null || Array.isArray(m) || !('id' in m)) return undefined;
  const id = (m as { id: unknown }).id;
  return isValidId(id) ? id : undefined;
}

function isNotification(m: unknown): boolean {
  return typeof m === 'object' && m !== null && !Array.isArray(m) && !('id' in m);
}

function hasNumericId(m: unknown): boolean {
  return typeof m === 'object' && m !== null && typeof (m as { id?: unknown }).id === 'number';
}

/**
 * JSON text of a reply (the bytes JSON.stringify(reply) gives, with pre-serialised results
 * spliced in); a numeric id is written as the caller's source text when known.
 */
function serialize(reply: JsonRpcResponse, rawId: string | undefined): string {
  const id = idText(reply, rawId);
  if ('error' in reply) return `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(reply.error)}}`;
  return `{"jsonrpc":"2.0","id":${id},"result":${stringifyResult(reply.result)}}`;
}

/** The id as the reply writes it: a numeric id as the caller's source text when known. */
function idText(reply: JsonRpcResponse, rawId: string | undefined): string {
  return rawId !== undefined && typeof reply.id === 'number' ? rawId : JSON.stringify(reply.id);
}

const RESULT_END = 0x7d; // }

/**
 * A single call answered with a memoised result or one written as bytes (a proof's, a getLogs
 * answer from the stored rows): an encoder from those bytes, and the text only if asked.
 *
 * A class, not an object literal with `get body()`: with the literal, the young collector
 * promoted the reply's whole result (a proof's record and nodes) and it died in old space
 * (measured on random proofs, in process: ~2.5 MB per young collection with the literal, none
 * this way; our reading: V8 gives each literal with a getter a hidden class of its own that holds
 * the getter until a full collection).
 */
class TextReply implements RpcReply {
  readonly batch = false;
  readonly size: number;
  sent?: () => void;
  private readonly headLength: number;

  constructor(
    private readonly head: string,
    private readonly result: JsonText,
  ) {
    this.headLength = Buffer.byteLength(head, 'utf8');
    this.size = this.headLength + result.byteLength() + 1;
  }

  /** Made only if read: a transport sends encode()'s bytes, and a result written as bytes (a proof's) would otherwise be copied into a string of its own for every answer. */
  get body(): string {
    return `${this.head}${this.result.text}}`;
  }

  // A property, not a method: transports take it off the reply (`const { encode } = reply`).
  readonly encode = (alloc: (length: number) => Buffer): Uint8Array => {
    const out = alloc(this.size);
    out.write(this.head, 0, 'utf8');
    const end = this.result.writeInto(out, this.headLength);
    out[end] = RESULT_END;
    return out;
  };
}

function textReply(reply: JsonRpcResponse, rawId: string | undefined, result: JsonText): RpcReply {
  return new TextReply(`{"jsonrpc":"2.0","id":${idText(reply, rawId)},"result":`, result);
}

function errorResponse(id: JsonRpcId, err: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: toErrorObject(err) };
}

/** Which offloadable calls run inline: RpcServiceOptions' inlineCostLimit and inlineTryWork. */
interface Admission {
  costLimit: number;
  tryWork: number;
}

/**
 * Runs one call (the middleware around it runs in answer()). Offloadable methods run whole on the
 * executor when there is one; cheap ones (by the method's estimate) run inline even then:
 * admission by cost, not count. A method whose answers are kept (MethodDef.remember, with the
 * service's AnswerCache) is answered from the cache, or run pinned to the block hash it names
 * and its answer kept.
 */
async function dispatch(
  ctx: HandlerContext,
  def: MethodDef<unknown, unknown>,
  method: MethodName,
  params: unknown[],
  offload: OffloadExecutor | undefined,
  admission: Admission,
): Promise<unknown> {
  const execute = async (raw: unknown[], decoded?: unknown): Promise<unknown> => {
    const decode = (): unknown => (decoded === undefined ? def.decode(raw) : decoded);
    if (def.offload !== true || offload === undefined) return def.handle(ctx, decode());
    if (def.estimateCost !== undefined && admission.costLimit >= 0) {
      const p = decode();
      if ((await def.estimateCost(ctx, p)) <= admission.costLimit) return def.handle(ctx, p);
      // Estimated heavy, yet most such calls are light: inline for a while, else on the executor.
      if (def.interruptible === true && admission.tryWork > 0)
        try {
          return await def.handle(withProperty(ctx, 'inline', { work: admission.tryWork, spent: 0 }), p);
        } catch (err) {
          if (!(err instanceof InlineTimeUp)) throw err;
        }
    }
    return offload.run(method, raw);
  };
  const answers = ctx.answers;
  if (answers === undefined || def.remember === undefined) return execute(params);
  const pinned = await def.remember(ctx, def.decode(params), params);
  return answers.answer(pinned.key, () => execute(pinned.raw, pinned.params));
}

/** One request object -> its response, or undefined for a notification (no id member). */
async function answer(
  ctx: HandlerContext,
  offload: OffloadExecutor | undefined,
  admission: Admission,
  m: unknown,
  inBatch: boolean,
  middleware: CallMiddleware,
  onRequestError: () => void,
): Promise<JsonRpcResponse | undefined> {
  // A request error answered here, before the middleware: reported so the server can charge it.
  const rejected = (id: JsonRpcId, err: RpcError): JsonRpcResponse => {
    onRequestError();
    return errorResponse(id, err);
  };
  if (typeof m !== 'object' || m === null || Array.isArray(m)) {
    return rejected(null, new InvalidRequestError('invalid request: expected a JSON object'));
  }
  const req = m as Record<string, unknown>;
  const isNotification = !('id' in req);
  if (!isNotification && !isValidId(req.id)) {
    return rejected(null, new InvalidRequestError('invalid request: id must be a number, a string or null'));
  }
  const id: JsonRpcId = isNotification ? null : (req.id as JsonRpcId);
  if (req.jsonrpc !== '2.0') {
    return rejected(id, new InvalidRequestError('invalid request: jsonrpc must be "2.0"'));
  }
  if (typeof req.method !== 'string' || req.method === '') {
    return rejected(id, new InvalidRequestError('invalid request: method must be a non-empty string'));
  }
  const method = req.method;
  let reply: JsonRpcResponse;
  if (!isMethodName(method)) {
    reply = rejected(id, new MethodNotFoundError(method));
  } else if (req.params !== undefined && req.params !== null && !Array.isArray(req.params)) {
    reply = rejected(id, new InvalidParamsError('non-array args: params must be a JSON array of positional arguments'));
  } else {
    const params = (req.params ?? []) as unknown[];
    // The table is typed per method; at this point only the name is known, so the entry is
    // used through its erased shape (decode's output goes straight into the same handle).
    const def = METHODS[method] as MethodDef<unknown, unknown>;
    const run = (): Promise<unknown> => dispatch(ctx, def, method, params, offload, admission);
    try {
      const result = await middleware({ method, cost: def.cost, id, params, inBatch }, run);
      reply = { jsonrpc: '2.0', id, result: result === undefined ? null : result };
    } catch (err) {
      reply = errorResponse(id, err as RpcError | unknown);
    }
  }
  return isNotification ? undefined : reply;
}
