// A log query's constraints (the address list, each non-wildcard topic position) and the
// checks of a log or a block's bloom against them.
import { bloomMatcher, bytesEqual } from '@chainnode/core';
import type { LogQuery } from '@chainnode/core';
import { LogIndexKind } from '../schema/index.js';
import type { StoredLog } from '../schema/index.js';

export interface Constraint {
  kind: number;
  values: Uint8Array[];
}

/** Topic/address constraints of a query: empty `addresses` or a null/empty position is a wildcard. */
export function constraintsOf(query: LogQuery): Constraint[] {
  const out: Constraint[] = [];
  if (query.addresses.length > 0) out.push({ kind: LogIndexKind.Address, values: query.addresses });
  query.topics.forEach((t, i) => {
    if (t !== null && t.length > 0) out.push({ kind: i, values: t });
  });
  return out;
}

/**
 * True when the query has wildcard positions after its last constrained one (e.g. `[T, null]`):
 * such a query also requires logs to carry that many topics, which the posting lists cannot tell,
 * so index candidates must be fetched and re-checked before they count.
 */
export function needsArityCheck(query: LogQuery): boolean {
  let lastConstrained = -1;
  query.topics.forEach((t, i) => {
    if (t !== null && t.length > 0) lastConstrained = i;
  });
  return query.topics.length > lastConstrained + 1;
}

export function logMatches(log: Pick<StoredLog, 'address' | 'topics'>, query: LogQuery): boolean {
  // geth: a log with fewer topics than the filter has positions never matches, wildcards included.
  if (query.topics.length > log.topics.length) return false;
  if (query.addresses.length > 0 && !query.addresses.some((a) => bytesEqual(a, log.address))) return false;
  for (let i = 0; i < query.topics.length; i++) {
    const t = query.topics[i];
    if (t === null || t === undefined || t.length === 0) continue;
    const have = log.topics[i];
    if (have === undefined || !t.some((x) => bytesEqual(x, have))) return false;
  }
  return true;
}

/** The bloom test of a query: false for a block whose logs bloom rules out every match. */
export function queryBloomMatcher(query: LogQuery): (bloom: Uint8Array) => boolean {
  return bloomMatcher(constraintsOf(query).map((c) => c.values));
}

/** Values that can occur at all: addresses are 20 bytes, topics 32. */
export function possibleValues(c: Constraint): Uint8Array[] {
  const width = c.kind === LogIndexKind.Address ? 20 : 32;
  return c.values.filter((v) => v.length === width);
}
