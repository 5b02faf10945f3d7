// The one place where anything thrown during a call becomes a JSON-RPC error object.
import { MissingTrieNodeError, RpcError } from '@chainnode/core';

export interface JsonRpcErrorObject {
  code: number;
  /** Infura's event code (quota errors), present only when the error carries one. */
  event?: number;
  message: string;
  details?: string;
  data?: unknown;
}

/**
 * RpcError subclasses go out with their code, message and data. Anything else (a bug, a
 * StoreUnavailableError nobody handled) becomes -32603 "internal error": no message, stack or
 * path from inside the process reaches a client.
 */
export function toErrorObject(err: unknown): JsonRpcErrorObject {
  if (err instanceof RpcError) {
    // Member order as Infura writes it: code, event, message, details, data.
    const out: JsonRpcErrorObject =
      err.event === undefined
        ? { code: err.code, message: err.message }
        : { code: err.code, event: err.event, message: err.message };
    if (err.details !== undefined) out.details = err.details;
    if (err.data !== undefined) out.data = err.data;
    return out;
  }
  // geth's answer for state it does not hold (a joined node serving without an upstream to prove it from).
  if (err instanceof MissingTrieNodeError) return { code: -32000, message: err.message };
  return { code: -32603, message: 'internal error' };
}
