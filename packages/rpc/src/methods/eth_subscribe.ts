// eth_subscribe("newHeads") / eth_subscribe("logs", filter) / eth_subscribe("newPendingTransactions")
// (hashes: the transactions this node forwarded and its upstream's): only on a connection that carries
// notifications (WebSocket). Checks in geth's order (rpc/handler.go handleSubscribe): no
// notifications on this transport (-32601) before the name is looked at, then the name
// (-32602 when it is not a string, -32601 when unknown), then the arguments (-32602, the filter
// with eth_getLogs' decoder and texts).
import { InvalidParamsError } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import type { MethodDef } from '../method.js';
import { decodeArgs, decodeBool } from '../params.js';
import type { BlockNumberParam } from '../params.js';
import { NotificationsUnsupportedError, UnknownSubscriptionError } from '../subscriptions/errors.js';
import type { SubscriptionRequest } from '../subscriptions/hub.js';
import { checkFilterParams, decodeFilter } from './eth_getLogs.js';
import type { LogFilter } from './eth_getLogs.js';

/** The decoded request, or the error to answer with once the transport check has passed. */
export type SubscribeParams = { ok: SubscriptionRequest } | { error: unknown };

export const eth_subscribe: MethodDef<SubscribeParams, Hex> = {
  cost: 5,
  params:
    '"newHeads"; "logs" with an optional filter (address, topics, fromBlock/toBlock); "newPendingTransactions" (hashes only)',
  transports: ['ws'],
  decode: (params) => {
    try {
      return { ok: decodeSubscribe(params) };
    } catch (err) {
      return { error: err };
    }
  },
  handle: async (ctx: HandlerContext, p) => {
    if (ctx.subscriptions === undefined) throw new NotificationsUnsupportedError();
    if ('error' in p) throw p.error;
    const req = p.ok;
    if (req.kind === 'logs') checkFilterParams(ctx, req.filter);
    return ctx.subscriptions.subscribe(req) as Hex;
  },
};

function decodeSubscribe(params: unknown[]): SubscriptionRequest {
  const name = params[0];
  if (typeof name !== 'string') throw new InvalidParamsError('expected subscription name as first argument');
  switch (name) {
    case 'newHeads':
      return decodeArgs(params, 1, () => ({ kind: 'newHeads' }));
    case 'logs':
      return decodeArgs(params, 2, (arg) => liveLogsRequest(decodeFilter(arg(1))));
    case 'newPendingTransactions':
      return decodeArgs(
        params,
        2,
        (arg) => {
          const full = arg(1);
          if (full !== undefined && full !== null && decodeBool(full))
            throw new InvalidParamsError('full pending transactions are not kept: ask for hashes');
          return { kind: 'newPendingTransactions' };
        },
        1,
      );
    default:
      throw new UnknownSubscriptionError(name);
  }
}

/**
 * What a filter asks of new blocks (a `logs` subscription, an eth_newFilter filter): geth's ranges
 * limit which new blocks' logs are sent (no history is replayed); a blockHash is ignored. Tags
 * other than earliest mean "no bound".
 */
export function liveLogsRequest(f: LogFilter): Extract<SubscriptionRequest, { kind: 'logs' }> {
  const req: Extract<SubscriptionRequest, { kind: 'logs' }> = {
    kind: 'logs',
    filter: { addresses: f.addresses, topics: f.topics },
  };
  if (f.kind === 'range') {
    const from = bound(f.fromBlock);
    const to = bound(f.toBlock);
    if (from !== undefined && to !== undefined && from > to) throw new InvalidParamsError('invalid block range params');
    if (from !== undefined) req.fromBlock = from;
    if (to !== undefined) req.toBlock = to;
  }
  return req;
}

function bound(p: BlockNumberParam | undefined): bigint | undefined {
  if (p === undefined) return undefined;
  if (p.kind === 'number') return p.number;
  return p.tag === 'earliest' ? 0n : undefined;
}
