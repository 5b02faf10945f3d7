// Contract between the transport (server package) and request handling (this package).
// The rpc owner implements RpcService; the server only depends on what is declared here.
import type { ChainStore } from '@chainnode/core';
import type { AnswerCacheStats } from './call-cache.js';
import type { RpcConfig } from './config.js';
import type { TxForwarder } from './context.js';
import type { OffloadExecutor } from './offload.js';
import type { SubscriptionConnection } from './subscriptions/hub.js';
import type { FilterRegistry } from './filters/engine.js';

/** The service's settings live with their defaults and checks (config.ts); re-exported here. */
export type { RpcConfig } from './config.js';

export type JsonRpcId = number | string | null;

/** One decoded call on its way to its handler; what middleware sees. */
export interface CallInfo {
  method: string; // a name from the method table (unknown methods never reach middleware)
  cost: number; // credits, from the method table
  id: JsonRpcId;
  params: unknown[]; // as received (already checked to be an array)
  /** True when this call is part of a JSON array batch. */
  inBatch: boolean;
}

/**
 * Wraps every known call: auth/credits/failover/metrics are layers here, never inside
 * handlers. Return next()'s result (or a substitute result); throw an RpcError to reject.
 */
export type CallMiddleware = (call: CallInfo, next: () => Promise<unknown>) => Promise<unknown>;

export interface RpcReply {
  /**
   * JSON text to send; undefined when nothing is to be sent. A reply with `encode` may make it
   * only when read: a transport that sends encode()'s bytes should not read it.
   */
  readonly body: string | undefined;
  /**
   * Writes the same reply as UTF-8 bytes into memory the transport provides (`alloc(n)` returns
   * n writable bytes) and returns them; present when that is cheaper than converting `body` (a
   * single call answered from a memoised result, whose bytes are kept with the memo). The bytes
   * are valid until the transport reuses that memory: write them out before encoding another.
   */
  encode?: (alloc: (length: number) => Buffer) => Uint8Array;
  /** With `encode`: the byte length of what it writes (known before it runs). */
  size?: number;
  /** Whether the request was a batch. */
  batch: boolean;
  /**
   * Call once the reply has been handed to the socket (connections only): subscriptions the
   * message created start delivering then, so no notification precedes the id it belongs to.
   */
  sent?: () => void;
}

export interface RpcServiceApi {
  /**
   * Answers one HTTP body or WebSocket message (single request or batch). Never throws.
   * No notifications: eth_subscribe answers -32601 "notifications not supported".
   * `onRequestError` is called once for each call answered with a request error that never
   * reached the middleware (parse error, invalid request, unknown method, non-array params), so
   * the server can charge it as a client error. `caller` names who calls (the API key's hash): the
   * filters a call installs or polls are that caller's (absent: an anonymous caller's, '').
   */
  handle(body: string, middleware?: CallMiddleware, onRequestError?: () => void, caller?: string): Promise<RpcReply>;
  /**
   * The installed filters (eth_newFilter, …) of this service's chain; the transport attaches them
   * to the chain's commits (FilterRegistry.attach) for the logs reorgs remove.
   */
  readonly filters?: FilterRegistry;
  /** The kept answers of eth_call and its kin (call-cache.ts); absent when callCacheBytes is 0. */
  readonly answers?: { stats(): AnswerCacheStats };
  /**
   * A connection that carries notifications (WebSocket): its messages may subscribe, through
   * `subscriptions` (SubscriptionHub.connect). Optional so transport test doubles need not offer it.
   */
  connect?(subscriptions: SubscriptionConnection): RpcConnectionApi;
}

/** One notification-carrying connection of an RpcServiceApi. */
export interface RpcConnectionApi {
  /** As RpcServiceApi.handle; call the reply's `sent()` after writing it. Never throws. */
  handle(body: string, middleware?: CallMiddleware, onRequestError?: () => void, caller?: string): Promise<RpcReply>;
}

/** What a service is wired to besides its store and config. */
export interface RpcServiceOptions {
  /**
   * Where methods marked `offload` in the method table (eth_getLogs) run; without one they run
   * inline on the caller's event loop like every other method.
   */
  offload?: OffloadExecutor;
  /**
   * With an offload executor: calls estimated (MethodDef.estimateCost) at most this cost run
   * inline instead (default INLINE_COST_LIMIT; a negative value offloads every call).
   */
  inlineCostLimit?: number;
  /**
   * With an offload executor: how much work an interruptible call estimated above the cost limit
   * does inline before it goes to the executor (default INLINE_TRY_WORK; 0 sends it at once).
   */
  inlineTryWork?: number;
  /** eth_sendRawTransaction's upstream (a following node's); without one the method refuses. */
  forward?: TxForwarder;
  /** Where installed filters live; default: a FilterRegistry in this process's memory. */
  filters?: FilterRegistry;
}

export type RpcServiceFactory = (
  store: ChainStore,
  config?: Partial<RpcConfig>,
  options?: RpcServiceOptions,
) => RpcServiceApi;
