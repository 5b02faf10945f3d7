// geth's polled filters (eth/filters/api.go) as cursors over the canonical chain instead of
// buffers of pushed events: a poll (eth_getFilterChanges) reads what became canonical since the
// filter's cursor from the store, so any process holding the same chain (another replica, another
// app thread) can answer it from the shared record alone.
//
// - Block filters: the hashes of the blocks that became canonical since the last poll, oldest
//   first (every block of a reorg's new branch); at most MAX_BLOCK_CHANGES per poll, the newest.
// - Log filters: first the logs of delivered blocks a reorg removed, with removed:true (oldest
//   block first, log-index order), then the logs of the new canonical blocks inside the filter's
//   fromBlock/toBlock. At most logs.maxResults per poll: the cursor then stops at the last block
//   that fits and the next poll goes on from there. Removed logs come from the blocks this process
//   saw removed (its chain commits); a poll that finds a removed block this process never saw
//   delivers the new branch without them.
// - Pending-transaction filters: the transactions this node forwarded (eth_sendRawTransaction)
//   and the upstream's pending ones (a WebSocket upstream) since the last poll, each once, from
//   the store's journal.
// A poll writes its cursor with a compare-and-set: of two concurrent polls of one filter one
// delivers the changes and the other, after re-reading, what is left (nothing twice, nothing skipped).
import { InvalidParamsError, LimitExceededError, toData, toQuantity } from '@chainnode/core';
import type { Bytes, ChainEvents, ChainHead, ChainStore, CommittedBlock, Hex, LogRecord } from '@chainnode/core';
import type { HandlerContext } from '../context.js';
import { JsonText } from '../json-text.js';
import { checkFilterParams, decodeFilter, eth_getLogs } from '../methods/eth_getLogs.js';
import type { LogFilter } from '../methods/eth_getLogs.js';
import { liveLogsRequest } from '../methods/eth_subscribe.js';
import type { BlockNumberParam } from '../params.js';
import { formatSubscriptionLog } from '../subscriptions/format.js';
import type { JsonSubscriptionLog } from '../subscriptions/format.js';
import { filterMatches } from '../subscriptions/log-filter-index.js';
import { newSubscriptionId } from '../subscriptions/hub.js';
import { CURSOR_DEPTH, FilterNotFoundError, MemoryFilterStore } from './state.js';
import type { CursorBlock, FilterCriteria, FilterRecord, FilterStateStore } from './state.js';

/** Most block hashes one poll of a block filter returns: an unpolled filter keeps the newest this many. */
export const MAX_BLOCK_CHANGES = 1024;

/** Blocks removed by reorgs whose logs this process keeps for the log filters' removed:true. */
const REMOVED_BLOCKS_KEPT = 1024;

/** Times a poll re-reads its filter after losing a compare-and-set to a concurrent poll. */
const POLL_ATTEMPTS = 3;

/** What one poll delivers, as JSON text: log objects or hashes. */
export type FilterChanges = JsonText<(JsonSubscriptionLog | Hex)[]>;

export interface FilterRegistryOptions {
  /** Where the records live; default: this process's memory with the default limits. */
  state?: FilterStateStore;
}

/** A block a reorg removed, with the reorg it went in. */
export interface RemovedBlock {
  block: CommittedBlock;
  /** The reorg's common ancestor: the block below the oldest it removed. */
  ancestor: bigint;
  /** Every block that reorg removed, oldest first. */
  reorg: readonly CommittedBlock[];
}

/** How long a poll that finds a reorg in the store waits for its commit (which carries the removed logs). */
const COMMIT_WAIT_MS = 250;

/** The filters of one chain (one store): their records, and the blocks reorgs removed here. */
export class FilterRegistry {
  readonly state: FilterStateStore;
  private readonly removed = new Map<string, RemovedBlock>();

  constructor(options: FilterRegistryOptions = {}) {
    this.state = options.state ?? new MemoryFilterStore();
  }

  /** Follows `events` to keep the logs of removed blocks; returns the function that stops following. */
  attach(events: ChainEvents): () => void {
    return events.subscribe((commit) => this.noteReorg(commit.removed));
  }

  /** Keeps the blocks one reorg removed (oldest first). */
  noteReorg(reorg: readonly CommittedBlock[]): void {
    const first = reorg[0];
    if (first === undefined) return;
    for (const block of reorg) {
      const key = toData(block.hash);
      this.removed.delete(key);
      this.removed.set(key, { block, ancestor: first.number - 1n, reorg });
      if (this.removed.size > REMOVED_BLOCKS_KEPT) this.removed.delete(this.removed.keys().next().value as string);
    }
  }

  /**
   * The removed block `hash`, waiting up to COMMIT_WAIT_MS for its commit (the store shows a reorg
   * just before its commit is published); undefined for a block this process never saw removed.
   */
  async removedBlock(hash: Hex, waitMs = COMMIT_WAIT_MS): Promise<RemovedBlock | undefined> {
    for (let waited = 0; ; waited += 10) {
      const found = this.removed.get(hash);
      if (found !== undefined || waited >= waitMs) return found;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * Pending transactions of the upstream (or forwarded): pending-transaction filters report each
   * once (the journal drops one it holds), in one write; a failed write loses only these.
   */
  async notePending(hashes: readonly Hex[]): Promise<void> {
    if (hashes.length > 0) await this.state.notePending(hashes).catch(() => undefined);
  }

  /** The filters one API key sees. */
  scope(owner: string): FilterScope {
    return new FilterScope(this, owner);
  }
}

/** The filter methods for one API key. */
export class FilterScope {
  constructor(
    readonly registry: FilterRegistry,
    readonly owner: string,
  ) {}

  private get state(): FilterStateStore {
    return this.registry.state;
  }

  async newLogFilter(ctx: HandlerContext, filter: LogFilter): Promise<Hex> {
    checkFilterParams(ctx, filter);
    if (filter.kind === 'range' && (isPending(filter.fromBlock) || isPending(filter.toBlock)))
      throw new InvalidParamsError('pending logs are not supported');
    liveLogsRequest(filter); // geth's range check
    return this.install({
      kind: 'logs',
      criteria: criteriaOf(filter),
      blocks: [await headEntry(ctx.store)],
      version: 0,
    });
  }

  async newBlockFilter(ctx: HandlerContext): Promise<Hex> {
    return this.install({ kind: 'blocks', blocks: [await headEntry(ctx.store)], version: 0 });
  }

  async newPendingFilter(): Promise<Hex> {
    const { seq } = await this.state.pendingSince(Number.MAX_SAFE_INTEGER);
    return this.install({ kind: 'pending', seq, version: 0 });
  }

  /** A transaction this node forwarded: pending-transaction filters report it. */
  async forwarded(hash: Hex): Promise<void> {
    await this.registry.notePending([hash]);
  }

  async uninstall(id: string): Promise<boolean> {
    return this.state.remove(this.owner, id);
  }

  /** eth_getFilterLogs: the filter's criteria run as eth_getLogs (its range and limits). */
  async logs(ctx: HandlerContext, id: string): Promise<unknown> {
    const rec = await this.state.get(this.owner, id);
    if (rec?.kind !== 'logs' || rec.criteria === undefined) throw new FilterNotFoundError();
    return eth_getLogs.handle(ctx, decodeFilter(rec.criteria));
  }

  /** eth_getFilterChanges: what happened since the last poll, each change once. */
  async changes(ctx: HandlerContext, id: string): Promise<FilterChanges> {
    for (let attempt = 0; attempt < POLL_ATTEMPTS; attempt++) {
      const rec = await this.state.get(this.owner, id);
      if (rec === undefined) throw new FilterNotFoundError();
      const next: FilterRecord = { ...rec, version: rec.version + 1 };
      const items = await this.advance(ctx, next);
      const outcome = await this.state.update(this.owner, id, next);
      if (outcome === 'gone') throw new FilterNotFoundError();
      if (outcome === 'ok') return new JsonText(`[${items.join(',')}]`);
    }
    return new JsonText('[]'); // other polls of this filter keep winning: they deliver the changes
  }

  /** Moves `rec`'s cursor (in place) and returns the changes as JSON texts. */
  private async advance(ctx: HandlerContext, rec: FilterRecord): Promise<string[]> {
    if (rec.kind === 'pending') {
      const { seq, hashes } = await this.state.pendingSince(rec.seq ?? 0);
      rec.seq = seq;
      return hashes.map((h) => JSON.stringify(h));
    }
    const step = await chainStep(ctx.store, this.registry, rec.blocks ?? []);
    if (step === undefined) return []; // this process's chain is behind the cursor: nothing yet
    if (rec.kind === 'blocks') {
      const from = maxBig(step.base + 1n, step.head.number - BigInt(MAX_BLOCK_CHANGES) + 1n);
      const entries = await canonicalEntries(ctx.store, from, step.head.number);
      rec.blocks = nextCursor(step, entries);
      return entries.map(([, hash]) => JSON.stringify(hash));
    }
    return this.advanceLogs(ctx, rec, step);
  }

  private async advanceLogs(ctx: HandlerContext, rec: FilterRecord, step: ChainStep): Promise<string[]> {
    const filter = decodeFilter(rec.criteria);
    const live = liveLogsRequest(filter);
    const inRange = (n: bigint): boolean =>
      (live.fromBlock === undefined || n >= live.fromBlock) && (live.toBlock === undefined || n <= live.toBlock);
    const out: string[] = [];
    let waitMs = COMMIT_WAIT_MS; // once per poll: a block this process never saw removed costs no more
    for (const [number, hash] of step.dropped) {
      const block = (await this.registry.removedBlock(hash, waitMs))?.block;
      waitMs = 0;
      if (block === undefined || !inRange(BigInt(number))) continue;
      for (const log of block.logs)
        if (filterMatches(live.filter, log)) out.push(JSON.stringify(formatSubscriptionLog(log as LogRecord, true)));
    }
    const got = await newLogs(ctx, live.filter, step.base + 1n, step.head.number, inRange);
    const entries = await canonicalEntries(
      ctx.store,
      maxBig(step.base + 1n, got.to - BigInt(CURSOR_DEPTH) + 1n),
      got.to,
    );
    // A reorg between the log query and the hash reads: deliver nothing now, the next poll redoes it.
    const hashAt = new Map(entries.map(([n, h]) => [BigInt(n), h]));
    if (got.logs.some((l) => hashAt.has(l.blockNumber) && hashAt.get(l.blockNumber) !== toData(l.blockHash))) return [];
    rec.blocks = nextCursor(step, entries);
    for (const log of got.logs) out.push(JSON.stringify(formatSubscriptionLog(log, false)));
    return out;
  }

  private async install(rec: FilterRecord): Promise<Hex> {
    const id = newSubscriptionId() as Hex;
    await this.state.create(this.owner, id, rec);
    return id;
  }
}

/** Where a poll starts: the blocks of the cursor a reorg removed, the last block still canonical, and the head. */
interface ChainStep {
  dropped: CursorBlock[];
  kept: CursorBlock[];
  base: bigint;
  head: ChainHead;
}

/** Walks the cursor back over the blocks that are no longer canonical; undefined while the chain here is behind it. */
async function chainStep(
  store: ChainStore,
  registry: FilterRegistry,
  blocks: readonly CursorBlock[],
): Promise<ChainStep | undefined> {
  const head = await store.head();
  const kept = [...blocks];
  const dropped: CursorBlock[] = [];
  for (let last = kept.at(-1); last !== undefined; last = kept.at(-1)) {
    const number = BigInt(last[0]);
    const canonical = await store.canonicalHash(number);
    if (canonical === undefined && number > head.number && dropped.length === 0) return undefined;
    if (canonical !== undefined && toData(canonical) === last[1]) break;
    dropped.unshift(last);
    kept.pop();
  }
  const oldest = dropped[0];
  const last = kept.at(-1);
  if (last !== undefined) return { dropped, kept, base: BigInt(last[0]), head };
  // An empty cursor: from the head on.
  if (oldest === undefined)
    return { dropped, kept: [[toQuantity(head.number), toData(head.hash)]], base: head.number, head };
  // Every cursor entry was removed: the reorg that removed the oldest names the common ancestor,
  // and the blocks it removed below the cursor (the filter covered them since it was made).
  const reorg = await registry.removedBlock(oldest[1]);
  let base = BigInt(oldest[0]) - 1n;
  if (reorg !== undefined) {
    base = reorg.ancestor;
    const below = reorg.reorg.filter((b) => b.number < BigInt(oldest[0]));
    dropped.unshift(...below.map((b): CursorBlock => [toQuantity(b.number), toData(b.hash)]));
  }
  const hash = await store.canonicalHash(base);
  if (hash !== undefined) kept.push([toQuantity(base), toData(hash)]);
  return { dropped, kept, base, head };
}

/** The cursor after a poll: the kept entries and the delivered ones, the newest CURSOR_DEPTH. */
function nextCursor(step: ChainStep, delivered: CursorBlock[]): CursorBlock[] {
  return [...step.kept, ...delivered].slice(-CURSOR_DEPTH);
}

async function canonicalEntries(store: ChainStore, from: bigint, to: bigint): Promise<CursorBlock[]> {
  const out: CursorBlock[] = [];
  for (let n = from; n <= to; n++) {
    const hash = await store.canonicalHash(n);
    if (hash === undefined) break;
    out.push([toQuantity(n), toData(hash)]);
  }
  return out;
}

/**
 * Logs of [from, to] matching the filter and its range, at most logs.maxResults (then up to the
 * last block that fits; one block's logs all at once when even that block does not fit), and the
 * block the answer reaches.
 */
async function newLogs(
  ctx: HandlerContext,
  filter: { addresses: readonly Bytes[]; topics: readonly (readonly Bytes[] | null)[] },
  from: bigint,
  to: bigint,
  inRange: (n: bigint) => boolean,
): Promise<{ logs: LogRecord[]; to: bigint }> {
  if (from > to) return { logs: [], to };
  const limits = ctx.config.logs;
  const deadline = Math.min(Date.now() + limits.timeoutMs, ctx.deadline ?? Infinity);
  const query = { addresses: [...filter.addresses], topics: filter.topics.map((t) => (t === null ? null : [...t])) };
  let end = to;
  let result = await ctx.store.logs(
    { ...query, fromBlock: from, toBlock: end },
    { limit: limits.maxResults, deadline },
  );
  if (result.kind === 'too-many') {
    const limit = result.lastFittingBlock < from ? Number.MAX_SAFE_INTEGER : limits.maxResults;
    end = result.lastFittingBlock < from ? from : result.lastFittingBlock;
    result = await ctx.store.logs({ ...query, fromBlock: from, toBlock: end }, { limit, deadline });
    if (result.kind === 'too-many') throw new LimitExceededError('query returned too many results');
  }
  return { logs: result.logs.filter((l) => inRange(l.blockNumber)), to: end };
}

async function headEntry(store: ChainStore): Promise<CursorBlock> {
  const head = await store.head();
  return [toQuantity(head.number), toData(head.hash)];
}

function isPending(p: BlockNumberParam | undefined): boolean {
  return p?.kind === 'tag' && p.tag === 'pending';
}

/** The criteria as JSON (hex and tags): what the record keeps and decodeFilter reads back. */
function criteriaOf(f: LogFilter): FilterCriteria {
  const out: FilterCriteria = {
    address: f.addresses.map(toData),
    topics: f.topics.map((t) => (t === null ? null : t.map(toData))),
  };
  if (f.kind === 'hash') out.blockHash = toData(f.blockHash);
  else {
    if (f.fromBlock !== undefined) out.fromBlock = blockText(f.fromBlock);
    if (f.toBlock !== undefined) out.toBlock = blockText(f.toBlock);
  }
  return out;
}

function blockText(p: BlockNumberParam): string {
  return p.kind === 'tag' ? p.tag : toQuantity(p.number);
}

function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
