// `node bench/dist/store-cost.js --datadir <dir> [--chain <export dir>] [--json <file>]`: what the
// store costs per block, by table: rows, key + value bytes (before LevelDB's compression) and
// LevelDB's own estimate of the compressed bytes on disk (approximateSize of the table's key
// range), for every table of packages/store/src/schema/schema.ts (Prefix), plus the sealed log segment
// files. With --chain (an export written by `npm run bench:chain -- --datadir`, which keeps
// growth.json: per block, the trie nodes its execution handed to the store against the storage
// slots and accounts it wrote), fits trie nodes per block = a x storage writes + b x accounts
// touched (least squares) and prints the archive's cost as a formula of the block count.
// Nothing else may have the datadir open (LevelDB's lock).
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { measureDatadir } from '@chainnode/store';
import type { BlockGrowth } from './src/mainnet-shape/generator.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:store-cost');

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const datadir = resolve(arg('datadir') ?? '');
const chain = arg('chain');

// The store's own sizing (`node-cli db info` prints the same, in bytes rather than per block).
const sizes = await measureDatadir(datadir);
const head = Number(sizes.head ?? 0n);
const { tables: rows, segmentFiles, segmentBytes, totalBytes: total } = sizes;
const blocks = head + 1; // genesis included

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
console.log(`datadir ${datadir}: head ${head}, ${fmt(total)} bytes on disk (${fmt(total / blocks)} per block)`);
console.log(
  `state: ${sizes.layout.stateHistory ? 'flat state history kept' : 'no flat state history'}; trie: ${sizes.layout.trie}`,
);
console.log('table | group | rows | key+value bytes per block | approx. disk bytes per block');
for (const r of rows) {
  if (r.rows === 0) continue;
  if (r.table === 'Meta') {
    console.log(
      `Meta | fixed, not per block (genesis.json, chain config, head) | ${r.rows} | ${fmt(r.keyBytes + r.valueBytes)} in all | -`,
    );
    continue;
  }
  console.log(
    `${r.table} | ${r.group} | ${fmt(r.rows)} | ${fmt((r.keyBytes + r.valueBytes) / blocks)} | ${fmt(r.diskBytes / blocks)}`,
  );
}
console.log(`log segment files | log segments | ${segmentFiles} files | ${fmt(segmentBytes / blocks)} | (same)`);
console.log(`of TrieNodes: contract code ${fmt(sizes.codeRows)} rows, ${fmt(sizes.codeBytes)} bytes`);
console.log('group | key+value bytes per block | approx. disk bytes per block');
for (const g of sizes.groups)
  if (g.group !== 'meta') console.log(`${g.group} | ${fmt(g.keyValueBytes / blocks)} | ${fmt(g.diskBytes / blocks)}`);

let fit: Record<string, number> | undefined;
if (chain !== undefined) {
  const growth = JSON.parse(readFileSync(join(resolve(chain), 'growth.json'), 'utf8')) as BlockGrowth[];
  const inDatadir = growth.filter((g) => g.number <= head);
  // Least squares without intercept: nodes = a * writes + b * accounts.
  let sww = 0;
  let saa = 0;
  let swa = 0;
  let swn = 0;
  let san = 0;
  let nodes = 0;
  let bytes = 0;
  let writes = 0;
  let accounts = 0;
  for (const g of inDatadir) {
    sww += g.storageWrites ** 2;
    saa += g.accountsTouched ** 2;
    swa += g.storageWrites * g.accountsTouched;
    swn += g.storageWrites * g.trieNodes;
    san += g.accountsTouched * g.trieNodes;
    nodes += g.trieNodes;
    bytes += g.trieBytes;
    writes += g.storageWrites;
    accounts += g.accountsTouched;
  }
  const det = sww * saa - swa * swa;
  const a = (swn * saa - san * swa) / det;
  const b = (san * sww - swn * swa) / det;
  const n = inDatadir.length;
  console.log(
    'TrieNodes above includes the genesis state; the per-block trie cost is the growth below (nodes the blocks added)',
  );
  fit = {
    blocks: n,
    storageWritesPerBlock: writes / n,
    accountsTouchedPerBlock: accounts / n,
    trieNodesPerBlock: nodes / n,
    trieBytesPerBlock: bytes / n,
    bytesPerNode: bytes / nodes,
    nodesPerStorageWrite: a,
    nodesPerAccountTouched: b,
    nodesPerWriteAlone: nodes / writes,
  };
  console.log(
    `growth over ${n} blocks: ${fmt(writes / n)} storage writes and ${fmt(accounts / n)} accounts touched per block; ` +
      `${fmt(nodes / n)} trie nodes (${fmt(bytes / n)} bytes, ${(bytes / nodes).toFixed(0)} per node) per block; ` +
      `fit: nodes = ${a.toFixed(2)} x storage writes + ${b.toFixed(2)} x accounts touched`,
  );
}
const json = arg('json');
if (json !== undefined) {
  writeFileSync(json, JSON.stringify({ datadir, head, total, rows, segmentFiles, segmentBytes, fit }, null, 1));
}
