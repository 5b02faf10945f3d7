// Log filters of many subscriptions, indexed so that matching one log costs O(candidates), not
// O(subscriptions). Each filter is filed under ONE dimension:
//   - its addresses, when it names any (a log has one address: at most one hit per filter);
//   - else the topic position with the fewest alternatives (a log has one value per position);
//   - else the wildcard set (no address, every topic position null: it matches nearly any log,
//     so it is a candidate for every log by nature).
// A candidate is then checked against its whole filter (eth_getLogs semantics: address any-of,
// topics positional with null wildcards, a log with fewer topics than positions never matches).
import type { Bytes } from '@chainnode/core';

export interface LogMatchFilter {
  /** Any of; empty = any address. */
  addresses: readonly Bytes[];
  /** Positional; null is a wildcard; an array matches any of its values. */
  topics: readonly (readonly Bytes[] | null)[];
}

export interface MatchableLog {
  address: Bytes;
  topics: readonly Bytes[];
}

const hex = (b: Bytes): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

interface Entry {
  addresses: ReadonlySet<string> | null;
  topics: (ReadonlySet<string> | null)[];
  /** Where it is filed: 'a' (addresses), 0-3 (a topic position) or 'w' (wildcard). */
  dimension: 'a' | 'w' | number;
}

/** A log with its address and topics as hex keys, computed once per log. */
export interface LogKeys {
  address: string;
  topics: string[];
}

export function logKeys(log: MatchableLog): LogKeys {
  return { address: hex(log.address), topics: log.topics.map(hex) };
}

export class LogFilterIndex<T> {
  private readonly entries = new Map<T, Entry>();
  private readonly byAddress = new Map<string, Set<T>>();
  private readonly byTopic: Map<string, Set<T>>[] = [];
  private readonly wildcard = new Set<T>();
  /** Filters checked against a log so far (candidates, matching or not): the cost of matching. */
  checked = 0;

  get size(): number {
    return this.entries.size;
  }

  /** Files `item` under `filter` (an item already present is re-filed). */
  add(item: T, filter: LogMatchFilter): void {
    this.remove(item);
    const addresses = filter.addresses.length > 0 ? new Set(filter.addresses.map(hex)) : null;
    const topics = filter.topics.map((alts) => (alts === null || alts.length === 0 ? null : new Set(alts.map(hex))));
    let dimension: Entry['dimension'] = 'w';
    if (addresses !== null) {
      dimension = 'a';
      for (const a of addresses) bucket(this.byAddress, a).add(item);
    } else {
      let best = -1;
      topics.forEach((set, i) => {
        if (set !== null && (best < 0 || set.size < (topics[best] as ReadonlySet<string>).size)) best = i;
      });
      if (best >= 0) {
        dimension = best;
        const map = (this.byTopic[best] ??= new Map());
        for (const t of topics[best] as ReadonlySet<string>) bucket(map, t).add(item);
      } else {
        this.wildcard.add(item);
      }
    }
    this.entries.set(item, { addresses, topics, dimension });
  }

  remove(item: T): boolean {
    const e = this.entries.get(item);
    if (e === undefined) return false;
    this.entries.delete(item);
    if (e.dimension === 'w') this.wildcard.delete(item);
    else if (e.dimension === 'a') for (const a of e.addresses as ReadonlySet<string>) unbucket(this.byAddress, a, item);
    else {
      const map = this.byTopic[e.dimension] as Map<string, Set<T>>;
      for (const t of e.topics[e.dimension] as ReadonlySet<string>) unbucket(map, t, item);
    }
    return true;
  }

  /** Calls `fn` once for every filed item whose filter matches the log. */
  forEachMatch(log: LogKeys, fn: (item: T) => void): void {
    const check = (item: T): void => {
      this.checked++;
      if (matches(this.entries.get(item) as Entry, log)) fn(item);
    };
    this.byAddress.get(log.address)?.forEach(check);
    for (let i = 0; i < log.topics.length && i < this.byTopic.length; i++) {
      this.byTopic[i]?.get(log.topics[i] as string)?.forEach(check);
    }
    this.wildcard.forEach(check);
  }

  /** Number of buckets in use (for tests: an emptied index holds nothing). */
  bucketCount(): number {
    let n = this.byAddress.size + (this.wildcard.size > 0 ? 1 : 0);
    for (const m of this.byTopic) n += m?.size ?? 0;
    return n;
  }
}

function bucket<T>(map: Map<string, Set<T>>, key: string): Set<T> {
  let s = map.get(key);
  if (s === undefined) map.set(key, (s = new Set()));
  return s;
}

function unbucket<T>(map: Map<string, Set<T>>, key: string, item: T): void {
  const s = map.get(key);
  if (s === undefined) return;
  s.delete(item);
  if (s.size === 0) map.delete(key);
}

function matches(e: Entry, log: LogKeys): boolean {
  if (e.addresses !== null && !e.addresses.has(log.address)) return false;
  if (e.topics.length > log.topics.length) return false;
  for (let i = 0; i < e.topics.length; i++) {
    const set = e.topics[i];
    if (set != null && !set.has(log.topics[i] as string)) return false;
  }
  return true;
}

/** The plain definition (no index), for tests and as the reference: geth's filterLogs rule. */
export function filterMatches(filter: LogMatchFilter, log: MatchableLog): boolean {
  const k = logKeys(log);
  if (filter.addresses.length > 0 && !filter.addresses.some((a) => hex(a) === k.address)) return false;
  if (filter.topics.length > k.topics.length) return false;
  return filter.topics.every(
    (alts, i) => alts === null || alts.length === 0 || alts.some((t) => hex(t) === k.topics[i]),
  );
}
