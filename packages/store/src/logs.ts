// The log query code of the store: eth_getLogs answered from the log index (posting lists of
// log ids per address / topic position), and the same query answered by a per-block bloom scan
// (the baseline the getLogs benchmark compares against). LevelChainStore delegates here.
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { LimitExceededError, bytesEqual } from '@chainnode/core';
import type { ChainHead, HeaderRecord, LogQuery, LogQueryOptions, LogQueryResult, LogRecord } from '@chainnode/core';
import { Lru } from './lru.js';
import { LogIndexKind, tables } from './schema.js';
import type { KvRead, StoredLog } from './schema.js';

/** What the log code needs from the rest of the reader (canonical chain, cached headers). */
export interface LogReadContext {
  head(): Promise<ChainHead>;
  canonical(number: bigint): Promise<Uint8Array | undefined>;
  header(hash: Uint8Array): Promise<HeaderRecord | undefined>;
}

interface BlockLogContext {
  hash: Uint8Array;
  timestamp: bigint;
  txHashes: Uint8Array[];
}

interface Constraint {
  kind: number;
  values: Uint8Array[];
}

/** Topic/address constraints of a query: empty `addresses` or a null/empty position is a wildcard. */
function constraintsOf(query: LogQuery): Constraint[] {
  const out: Constraint[] = [];
  if (query.addresses.length > 0) out.push({ kind: LogIndexKind.Address, values: query.addresses });
  query.topics.forEach((t, i) => {
    if (t !== null && t.length > 0) out.push({ kind: i, values: t });
  });
  return out;
}

export function logMatches(log: StoredLog, query: LogQuery): boolean {
  if (query.addresses.length > 0 && !query.addresses.some((a) => bytesEqual(a, log.address))) return false;
  for (let i = 0; i < query.topics.length; i++) {
    const t = query.topics[i];
    if (t === null || t === undefined || t.length === 0) continue;
    const have = log.topics[i];
    if (have === undefined || !t.some((x) => bytesEqual(x, have))) return false;
  }
  return true;
}

function bloomHas(bloom: Uint8Array, value: Uint8Array): boolean {
  const h = keccak256(value);
  for (let i = 0; i < 6; i += 2) {
    const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
    const byte = bloom[255 - (bit >> 3)] as number;
    if ((byte & (1 << (bit & 7))) === 0) return false;
  }
  return true;
}

function bloomMayMatch(bloom: Uint8Array, constraints: Constraint[]): boolean {
  return constraints.every((c) => c.values.some((v) => bloomHas(bloom, v)));
}

function checkDeadline(deadline: number): void {
  if (Date.now() > deadline) throw new LimitExceededError('query timeout exceeded');
}

function unionSorted(lists: bigint[][]): bigint[] {
  if (lists.length === 1) return lists[0] as bigint[];
  const all = lists.flat().sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const out: bigint[] = [];
  for (const id of all) if (out.length === 0 || out[out.length - 1] !== id) out.push(id);
  return out;
}

function intersectSorted(a: bigint[], b: bigint[]): bigint[] {
  const out: bigint[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as bigint;
    const y = b[j] as bigint;
    if (x === y) {
      out.push(x);
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return out;
}

export class LogQueries {
  private readonly logContexts = new Lru<bigint, BlockLogContext>(1024);

  constructor(
    private readonly db: KvRead,
    private readonly chain: LogReadContext,
  ) {}

  /** Log id range [start, end) covering blocks [from, to] (to clamped to the head). */
  private async logIdRange(from: bigint, to: bigint): Promise<{ start: bigint; end: bigint; to: bigint } | undefined> {
    const head = await this.chain.head();
    const last = to > head.number ? head.number : to;
    if (from > last || from < 0n) return undefined;
    const [first, lastRange] = await tables.blockLogs.getMany(this.db, [from, last]);
    if (first === undefined || lastRange === undefined) throw new Error(`block log range missing for ${from}..${last}`);
    return { start: first.firstLogId, end: lastRange.firstLogId + BigInt(lastRange.count), to: last };
  }

  private async logContext(number: bigint): Promise<BlockLogContext> {
    const hit = this.logContexts.get(number);
    if (hit !== undefined) return hit;
    const hash = await this.chain.canonical(number);
    if (hash === undefined) throw new Error(`canonical hash of block ${number} missing`);
    const header = await this.chain.header(hash);
    const txHashes = await tables.blockTxHashes.get(this.db, number);
    if (header === undefined || txHashes === undefined) throw new Error(`block ${number}: header or tx hashes missing`);
    const ctx = { hash, timestamp: header.timestamp, txHashes };
    this.logContexts.set(number, ctx);
    return ctx;
  }

  private async toRecord(log: StoredLog): Promise<LogRecord> {
    const ctx = await this.logContext(log.blockNumber);
    const txHash = ctx.txHashes[log.txIndex];
    if (txHash === undefined) throw new Error(`block ${log.blockNumber}: log of unknown tx ${log.txIndex}`);
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
  }

  private async finish(matched: StoredLog[], query: LogQuery, limit: number): Promise<LogQueryResult> {
    if (matched.length > limit) {
      const over = matched[limit] as StoredLog;
      return { kind: 'too-many', lastFittingBlock: over.blockNumber - 1n };
    }
    const logs: LogRecord[] = [];
    for (const l of matched) logs.push(await this.toRecord(l));
    void query;
    return { kind: 'ok', logs };
  }

  /** Log ids of one (kind, value) in [start, end), read from the posting-list chunks. */
  private async postings(kind: number, value: Uint8Array, start: bigint, end: bigint, deadline: number): Promise<bigint[]> {
    const out: bigint[] = [];
    const take = (ids: bigint[]) => {
      for (const id of ids) if (id >= start && id < end) out.push(id);
    };
    // The chunk that starts at or before `start` may hold ids >= start.
    for await (const [, ids] of tables.logIndex.range(this.db, {
      gte: { kind, value, firstLogId: 0n },
      lte: { kind, value, firstLogId: start },
      reverse: true,
      limit: 1,
    })) take(ids);
    let n = 0;
    for await (const [, ids] of tables.logIndex.range(this.db, {
      gt: { kind, value, firstLogId: start },
      lt: { kind, value, firstLogId: end },
    })) {
      take(ids);
      if (++n % 64 === 0) checkDeadline(deadline);
    }
    return out;
  }

  async logs(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    const range = await this.logIdRange(query.fromBlock, query.toBlock);
    if (range === undefined || range.start >= range.end) return { kind: 'ok', logs: [] };
    const constraints = constraintsOf(query);
    const want = options.limit + 1;
    const matched: StoredLog[] = [];
    if (constraints.length === 0) {
      let n = 0;
      for await (const [, log] of tables.logs.range(this.db, { gte: range.start, lt: range.end, limit: want })) {
        matched.push(log);
        if (++n % 256 === 0) checkDeadline(options.deadline);
      }
      return this.finish(matched, query, options.limit);
    }
    let ids: bigint[] | undefined;
    for (const c of constraints) {
      const lists: bigint[][] = [];
      for (const v of c.values) {
        lists.push(await this.postings(c.kind, v, range.start, range.end, options.deadline));
        checkDeadline(options.deadline);
      }
      const union = unionSorted(lists);
      ids = ids === undefined ? union : intersectSorted(ids, union);
      if (ids.length === 0) return { kind: 'ok', logs: [] };
    }
    const picked = (ids ?? []).slice(0, want);
    for (let i = 0; i < picked.length; i += 512) {
      checkDeadline(options.deadline);
      const chunk = picked.slice(i, i + 512);
      const logs = await tables.logs.getMany(this.db, chunk);
      logs.forEach((l, j) => {
        if (l === undefined) throw new Error(`log ${chunk[j]} indexed but missing`);
        // The index is exact per value; re-check guards against a corrupted index.
        if (logMatches(l, query)) matched.push(l);
      });
    }
    return this.finish(matched, query, options.limit);
  }

  /**
   * The same query answered by scanning per-block blooms (and the logs of the blocks whose bloom
   * may match). Slower for selective queries over long ranges; the getLogs benchmark compares it
   * with the index path.
   */
  async logsByBloomScan(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    const range = await this.logIdRange(query.fromBlock, query.toBlock);
    if (range === undefined) return { kind: 'ok', logs: [] };
    const constraints = constraintsOf(query);
    const want = options.limit + 1;
    const matched: StoredLog[] = [];
    let n = 0;
    for await (const [number, bloom] of tables.blooms.range(this.db, { gte: query.fromBlock, lte: range.to })) {
      if (++n % 256 === 0) checkDeadline(options.deadline);
      if (!bloomMayMatch(bloom, constraints)) continue;
      const r = await tables.blockLogs.get(this.db, number);
      if (r === undefined || r.count === 0) continue;
      for await (const [, log] of tables.logs.range(this.db, { gte: r.firstLogId, lt: r.firstLogId + BigInt(r.count) })) {
        if (logMatches(log, query)) matched.push(log);
      }
      if (matched.length >= want) break;
    }
    return this.finish(matched.slice(0, want), query, options.limit);
  }
}
