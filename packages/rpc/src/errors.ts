// The one place where anything thrown during a call becomes a JSON-RPC error object.
import { GatewayError, RpcError } from '@chainnode/core';

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  /** Infura's event number of a gateway refusal (GatewayError). */
  event?: number;
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
    const out: JsonRpcErrorObject = { code: err.code, message: err.message };
    if (err instanceof GatewayError) {
      out.event = err.event;
      out.details = err.details;
    }
    if (err.data !== undefined) out.data = err.data;
    return out;
  }
  return { code: -32603, message: 'internal error' };
}
