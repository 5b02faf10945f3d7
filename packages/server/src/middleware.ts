// The layers around dispatch, keyed by method name (never inside handlers):
//   metrics + usage record -> key still valid -> allowlists (-32002) -> per-key daily limit
//   (429/-33400) -> plan credits (reserve) -> per-key throughput (429/-33300) -> answer, journal
//   -> failover -> handler.
// The key itself is authenticated by the transport before the body is read (401); these
// layers see only its record, and re-check it per call so a key revoked while a WebSocket is
// open stops working within a second.
import { GatewayError, InternalError, LimitExceededError, RpcError, StoreUnavailableError } from '@chainnode/core';
import type { CallInfo, CallMiddleware } from '@chainnode/rpc';
import type { ServerConfig } from './config.js';
import { chargeHash } from './keys.js';
import type { KeyRecord, KeyRegistry } from './keys.js';
import type { CreditLedger } from './ledger.js';
import type { Metrics, Outcome } from './metrics.js';
import { allowlistRefusal } from './allowlist.js';
import type { ErrorClass, UsageRecord } from './usage.js';

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

/** -32002: the call did not pass the key's allowlists (Infura's code and text); HTTP 403 alone. */
export class AllowlistRejectedError extends RpcError {
  constructor() {
    super(-32002, 'rejected due to project ID settings');
  }
}

/** A per-key limit of the key's settings (Infura "Key Credit Limits"): HTTP 429. */
export class KeyLimitError extends GatewayError {
  static perSecond(): KeyLimitError {
    return new KeyLimitError(-33300, 'You have surpassed your user-defined key throughput limit setting. To make more requests with this key, review key setting configurations.');
  }

  static perDay(resetsAt: string): KeyLimitError {
    return new KeyLimitError(-33400, 'You have surpassed your user-defined key daily credit limit setting. To make more requests with this key, review key setting configurations.', { resetsAt });
  }

  private constructor(event: number, details: string, data?: unknown) {
    super(429, 'Too Many Requests', event, details, data);
  }
}

class FailoverTimeout extends Error {}

/** What one HTTP request or WebSocket message learns while its calls run. */
export interface RequestContext {
  readonly keyHash: string;
  /** At least one call was refused for lack of credits. */
  creditRejected: boolean;
  /** Origin and User-Agent headers of the request (or of the WebSocket upgrade); '' when absent. */
  readonly origin?: string;
  readonly userAgent?: string;
  /** The HTTP status a refused single call asks for (403 allowlist, 429 key limit). */
  status?: number;
}

/**
 * Per-key credits-per-second: a token bucket per key id holding at most `rate` credits, refilled
 * continuously at `rate` per second (so a key may spend `rate` credits in any one-second window,
 * and bursts never exceed one second's worth). In memory, per process; bounded by the number of
 * keys with a limit (idle buckets are dropped when the map grows large).
 */
export class KeyThrottle {
  private readonly buckets = new Map<string, { tokens: number; at: number; rate: number }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Takes `cost` credits from the key's bucket; false (nothing taken) when it cannot. */
  take(id: string, rate: number, cost: number): boolean {
    const t = this.now();
    let b = this.buckets.get(id);
    if (!b || b.rate !== rate) {
      if (!b && this.buckets.size >= 100_000) this.sweep(t);
      b = { tokens: rate, at: t, rate };
      this.buckets.set(id, b);
    } else {
      b.tokens = Math.min(rate, b.tokens + ((t - b.at) / 1000) * rate);
      b.at = t;
    }
    if (b.tokens < cost) return false;
    b.tokens -= cost;
    return true;
  }

  /** Gives credits back (the call was refused later, or failed: it costs nothing). */
  refund(id: string, cost: number): void {
    const b = this.buckets.get(id);
    if (b) b.tokens = Math.min(b.rate, b.tokens + cost);
  }

  private sweep(t: number): void {
    for (const [id, b] of this.buckets) if (t - b.at > 1000) this.buckets.delete(id);
  }
}

/** The usage class of an error a call ended with. */
export function errorClass(err: unknown): ErrorClass {
  if (err instanceof AllowlistRejectedError || err instanceof KeyLimitError || err instanceof CreditLimitError || err instanceof KeyRevokedError) return '4xx';
  if (err instanceof RpcError && err.code !== -32603) return 'rpc';
  return '5xx';
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
  /** The per-key usage record (dashboard); every call the gate sees is recorded. */
  usage?: UsageRecord;
  throttle?: KeyThrottle;
}

export class Gate {
  private readonly throttle: KeyThrottle;

  constructor(private readonly o: GateOptions) {
    this.throttle = o.throttle ?? new KeyThrottle();
  }

  /**
   * The middleware for one request (single call or batch) made with the key `keyHash`. One async
   * frame per call (key check, reservation, answer, journal, metrics): this runs for every call,
   * and each extra await layer is a measurable share of a cached answer's cost.
   */
  middleware(ctx: RequestContext): CallMiddleware {
    const { config, keys, ledger, metrics, failoverUrl, usage } = this.o;
    const throttle = this.throttle;
    return async (call, next) => {
      const t0 = performance.now();
      let outcome: Outcome = 'ok';
      let key: KeyRecord | undefined;
      let charged = 0;
      let failure: ErrorClass | undefined;
      try {
        key = keys.byKeyHash(ctx.keyHash);
        if (!key || key.revokedAt !== undefined) throw new KeyRevokedError();
        if (key.allowlists !== undefined) {
          const refused = allowlistRefusal(key.allowlists, { method: call.method, params: call.params, origin: ctx.origin ?? '', userAgent: ctx.userAgent ?? '' });
          if (refused !== undefined) {
            ctx.status ??= 403;
            throw new AllowlistRejectedError();
          }
        }
        const account = chargeHash(key);
        const keyDaily = key.limits?.creditsPerDay;
        if (keyDaily !== undefined && keyDaily > 0 && ledger.used(account) + call.cost > keyDaily) {
          ctx.status ??= 429;
          throw KeyLimitError.perDay(ledger.resetsAt().toISOString());
        }
        const limit = dailyLimit(config, key);
        const reservation = ledger.reserve(account, call.cost, limit);
        if (!reservation) {
          ctx.creditRejected = true;
          const resetsAt = ledger.resetsAt().toISOString();
          throw new CreditLimitError(
            `daily credit limit reached: ${call.method} costs ${call.cost} credits, ` +
              `${Math.max(0, limit - ledger.used(account))} of ${limit} left today; the balance resets at ${resetsAt}`,
            resetsAt,
          );
        }
        const perSecond = key.limits?.creditsPerSecond;
        if (perSecond !== undefined && perSecond > 0 && !throttle.take(key.id, perSecond, call.cost)) {
          ledger.release(reservation);
          ctx.status ??= 429;
          throw KeyLimitError.perSecond();
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
          if (perSecond !== undefined && perSecond > 0) throttle.refund(key.id, call.cost);
          throw err;
        }
        try {
          await ledger.commit(reservation);
        } catch {
          // Not journaled means not charged, and then the answer is not given either.
          throw new InternalError('could not record credit usage; the call was not charged');
        }
        charged = call.cost;
        metrics.charged(call.method, call.cost);
        return result;
      } catch (err) {
        outcome = err instanceof CreditLimitError || err instanceof KeyLimitError ? 'no_credits' : 'error';
        failure = errorClass(err);
        throw err;
      } finally {
        metrics.call(call.method, outcome, (performance.now() - t0) / 1000);
        if (usage !== undefined && key !== undefined) {
          usage.record(failure === undefined ? { key: key.id, method: call.method, credits: charged } : { key: key.id, method: call.method, credits: charged, error: failure });
        }
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
