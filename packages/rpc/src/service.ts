// Contract between the transport (server package) and request handling (this package).
// The rpc owner implements RpcService; the server only depends on what is declared here.
import type { ChainStore } from '@chainnode/core';
import type { RpcConfig } from './config.js';
import type { OffloadExecutor } from './offload.js';

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
  /** JSON text to send; undefined when nothing is to be sent. */
  body: string | undefined;
  /**
   * Writes the same reply as UTF-8 bytes into memory the transport provides (`alloc(n)` returns
   * n writable bytes) and returns them; present when that is cheaper than converting `body` (a
   * single call answered from a memoised result, whose bytes are kept with the memo). The bytes
   * are valid until the transport reuses that memory: write them out before encoding another.
   */
  encode?: (alloc: (length: number) => Buffer) => Uint8Array;
  /** Whether the request was a batch. */
  batch: boolean;
}

export interface RpcServiceApi {
  /** Answers one HTTP body or WebSocket message (single request or batch). Never throws. */
  /**
   * `onRequestError` is called once for each call answered with a request error that never
   * reached the middleware (parse error, invalid request, unknown method, non-array params), so
   * the server can charge it as a client error.
   */
  handle(body: string, middleware?: CallMiddleware, onRequestError?: () => void): Promise<RpcReply>;
}

/** What a service is wired to besides its store and config. */
export interface RpcServiceOptions {
  /**
   * Where methods marked `offload` in the method table (eth_getLogs) run; without one they run
   * inline on the caller's event loop like every other method.
   */
  offload?: OffloadExecutor;
}

export type RpcServiceFactory = (store: ChainStore, config?: Partial<RpcConfig>, options?: RpcServiceOptions) => RpcServiceApi;
