// One JSON-RPC call through the service, its reply parsed: the tests that read a reply's members.
import type { RpcServiceApi } from '../src/index.js';

export async function callRpc<T = { result?: unknown; error?: unknown }>(
  svc: RpcServiceApi,
  method: string,
  params: unknown[],
): Promise<T> {
  const reply = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
  return JSON.parse(reply.body ?? '') as T;
}
