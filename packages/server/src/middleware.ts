// The layers around dispatch, keyed by method name (never inside handlers):
//   metrics -> key still valid -> credits (reserve, answer, journal) -> failover -> handler.
// The key itself is authenticated by the transport before the body is read (401); these
// layers see only its record, and re-check it per call so a key revoked while a WebSocket is
// open stops working within a second.
import { InternalError, LimitExceededError, RpcError, StoreUnavailableError } from '@chainnode/core';
import type { CallInfo, CallMiddleware } from '@chainnode/rpc';
import type { ServerConfig } from './config.js';
import { keyAllowsNetwork } from './keys.js';
import type { KeyRecord, KeyRegistry } from './keys.js';
import type { CreditLedger } from './ledger.js';
import type { Metrics, Outcome } from './metrics.js';
import type { NetworkRuntime } from './network.js';

/** -32005 for a call today's balance cannot cover; the transport answers a single one with 429. */
export class CreditLimitError extends LimitExceededError {
  constructor(message: string, resetsAt: string) {
    super(message, { resetsAt });
  }
}

/** A key that was valid at connect time but has been revoked since. */
export class KeyRevokedError extends RpcError {
  constructor() {
    super(-32001, 'API key revoked');
  }
}

/**
 * A key limited to other networks (KeyRecord.networks). Infura answers a project that has not
 * enabled a network with HTTP 403 and -32002 ("project ID does not have access to <network>");
 * the transport refuses the request or upgrade with 403, and this per-call check stops an open
 * WebSocket within a second of the key's network list changing.
 */
export class NetworkNotAllowedError extends RpcError {
  constructor(network: string) {
    super(-32002, networkNotAllowedMessage(network));
  }
}

export function networkNotAllowedMessage(network: string): string {
  return `API key does not have access to network "${network}"`;
}

class FailoverTimeout extends Error {}

/** What one HTTP request or WebSocket message learns while its calls run. */
export interface RequestContext {
  readonly keyHash: string;
  /** At least one call was refused for lack of credits. */
  creditRejected: boolean;
  /**
   * The network the request was routed to (multi-network servers): checked against the key's
   * networks, labels the charge in the journal, and its metrics count the call.
   */
  readonly network?: NetworkRuntime;
}

/** The daily balance of a key: its override, else its plan's. */
export function dailyLimit(config: ServerConfig, key: KeyRecord): number {
  return key.dailyCredits ?? config.plans[key.plan].dailyCredits;
}

export interface GateOptions {
  config: ServerConfig;
  keys: KeyRegistry;
  ledger: CreditLedger;
  metrics: Metrics;
  /** Partner JSON-RPC endpoint for failover-plan eth_getBlockByHash calls. */
  failoverUrl?: string;
}

export class Gate {
  constructor(private readonly o: GateOptions) {}

  /**
   * The middleware for one request (single call or batch) made with the key `keyHash`. One async
   * frame per call (key check, reservation, answer, journal, metrics): this runs for every call,
   * and each extra await layer is a measurable share of a cached answer's cost.
   */
  middleware(ctx: RequestContext): CallMiddleware {
    const { config, keys, ledger, failoverUrl } = this.o;
    const metrics = ctx.network?.metrics ?? this.o.metrics;
    // The implicit network of a single-network server journals no network name (as before).
    const network = ctx.network === undefined || ctx.network.implicit ? undefined : ctx.network.name;
    return async (call, next) => {
      const t0 = performance.now();
      let outcome: Outcome = 'ok';
      try {
        const key = keys.byKeyHash(ctx.keyHash);
        if (!key || key.revokedAt !== undefined) throw new KeyRevokedError();
        if (ctx.network !== undefined && !keyAllowsNetwork(key, ctx.network.name)) throw new NetworkNotAllowedError(ctx.network.name);
        const limit = dailyLimit(config, key);
        const reservation = ledger.reserve(key.hash, call.cost, limit, network);
        if (!reservation) {
          ctx.creditRejected = true;
          const resetsAt = ledger.resetsAt().toISOString();
          throw new CreditLimitError(
            `daily credit limit reached: ${call.method} costs ${call.cost} credits, ` +
              `${Math.max(0, limit - ledger.used(key.hash))} of ${limit} left today; the balance resets at ${resetsAt}`,
            resetsAt,
          );
        }
        let result: unknown;
        try {
          if (failoverUrl !== undefined && call.method === 'eth_getBlockByHash' && config.plans[key.plan].failover) {
            const answer = await this.failover(failoverUrl, call, next);
            if (answer.failedOver) outcome = 'failover';
            result = answer.result;
          } else {
            result = await next();
          }
        } catch (err) {
          ledger.release(reservation);
          throw err;
        }
        try {
          await ledger.commit(reservation);
        } catch {
          // Not journaled means not charged, and then the answer is not given either.
          throw new InternalError('could not record credit usage; the call was not charged');
        }
        metrics.charged(call.method, call.cost);
        return result;
      } catch (err) {
        outcome = err instanceof CreditLimitError ? 'no_credits' : err instanceof NetworkNotAllowedError ? 'unauthorized' : 'error';
        throw err;
      } finally {
        metrics.call(call.method, outcome, (performance.now() - t0) / 1000);
      }
    };
  }

  private async failover(
    failoverUrl: string,
    call: CallInfo,
    next: () => Promise<unknown>,
  ): Promise<{ result: unknown; failedOver: boolean }> {
    const { config } = this.o;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new FailoverTimeout()), config.failoverTimeoutMs);
    });
    const local = next();
    try {
      return { result: await Promise.race([local, timeout]), failedOver: false };
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) && !(err instanceof FailoverTimeout)) throw err;
      local.catch(() => {}); // a timed-out local read may still fail later
      return { result: await forward(failoverUrl, call), failedOver: true };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Sends one call to the partner provider and returns its result (or rethrows its error). */
export async function forward(url: string, call: CallInfo): Promise<unknown> {
  let reply: unknown;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: call.method, params: call.params }),
      signal: AbortSignal.timeout(10_000),
    });
    reply = await res.json();
  } catch {
    throw new InternalError('the local store is unavailable and the failover provider did not answer');
  }
  if (typeof reply !== 'object' || reply === null) {
    throw new InternalError('the local store is unavailable and the failover provider answered garbage');
  }
  const r = reply as { result?: unknown; error?: { code?: unknown; message?: unknown } };
  if (r.error !== undefined) {
    const code = typeof r.error.code === 'number' ? r.error.code : -32603;
    const message = typeof r.error.message === 'string' ? r.error.message : 'failover provider error';
    throw new RpcError(code, `failover provider: ${message}`);
  }
  if (!('result' in r)) throw new InternalError('the local store is unavailable and the failover provider answered garbage');
  return r.result;
}
