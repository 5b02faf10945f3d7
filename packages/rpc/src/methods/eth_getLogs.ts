// eth_getLogs with geth's filter semantics and error texts, and the limits of spec 8.2.
import { hexDigitsToBytes, InvalidParamsError, LimitExceededError, ServerError, toQuantity } from '@chainnode/core';
import type { Bytes, LogQuery } from '@chainnode/core';
import { DEADLINE_GRACE_MS } from '../config.js';
import { firstBlockOf, numberAgainstHead, requireHeld } from '../context.js';
import type { HandlerContext } from '../context.js';
import { formatLogsAscii } from '../formatters/log.js';
import type { JsonLog } from '../formatters/log.js';
import { JsonText } from '../json-text.js';
import { decodeArgs, decodeBlockNumber, jsonType, ParamError } from '../params.js';
import type { BlockNumberParam } from '../params.js';
import type { MethodDef } from '../method.js';

const MAX_TOPICS = 4;

export type LogFilter = {
  addresses: Bytes[];
  /** Positional; null is a wildcard; an array matches any of its values. */
  topics: (Bytes[] | null)[];
} & ({ kind: 'hash'; blockHash: Bytes } | { kind: 'range'; fromBlock?: BlockNumberParam; toBlock?: BlockNumberParam });

export const eth_getLogs: MethodDef<LogFilter, JsonLog[]> = {
  cost: 255,
  params: 'filter object: address (one or a list), topics, and fromBlock/toBlock or blockHash',
  errors: '-32005 `query returned more than 10000 results` / `query timeout exceeded`; -32000 `unknown block`',
  decode: (params) => decodeArgs(params, 1, (arg) => decodeFilter(arg(0))),
  handle: getLogs,
  // Work grows with the range and the answer (up to 10,000 logs decoded and written as text):
  // with offload workers configured it never runs on the event loop that answers everything else.
  offload: true,
  estimateCost,
};

/** Filter breadth of a query without an address: any emitter in the range may match. */
const NO_ADDRESS_BREADTH = 10;

/**
 * Estimated work of a filter (see MethodDef.estimateCost): blocks spanned (1 for a block hash,
 * 0 for a range the handler refuses) times the number of addresses, or NO_ADDRESS_BREADTH
 * without one. The head read is a cache hit.
 */
async function estimateCost(ctx: HandlerContext, f: LogFilter): Promise<number> {
  let span = 1;
  if (f.kind === 'range') {
    const head = (await ctx.store.head()).number;
    const first = firstBlockOf(ctx);
    const from = f.fromBlock ? numberAgainstHead(f.fromBlock, head, ctx.config, first) : head;
    const to = f.toBlock ? numberAgainstHead(f.toBlock, head, ctx.config, first) : head;
    span = to < from || to > head ? 0 : Number(to - from) + 1;
  }
  return span * (f.addresses.length > 0 ? f.addresses.length : NO_ADDRESS_BREADTH);
}

/** geth's FilterCriteria.UnmarshalJSON, message for message. */
export function decodeFilter(value: unknown): LogFilter {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ParamError(`filter: expected an object, got ${jsonType(value)}`);
  }
  const o = value as Record<string, unknown>;
  const present = (k: string): boolean => o[k] !== undefined && o[k] !== null;
  const addresses = decodeAddresses(o.address);
  const topics = decodeTopics(o.topics);
  if (present('blockHash')) {
    if (present('fromBlock') || present('toBlock')) {
      throw new InvalidParamsError('cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other');
    }
    return { kind: 'hash', blockHash: decodeFilterHex(o.blockHash, 32, 'blockHash'), addresses, topics };
  }
  const filter: LogFilter = { kind: 'range', addresses, topics };
  if (present('fromBlock')) filter.fromBlock = prefixed('fromBlock', () => decodeBlockNumber(o.fromBlock));
  if (present('toBlock')) filter.toBlock = prefixed('toBlock', () => decodeBlockNumber(o.toBlock));
  return filter;
}

function prefixed<T>(field: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof ParamError) throw new ParamError(`${field}: ${err.message}`);
    throw err;
  }
}

/** geth's hexutil.Decode followed by a length check. */
function decodeFilterHex(value: unknown, bytes: number, what: string): Bytes {
  if (typeof value !== 'string') throw new ParamError(`${what}: expected a hex string, got ${jsonType(value)}`);
  if (value.length === 0) throw new ParamError(`${what}: empty hex string`);
  if (!value.startsWith('0x') && !value.startsWith('0X')) throw new ParamError(`${what}: hex string without 0x prefix`);
  const body = value.slice(2);
  if (body.length % 2 !== 0) throw new ParamError(`${what}: hex string has odd length`);
  const out = hexDigitsToBytes(body);
  if (out === undefined) throw new ParamError(`${what}: invalid hex string`);
  if (out.length !== bytes) {
    throw new ParamError(`${what}: hex has invalid length ${out.length} after decoding; expected ${bytes}`);
  }
  return out;
}

function decodeAddresses(value: unknown): Bytes[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [decodeFilterHex(value, 20, 'address')];
  if (Array.isArray(value)) {
    return value.map((a: unknown, i) => {
      if (typeof a !== 'string') throw new ParamError(`non-string address at index ${i}`);
      return decodeFilterHex(a, 20, `address[${i}]`);
    });
  }
  throw new ParamError(`address: expected a hex string or an array of them, got ${jsonType(value)}`);
}

function decodeTopics(value: unknown): (Bytes[] | null)[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new ParamError(`topics: expected an array, got ${jsonType(value)}`);
  if (value.length > MAX_TOPICS) throw new InvalidParamsError('exceed max topics');
  return value.map((t: unknown, i): Bytes[] | null => {
    if (t === null) return null;
    if (typeof t === 'string') return [decodeFilterHex(t, 32, `topics[${i}]`)];
    if (Array.isArray(t)) {
      // geth: a null anywhere in the alternatives, or no alternatives at all, is a wildcard.
      if (t.length === 0 || t.some((x) => x === null)) {
        for (const [j, x] of t.entries()) {
          if (x !== null) decodeFilterHex(x, 32, `topics[${i}][${j}]`);
        }
        return null;
      }
      return t.map((x: unknown, j) => decodeFilterHex(x, 32, `topics[${i}][${j}]`));
    }
    throw new ParamError(`topics[${i}]: invalid topic(s)`);
  });
}

/** Addresses plus topic values of a filter (the spec's 5,000 limit counts these). */
export function filterParamCount(f: {
  addresses: readonly unknown[];
  topics: readonly (readonly unknown[] | null)[];
}): number {
  return f.addresses.length + f.topics.reduce((n, t) => n + (t?.length ?? 0), 0);
}

/** The spec's limit on a filter's addresses and topic values (-32602 beyond). */
export function checkFilterParams(
  ctx: HandlerContext,
  f: { addresses: readonly unknown[]; topics: readonly (readonly unknown[] | null)[] },
): void {
  const n = filterParamCount(f);
  const max = ctx.config.logs.maxFilterParams;
  if (n > max)
    throw new InvalidParamsError(`too many filter parameters: ${n} addresses and topics given, at most ${max} allowed`);
}

async function getLogs(ctx: HandlerContext, f: LogFilter): Promise<JsonText<JsonLog[]>> {
  const { logs: limits } = ctx.config;
  checkFilterParams(ctx, f);
  let fromBlock: bigint;
  let toBlock: bigint;
  if (f.kind === 'hash') {
    const n = await ctx.store.blockNumber(f.blockHash);
    if (n === undefined) throw new ServerError('unknown block');
    fromBlock = toBlock = n;
  } else {
    const head = (await ctx.store.head()).number;
    const first = firstBlockOf(ctx);
    fromBlock = f.fromBlock ? numberAgainstHead(f.fromBlock, head, ctx.config, first) : head;
    toBlock = f.toBlock ? numberAgainstHead(f.toBlock, head, ctx.config, first) : head;
    if (fromBlock > toBlock) throw new InvalidParamsError('invalid block range params');
    if (toBlock > head) throw new InvalidParamsError('block range extends beyond current head block');
    requireHeld(ctx, fromBlock);
  }
  const query: LogQuery = { fromBlock, toBlock, addresses: f.addresses, topics: f.topics };
  const deadline = Math.min(Date.now() + limits.timeoutMs, ctx.deadline ?? Infinity);
  const options = { limit: limits.maxResults, deadline };
  // The store's ready-to-serve log text when it has it for this query, else its records.
  const store = ctx.store;
  const ready = store.logsText === undefined ? undefined : await withDeadline(store.logsText(query, options), deadline);
  const result = ready ?? (await withDeadline(store.logs(query, options), deadline));
  if (result.kind === 'too-many') {
    const limit = limits.maxResults;
    const last = result.lastFittingBlock;
    if (last < fromBlock) {
      // Not even the first block fits: there is no range to suggest.
      throw new LimitExceededError(`query returned more than ${limit} results`, { limit });
    }
    const from = toQuantity(fromBlock);
    const to = toQuantity(last);
    throw new LimitExceededError(
      `query returned more than ${limit} results. Try with this block range [${from}, ${to}].`,
      { from, to, limit },
    );
  }
  if ('ascii' in result) return JsonText.ofAsciiChunks<JsonLog[]>(result.ascii);
  // Up to 10,000 logs: written as text in slices (other requests run in between), within the
  // same deadline as the query.
  const ascii = await formatLogsAscii(result.logs, () => {
    if (Date.now() > deadline + DEADLINE_GRACE_MS) throw new LimitExceededError('query timeout exceeded');
  });
  return JsonText.ofAscii<JsonLog[]>(ascii);
}

/**
 * The store gets the deadline and stops by itself; if it overruns anyway the client still
 * gets its answer on time (the store's late result is dropped).
 */
async function withDeadline<T>(running: Promise<T>, deadline: number): Promise<T> {
  const timeout = (): LimitExceededError => new LimitExceededError('query timeout exceeded');
  const guarded = running.catch((err: unknown) => {
    throw err instanceof LimitExceededError ? timeout() : err;
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout()), Math.max(0, deadline - Date.now()) + DEADLINE_GRACE_MS);
  });
  guarded.catch(() => undefined); // a rejection after the race is lost is not unhandled
  try {
    return await Promise.race([guarded, late]);
  } finally {
    clearTimeout(timer);
  }
}
