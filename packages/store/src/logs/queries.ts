// The log query code of the store: eth_getLogs answered from the log index, and the same query
// answered by a per-block bloom scan (the baseline the getLogs benchmark compares against).
// LevelChainStore delegates here.
//
// Index path: every constraint (the address list, each non-wildcard topic position) is a cursor
// over posting lists (a union cursor when it lists several values). The cursors are intersected
// by a leapfrog join: the most selective one proposes a candidate log id, the others seek forward
// to it (one LevelDB seek to the chunk that may hold it, or a step inside the chunk already
// loaded), and whoever lands past it proposes the next candidate. Work therefore follows the
// size of the answer and of the most selective constraint, not the popularity of the others.
// The result cap is decided on log ids alone (no log is fetched to find it), and the loop yields
// to the event loop every few milliseconds and stops at the deadline.
import { LogJsonWriter, Lru, keccak256, logsJsonAscii } from '@chainnode/core';
import type {
  AsciiChunk,
  ChainHead,
  LogQuery,
  LogQueryOptions,
  LogQueryResult,
  LogRecord,
  LogTextQueryResult,
} from '@chainnode/core';
import type { Db } from '../db.js';
import { LogSegmentReader } from './log-segments.js';
import { logBlockColumns, logBlockFirst, logBlockKey, readBlockLogs, readBlockLogsSync } from './log-blocks.js';
import {
  AddressLogsJsonView,
  LogIndexKind,
  extrasHeaderRlp,
  splitBlockTxHashes,
  MetaKey,
  Prefix,
  logCodec,
  putU64,
  readU64,
  tables,
  u64Codec,
} from '../schema/index.js';
import type { BlockLogRange, KvSyncRead, StoredLog } from '../schema/index.js';
import { headerTxFields } from '../trie/index.js';
import { GatedDb, LOG_READS_IN_FLIGHT, Gate } from './gate.js';
import { blockOfSync } from './locate.js';
import type { BlockBounds, LocatedBlock } from './locate.js';
import type { LogDb } from './gate.js';
import { Budget, PostingCursor, UnionCursor } from './cursors.js';
import type { IdCursor } from './cursors.js';
import { constraintsOf, logMatches, needsArityCheck, possibleValues, queryBloomMatcher } from './match.js';
import type { Constraint } from './match.js';

/** What the log code needs from the rest of the reader. */
export interface LogReadContext {
  head(): Promise<ChainHead>;
  /** The first block the datadir holds (a joined datadir's join block; else 0). */
  firstBlock?(): bigint;
  /** Changes whenever a commit may have made cached block contexts stale (serve --follow). */
  generation?(): number;
}

interface BlockLogContext {
  hash: Uint8Array;
  timestamp: bigint;
  /** The block's transaction hashes, 32 bytes each, in order (a view of its BlockTxHashes row). */
  txHashes: Uint8Array;
}

type IndexedLogBlock = ReturnType<typeof logBlockColumns>;

/** The Logs row key of log `id` (a block an earlier release wrote: log-blocks.ts). */
function logKey(id: number): Uint8Array {
  const k = new Uint8Array(9);
  k[0] = Prefix.Logs;
  putU64(k, 1, id);
  return k;
}

const LOG_FETCH_BATCH = 512;
/** logsText uses the AddressLogsJson rows for queries naming at most this many addresses. */
const ROWS_MAX_ADDRESSES = 8;
/** An address scan reads rows with point gets when it spans at most this many (address, block) pairs. */
const SYNC_SCAN_MAX = 2048;
/** AddressLogsJson rows read per iterator step of an address scan. */
const ROW_SCAN_BATCH = 64;
/** rowsFrom() of a datadir without AddressLogsJson rows. */
const NO_ROWS = 2n ** 64n;
const META_LOGS_JSON_FROM = tables.meta.key(MetaKey.LogsJsonFrom);
const OPEN = Buffer.from('[', 'latin1');
const COMMA = Buffer.from(',', 'latin1');
const CLOSE = Buffer.from(']', 'latin1');
const EMPTY_TEXT: LogTextQueryResult = { kind: 'ok', ascii: [OPEN, CLOSE], count: 0 };

/**
 * `[` + the parts joined by `,` + `]`, as chunks: no copy of the parts. A joined buffer per
 * answer (hundreds of KB) was fresh external memory each time, and external allocations are
 * what starts V8's full marking of the heap: a quarter of a small getLogs' CPU.
 */
function jsonArrayOf(parts: Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = new Array<Uint8Array>(parts.length === 0 ? 2 : 2 * parts.length + 1);
  out[0] = OPEN;
  let at = 1;
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) out[at++] = COMMA;
    out[at++] = parts[i] as Uint8Array;
  }
  out[at] = CLOSE;
  return out;
}

/** The block number of an AddressLogsJson key (prefix, address, number). */
function addressLogsNumber(key: Uint8Array): bigint {
  return BigInt(readU64(key, 21));
}

/** logsText: scan the blocks' log ranges when the range spans at most this many blocks... */
const BLOCK_SCAN_MIN = 1024;
/** ...or at most this many blocks per match (else the matches' own log rows tell their blocks). */
const BLOCKS_PER_MATCH = 4;

/** The matches of one block (see LogQueries.picksOf). */
interface BlockPick {
  number: bigint;
  /** Log id of the block's first log. */
  first: number;
  /** Logs in the block. */
  count: number;
  /** Positions in the block of the matching logs, ascending; undefined: all of them. */
  locals: number[] | undefined;
}
/**
 * Log rows fetched by id go to LevelDB in reads of this many keys, this many reads in flight per
 * query: the reads run on libuv's thread pool while the previous batch is decoded, and short ones
 * keep the pool's queue moving for other requests (a block read waits behind at most a few).
 */
const ROW_READ_BATCH = 256;
/**
 * Indexed blocks of logs kept (BlockLogColumns: the inflated bytes, ~54 KB a block at mainnet's
 * shape, so ~28 MB): an address's query over a few hundred blocks inflates each block once.
 */
const LOG_BLOCKS_CACHED = 512;
/** Cached blocks stepped through to find the next log's block before seeking it. */
const CACHED_WALK_MAX = 1024;
const ROW_READS_IN_FLIGHT = 2;

export class LogQueries {
  private readonly logContexts = new Lru<bigint, BlockLogContext>(8192);
  private readonly db: LogDb;
  /** Synchronous point reads, outside the gate (they take no thread-pool thread). */
  private readonly sync: KvSyncRead;
  private logsJsonFrom: bigint | undefined;
  private readonly segments: LogSegmentReader;
  /** lowestLogBlock() as read at commit generation `gen`. */
  private lowest: { gen: number | undefined; first: number } | undefined;
  /** Indexed LogBlocks rows by their first log id. */
  private readonly logBlocks = new Lru<number, IndexedLogBlock>(LOG_BLOCKS_CACHED);

  constructor(
    db: Db,
    datadir: string,
    private readonly chain: LogReadContext,
  ) {
    this.db = new GatedDb(db, new Gate(LOG_READS_IN_FLIGHT));
    this.sync = db;
    this.segments = new LogSegmentReader(db, datadir, (n) => this.contextSync(n));
  }

  /** Closes the log segment files (the store is closing: no reply will read them any more). */
  close(): void {
    this.segments.close();
  }

  /**
   * A commit changed the canonical blocks at these numbers (see LevelChainStore.applyCommit);
   * `orphaned`: it took blocks off the chain, whose log ids the blocks replacing them are given.
   */
  forget(numbers: bigint[], orphaned: boolean): void {
    for (const n of numbers) this.logContexts.delete(n);
    if (orphaned) {
      this.logBlocks.clear();
      this.lowest = undefined;
    }
  }

  /**
   * The first log id of the lowest LogBlocks row (Infinity: none), read again after each commit:
   * below it every log is a Logs row (a datadir an earlier release wrote, not converted yet), no
   * seek needed. New rows only ever come above it, except after a rewind (forget).
   */
  private async lowestLogBlock(): Promise<number> {
    const gen = this.chain.generation?.();
    if (this.lowest !== undefined && this.lowest.gen === gen) return this.lowest.first;
    const it = this.db.iterator({ gte: logBlockKey(0), lte: logBlockKey(Number.MAX_SAFE_INTEGER), limit: 1 });
    let first = Number.POSITIVE_INFINITY;
    try {
      const entry = await it.next();
      if (entry !== undefined) first = logBlockFirst(entry[0]);
    } finally {
      await it.close();
    }
    this.lowest = { gen, first };
    return first;
  }

  /**
   * The logs of transaction `txIndex` of block `number` (its BlockLogs range `range`), read
   * synchronously: the block's LogBlocks row indexed (or its index from the cache the queries
   * share), only these logs built.
   */
  txLogsSync(number: bigint, range: BlockLogRange, txIndex: number): StoredLog[] {
    if (range.count === 0) return [];
    const first = Number(range.firstLogId);
    let block = this.logBlocks.get(first);
    if (block === undefined) {
      const value = this.sync.getSync(logBlockKey(first));
      // A block an earlier release wrote (Logs rows, not converted yet): read whole.
      if (value === undefined) return readBlockLogsSync(this.sync, number, range).filter((l) => l.txIndex === txIndex);
      block = this.indexedBlock(first, value, this.chain.generation?.());
    }
    const { columns } = block;
    if (columns.blockNumber !== number || columns.count !== range.count)
      throw new Error(`block ${number}: its logs row holds ${columns.count} logs of block ${columns.blockNumber}`);
    return columns.txLogs(txIndex);
  }

  /** A LogBlocks row indexed, or its index from the cache. */
  private indexedBlock(first: number, value: Uint8Array, gen: number | undefined): IndexedLogBlock {
    const hit = this.logBlocks.get(first);
    if (hit !== undefined) return hit;
    const block = logBlockColumns(first, value);
    if (gen === this.chain.generation?.()) this.logBlocks.set(first, block);
    return block;
  }

  /** Log id range [start, end) covering blocks [from, to] (to clamped to the head). */
  private async logIdRange(from: bigint, to: bigint): Promise<{ start: number; end: number; to: bigint } | undefined> {
    const head = await this.chain.head();
    const last = to > head.number ? head.number : to;
    if (from > last || from < 0n) return undefined;
    const [first, lastRange] = await tables.blockLogs.getMany(this.db, [from, last]);
    if (first === undefined || lastRange === undefined) throw new Error(`block log range missing for ${from}..${last}`);
    return { start: Number(first.firstLogId), end: Number(lastRange.firstLogId) + lastRange.count, to: last };
  }

  /**
   * Block hash, timestamp and tx hashes of the given blocks (batched reads, LRU-cached), all from
   * the BlockTxHashes row: the hash and timestamp from the header its extras hold (for a row an
   * earlier release wrote without it, the canonical hash and the header row, a second round trip).
   */
  private async contexts(numbers: Iterable<bigint>): Promise<Map<bigint, BlockLogContext>> {
    const out = new Map<bigint, BlockLogContext>();
    const missing: bigint[] = [];
    for (const n of numbers) {
      if (out.has(n)) continue;
      const hit = this.logContexts.get(n);
      if (hit !== undefined) out.set(n, hit);
      else missing.push(n); // `numbers` holds each block once
    }
    if (missing.length === 0) return out;
    const gen = this.chain.generation?.();
    const rows = await this.db.getMany(missing.map((n) => tables.blockTxHashes.key(n)));
    const hashes = new Array<Uint8Array | undefined>(missing.length);
    const headers = new Array<Uint8Array | undefined>(missing.length);
    // The tx hashes as they are stored: a log's is sliced when its record is made (a block of a
    // busy chain holds hundreds, of which a query wants a few).
    const txHashes = new Array<Uint8Array>(missing.length);
    const older: number[] = []; // rows without a header in their extras
    missing.forEach((n, i) => {
      const row = rows[i];
      if (row === undefined) throw new Error(`block ${n}: tx hashes missing`);
      const split = splitBlockTxHashes(row);
      txHashes[i] = split.hashes;
      const header = split.extras === undefined ? undefined : extrasHeaderRlp(split.extras);
      if (header === undefined) older.push(i);
      else {
        headers[i] = header;
        // The row is the canonical block's (keyed by number, written with it): its hash is its
        // header's, one hash of ~600 bytes against a read of the canonical table.
        hashes[i] = keccak256(header);
      }
    });
    if (older.length > 0) {
      const canonical = await tables.canonical.getMany(
        this.db,
        older.map((i) => missing[i] as bigint),
      );
      const read = await tables.headers.getMany(
        this.db,
        canonical.map((h, k) => {
          if (h === undefined) throw new Error(`block ${missing[older[k] as number]}: hash missing`);
          return h;
        }),
      );
      older.forEach((i, k) => {
        hashes[i] = canonical[k];
        headers[i] = read[k];
      });
    }
    missing.forEach((n, i) => {
      const header = headers[i];
      if (header === undefined) throw new Error(`block ${n}: header missing`);
      const ctx = {
        hash: hashes[i] as Uint8Array,
        timestamp: headerTxFields(header).timestamp,
        txHashes: txHashes[i] as Uint8Array,
      };
      if (gen === this.chain.generation?.()) this.logContexts.set(n, ctx);
      out.set(n, ctx);
    });
    return out;
  }

  /**
   * contexts() of one block, read synchronously (the sealed segments' chunks, decoded inside a
   * synchronous scan, take their hashes from it).
   */
  private contextSync(n: bigint): BlockLogContext {
    const hit = this.logContexts.get(n);
    if (hit !== undefined) return hit;
    const gen = this.chain.generation?.();
    const row = this.sync.getSync(tables.blockTxHashes.key(n));
    if (row === undefined) throw new Error(`block ${n}: tx hashes missing`);
    const split = splitBlockTxHashes(row);
    let header = split.extras === undefined ? undefined : extrasHeaderRlp(split.extras);
    let hash: Uint8Array | undefined;
    if (header !== undefined) hash = keccak256(header);
    else {
      hash = tables.canonical.getSync(this.sync, n);
      if (hash === undefined) throw new Error(`block ${n}: hash missing`);
      header = tables.headers.getSync(this.sync, hash);
      if (header === undefined) throw new Error(`block ${n}: header missing`);
    }
    const ctx = { hash, timestamp: headerTxFields(header).timestamp, txHashes: split.hashes };
    if (gen === this.chain.generation?.()) this.logContexts.set(n, ctx);
    return ctx;
  }

  /**
   * Records of the logs `ids` (ascending), optionally re-checked against `query`: reads of
   * ROW_READ_BATCH keys, ROW_READS_IN_FLIGHT at a time, in order; the budget is checked between.
   */
  private async recordsOf(ids: number[], query: LogQuery | undefined, budget: Budget): Promise<LogRecord[]> {
    const load = async (at: number): Promise<LogRecord[]> => {
      const logs = await this.fetchLogs(ids.slice(at, at + ROW_READ_BATCH));
      return this.toRecords(query === undefined ? logs : logs.filter((l) => logMatches(l, query)));
    };
    const inFlight: Promise<LogRecord[]>[] = [];
    let next = 0;
    const start = (): void => {
      if (next >= ids.length) return;
      const p = load(next);
      p.catch(() => undefined); // awaited below, in order; a later batch may fail after an earlier throw
      inFlight.push(p);
      next += ROW_READ_BATCH;
    };
    for (let i = 0; i < ROW_READS_IN_FLIGHT; i++) start();
    const records: LogRecord[] = [];
    while (inFlight.length > 0) {
      const batch = await (inFlight.shift() as Promise<LogRecord[]>);
      for (const r of batch) records.push(r);
      await budget.tick();
      start();
    }
    return records;
  }

  private async toRecords(logs: StoredLog[]): Promise<LogRecord[]> {
    const numbers = new Set<bigint>();
    for (const l of logs) numbers.add(l.blockNumber);
    const ctxs = await this.contexts(numbers);
    return logs.map((log) => {
      const ctx = ctxs.get(log.blockNumber) as BlockLogContext;
      const at = 32 * log.txIndex;
      if (at + 32 > ctx.txHashes.length) throw new Error(`block ${log.blockNumber}: log of unknown tx ${log.txIndex}`);
      const txHash = ctx.txHashes.subarray(at, at + 32);
      return {
        address: log.address,
        topics: log.topics,
        data: log.data,
        blockNumber: log.blockNumber,
        blockHash: ctx.hash,
        blockTimestamp: ctx.timestamp,
        transactionHash: txHash,
        transactionIndex: log.txIndex,
        logIndex: log.logIndex,
      };
    });
  }

  /**
   * The cached block holding log `id`, found from `block` on through the cached blocks after it
   * (a block's logs end where the next block's with logs begin); undefined when one of them is
   * not cached.
   */
  private cachedAfter(block: IndexedLogBlock, id: number): IndexedLogBlock | undefined {
    let b: IndexedLogBlock | undefined = block;
    for (let steps = 0; b !== undefined && steps < CACHED_WALK_MAX; steps++) {
      const end: number = b.first + b.columns.count;
      if (id < end) return b;
      b = this.logBlocks.get(end);
    }
    return undefined;
  }

  /**
   * The logs `ids` (best ascending): each from its block's LogBlocks row, indexed once (cached)
   * and found in the cache after the block before it, or located by the BlockLogs ranges
   * (blockOfSync) and read with one synchronous get, or, for a block an earlier release wrote,
   * from its Logs row.
   */
  private async fetchLogs(ids: number[]): Promise<StoredLog[]> {
    const out = new Array<StoredLog>(ids.length);
    const rows: number[] = []; // positions in `ids` of logs in Logs rows
    const gen = this.chain.generation?.();
    const lowest = await this.lowestLogBlock();
    // Ids whose block is not cached, by their block's first log id: its row is read with the
    // others' in one batch (LevelDB's reads on libuv's threads, beside each other).
    const unread = new Map<number, number[]>();
    let chain: BlockBounds | undefined;
    let bounds: BlockBounds | undefined;
    let block: IndexedLogBlock | undefined;
    let located: LocatedBlock | undefined;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      if (id < lowest) {
        rows.push(i);
        continue;
      }
      if (block !== undefined && id >= block.first + block.columns.count) block = this.cachedAfter(block, id);
      if (block !== undefined && id >= block.first && id < block.first + block.columns.count) {
        out[i] = block.columns.log(id - block.first);
        continue;
      }
      if (located === undefined || id < located.first || id >= located.end) {
        chain ??= await this.chainBounds();
        // Ids out of order (no caller gives them so): the search starts over.
        if (bounds === undefined || id < bounds.firstLo) bounds = chain;
        const at = blockOfSync(this.sync, id, bounds);
        if (at === undefined) {
          rows.push(i);
          continue;
        }
        located = at;
        // The ids that follow are at or after this block: the search starts there.
        bounds = { ...bounds, lo: at.number, firstLo: at.first };
        block = this.logBlocks.get(at.first);
        if (block !== undefined) {
          out[i] = block.columns.log(id - block.first);
          continue;
        }
      }
      let waiting = unread.get(located.first);
      if (waiting === undefined) unread.set(located.first, (waiting = []));
      waiting.push(i);
    }
    if (unread.size > 0) {
      const firsts = [...unread.keys()];
      const values = await this.db.getMany(firsts.map((f) => logBlockKey(f)));
      values.forEach((value, j) => {
        const first = firsts[j] as number;
        const waiting = unread.get(first) as number[];
        // A block an earlier release wrote (no LogBlocks row): its Logs rows.
        if (value === undefined) {
          for (const i of waiting) rows.push(i);
          return;
        }
        const b = this.indexedBlock(first, value, gen);
        for (const i of waiting) {
          const id = ids[i] as number;
          if (id >= b.first + b.columns.count) throw new Error(`log ${id} is past its block's row (first ${first})`);
          out[i] = b.columns.log(id - b.first);
        }
      });
    }
    if (rows.length > 0) {
      const raw = await this.db.getMany(rows.map((i) => logKey(ids[i] as number)));
      raw.forEach((r, j) => {
        const i = rows[j] as number;
        if (r === undefined) throw new Error(`log ${ids[i]} indexed but missing`);
        out[i] = logCodec.decode(r);
      });
    }
    return out;
  }

  /** The datadir's first block to the head and the log ids they hold ([firstLo, endHi)). */
  private async chainBounds(): Promise<BlockBounds> {
    const head = (await this.chain.head()).number;
    const first = this.chain.firstBlock?.() ?? 0n;
    const [low, high] = [tables.blockLogs.getSync(this.sync, first), tables.blockLogs.getSync(this.sync, head)];
    if (low === undefined || high === undefined)
      throw new Error(`block log range missing for block ${first} or the head ${head}`);
    return { lo: first, firstLo: Number(low.firstLogId), hi: head, endHi: Number(high.firstLogId) + high.count };
  }

  /** The cap is exceeded: the longest prefix of blocks that fits ends before the block of log `overId`. */
  private async tooMany(overId: number): Promise<{ kind: 'too-many'; lastFittingBlock: bigint }> {
    const [over] = await this.fetchLogs([overId]);
    return { kind: 'too-many', lastFittingBlock: (over as StoredLog).blockNumber - 1n };
  }

  /**
   * Matching log ids in [start, end), in batches of up to `batch` ascending ids, by a leapfrog join
   * of the constraints (every id in [start, end) when there are none). Stops when the consumer does.
   */
  private async *joinIds(
    constraints: Constraint[],
    start: number,
    end: number,
    batch: number,
    budget: Budget,
  ): AsyncGenerator<number[]> {
    if (constraints.length === 0) {
      for (let at = start; at < end; at += batch) {
        await budget.tick();
        const ids: number[] = [];
        for (let id = at; id < Math.min(end, at + batch); id++) ids.push(id);
        yield ids;
      }
      return;
    }
    const cursors: IdCursor[] = [];
    try {
      for (const c of constraints) {
        const parts = possibleValues(c).map((v) => new PostingCursor(this.db, c.kind, v, start, end));
        if (parts.length === 0) return;
        const cursor = parts.length === 1 ? (parts[0] as PostingCursor) : new UnionCursor(parts);
        cursors.push(cursor);
      }
      const firsts = await Promise.all(cursors.map((c) => c.seek(start)));
      let x = start;
      for (const f of firsts) {
        if (f === undefined) return;
        if (f > x) x = f;
      }
      // The most selective constraint drives; the others only seek to its candidates.
      const order = cursors.map((c, i) => ({ c, est: c.estimate(), i })).sort((a, b) => a.est - b.est || a.i - b.i);
      const cs = order.map((o) => o.c);
      const k = cs.length;
      let out: number[] = [];
      let i = 0;
      let agreed = 0;
      let steps = 0;
      for (;;) {
        const y = await (cs[i] as IdCursor).seek(x);
        if (y === undefined) break;
        if (y === x) agreed++;
        else {
          x = y;
          agreed = 1;
        }
        if (agreed === k) {
          out.push(x);
          if (out.length >= batch) {
            yield out;
            out = [];
          }
          x++;
          agreed = 0;
          i = 0;
        } else i = (i + 1) % k;
        if (++steps % 64 === 0) await budget.tick();
      }
      if (out.length > 0) yield out;
    } finally {
      await Promise.all(cursors.map((c) => c.close()));
    }
  }

  /** At most `want` matching log ids in [start, end) (see joinIds). */
  private async matchingIds(
    constraints: Constraint[],
    start: number,
    end: number,
    want: number,
    budget: Budget,
  ): Promise<number[]> {
    const out: number[] = [];
    for await (const ids of this.joinIds(constraints, start, end, want, budget)) {
      out.push(...ids.slice(0, want - out.length));
      if (out.length >= want) break;
    }
    return out;
  }

  async logs(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    const budget = new Budget(options.deadline);
    const range = await this.logIdRange(query.fromBlock, query.toBlock);
    if (range === undefined || range.start >= range.end) return { kind: 'ok', logs: [] };
    const constraints = constraintsOf(query);
    const limit = options.limit;
    if (needsArityCheck(query)) return this.logsCheckingArity(query, constraints, range, limit, budget);
    if (constraints.length === 0) {
      if (range.end - range.start > limit) return this.tooMany(range.start + limit);
      return { kind: 'ok', logs: await this.recordsInRange(range.start, range.end, budget) };
    }
    const ids = await this.matchingIds(constraints, range.start, range.end, limit + 1, budget);
    if (ids.length > limit) return this.tooMany(ids[limit] as number);
    // The index is exact per value; the re-check guards against a corrupted index.
    return { kind: 'ok', logs: await this.recordsOf(ids, query, budget) };
  }

  /** Meta.logsJsonFrom: the AddressLogsJson rows exist from this block on (NO_ROWS: none). */
  private async rowsFrom(): Promise<bigint> {
    if (this.logsJsonFrom === undefined) {
      const raw = await this.db.get(META_LOGS_JSON_FROM);
      // Read once: a datadir upgraded while served keeps the old path until the next open.
      this.logsJsonFrom = raw === undefined ? NO_ROWS : u64Codec.decode(raw);
    }
    return this.logsJsonFrom;
  }

  /**
   * logs() answered as JSON text from the AddressLogsJson rows (schema.ts), for queries naming 1 to
   * ROWS_MAX_ADDRESSES addresses from a block that has the rows on. Without topics, one forward
   * scan per address over its rows in the range: no posting list, log row or formatting, the answer
   * is the rows' own text. With topics, the ids come from the index join as in logs() and each
   * match is a slice of its address's row of its block (sealed blocks have no rows any more: their
   * matches come from the log rows). Other queries (no address, many addresses, several addresses
   * without topics over sealed blocks, trailing wildcard positions, blocks before the rows) are
   * left to logs(): undefined.
   */
  async logsText(query: LogQuery, options: LogQueryOptions): Promise<LogTextQueryResult | undefined> {
    if (query.addresses.length === 0 || needsArityCheck(query)) return undefined;
    const addresses = new Map<string, Uint8Array>();
    for (const a of possibleValues({ kind: LogIndexKind.Address, values: query.addresses }))
      addresses.set(Buffer.from(a).toString('hex'), a);
    if (addresses.size > ROWS_MAX_ADDRESSES) return undefined;
    if (query.fromBlock < (await this.rowsFrom())) return undefined;
    const budget = new Budget(options.deadline);
    const head = await this.chain.head();
    // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers only)
    const to = query.toBlock > head.number ? head.number : query.toBlock;
    if (addresses.size === 0 || query.fromBlock > to) return EMPTY_TEXT;
    const list = [...addresses.values()];
    // A seal deletes the rows it sealed: an answer read while one landed (serve --follow) is read again.
    for (let attempt = 0; ; attempt++) {
      const sealed = this.segments.sealed();
      const overlaps = sealed !== undefined && query.fromBlock < sealed.to && to >= sealed.from;
      // Several addresses over sealed blocks: their rows are gone; logs() answers from the index.
      if (list.length > 1 && overlaps && constraintsOf(query).length === 1) return undefined;
      const answer =
        constraintsOf(query).length === 1
          ? await this.scanText(list, query.fromBlock, to, options.limit, budget)
          : await this.pickedText(query, list, to, options.limit, budget);
      if (this.segments.sealed()?.to === sealed?.to || attempt === 2) return answer;
    }
  }

  /** An address-only query: each address's rows over [from, to] in one forward scan. */
  private async scanText(
    addresses: Uint8Array[],
    from: bigint,
    to: bigint,
    limit: number,
    budget: Budget,
  ): Promise<LogTextQueryResult> {
    if (addresses.length === 1) return this.scanOneText(addresses[0] as Uint8Array, from, to, limit, budget);
    const perAddress: { number: bigint; view: AddressLogsJsonView }[][] = [];
    for (const address of addresses)
      perAddress.push(await this.rowsOf(address, from, to, limit, budget, addresses.length));
    // Several addresses: their logs interleave by block, then log index.
    const entries: { number: bigint; logIndex: number; view: AddressLogsJsonView; i: number }[] = [];
    for (const rows of perAddress)
      for (const r of rows)
        for (let i = 0; i < r.view.count; i++)
          entries.push({ number: r.number, logIndex: r.view.logIndex(i), view: r.view, i });
    entries.sort((x, y) => (x.number < y.number ? -1 : x.number > y.number ? 1 : x.logIndex - y.logIndex));
    if (entries.length > limit)
      return { kind: 'too-many', lastFittingBlock: (entries[limit] as { number: bigint }).number - 1n };
    return { kind: 'ok', ascii: jsonArrayOf(entries.map((e) => e.view.textBytes(e.i))), count: entries.length };
  }

  /**
   * One address: its sealed spans (log-segments.ts) as file slices, the blocks around them from
   * its rows, in block order.
   */
  private async scanOneText(
    address: Uint8Array,
    from: bigint,
    to: bigint,
    limit: number,
    budget: Budget,
  ): Promise<LogTextQueryResult> {
    const sealed = this.segments.sealed();
    const chunks: AsciiChunk[] = [OPEN];
    let count = 0;
    const add = (c: AsciiChunk): void => {
      if (chunks.length > 1) chunks.push(COMMA);
      chunks.push(c);
    };
    const fromRows = async (lo: bigint, hi: bigint): Promise<LogTextQueryResult | undefined> => {
      for (const r of await this.rowsOf(address, lo, hi, limit - count, budget, 1)) {
        count += r.view.count;
        if (count > limit) return { kind: 'too-many', lastFittingBlock: r.number - 1n };
        add(r.view.allBytes());
      }
      return undefined;
    };
    let at = from;
    if (sealed !== undefined && from < sealed.to && to >= sealed.from) {
      if (at < sealed.from) {
        const over = await fromRows(at, sealed.from - 1n);
        if (over !== undefined) return over;
        at = sealed.from;
      }
      const hi = to < sealed.to ? to : sealed.to - 1n;
      const r = this.segments.scan(address, at, hi, count, limit);
      if (r.kind === 'too-many') return r;
      count = r.count;
      for (const s of r.slices) add(s);
      at = hi + 1n;
    }
    if (at <= to) {
      const over = await fromRows(at, to);
      if (over !== undefined) return over;
    }
    chunks.push(CLOSE);
    return { kind: 'ok', ascii: chunks, count };
  }

  /**
   * An address's AddressLogsJson rows over [from, to], stopping once they hold over `limit` logs;
   * `addresses`: how many addresses the query reads so (they share SYNC_SCAN_MAX).
   */
  private async rowsOf(
    address: Uint8Array,
    from: bigint,
    to: bigint,
    limit: number,
    budget: Budget,
    addresses: number,
  ): Promise<{ number: bigint; view: AddressLogsJsonView }[]> {
    const rows: { number: bigint; view: AddressLogsJsonView }[] = [];
    let count = 0;
    if ((to - from + 1n) * BigInt(addresses) <= BigInt(SYNC_SCAN_MAX)) {
      // A short range: one synchronous get per block (a LevelDB iterator costs more to open and
      // seek than tens of point reads of rows that mostly sit in one table file).
      const key = tables.addressLogsJson.key({ address, number: from });
      const last = Number(to);
      for (let n = Number(from); n <= last && count <= limit; n++) {
        putU64(key, 21, n);
        const raw = this.sync.getSync(key);
        if (raw !== undefined) {
          const view = new AddressLogsJsonView(raw);
          rows.push({ number: BigInt(n), view });
          count += view.count;
        }
        if ((n & 127) === 127) await budget.tick();
      }
      return rows;
    }
    const it = this.db.iterator({
      gte: tables.addressLogsJson.key({ address, number: from }),
      lte: tables.addressLogsJson.key({ address, number: to }),
    });
    try {
      // An address's logs past the first limit + 1 cannot be in the answer nor decide the cap.
      while (count <= limit) {
        const entries = await it.nextv(ROW_SCAN_BATCH);
        if (entries.length === 0) break;
        for (const [k, v] of entries) {
          const view = new AddressLogsJsonView(v);
          rows.push({ number: addressLogsNumber(k), view });
          count += view.count;
        }
        await budget.tick();
      }
    } finally {
      await it.close();
    }
    return rows;
  }

  /** An address query with topics: ids from the index join, texts from the addresses' rows. */
  private async pickedText(
    query: LogQuery,
    addresses: Uint8Array[],
    to: bigint,
    limit: number,
    budget: Budget,
  ): Promise<LogTextQueryResult> {
    const range = await this.logIdRange(query.fromBlock, to);
    if (range === undefined || range.start >= range.end) return EMPTY_TEXT;
    const ids = await this.matchingIds(constraintsOf(query), range.start, range.end, limit + 1, budget);
    if (ids.length > limit) return this.tooMany(ids[limit] as number);
    if (ids.length === 0) return EMPTY_TEXT;
    const blocks = Number(range.to - query.fromBlock) + 1;
    if (blocks > Math.max(BLOCK_SCAN_MIN, BLOCKS_PER_MATCH * ids.length)) {
      // Few matches spread over a long range: finding their blocks by reading every block's log
      // range would cost more than reading their log rows (which carry the block).
      const records = await this.recordsOf(ids, query, budget);
      return { kind: 'ok', ascii: [await logsJsonAscii(records, () => budget.tick())], count: records.length };
    }
    const picks = await this.picksOf(query.fromBlock, range.to, ids, budget);
    const keys: { address: Uint8Array; number: bigint }[] = [];
    for (const p of picks) for (const address of addresses) keys.push({ address, number: p.number });
    const rows = new Map<bigint, AddressLogsJsonView[]>();
    for (let at = 0; at < keys.length; at += ROW_READ_BATCH) {
      const part = keys.slice(at, at + ROW_READ_BATCH);
      const raws = await tables.addressLogsJson.getMany(this.db, part);
      raws.forEach((raw, i) => {
        if (raw === undefined) return;
        const n = (part[i] as { number: bigint }).number;
        let list = rows.get(n);
        if (list === undefined) rows.set(n, (list = []));
        list.push(new AddressLogsJsonView(raw));
      });
      await budget.tick();
    }
    // Each match from the row holding its log index; one that none holds (a row missing) from
    // its log row.
    const parts: (Uint8Array | undefined)[] = [];
    const missing: { at: number; id: number }[] = [];
    for (const p of picks) {
      const views = rows.get(p.number) ?? [];
      for (const local of p.locals ?? []) {
        let text: Uint8Array | undefined;
        for (const v of views) {
          const i = v.find(local);
          if (i >= 0) {
            text = v.textBytes(i);
            break;
          }
        }
        if (text === undefined) missing.push({ at: parts.length, id: p.first + local });
        parts.push(text);
      }
    }
    if (missing.length > 0) {
      const writer = new LogJsonWriter();
      const byLog = new Map<string, Uint8Array>();
      for (const r of await this.recordsOf(
        missing.map((m) => m.id),
        query,
        budget,
      )) {
        const text = new Uint8Array(writer.byteLength(r));
        writer.writeInto(r, text, 0);
        byLog.set(`${r.blockNumber}:${r.logIndex}`, text);
      }
      for (const m of missing) {
        const p = picks.find((x) => m.id >= x.first && m.id < x.first + x.count) as BlockPick;
        parts[m.at] = byLog.get(`${p.number}:${m.id - p.first}`);
      }
    }
    const texts = parts.filter((t): t is Uint8Array => t !== undefined);
    return { kind: 'ok', ascii: jsonArrayOf(texts), count: texts.length };
  }

  /**
   * The blocks of [from, to] holding matches, with the matches' positions in the block (`locals`
   * undefined: all of the block's logs), in block order: the blocks' log ranges read in batches.
   */
  private async picksOf(from: bigint, to: bigint, ids: number[] | undefined, budget: Budget): Promise<BlockPick[]> {
    const out: BlockPick[] = [];
    let next = 0; // the first id not yet placed
    for (let at = from; at <= to; at += BigInt(ROW_READ_BATCH * 4)) {
      const numbers: bigint[] = [];
      for (let n = at; n <= to && n < at + BigInt(ROW_READ_BATCH * 4); n++) numbers.push(n);
      const ranges = await tables.blockLogs.getMany(this.db, numbers);
      ranges.forEach((r, i) => {
        const number = numbers[i] as bigint;
        if (r === undefined) throw new Error(`block log range missing for ${number}`);
        if (r.count === 0) return;
        const first = Number(r.firstLogId);
        if (ids === undefined) {
          out.push({ number, first, count: r.count, locals: undefined });
          return;
        }
        const locals: number[] = [];
        while (next < ids.length && (ids[next] as number) < first + r.count) {
          const id = ids[next++] as number;
          if (id < first) throw new Error(`log ${id} precedes block ${number}'s logs`);
          locals.push(id - first);
        }
        if (locals.length > 0) out.push({ number, first, count: r.count, locals });
      });
      if (ids !== undefined && next >= ids.length) break;
      await budget.tick();
    }
    if (ids !== undefined && next < ids.length) throw new Error(`log ${ids[next]} is past block ${to}`);
    return out;
  }

  /** Every log of ids [start, end), as records. */
  private async recordsInRange(start: number, end: number, budget: Budget): Promise<LogRecord[]> {
    const records: LogRecord[] = [];
    for (let at = start; at < end; at += LOG_FETCH_BATCH) {
      await budget.tick();
      const ids: number[] = [];
      for (let id = at; id < Math.min(end, at + LOG_FETCH_BATCH); id++) ids.push(id);
      records.push(...(await this.toRecords(await this.fetchLogs(ids))));
    }
    return records;
  }

  /**
   * The index path for queries with trailing wildcard positions: candidates from the join are
   * fetched in batches and re-checked, and only logs that really match count toward the cap.
   */
  private async logsCheckingArity(
    query: LogQuery,
    constraints: Constraint[],
    range: { start: number; end: number },
    limit: number,
    budget: Budget,
  ): Promise<LogQueryResult> {
    const matched: StoredLog[] = [];
    for await (const ids of this.joinIds(constraints, range.start, range.end, LOG_FETCH_BATCH, budget)) {
      await budget.tick();
      for (const log of await this.fetchLogs(ids)) if (logMatches(log, query)) matched.push(log);
      if (matched.length > limit)
        return { kind: 'too-many', lastFittingBlock: (matched[limit] as StoredLog).blockNumber - 1n };
    }
    const records: LogRecord[] = [];
    for (let i = 0; i < matched.length; i += LOG_FETCH_BATCH) {
      await budget.tick();
      records.push(...(await this.toRecords(matched.slice(i, i + LOG_FETCH_BATCH))));
    }
    return { kind: 'ok', logs: records };
  }

  /**
   * The same query answered by scanning per-block blooms (and the logs of the blocks whose bloom
   * may match), geth's pre-index way. Slow for selective queries over long ranges; the getLogs
   * benchmark compares it with the index path.
   */
  async logsByBloomScan(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    const budget = new Budget(options.deadline);
    const range = await this.logIdRange(query.fromBlock, query.toBlock);
    if (range === undefined) return { kind: 'ok', logs: [] };
    const mayMatch = queryBloomMatcher(query);
    const want = options.limit + 1;
    const matched: StoredLog[] = [];
    let n = 0;
    for await (const [number, bloom] of tables.blooms.range(this.db, { gte: query.fromBlock, lte: range.to })) {
      if (++n % 256 === 0) await budget.tick();
      if (!mayMatch(bloom)) continue;
      const r = await tables.blockLogs.get(this.db, number);
      if (r === undefined || r.count === 0) continue;
      for (const log of await readBlockLogs(this.db, number, r)) if (logMatches(log, query)) matched.push(log);
      if (matched.length >= want) break;
    }
    if (matched.length > options.limit) {
      return { kind: 'too-many', lastFittingBlock: (matched[options.limit] as StoredLog).blockNumber - 1n };
    }
    const records: LogRecord[] = [];
    for (let i = 0; i < matched.length; i += LOG_FETCH_BATCH)
      records.push(...(await this.toRecords(matched.slice(i, i + LOG_FETCH_BATCH))));
    return { kind: 'ok', logs: records };
  }
}
