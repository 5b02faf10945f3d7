// The layers around dispatch, keyed by method name (never inside handlers):
//   metrics + usage record -> key still valid -> key allowed on the request's network (-32002,
//   HTTP 403) -> allowlists (-32002, HTTP 403) -> credits (debit
//   both limits: the plan's and the key's own, answer, settle) -> failover -> handler.
// The key's own limits (dashboard "Key Credit Limits") are folded into the one atomic debit: the
// smaller of each pair is checked, and a refusal says whose limit it was (the key's: 429 with
// event -33400 daily / -33300 per second; the plan's: 402 / 429 -33200).
// The key itself is authenticated by the transport before the body is read (401); these
// layers see only its record, and re-check it per call so a key revoked while a WebSocket is
// open stops working within a second. Admission, debit, settle and the usage record go through
// Charges (@chainnode/accounts), the one door to the ledger that the request errors' charge and
// the WebSocket notifier use too.
//
// Charging rules (Infura's): a call refused by a limit (402, 429) or failing on our side (5xx
// class: internal errors, store unavailable, log queue full) costs nothing; a call failing
// because of the request (invalid params, unknown block, result cap, ... and envelope errors:
// parse error, invalid request, unknown method) costs 5 credits (never more than the method);
// an answered call costs its method's credits. Each call of a batch is charged on its own.
import {
  InternalError,
  RpcError,
  StoreUnavailableError,
  UpstreamError,
  UpstreamRpcError,
  createUpstreamClient,
} from '@chainnode/core';
import type { UpstreamClient } from '@chainnode/core';
import type { CallInfo, CallMiddleware } from '@chainnode/rpc';
import { TOO_MANY_OFFLOADED } from '@chainnode/rpc';
import { LedgerUnavailableError, REQUEST_METHOD, allowlistRefusal } from '@chainnode/accounts';
import type { Charges, DebitResult, ErrorClass, KeyRecord } from '@chainnode/accounts';
import type { TransportConfig } from './config.js';
import type { Metrics, Outcome } from './metrics.js';
import type { NetworkRuntime } from './router.js';

/** Credits a call that failed because of the request costs (Infura: "other 4xx cost 5 credits"). */
export const REQUEST_ERROR_CREDITS = 5;

export const DAILY_LIMIT_DETAILS =
  'You have reached your daily credit limit. To continue making requests, upgrade your plan or purchase additional credits.';
export const THROUGHPUT_LIMIT_DETAILS =
  'You have surpassed your allowed throughput limit. Reduce the amount of requests per second or upgrade for more capacity.';

/**
 * Daily credits exhausted: Infura's body {"code":402,"event":-33000,"message":"Payment Required",
 * "details":"You have reached your daily credit limit. …"} plus data.resetsAt (next 00:00 UTC).
 * A single request answers HTTP 402; WebSockets of the key are closed after it.
 */
export class DailyLimitError extends RpcError {
  constructor(resetsAt: string) {
    super(402, 'Payment Required', { resetsAt });
    this.event = -33000;
    this.details = `${DAILY_LIMIT_DETAILS} The balance resets at ${resetsAt}.`;
  }
}

/** Credits per second exceeded: {"code":429,"event":-33200,"message":"Too Many Requests",...}; HTTP 429. */
export class ThroughputLimitError extends RpcError {
  constructor() {
    super(429, 'Too Many Requests');
    this.event = -33200;
    this.details = THROUGHPUT_LIMIT_DETAILS;
  }
}

/** User-defined per-key limit exceeded (Infura "Key Credit Limits"): HTTP 429, event -33300 (per second) or -33400 (per day). */
export class KeyLimitError extends RpcError {
  constructor(kind: 'daily' | 'throughput', resetsAt?: string) {
    super(429, 'Too Many Requests', resetsAt !== undefined ? { resetsAt } : undefined);
    this.event = kind === 'daily' ? -33400 : -33300;
    this.details =
      kind === 'daily'
        ? 'You have surpassed your user-defined key daily credit limit setting. To make more requests with this key, review key setting configurations.'
        : 'You have surpassed your user-defined key throughput limit setting. To make more requests with this key, review key setting configurations.';
  }
}

/** -32002: the call did not pass the key's allowlists (Infura's code and text); HTTP 403 alone. */
export class AllowlistRejectedError extends RpcError {
  constructor() {
    super(-32002, 'rejected due to project ID settings');
  }
}

/** The shared ledger cannot be reached and the failure mode is `closed`: -32603, HTTP 503, free. */
export class LedgerDownError extends InternalError {
  constructor() {
    super('credit ledger unavailable: try again shortly');
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
  /**
   * HTTP status of the first call refused by a limit or by an unavailable ledger (402, 429,
   * 503); a single request answers with it (a batch answers 200).
   */
  refusal?: 402 | 403 | 429 | 503;
  /** Calls answered with a request error before the middleware (charged by chargeRequestErrors). */
  requestErrors: number;
  /** Origin and User-Agent headers of the request (or of the WebSocket upgrade), for the allowlists. */
  origin: string;
  userAgent: string;
  /**
   * The network the request was routed to (multi-network servers): checked against the key's
   * networks, labels the charge in the ledger, and its metrics count the call.
   */
  network?: NetworkRuntime;
}

/** The usage class of an error a call ended with: refused by the gateway, our side, or the request's. */
export function errorClass(err: unknown): ErrorClass {
  if (
    err instanceof AllowlistRejectedError ||
    err instanceof KeyLimitError ||
    err instanceof DailyLimitError ||
    err instanceof ThroughputLimitError ||
    err instanceof KeyRevokedError ||
    err instanceof NetworkNotAllowedError
  )
    return '4xx';
  if (err instanceof RpcError && err.code !== -32603) return 'rpc';
  return '5xx';
}

/** What a call that ended in `err` costs (the charging rules above). */
export function creditsForError(cost: number, err: unknown): number {
  if (!(err instanceof RpcError)) return 0; // store unavailable, a bug: our side
  if (err.code === -32603 || err.code === 402 || err.code === 429 || err.code === -32001) return 0;
  if (err.code === -32005 && err.message === TOO_MANY_OFFLOADED) return 0; // overload: our side
  return Math.min(REQUEST_ERROR_CREDITS, cost);
}

export interface GateOptions {
  config: TransportConfig;
  /** The door to the ledger (admission, debit, settle, usage record). */
  charges: Charges;
  metrics: Metrics;
  /** Partner JSON-RPC endpoint for failover-plan eth_getBlockByHash calls. */
  failoverUrl?: string;
  log?: (line: string) => void;
  /** The access log (`--access-log`): one record per call the gate sees. */
  access?: (rec: AccessRecord) => void;
}

/** One call in the access log: the key's id (never the key), never the parameters. */
export interface AccessRecord {
  method: string;
  keyId: string | null;
  network: string | null;
  outcome: Outcome;
  /** The error class when the call failed, else null. */
  error: string | null;
  /** HTTP status a refusal answers with (402, 429, 503…), else null (the transport's 200). */
  refusal: number | null;
  credits: number;
  durationMs: number;
}

export class Gate {
  constructor(private readonly o: GateOptions) {}

  /** A fresh context for one request (single call or batch) made with the key `keyHash`. */
  static context(keyHash: string, origin = '', userAgent = ''): RequestContext {
    return { keyHash, requestErrors: 0, origin, userAgent };
  }

  /** Pass as handle()'s onRequestError. */
  static requestErrorCounter(ctx: RequestContext): () => void {
    return () => {
      ctx.requestErrors++;
    };
  }

  /**
   * Charges the request errors of `ctx` (5 credits each) before the reply goes out. Free when
   * the key's limits are reached or the ledger is away (a refusal would be free too).
   */
  async chargeRequestErrors(ctx: RequestContext): Promise<void> {
    if (ctx.requestErrors === 0) return;
    const { charges } = this.o;
    const payer = charges.admit(ctx.keyHash, ctx.network);
    if (!payer.ok) return; // refused calls cost nothing
    const cost = ctx.requestErrors * REQUEST_ERROR_CREDITS;
    ctx.requestErrors = 0;
    try {
      if (await charges.charge(payer, REQUEST_METHOD, cost, 'rpc'))
        (ctx.network?.metrics ?? this.o.metrics).charged('request_error', cost);
    } catch {
      // not charged
    }
  }

  /**
   * The middleware for one request made under `ctx`. One async frame per call (key check,
   * debit, answer, settle, metrics): this runs for every call, and each extra await layer is a
   * measurable share of a cached answer's cost.
   */
  middleware(ctx: RequestContext): CallMiddleware {
    const { config, charges, failoverUrl } = this.o;
    const metrics = ctx.network?.metrics ?? this.o.metrics;
    const network = ctx.network === undefined || ctx.network.implicit ? undefined : ctx.network.name;
    return async (call, next) => {
      const t0 = performance.now();
      let outcome: Outcome = 'ok';
      let key: KeyRecord | undefined;
      let charged = 0;
      let failure: ErrorClass | undefined;
      try {
        const payer = charges.admit(ctx.keyHash, ctx.network);
        key = payer.key;
        if (!payer.ok) {
          if (payer.reason === 'revoked' || ctx.network === undefined) throw new KeyRevokedError();
          ctx.refusal ??= 403;
          throw new NetworkNotAllowedError(ctx.network.name);
        }
        const k = payer.key;
        if (
          k.allowlists !== undefined &&
          allowlistRefusal(k.allowlists, {
            method: call.method,
            params: call.params,
            origin: ctx.origin,
            userAgent: ctx.userAgent,
          }) !== undefined
        ) {
          ctx.refusal ??= 403;
          throw new AllowlistRejectedError();
        }
        const invoke = async (): Promise<unknown> => {
          if (failoverUrl !== undefined && call.method === 'eth_getBlockByHash' && config.plans[k.plan].failover) {
            const answer = await this.failover(failoverUrl, call, next);
            if (answer.failedOver) outcome = 'failover';
            return answer.result;
          }
          return next();
        };
        if (call.cost === 0) return await invoke(); // free methods never touch the ledger
        let d: DebitResult;
        const { limits } = payer;
        try {
          d = await charges.debit(payer, call.cost);
        } catch (err) {
          if (!(err instanceof LedgerUnavailableError)) throw err;
          ctx.refusal ??= 503;
          throw new LedgerDownError();
        }
        if (!d.ok) {
          if (d.reason === 'daily' && limits.ownDaily) {
            ctx.refusal ??= 429;
            throw new KeyLimitError('daily', d.resetsAt);
          }
          if (d.reason === 'throughput' && limits.ownPerSecond) {
            ctx.refusal ??= 429;
            throw new KeyLimitError('throughput');
          }
          ctx.refusal ??= d.reason === 'daily' ? 402 : 429;
          throw d.reason === 'daily' ? new DailyLimitError(d.resetsAt) : new ThroughputLimitError();
        }
        let result: unknown;
        try {
          result = await invoke();
        } catch (err) {
          const credits = creditsForError(call.cost, err);
          try {
            await charges.settle(d.debit, credits);
            charged = credits;
            if (credits > 0) metrics.charged(call.method, credits);
          } catch {
            // the error goes out either way; an unrecorded 5-credit charge is not worth refusing it
          }
          throw err;
        }
        try {
          await charges.settle(d.debit, call.cost);
        } catch {
          // Not recorded means not charged, and then the answer is not given either.
          throw new InternalError('could not record credit usage; the call was not charged');
        }
        metrics.charged(call.method, call.cost);
        charged = call.cost;
        return result;
      } catch (err) {
        outcome =
          err instanceof DailyLimitError || err instanceof ThroughputLimitError || err instanceof KeyLimitError
            ? 'no_credits'
            : err instanceof NetworkNotAllowedError
              ? 'unauthorized'
              : 'error';
        failure = errorClass(err);
        throw err;
      } finally {
        const seconds = (performance.now() - t0) / 1000;
        metrics.call(call.method, outcome, seconds);
        this.o.access?.({
          method: call.method,
          keyId: key?.id ?? null,
          network: network ?? null,
          outcome,
          error: failure ?? null,
          refusal: ctx.refusal ?? null,
          credits: charged,
          durationMs: Math.round(seconds * 1e4) / 10,
        });
        if (key !== undefined) charges.record(key, call.method, charged, failure);
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

/** One client per partner URL (core's upstream client: bounded in time and size, its reply checked). */
const partners = new Map<string, UpstreamClient>();

/** Sends one call to the partner provider and returns its result (or rethrows its error). */
export async function forward(url: string, call: CallInfo): Promise<unknown> {
  try {
    let partner = partners.get(url);
    if (partner === undefined) partners.set(url, (partner = createUpstreamClient(url, { timeoutMs: 10_000 })));
    return await partner.call(call.method, call.params);
  } catch (err) {
    if (err instanceof UpstreamRpcError) throw new RpcError(err.code, `failover provider: ${err.remoteMessage}`);
    if (err instanceof UpstreamError && (err.kind === 'unreachable' || err.kind === 'timeout'))
      throw new InternalError('the local store is unavailable and the failover provider did not answer');
    throw new InternalError('the local store is unavailable and the failover provider answered garbage');
  }
}
