// How `db info` and `db compact` print what the store measured: aligned-free text lines (the
// separator ' | ' as the store-cost bench prints them), or one JSON object.
import type { CompactResult, ConvertResult, DatadirSizes, StateLayout } from '@chainnode/store';

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

export function layoutText(l: StateLayout): string {
  const history = l.stateHistory
    ? 'flat state history kept (AccountHistory, StorageHistory)'
    : 'no flat state history (reads walk the trie)';
  const how =
    l.anchorState === 'whole'
      ? `its state downloaded whole, every later block's replicated`
      : l.anchorState === 'pending'
        ? `its state being downloaded`
        : 'proven state nodes';
  const joined = l.firstBlock !== undefined ? `; joined its chain at block ${l.firstBlock} (${how})` : '';
  const trie =
    l.trieFrom === undefined
      ? `${l.trie} (every block's nodes)`
      : `${l.trie} (the last blocks' nodes, complete from block ${l.trieFrom}; below it state from the flat history, no proofs)`;
  return `state: ${history}; trie: ${trie}${joined}`;
}

export function infoText(s: DatadirSizes): string {
  const blocks = s.head === undefined ? 'no block' : `head ${s.head}`;
  const lines = [
    `datadir ${s.datadir}: ${blocks}, ${fmt(s.totalBytes)} bytes on disk`,
    layoutText(s.layout),
    "table | group | rows | key+value bytes | disk bytes (LevelDB's estimate, exact after db compact)",
  ];
  for (const t of s.tables)
    if (t.rows > 0)
      lines.push(`${t.table} | ${t.group} | ${fmt(t.rows)} | ${fmt(t.keyBytes + t.valueBytes)} | ${fmt(t.diskBytes)}`);
  lines.push(`log segment files | log segments | ${s.segmentFiles} files | ${fmt(s.segmentBytes)} | (same)`);
  lines.push('group | key+value bytes | disk bytes');
  for (const g of s.groups) lines.push(`${g.group} | ${fmt(g.keyValueBytes)} | ${fmt(g.diskBytes)}`);
  return lines.join('\n');
}

export function infoJson(s: DatadirSizes): unknown {
  return {
    ...s,
    head: s.head?.toString() ?? null,
    layout: { ...s.layout, firstBlock: s.layout.firstBlock?.toString(), trieFrom: s.layout.trieFrom?.toString() },
  };
}

export function compactText(datadir: string, r: CompactResult): string {
  const seg =
    r.segments.truncatedBytes > 0
      ? `; log segment files: ${fmt(r.segments.truncatedBytes)} bytes past their recorded length cut (${r.segments.removedFiles} files removed)`
      : '';
  return `datadir ${datadir} compacted: ${fmt(r.bytesBefore)} -> ${fmt(r.bytesAfter)} bytes on disk${seg}`;
}

/** `rowTxs`: transactions a body row and a recorded trace row hold (the store's and core's; passed in so this module loads neither). */
export function convertText(datadir: string, r: ConvertResult, rowTxs: { body: number; trace: number }): string {
  const kept =
    r.historyBlocks > 0
      ? `flat state history built for ${fmt(r.historyBlocks)} blocks (${fmt(r.historyRows)} rows, ${fmt(r.historyBytes)} key + value bytes)`
      : 'flat state history already kept';
  const history = `${kept}${r.latestRows > 0 ? ` (${fmt(r.latestRows)} latest-change rows written)` : ''}`;
  const trie =
    r.stateTrie.from === r.stateTrie.to
      ? `state trie: ${r.stateTrie.to} (unchanged)`
      : `state trie: ${r.stateTrie.from} -> ${r.stateTrie.to}`;
  const prune =
    r.prune === undefined
      ? ''
      : r.prune.phase === 'done'
        ? `; pruned: ${fmt(r.prune.deleted)} of ${fmt(r.prune.scanned)} nodes deleted, ${fmt(r.prune.marked)} kept for blocks ${r.prune.from}-${r.prune.head}`
        : `; pruning ${r.prune.phase} after ${fmt(r.prune.deleted)} nodes deleted${r.prune.error === undefined ? '' : ` (${r.prune.error})`}: run db convert again to finish it`;
  const blockJson = r.blockJsonRows > 0 ? `; ${fmt(r.blockJsonRows)} block JSON rows deleted` : '';
  const txLookup = r.txLookupRows > 0 ? `; ${fmt(r.txLookupRows)} tx lookups moved to 16-byte keys` : '';
  const txHashes =
    r.blockTxHashesRows > 0 ? `; ${fmt(r.blockTxHashesRows)} block tx hash rows rewritten with the block extras` : '';
  const logBlocks = r.logBlocks > 0 ? `; ${fmt(r.logBlocks)} blocks' log rows rewritten as one row each` : '';
  const appearances = r.appearanceBlocks > 0 ? `; ${fmt(r.appearanceBlocks)} blocks' address appearances indexed` : '';
  const bodyRows =
    r.bodyRows > 0 ? `; ${fmt(r.bodyRows)} block bodies cut into rows of ${rowTxs.body} transactions` : '';
  const traceRows =
    r.traceRows > 0
      ? `; ${fmt(r.traceRows)} one-a-block recorded trace rows (frames, state changes) cut into rows of ${rowTxs.trace} transactions`
      : '';
  const traceCompressed =
    r.traceRowsCompressed > 0 ? `; ${fmt(r.traceRowsCompressed)} recorded trace rows compressed` : '';
  const deltas =
    r.trieDeltas.rows > 0
      ? `; ${fmt(r.trieDeltas.rows)} trie branch nodes rewritten as deltas (${fmt(r.trieDeltas.bytesBefore)} -> ${fmt(r.trieDeltas.bytesAfter)} bytes)`
      : '';
  const sealed = r.logSpansSealed > 0 ? `; ${fmt(r.logSpansSealed)} log segment spans sealed` : '';
  const logs =
    r.logs !== undefined
      ? `; log segments sealed again (compressed, without their hashes): ${fmt(r.logs.bytesBefore)} -> ${fmt(r.logs.bytesAfter)} bytes`
      : '';
  return `datadir ${datadir} at block ${r.head} converted: ${history}; ${trie}${prune}${blockJson}${txLookup}${txHashes}${logBlocks}${bodyRows}${traceRows}${traceCompressed}${appearances}${deltas}${sealed}${logs} (run db compact to return the freed space)`;
}
