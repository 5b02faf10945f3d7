// geth's subscription errors, each with its code (rpc/errors.go, rpc/subscription.go).
import { RpcError, ServerError } from '@chainnode/core';

/** -32601 "notifications not supported": eth_subscribe over a transport without notifications (HTTP). */
export class NotificationsUnsupportedError extends RpcError {
  constructor() {
    super(-32601, 'notifications not supported');
  }
}

/** -32601 `no "X" subscription in eth namespace` (geth's subscriptionNotFoundError). */
export class UnknownSubscriptionError extends RpcError {
  constructor(name: string) {
    super(-32601, `no ${JSON.stringify(name)} subscription in eth namespace`);
  }
}

/** -32000 "subscription not found": eth_unsubscribe of an id this connection does not hold (geth's ErrSubscriptionNotFound). */
export class SubscriptionNotFoundError extends ServerError {
  constructor() {
    super('subscription not found');
  }
}
