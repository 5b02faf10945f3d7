// eth_unsubscribe(id): true, or geth's -32000 "subscription not found" for an id this
// connection does not hold (also over HTTP, where no connection holds any).
import type { MethodDef } from '../method.js';
import { decodeArgs, jsonType, ParamError } from '../params.js';
import { SubscriptionNotFoundError } from '../subscriptions/errors.js';

export const eth_unsubscribe: MethodDef<string, boolean> = {
  cost: 10,
  params: 'subscription id',
  transports: ['ws'],
  decode: (params) =>
    decodeArgs(params, 1, (arg) => {
      const id = arg(0);
      if (typeof id !== 'string') throw new ParamError(`subscription id: expected a string, got ${jsonType(id)}`);
      return id;
    }),
  handle: async (ctx, id) => {
    if (ctx.subscriptions === undefined || !ctx.subscriptions.unsubscribe(id)) throw new SubscriptionNotFoundError();
    return true;
  },
};
