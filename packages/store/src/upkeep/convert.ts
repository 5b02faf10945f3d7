// Turning a datadir written by an earlier release into the current layout, in place and
// resumable (`node-cli db convert`):
//  1. the flat state history (AccountHistory, StorageHistory) when the datadir has none: each
//     block's change set from the diff of its parent's and its own state trie (history/write.ts,
//     the same rows the import writes), in batches that record how far they got
//     (Meta.stateHistoryBuilt), so a crash resumes where it stopped; Meta.stateHistory last;
//     then, when the datadir has none, each history key's StateLatest row (history/latest.ts);
//  2. the state trie's retention (trie-window.ts): archive -> window=<N> writes the setting and
//     runs one pruning cycle at the head (the writer's pruner, trie-prune.ts), and so does a run
//     that leaves a window unchanged while its last cycle did not finish its sweep (stopped
//     midway: Meta.triePruned below Meta.trieFrom); window -> archive only while nothing was
//     pruned (the nodes below Meta.trieFrom are gone).
//  3. the block JSON rows (BlockJson) an earlier release wrote at import, deleted: hashes-only
//     block answers are written from the block's rows now; in batches, so an interrupted run
//     leaves fewer rows and the next one deletes the rest;
//     TxLookup rows of an earlier release moved to TxLookupShort (keyed by half the hash, the value
//     compact), the same way; BlockTxHashes rows of an
//     earlier release (the hashes alone, or extras without the header) rewritten with the block's
//     extras (its size, uncle hashes, withdrawals, total difficulty and header), the same way, so
//     a hashes-only block answer is one read;
//     each block's Logs rows (one per log, as earlier releases wrote them) rewritten as its one
//     LogBlocks row (columnar, compressed: logs/log-blocks.ts), the same way, a few blocks a batch;
//     each block's one recorded trace row (TxFrames, TxStateDiffs) cut into rows of
//     TRACE_ROW_TXS transactions (core trace-rows.ts), and the rows an earlier release stored
//     uncompressed, compressed (schema/trace-row-codec.ts), the same way;
//  4. the branch nodes of the state tries the datadir holds rewritten as deltas against the
//     parent block's (trie-deltas.ts), resumable, as the writer keeps them now;
//     the address-appearance index (Appearances) of a datadir written before it existed, built
//     from every block's rows as the import builds it, resumable (appearances/build.ts);
//  5. the sealed log segments, when an earlier release sealed them uncompressed beside their ready
//     JSON rows, or compressed with their logs' hashes: sealed again as spans are sealed now
//     (compressed without the hashes), the ready rows of sealed blocks deleted (reseal.ts);
//     else the spans the seal depth allows that are not sealed yet (a datadir written while the
//     depth was greater) sealed, as the writer seals them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bytesEqual, cutTraceRow } from '@chainnode/core';
import { DatadirEmptyError, openDb } from '../db.js';
import type { Db } from '../db.js';
import { EMPTY_STATE_ROOT, fillLatest, hasHistoryIndex, hasLatest, stageStateStep } from '../history/index.js';
import type { HistoryStats } from '../history/index.js';
import { encodeLogBlock, hasSpansToReseal, readBlockLogsSync, sealDueLogSegments } from '../logs/index.js';
import type { Reseal } from '../logs/index.js';
import type { StoredBody } from '../schema/index.js';
import {
  MetaKey,
  Prefix,
  blockExtras,
  blockLogRangeCodec,
  blockTxHashesCodec,
  bodyCodec,
  compressTraceRow,
  decodeBlockExtras,
  hashCodec,
  headCodec,
  readBodySync,
  splitBlockTxHashes,
  stageBody,
  tables,
  traceRowCompressed,
  traceRowKeyCodec,
  txLocationCodec,
  u64Codec,
} from '../schema/index.js';
import { tableRange } from './sizing.js';
import { buildAppearances } from '../appearances/build.js';
import {
  bodyHoldsTransactions,
  formatStateTrie,
  nodeBytes,
  putStateTrie,
  readStateTrie,
  readTrieFrom,
  readTriePruned,
  pruneUnfinished,
} from '../trie/index.js';
import type { PruneReport, RawNodeGet, StateTrieMode } from '../trie/index.js';
import { StoreWriter } from '../writer/index.js';
import { resealDatadirLogs } from './reseal.js';
import { convertTrieDeltas, stateRootAt } from './trie-deltas.js';
import type { TrieDeltaStats } from './trie-deltas.js';

export class ConvertRefusedError extends Error {}

export interface ConvertOptions {
  /** The state trie's retention to convert to (default: keep the datadir's). */
  stateTrie?: StateTrieMode | undefined;
  /** Blocks per history batch (default 64). */
  batchBlocks?: number | undefined;
  onProgress?: ((line: string) => void) | undefined;
}

export interface ConvertResult {
  head: bigint;
  /** Blocks whose change sets were written now (0: the datadir already kept state history). */
  historyBlocks: number;
  historyRows: number;
  historyBytes: number;
  /** StateLatest rows written now (0: the datadir already had them). */
  latestRows: number;
  stateTrie: { from: string; to: string };
  /** The pruning cycle run for a new window (undefined: none ran). */
  prune?: PruneReport | undefined;
  /** BlockJson rows deleted (0: the datadir held none). */
  blockJsonRows: number;
  /** TxLookup rows of an earlier release moved to TxLookupShort (0: the datadir held none). */
  txLookupRows: number;
  /** Branch nodes rewritten as deltas (trie-deltas.ts; rows 0: every one was, or none could be). */
  trieDeltas: TrieDeltaStats;
  /** BlockTxHashes rows rewritten with the block's extras (0: every row had them, header included). */
  blockTxHashesRows: number;
  /** Blocks whose Logs rows were rewritten as their LogBlocks row (0: none had Logs rows). */
  logBlocks: number;
  /** Blocks posted to the address-appearance index now (0: the datadir had the whole index). */
  appearanceBlocks: number;
  /**
   * Recorded trace rows (TxFrames, TxStateDiffs) of an earlier release, one a block, cut into rows
   * of TRACE_ROW_TXS transactions now (0: none was left).
   */
  traceRows: number;
  /** Recorded trace rows of 16 transactions an earlier release stored uncompressed, compressed. */
  traceRowsCompressed: number;
  /**
   * Bodies rows of an earlier release, their transactions inline, cut into the Bodies row of this
   * release and BodyTxs rows of BODY_ROW_TXS transactions now (0: none was left).
   */
  bodyRows: number;
  /** Log segment spans sealed now that the seal depth allows (with `logs`: none, it seals them all). */
  logSpansSealed: number;
  /** The log segments sealed again as they are sealed now (undefined: they already were). */
  logs?: Reseal | undefined;
}

/** Writes the flat state history of blocks [start, head]; resumable through Meta.stateHistoryBuilt. */
async function buildHistory(db: Db, head: bigint, opts: ConvertOptions): Promise<HistoryStats & { blocks: number }> {
  const genesisRoot = await stateRootAt(db, 0n);
  const raw: RawNodeGet = (hash) => tables.trieNodes.getSync(db, hash);
  const nodes = (hash: Uint8Array): Uint8Array | undefined => {
    const row = raw(hash);
    return row === undefined ? undefined : nodeBytes(row, raw);
  };
  if (!bytesEqual(genesisRoot, EMPTY_STATE_ROOT) && nodes(genesisRoot) === undefined)
    throw new ConvertRefusedError(
      'datadir: the state trie of block 0 is not held under its header state root (an upstream whose genesis header names another root, e.g. anvil --init); re-import it with `node-cli sync` instead',
    );
  const built = await tables.meta.get(db, MetaKey.StateHistoryBuilt);
  let n = built === undefined ? 0n : BigInt(Buffer.from(built).toString('utf8')) + 1n;
  let parentRoot = n === 0n ? EMPTY_STATE_ROOT : await stateRootAt(db, n - 1n);
  const stats: HistoryStats & { blocks: number } = { accounts: 0, slots: 0, bytes: 0, blocks: 0 };
  const per = opts.batchBlocks ?? 64;
  const alloc = (len: number): Uint8Array => new Uint8Array(len);
  const t0 = Date.now();
  while (n <= head) {
    const batch = db.batch();
    const last = n + BigInt(per) - 1n < head ? n + BigInt(per) - 1n : head;
    for (; n <= last; n++) {
      const root = await stateRootAt(db, n);
      await stageStateStep(batch, nodes, { number: n, parentRoot, root }, 'put', alloc, stats);
      parentRoot = root;
      stats.blocks++;
    }
    if (last === head) {
      tables.meta.put(batch, MetaKey.StateHistory, genesisRoot);
      batch.del(tables.meta.key(MetaKey.StateHistoryBuilt));
    } else tables.meta.put(batch, MetaKey.StateHistoryBuilt, Buffer.from(last.toString(), 'utf8'));
    await batch.write();
    const s = ((Date.now() - t0) / 1000).toFixed(0);
    opts.onProgress?.(`state history: block ${last} of ${head} (${stats.accounts + stats.slots} rows, ${s} s)`);
  }
  return stats;
}

/** Checks the trie retention change is possible, and writes the setting when it is. */
async function setStateTrie(db: Db, to: StateTrieMode): Promise<{ from: string; to: string; pruneNeeded: boolean }> {
  const from = await readStateTrie(db);
  const fromText = formatStateTrie(from);
  const toText = formatStateTrie(to);
  // Unchanged: a window whose last cycle was stopped midway (or never ran) is pruned now.
  if (fromText === toText)
    return {
      from: fromText,
      to: toText,
      pruneNeeded: to.kind === 'window' && pruneUnfinished(await readTrieFrom(db), await readTriePruned(db)),
    };
  const trieFrom = await readTrieFrom(db);
  if (to.kind === 'archive' && trieFrom > 0n)
    throw new ConvertRefusedError(
      `datadir: its state tries below block ${trieFrom} are pruned (${fromText}); an archive needs a re-import (node-cli sync into a new datadir with --state-trie archive)`,
    );
  const batch = db.batch();
  putStateTrie(batch, to);
  await batch.write();
  return { from: fromText, to: toText, pruneNeeded: to.kind === 'window' };
}

/** Rows read per batch of rewriteRows. */
const REWRITE_BATCH = 4096;

/**
 * Passes every row of table `prefix` to `change`, a batch of REWRITE_BATCH rows at a time, each
 * batch written before the next is read; the number of rows `change` staged a write for. An
 * interrupted run leaves rows rewritten and rows not: `change` must tell them apart.
 */
async function rewriteRows(
  db: Db,
  prefix: number,
  what: string,
  change: (key: Uint8Array, value: Uint8Array, batch: ReturnType<Db['batch']>) => boolean,
  opts: ConvertOptions,
  rowsPerBatch = REWRITE_BATCH,
): Promise<number> {
  const range = tableRange(prefix);
  let after: Uint8Array | undefined;
  let changed = 0;
  for (;;) {
    const rows = await db
      .iterator({ ...(after === undefined ? { gte: range.gte } : { gt: after }), lt: range.lt, limit: rowsPerBatch })
      .all();
    if (rows.length === 0) return changed;
    const batch = db.batch();
    for (const [k, v] of rows) if (change(k, v, batch)) changed++;
    await batch.write();
    after = (rows[rows.length - 1] as [Uint8Array, Uint8Array])[0];
    if (changed > 0) opts.onProgress?.(`${what}: ${changed}`);
  }
}

/** Rows of a block's recorded traces read per batch (160 KB each at mainnet's shape). */
const TRACE_ROWS_BATCH = 64;

/**
 * rewriteRows' change cutting the one recorded trace row a block an earlier release wrote (keyed
 * by the block number alone) into rows of TRACE_ROW_TXS transactions (core trace-rows.ts), in
 * the same batch as its deletion, stored compressed; a row already cut is compressed if an
 * earlier release stored it uncompressed (counted in `compressed`), else left.
 */
function cutTraceRows(
  table: typeof tables.txFrames,
  compressed: { rows: number },
): (key: Uint8Array, value: Uint8Array, batch: ReturnType<Db['batch']>) => boolean {
  return (key, value, batch) => {
    if (key.length === 11) {
      // A row of 16 transactions an earlier release stored uncompressed: compressed (trace-row-codec.ts).
      if (traceRowCompressed(value)) return false;
      const stored = compressTraceRow(value);
      if (stored === value) return false;
      batch.put(key, stored);
      compressed.rows++;
      return false;
    }
    if (key.length !== 9) return false;
    const rows = cutTraceRow(value);
    if (rows === undefined) return false;
    const { number } = traceRowKeyCodec.decode(key.subarray(1));
    batch.del(key);
    for (const [row, v] of rows.entries()) table.put(batch, { number, row }, v);
    return true;
  };
}

/** Bodies rows read per batch of the bodies' cut (70-120 KB each at mainnet's shape). */
const BODY_ROWS_BATCH = 64;

/**
 * rewriteRows' change cutting an earlier release's Bodies row (its transactions inline) into this
 * release's Bodies row (their count) and BodyTxs rows (schema.ts stageBody), in one batch; rows
 * already cut are left.
 */
function cutBodyRow(key: Uint8Array, value: Uint8Array, batch: ReturnType<Db['batch']>): boolean {
  if (!bodyHoldsTransactions(value)) return false;
  const row = bodyCodec.decode(value);
  const body: StoredBody = { size: row.size, transactions: row.inline ?? [], uncles: row.uncles };
  if (row.withdrawals !== undefined) body.withdrawals = row.withdrawals;
  stageBody(batch, hashCodec.decode(key.subarray(1)), body, (n) => new Uint8Array(n));
  return true;
}

/** rewriteRows' change deleting every row (BlockJson: no longer read, schema.ts). */
function dropRow(key: Uint8Array, _value: Uint8Array, batch: ReturnType<Db['batch']>): boolean {
  batch.del(key);
  return true;
}

/**
 * rewriteRows' change moving a TxLookup row of an earlier release to TxLookupShort, its value
 * compact (either form decodes), in the same batch as its deletion (schema.ts).
 */
function moveTxLocation(key: Uint8Array, value: Uint8Array, batch: ReturnType<Db['batch']>): boolean {
  tables.txLookupShort.put(batch, hashCodec.decode(key.subarray(1)), txLocationCodec.decode(value));
  batch.del(key);
  return true;
}

/**
 * rewriteRows' change rewriting a BlockTxHashes row of an earlier release (the hashes alone, or
 * extras without the header and total difficulty) with the extras of the canonical block of its
 * number (schema.ts); a row whose number has no canonical block, body, header or total difficulty
 * is left as it is.
 */
function withBlockExtras(db: Db): (key: Uint8Array, value: Uint8Array, batch: ReturnType<Db['batch']>) => boolean {
  return (key, value, batch) => {
    const { extras } = splitBlockTxHashes(value);
    if (extras !== undefined && decodeBlockExtras(extras).header !== undefined) return false;
    const number = u64Codec.decode(key.subarray(1));
    const hash = tables.canonical.getSync(db, number);
    if (hash === undefined) return false;
    const body = readBodySync(db, hash);
    const header = tables.headers.getSync(db, hash);
    const td = tables.totalDifficulty.getSync(db, hash);
    if (body === undefined || header === undefined || td === undefined) return false;
    const hashes = blockTxHashesCodec.decode(value).hashes;
    if (hashes.length !== body.transactions.length)
      throw new Error(`block ${number}: ${hashes.length} tx hashes for ${body.transactions.length} txs`);
    batch.put(key, blockTxHashesCodec.encode({ hashes, extras: blockExtras(body, header, td) }));
    return true;
  };
}

/** BlockLogs rows read per batch of the logs' rewrite (each block's logs are one new row). */
const LOG_BLOCKS_BATCH = 64;

/**
 * rewriteRows' change over BlockLogs: a block whose logs are Logs rows (an earlier release's, one
 * per log) gets its LogBlocks row, and its Logs rows are deleted in the same batch; a block that
 * has its LogBlocks row, or no logs, is left as it is.
 */
function logsAsBlock(db: Db): (key: Uint8Array, value: Uint8Array, batch: ReturnType<Db['batch']>) => boolean {
  return (key, value, batch) => {
    const range = blockLogRangeCodec.decode(value);
    if (range.count === 0 || tables.logBlocks.getSync(db, range.firstLogId) !== undefined) return false;
    const number = u64Codec.decode(key.subarray(1));
    const logs = readBlockLogsSync(db, number, range);
    batch.put(tables.logBlocks.key(range.firstLogId), encodeLogBlock(number, logs));
    for (let id = range.firstLogId; id < range.firstLogId + BigInt(range.count); id++) batch.del(tables.logs.key(id));
    return true;
  };
}

/**
 * Converts the datadir in place (it must not be open anywhere: DatadirInUseError). Joined datadirs
 * (no state of their own below the join) are refused. Safe to interrupt and run again.
 */
export async function convertDatadir(datadir: string, opts: ConvertOptions = {}): Promise<ConvertResult> {
  if (!existsSync(join(datadir, 'chain'))) throw new DatadirEmptyError(datadir);
  const db = await openDb(datadir, { create: false });
  let result: ConvertResult;
  let pruneNeeded = false;
  let reseal = false;
  try {
    if ((await tables.meta.get(db, MetaKey.FirstBlock)) !== undefined)
      throw new ConvertRefusedError(
        'datadir: it joined its chain at a block (proven state on demand); it keeps no state trie or history to convert',
      );
    const headRow = await tables.meta.get(db, MetaKey.Head);
    if (headRow === undefined) throw new DatadirEmptyError(datadir);
    const head = headCodec.decode(headRow).number;
    const hasHistory = (await tables.meta.get(db, MetaKey.StateHistory)) !== undefined;
    if (!hasHistory && (await readTrieFrom(db)) > 0n)
      throw new ConvertRefusedError('datadir: pruned state tries and no state history; re-import it');
    const h = hasHistory ? { accounts: 0, slots: 0, bytes: 0, blocks: 0 } : await buildHistory(db, head, opts);
    const latestRows = (await hasLatest(db)) && (await hasHistoryIndex(db)) ? 0 : await fillLatest(db);
    // Read with the history in place: a datadir without it counts as an archive.
    const target = opts.stateTrie ?? (await readStateTrie(db));
    const t = await setStateTrie(db, target);
    pruneNeeded = t.pruneNeeded;
    const blockJsonRows = await rewriteRows(db, Prefix.BlockJson, 'block JSON rows deleted', dropRow, opts);
    const txLookupRows = await rewriteRows(
      db,
      Prefix.TxLookup,
      'tx lookups moved to 16-byte keys',
      moveTxLocation,
      opts,
    );
    const blockTxHashesRows = await rewriteRows(
      db,
      Prefix.BlockTxHashes,
      'block tx hashes rewritten with the block extras',
      withBlockExtras(db),
      opts,
    );
    const logBlocks = await rewriteRows(
      db,
      Prefix.BlockLogs,
      'blocks whose log rows were rewritten as one row',
      logsAsBlock(db),
      opts,
      LOG_BLOCKS_BATCH,
    );
    let traceRows = 0;
    const traceRowsCompressed = { rows: 0 };
    for (const [table, what] of [
      [tables.txFrames, 'blocks whose recorded call frames were cut into rows of 16 transactions'],
      [tables.txStateDiffs, 'blocks whose recorded state changes were cut into rows of 16 transactions'],
    ] as const)
      traceRows += await rewriteRows(
        db,
        table.prefix,
        what,
        cutTraceRows(table, traceRowsCompressed),
        opts,
        TRACE_ROWS_BATCH,
      );
    const bodyRows = await rewriteRows(
      db,
      Prefix.Bodies,
      'block bodies whose transactions were cut into rows of 16',
      cutBodyRow,
      opts,
      BODY_ROWS_BATCH,
    );
    const appearanceBlocks = await buildAppearances(db, head, opts.onProgress);
    const trieDeltas = await convertTrieDeltas(db, head, opts.onProgress);
    reseal = await hasSpansToReseal(db);
    result = {
      trieDeltas,
      blockJsonRows,
      txLookupRows,
      blockTxHashesRows,
      logBlocks,
      appearanceBlocks,
      traceRows,
      traceRowsCompressed: traceRowsCompressed.rows,
      bodyRows,
      logSpansSealed: reseal ? 0 : await sealDueLogSegments(db, datadir),
      head,
      historyBlocks: h.blocks,
      historyRows: h.accounts + h.slots,
      historyBytes: h.bytes,
      latestRows,
      stateTrie: { from: t.from, to: t.to },
    };
  } finally {
    await db.close();
  }
  if (reseal) {
    opts.onProgress?.('log segments: sealing again, compressed without their hashes');
    result.logs = await resealDatadirLogs(datadir);
  }
  if (pruneNeeded) result.prune = await pruneOnce(datadir, opts);
  return result;
}

/** One pruning cycle at the head, through the writer (which owns the pruner and its ordering). */
async function pruneOnce(datadir: string, opts: ConvertOptions): Promise<PruneReport | undefined> {
  const writer = await StoreWriter.open(datadir, {
    prune: {
      onReport: (r) =>
        opts.onProgress?.(
          `state trie: ${r.phase}, window [${r.from}, ${r.head}], ${r.marked} nodes marked, ${r.scanned} scanned, ${r.deleted} deleted`,
        ),
    },
  });
  try {
    return await writer.pruneTrie();
  } finally {
    await writer.close();
  }
}
