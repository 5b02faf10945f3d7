// The shape of one entry of the method table.
import type { HandlerContext } from './context.js';

export interface MethodDef<P, R> {
  /** Credits one call costs (spec 8.1; ours for the bootstrap methods). */
  readonly cost: number;
  /** Checks arity and every argument; throws InvalidParamsError naming the argument. */
  decode(params: unknown[]): P;
  /** Thin: ask the store, format. Not found is null, never an error. */
  handle(ctx: HandlerContext, params: P): Promise<R>;
}
