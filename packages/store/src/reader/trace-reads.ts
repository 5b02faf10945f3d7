// The store's reads of address appearances (appearances/query.ts answers the queries) and of
// the trace rows an executing import records (TxFrames, TxStateDiffs, FrameBlooms,
// FrameAddresses), with the caches of recorded rows. LevelChainStore delegates here.
import { bytesEqual, concatBytes, traceRowOf } from '@chainnode/core';
import type { AppearancePage, AppearanceQuery, Bytes } from '@chainnode/core';
import { appearancesFrom, appearancesIn, queryAppearances } from '../appearances/query.js';
import type { Db } from '../db.js';
import { HashCache } from '../hash-cache.js';
import { MetaKey, tables, u64Codec } from '../schema/index.js';
import { guarded } from './guard.js';

/** The recorded state-change rows kept (diffsRows), by their bytes; twice that of frames (framesRows). */
const TRACE_ROWS_BYTES = 16 << 20;
/**
 * The single trace rows kept (traceParts: TRACE_ROW_TXS transactions' frames or state changes,
 * ~10 KB at mainnet's shape), by their bytes: a few hundred transactions traced alone.
 */
const TRACE_PART_BYTES = 8 << 20;

/** What the trace reads need from the rest of the reader: the canonical chain. */
export interface TraceReadsContext {
  /** The number of `hash` when it is a canonical block's (undefined otherwise). */
  canonicalNumber(hash: Uint8Array): Promise<bigint | undefined>;
  /** The canonical hash at `number`, read synchronously (undefined past the head). */
  canonicalSync(number: bigint): Uint8Array | undefined;
  /** The first block the datadir holds. */
  firstBlock(): bigint;
}

export class TraceReads {
  /**
   * Recorded trace rows (TxFrames, TxStateDiffs) by block hash, a row only once its hash is the
   * block's (rows never change for a hash): 32 MiB of frames, ~100-200 blocks of mainnet's size
   * (160 KB; the two generations hold between half the budget and all of it), 16 MiB of state
   * changes (90 KB). Reading and uncompressing a row costs ~0.25 ms at that size, more than the
   * trace answered from it: a block's transactions traced one after the other, or a trace_filter
   * over the ~100 blocks a busy sender's transactions are in, asked again, read it once.
   */
  private readonly framesRows = new HashCache<Bytes>(4096, 2 * TRACE_ROWS_BYTES);
  private readonly diffsRows = new HashCache<Bytes>(4096, TRACE_ROWS_BYTES);
  /** Single trace rows (one transaction's trace read them) by table prefix ++ block hash ++ row. */
  private readonly traceParts = new HashCache<Bytes>(8192, TRACE_PART_BYTES);
  /** The address-appearance index was seen to cover the whole chain (appearancesComplete). */
  private appearancesWhole = false;

  constructor(
    private readonly db: Db,
    private readonly chain: TraceReadsContext,
  ) {}

  private guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return guarded(this.db, what, fn);
  }

  /** A commit took these blocks off the canonical chain: their rows are no longer kept. */
  onRemoved(hashes: Uint8Array[]): void {
    for (const h of hashes) {
      this.framesRows.delete(h);
      this.diffsRows.delete(h);
    }
    if (hashes.length > 0) this.traceParts.clear();
  }

  appearances(query: AppearanceQuery): Promise<AppearancePage | undefined> {
    return this.guard('appearances', async () =>
      (await this.appearancesComplete()) ? queryAppearances(this.db, query) : undefined,
    );
  }

  /**
   * Whether the address-appearance index covers the whole chain. Meta.appearancesFrom is read
   * until it does (the writer stores it with its first batch; `db convert` completes it), then
   * remembered: a complete index stays complete.
   */
  private async appearancesComplete(): Promise<boolean> {
    if (this.appearancesWhole) return true;
    const from = await appearancesFrom(this.db);
    this.appearancesWhole = from !== undefined && from <= this.chain.firstBlock();
    return this.appearancesWhole;
  }

  appearanceRange(
    address: Bytes,
    from: bigint,
    to: bigint,
  ): Promise<{ positions: AppearancePage['positions']; framesFrom: bigint | undefined } | undefined> {
    return this.guard('appearanceRange', async () => {
      if (!(await this.appearancesComplete())) {
        const indexFrom = await appearancesFrom(this.db);
        if (indexFrom === undefined || indexFrom > from) return undefined;
      }
      const framesFrom = await tables.meta.get(this.db, MetaKey.FrameAppearancesFrom);
      return {
        positions: await appearancesIn(this.db, address, from, to),
        framesFrom: framesFrom === undefined ? undefined : u64Codec.decode(framesFrom),
      };
    });
  }

  txFrames(blockHash: Bytes, index?: number): Promise<Bytes | undefined> {
    return this.guard('txFrames', () => this.traceRows(blockHash, index, tables.txFrames, this.framesRows));
  }

  txStateDiffs(blockHash: Bytes, index?: number): Promise<Bytes | undefined> {
    return this.guard('txStateDiffs', () => this.traceRows(blockHash, index, tables.txStateDiffs, this.diffsRows));
  }

  /**
   * The recorded trace rows of the canonical block `blockHash` (TxFrames or TxStateDiffs): with
   * `index`, the row holding that transaction's (the whole block's when it is kept, or when the
   * block has the one row an earlier release wrote); else the block's rows, concatenated, kept in
   * `whole` once they are that block's. A row of another branch's block at this number (not yet
   * cut) is handed out, not kept; the trace module reads the hash leading it.
   */
  private async traceRows(
    blockHash: Bytes,
    index: number | undefined,
    table: typeof tables.txFrames,
    whole: HashCache<Bytes>,
  ): Promise<Bytes | undefined> {
    const number = await this.chain.canonicalNumber(blockHash);
    if (number === undefined) return undefined;
    const kept = whole.get(blockHash);
    if (kept !== undefined) return kept;
    const ours = (row: Bytes | undefined): row is Bytes =>
      row !== undefined && row.length >= 32 && bytesEqual(row.subarray(0, 32), blockHash);
    if (index !== undefined) {
      const row = traceRowOf(index);
      const key = concatBytes(Uint8Array.of(table.prefix), blockHash, Uint8Array.of(row >>> 8, row & 0xff));
      const part = this.traceParts.get(key);
      if (part !== undefined) return part;
      const got = table.getSync(this.db, { number, row });
      if (got !== undefined) {
        if (ours(got)) this.traceParts.set(key, got, got.length);
        return got;
      }
    }
    const first = table.getSync(this.db, { number, row: 0 });
    // A block an earlier release recorded: its one row.
    const rows = first === undefined ? table.getSync(this.db, { number }) : first;
    if (rows === undefined) return undefined;
    const parts = [rows];
    if (first !== undefined)
      for (let row = 1; ; row++) {
        const next = table.getSync(this.db, { number, row });
        if (next === undefined) break;
        parts.push(next);
      }
    const out = parts.length === 1 ? rows : concatBytes(...parts);
    if (ours(out)) whole.set(blockHash, out, out.length);
    return out;
  }

  frameBlooms(from: bigint, to: bigint): Promise<(Bytes | undefined)[]> {
    return this.guard('frameBlooms', async () => {
      const out: (Bytes | undefined)[] = [];
      for (let n = from; n <= to; n++) out.push(undefined);
      for (const [number, value] of await this.canonicalRows(tables.frameBlooms, from, to))
        out[Number(number - from)] = value.subarray(32);
      return out;
    });
  }

  frameIndexedBlocks(from: bigint, to: bigint): Promise<bigint[]> {
    return this.guard('frameIndexedBlocks', async () => {
      // Each such block's FrameAddresses row (its hash and the few addresses it posted): small
      // rows, where the frame blooms are 544 bytes a block.
      return (await this.canonicalRows(tables.frameAddresses, from, to)).map(([number]) => number);
    });
  }

  /**
   * The rows of `from`..`to` of a table keyed by block number whose value leads with its block's
   * hash, the canonical blocks' only (a row of another branch's block at a number, not yet cut
   * here, is left out). The range in one call to LevelDB's thread: a turn per row made a 1,000-block
   * range of frame blooms take 14 ms.
   */
  private async canonicalRows(
    table: typeof tables.frameBlooms,
    from: bigint,
    to: bigint,
  ): Promise<[bigint, Uint8Array][]> {
    const rows = await this.db.iterator({ gte: table.key(from), lte: table.key(to) }).all();
    const out: [bigint, Uint8Array][] = [];
    for (const [key, value] of rows) {
      const number = u64Codec.decode(key.subarray(1));
      const canonical = this.chain.canonicalSync(number);
      if (canonical !== undefined && bytesEqual(canonical, value.subarray(0, 32))) out.push([number, value]);
    }
    return out;
  }
}
