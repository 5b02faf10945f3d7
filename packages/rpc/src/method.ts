// The shape of one entry of the method table.
import type { HandlerContext } from './context.js';
import type { PinnedCall } from './call-cache.js';
import type { JsonText } from './json-text.js';

/** A transport a call can arrive on. */
export type Transport = 'http' | 'ws';

export interface MethodDef<P, R> {
  /** Credits one call costs (spec 8.1; ours for the bootstrap methods). */
  readonly cost: number;
  /** The params in one line, for the generated reference (docs/reference/methods.md). */
  readonly params: string;
  /**
   * The method's own errors in one line (code and geth's message), for the generated reference;
   * -32602 for invalid params and the envelope's errors apply to every method and are not repeated.
   */
  readonly errors?: string;
  /**
   * The transports on which a call can succeed; absent: both. A method limited to 'ws' needs a
   * connection that carries notifications: elsewhere its handler answers with an error.
   */
  readonly transports?: readonly Transport[];
  /** Checks arity and every argument; throws InvalidParamsError naming the argument. */
  decode(params: unknown[]): P;
  /**
   * Thin: ask the store, format. Not found is null, never an error. Hot methods may answer
   * with the result's JSON text (memoised per stored record) instead of the value.
   */
  handle(ctx: HandlerContext, params: P): Promise<R | JsonText<R>>;
  /**
   * The whole call (decode, store query, formatting) may run on an offload executor (a worker
   * thread with its own store, see offload.ts) instead of the caller's event loop. Set for
   * calls whose work grows with the data they read (eth_getLogs); without an executor the call
   * runs inline like every other.
   */
  readonly offload?: boolean;
  /**
   * Admission by cost for offloadable methods: an estimate of the call's work (for eth_getLogs:
   * blocks spanned times the filter's breadth) made on the caller's thread before anything is
   * queued. A call estimated at most INLINE_COST_LIMIT (config.ts) runs inline at once, so
   * cheap calls never wait behind, or get shed because of, expensive ones in the executor's
   * bounded queue; the rest go to the executor.
   */
  estimateCost?(ctx: HandlerContext, params: P): Promise<number>;
  /**
   * A call estimated above the inline limit may still run inline first: it stops with
   * InlineTimeUp (call.ts) once past HandlerContext.inline, having answered nothing,
   * and then runs on the executor (INLINE_TRY_WORK, config.ts).
   */
  readonly interruptible?: boolean;
  /**
   * The call's answer is a function of its block (by hash) and its params: the service may keep
   * it (call-cache.ts). Resolves the params' block to its hash and gives the call pinned to it
   * (the params, decoded and raw, naming the block by that hash) and its key; the service runs
   * the pinned call, inline or offloaded, so the answer kept is that block's.
   */
  remember?(ctx: HandlerContext, params: P, raw: unknown[]): Promise<PinnedCall<P>>;
}
