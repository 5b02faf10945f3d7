// Where installed filters (eth_newFilter, eth_newBlockFilter, eth_newPendingTransactionFilter)
// live: each is a small JSON record (its criteria and its cursor over the canonical chain), kept
// by a FilterStateStore that enforces the limits and geth's deadline (5 minutes after the last
// eth_getFilterChanges). MemoryFilterStore keeps them in the process; a shared store (Redis, in
// the server package) lets any replica continue a filter where the last poll on any replica
// stopped. Every record belongs to the API key that created it: another key gets nothing.
import { LimitExceededError, ServerError } from '@chainnode/core';
import type { Hex } from '@chainnode/core';
import { DEFAULT_FILTER_LIMITS, filterTimeoutOf } from './limits.js';
import type { FilterLimits } from './limits.js';

export type FilterKind = 'logs' | 'blocks' | 'pending';

/** A log filter's criteria as given (hex text and tags), so eth_getFilterLogs re-runs them as eth_getLogs. */
export interface FilterCriteria {
  address: Hex[];
  topics: (Hex[] | null)[];
  fromBlock?: string;
  toBlock?: string;
  blockHash?: Hex;
}

/** One cursor entry: a block delivered (number in hex, hash). */
export type CursorBlock = [number: Hex, hash: Hex];

export interface FilterRecord {
  kind: FilterKind;
  /** Log filters: what they match. */
  criteria?: FilterCriteria;
  /**
   * Log and block filters: the last blocks delivered, oldest first, at most CURSOR_DEPTH: the
   * cursor over the canonical chain. A poll first walks back from the end over the entries that are
   * no longer canonical (a reorg: their logs come back with removed:true), then delivers from there.
   */
  blocks?: CursorBlock[];
  /** Pending-transaction filters: the journal sequence number of the last transaction delivered. */
  seq?: number;
  /** Bumped by every poll: the version the compare-and-set of a poll checks. */
  version: number;
  /** A shared store's id of the poll that wrote the record: how it learns whether a write whose reply was lost applied. */
  poll?: string;
}

/** Blocks kept in a cursor: a reorg deeper than this below the last delivered block restarts the filter there. */
export const CURSOR_DEPTH = 32;

/** Largest record (criteria and cursor, as JSON text) a filter may have: its memory budget. */
export const MAX_FILTER_BYTES = 16 * 1024;

/** Transactions the pending journal keeps (a pending filter polled less often misses older ones). */
export const PENDING_JOURNAL = 4096;

/** geth's errFilterNotFound (-32000): unknown id, expired, uninstalled, or another key's filter. */
export class FilterNotFoundError extends ServerError {
  constructor() {
    super('filter not found');
  }
}

/** Outcome of a poll's write: its version was still current ('ok'), another poll won ('conflict'), or the filter is gone. */
export type FilterUpdate = 'ok' | 'conflict' | 'gone';

export interface FilterStateStore {
  /** Stores a new filter of `owner`; throws LimitExceededError past a limit. */
  create(owner: string, id: string, record: FilterRecord): Promise<void>;
  /** The filter, or undefined (none, expired, or another owner's). Does not extend its life. */
  get(owner: string, id: string): Promise<FilterRecord | undefined>;
  /**
   * Writes `record` if the stored version is still `record.version - 1` (compare-and-set), and
   * extends the filter's life to the limits' timeout (FILTER_TIMEOUT_MS by default) from now.
   */
  update(owner: string, id: string, record: FilterRecord): Promise<FilterUpdate>;
  /** Removes a filter of `owner`; false when it has none by that id. */
  remove(owner: string, id: string): Promise<boolean>;
  /**
   * Appends pending transactions (ones this node forwarded, or the upstream's) to the pending
   * journal, in order, skipping those the journal holds already (each is reported once).
   */
  notePending(hashes: readonly Hex[]): Promise<void>;
  /** The journal's transactions after `seq`, oldest first, and the journal's last sequence number. */
  pendingSince(seq: number): Promise<{ seq: number; hashes: Hex[] }>;
}

/** The size check every store applies to a record before keeping it. */
export function checkFilterSize(record: FilterRecord): string {
  const text = JSON.stringify(record);
  if (text.length > MAX_FILTER_BYTES)
    throw new LimitExceededError(`filter too large: at most ${MAX_FILTER_BYTES} bytes of criteria`, {
      limit: MAX_FILTER_BYTES,
    });
  return text;
}

export function perKeyLimitError(limits: FilterLimits): LimitExceededError {
  return new LimitExceededError(`too many filters for this API key: at most ${limits.perKey}`, {
    limit: limits.perKey,
  });
}

export function totalLimitError(limits: FilterLimits): LimitExceededError {
  return new LimitExceededError(`too many filters on this node: at most ${limits.total}`, { limit: limits.total });
}

interface Held {
  owner: string;
  /** The record as JSON text (what a shared store keeps too): a reader never shares the object. */
  text: string;
  expires: number;
}

/** Filters in this process's memory, expired lazily (on access, and in sweeps when a limit is reached). */
export class MemoryFilterStore implements FilterStateStore {
  private readonly filters = new Map<string, Held>();
  private readonly perOwner = new Map<string, number>();
  private readonly journal: Hex[] = [];
  private readonly inJournal = new Set<Hex>();
  private lastSeq = 0;

  constructor(
    readonly limits: FilterLimits = DEFAULT_FILTER_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Live filters (expired ones not yet swept may count). */
  get size(): number {
    return this.filters.size;
  }

  async create(owner: string, id: string, record: FilterRecord): Promise<void> {
    const text = checkFilterSize(record);
    if (this.countOf(owner) >= this.limits.perKey || this.filters.size >= this.limits.total) this.sweep();
    if (this.countOf(owner) >= this.limits.perKey) throw perKeyLimitError(this.limits);
    if (this.filters.size >= this.limits.total) throw totalLimitError(this.limits);
    this.filters.set(id, { owner, text, expires: this.now() + filterTimeoutOf(this.limits) });
    this.perOwner.set(owner, this.countOf(owner) + 1);
  }

  async get(owner: string, id: string): Promise<FilterRecord | undefined> {
    const held = this.live(owner, id);
    return held === undefined ? undefined : (JSON.parse(held.text) as FilterRecord);
  }

  async update(owner: string, id: string, record: FilterRecord): Promise<FilterUpdate> {
    const held = this.live(owner, id);
    if (held === undefined) return 'gone';
    if ((JSON.parse(held.text) as FilterRecord).version !== record.version - 1) return 'conflict';
    held.text = checkFilterSize(record);
    held.expires = this.now() + filterTimeoutOf(this.limits);
    return 'ok';
  }

  async remove(owner: string, id: string): Promise<boolean> {
    if (this.live(owner, id) === undefined) return false;
    this.drop(id, owner);
    return true;
  }

  async notePending(hashes: readonly Hex[]): Promise<void> {
    for (const hash of hashes) {
      if (this.inJournal.has(hash)) continue;
      this.journal.push(hash);
      this.inJournal.add(hash);
      this.lastSeq++;
    }
    if (this.journal.length > PENDING_JOURNAL)
      for (const old of this.journal.splice(0, this.journal.length - PENDING_JOURNAL)) this.inJournal.delete(old);
  }

  async pendingSince(seq: number): Promise<{ seq: number; hashes: Hex[] }> {
    const n = Math.min(Math.max(this.lastSeq - seq, 0), this.journal.length);
    return { seq: this.lastSeq, hashes: this.journal.slice(this.journal.length - n) };
  }

  private countOf(owner: string): number {
    return this.perOwner.get(owner) ?? 0;
  }

  /** The filter if it exists, belongs to `owner` and has not expired (an expired one is dropped). */
  private live(owner: string, id: string): Held | undefined {
    const held = this.filters.get(id);
    if (held === undefined || held.owner !== owner) return undefined;
    if (held.expires <= this.now()) {
      this.drop(id, owner);
      return undefined;
    }
    return held;
  }

  private drop(id: string, owner: string): void {
    this.filters.delete(id);
    const left = this.countOf(owner) - 1;
    if (left > 0) this.perOwner.set(owner, left);
    else this.perOwner.delete(owner);
  }

  private sweep(): void {
    const now = this.now();
    for (const [id, held] of this.filters) if (held.expires <= now) this.drop(id, held.owner);
  }
}
