// What a datadir holds, table by table: rows, key + value bytes (before LevelDB's compression)
// and LevelDB's estimate of the bytes on disk (approximateSize of the table's key range), for
// every table of schema.ts (Prefix), plus the sealed log segment files and the state layout.
// `node-cli db info` prints it; bench/store-cost.ts reports it per block.
import type { Db } from '../db.js';
import { openDb } from '../db.js';
import { sizeOnDisk } from '../disk.js';
import { stateHistoryRoot } from '../history/index.js';
import { MetaKey, Prefix, tables, u64Codec } from '../schema/index.js';
import { segmentFileSizes } from '../logs/index.js';
import { formatStateTrie, readStateTrie, readTrieFrom } from '../trie/index.js';

/** The group of every table, as docs/performance reports the store's cost. */
export const TABLE_GROUP: Readonly<Record<keyof typeof Prefix, string>> = {
  Meta: 'meta',
  Canonical: 'headers',
  HashToNumber: 'headers',
  Headers: 'headers',
  TotalDifficulty: 'headers',
  Bodies: 'bodies',
  BodyTxs: 'bodies',
  Senders: 'bodies',
  BlockTxHashes: 'bodies',
  TxLookup: 'bodies',
  TxLookupShort: 'bodies',
  Receipts: 'receipts',
  Blooms: 'receipts',
  BlockLogs: 'log rows and index',
  Logs: 'log rows and index',
  LogBlocks: 'log rows and index',
  LogIndex: 'log rows and index',
  Appearances: 'address appearances',
  TxFrames: 'recorded call frames',
  FrameBlooms: 'recorded call frames',
  FrameAppearances: 'recorded call frames',
  FrameAddresses: 'recorded call frames',
  TxStateDiffs: 'recorded state diffs',
  BlockJson: 'ready JSON',
  AddressLogsJson: 'ready JSON',
  LogSegments: 'log segments',
  TrieNodes: 'trie nodes',
  AccountHistory: 'state history',
  StorageHistory: 'state history',
  StateLatest: 'state history',
  HistoryIndex: 'state history',
  StateChanges: 'state history',
};

/** The group the sealed log segment files count in. */
export const SEGMENT_GROUP = 'log segments';

export interface TableSize {
  table: keyof typeof Prefix;
  prefix: number;
  group: string;
  rows: number;
  keyBytes: number;
  valueBytes: number;
  /** LevelDB's estimate of the table's bytes on disk (compressed; exact only after compaction). */
  diskBytes: number;
}

export interface GroupSize {
  group: string;
  /** Key + value bytes (the segment files' bytes for the log segments). */
  keyValueBytes: number;
  diskBytes: number;
}

/** How the datadir keeps state. */
export interface StateLayout {
  /** AccountHistory/StorageHistory kept for every block (Meta.stateHistory). */
  stateHistory: boolean;
  /** Trie nodes kept (Meta.stateTrie, formatStateTrie): every block's ("archive") or the last N blocks' ("window=N"). */
  trie: string;
  /** With a window: the lowest block whose trie is complete (Meta.trieFrom; 0: nothing pruned yet). */
  trieFrom?: bigint;
  /** A datadir that joined its chain above genesis: its first block. */
  firstBlock?: bigint;
  /** A joined datadir's first-block state (Meta.anchorState): downloaded or being downloaded; absent: proven on demand. */
  anchorState?: 'pending' | 'whole';
}

export interface DatadirSizes {
  datadir: string;
  /** The greatest canonical block number (undefined: no block). */
  head: bigint | undefined;
  layout: StateLayout;
  tables: TableSize[];
  segmentFiles: number;
  segmentBytes: number;
  /** The tables and segment files by group, in the order of their first table. */
  groups: GroupSize[];
  /** Of TrieNodes: contract code rows ('c' ++ codeHash keys) and their key + value bytes. */
  codeRows: number;
  codeBytes: number;
  /** Bytes of every file below the datadir (LevelDB's log and uncompacted files included). */
  totalBytes: number;
}

/** classic-level's own methods; `level`'s type declares only the portable subset. */
export type NativeDb = Db & {
  approximateSize(start: Uint8Array, end: Uint8Array): Promise<number>;
  compactRange(start: Uint8Array, end: Uint8Array): Promise<void>;
};

/** The key range of one table: every key starting with its prefix byte. */
export function tableRange(prefix: number): { gte: Uint8Array; lt: Uint8Array } {
  return { gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) };
}

/** One table's rows and bytes, read in full (code rows counted apart for TrieNodes). */
async function sizeTable(db: NativeDb, table: keyof typeof Prefix, code: { rows: number; bytes: number }) {
  const prefix = Prefix[table];
  const range = tableRange(prefix);
  const t: TableSize = { table, prefix, group: TABLE_GROUP[table], rows: 0, keyBytes: 0, valueBytes: 0, diskBytes: 0 };
  let head: bigint | undefined;
  for await (const [k, v] of db.iterator(range)) {
    t.rows++;
    t.keyBytes += k.length;
    t.valueBytes += v.length;
    if (prefix === Prefix.Canonical) head = Buffer.from(k.buffer, k.byteOffset + 1, 8).readBigUInt64BE();
    // Contract code: 'c' ++ codeHash (33-byte key after the prefix); every other row is a node.
    if (prefix === Prefix.TrieNodes && k.length === 34 && k[1] === 0x63) {
      code.rows++;
      code.bytes += k.length + v.length;
    }
  }
  t.diskBytes = await db.approximateSize(range.gte, range.lt);
  return { size: t, head };
}

async function stateLayout(db: Db): Promise<StateLayout> {
  const first = await tables.meta.get(db, MetaKey.FirstBlock);
  const anchorRaw = await tables.meta.get(db, MetaKey.AnchorState);
  const anchor = anchorRaw === undefined ? undefined : Buffer.from(anchorRaw).toString('utf8');
  const trie = await readStateTrie(db);
  return {
    stateHistory: (await stateHistoryRoot(db)) !== undefined,
    trie: formatStateTrie(trie),
    ...(trie.kind === 'window' ? { trieFrom: await readTrieFrom(db) } : {}),
    ...(first !== undefined ? { firstBlock: u64Codec.decode(first) } : {}),
    ...(anchor === 'pending' || anchor === 'whole' ? { anchorState: anchor } : {}),
  };
}

function groupSizes(list: readonly TableSize[], segmentBytes: number): GroupSize[] {
  const groups = new Map<string, GroupSize>();
  for (const t of list) {
    const g = groups.get(t.group) ?? { group: t.group, keyValueBytes: 0, diskBytes: 0 };
    g.keyValueBytes += t.keyBytes + t.valueBytes;
    g.diskBytes += t.diskBytes;
    groups.set(t.group, g);
  }
  const seg = groups.get(SEGMENT_GROUP) ?? { group: SEGMENT_GROUP, keyValueBytes: 0, diskBytes: 0 };
  seg.keyValueBytes += segmentBytes;
  seg.diskBytes += segmentBytes;
  groups.set(SEGMENT_GROUP, seg);
  return [...groups.values()];
}

/**
 * Measures the datadir (read in full: seconds per GB). Nothing else may have it open (LevelDB's
 * lock: DatadirInUseError); `onTable` hears each table before it is read.
 */
export async function measureDatadir(
  datadir: string,
  opts: { onTable?: (table: string, index: number, count: number) => void } = {},
): Promise<DatadirSizes> {
  const db = (await openDb(datadir, { create: false })) as NativeDb;
  const list: TableSize[] = [];
  const code = { rows: 0, bytes: 0 };
  let head: bigint | undefined;
  let layout: StateLayout;
  try {
    const names = Object.keys(Prefix) as (keyof typeof Prefix)[];
    for (const [i, table] of names.entries()) {
      opts.onTable?.(table, i, names.length);
      const r = await sizeTable(db, table, code);
      list.push(r.size);
      if (r.head !== undefined) head = r.head;
    }
    layout = await stateLayout(db);
  } finally {
    await db.close();
  }
  const seg = segmentFileSizes(datadir);
  return {
    datadir,
    head,
    layout,
    tables: list,
    segmentFiles: seg.files,
    segmentBytes: seg.bytes,
    groups: groupSizes(list, seg.bytes),
    codeRows: code.rows,
    codeBytes: code.bytes,
    totalBytes: await sizeOnDisk(datadir),
  };
}
