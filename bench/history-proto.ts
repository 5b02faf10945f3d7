// `node bench/dist/history-proto.js --datadir <imported datadir> [--out <dir>] [--reads N]`:
// a bench-side PROTOTYPE of the flat state history the decision record proposes
// (docs/decisions/archive-state.md), built from an imported datadir and measured against the
// archive trie it would replace. Nothing in the store changes.
//
// 1. For each block N, the state change set: the archive tries of N-1 and N (the datadir's
//    TrieNodes rows, by their state roots) are walked side by side, skipping every subtree whose
//    reference is equal, which yields every account leaf and storage leaf that changed, with its
//    value after block N (empty when deleted).
// 2. Those go into a table of its own (a fresh LevelDB beside the datadir), keyed so that a
//    historical read is one reverse seek:
//      'a' ++ keccak(address)(32) ++ N(8)                    -> account RLP after block N
//      's' ++ keccak(address)(32) ++ keccak(slot)(32) ++ N(8) -> slot value RLP after block N
// 3. Measured: entries and key + value bytes per block, the table's size on disk after a
//    compaction against the trie nodes the same blocks added; a random historical slot read (one
//    seek) against the same read through the archive trie (a walk of trie nodes); and the cost
//    of a historical eth_getProof without trie history: rebuilding one contract's storage trie at
//    block N from the table (every slot of it, then the proof), for the hottest and a tail token.
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Level } from 'level';
import { RLP } from '@ethereumjs/rlp';
import { createMPT, createMerkleProof } from '@ethereumjs/mpt';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { Prefix, sizeOnDisk } from '@chainnode/store';
import { printRunRecord } from './src/run-record.js';
import { Rng } from './src/synth.js';
import { canonicalHead, canonicalStateRoot } from './src/raw-chain.js';

printRunRecord('bench:history-proto');

const arg = (name: string, dflt?: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const datadir = resolve(arg('datadir') ?? '');
const outDir = resolve(arg('out') ?? join(datadir, '..', 'history-proto'));
const reads = Number(arg('reads', '2000'));
const tokensArg = arg('tokens'); // comma-separated: hot token first, then a tail token

type Item = Uint8Array | Item[];
const EMPTY_ROOT = Buffer.from('56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421', 'hex');
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

const chain = new Level<Uint8Array, Uint8Array>(join(datadir, 'chain'), { keyEncoding: 'view', valueEncoding: 'view' });
await chain.open();
let nodeReads = 0;
async function node(hash: Uint8Array): Promise<Item[]> {
  nodeReads++;
  const key = new Uint8Array(33);
  key[0] = Prefix.TrieNodes;
  key.set(hash, 1);
  const v = await chain.get(key);
  if (v === undefined) throw new Error(`trie node ${hex(hash)} missing`);
  return RLP.decode(v) as Item[];
}

/** A node reference as found in a parent: a hash, an embedded node, or empty. */
async function resolveRef(ref: Item | undefined): Promise<Item[] | undefined> {
  if (ref === undefined) return undefined;
  if (ref instanceof Uint8Array) {
    if (ref.length === 0) return undefined;
    if (ref.length === 32) return node(ref);
    return RLP.decode(ref) as Item[];
  }
  return ref;
}

function nibbles(path: Uint8Array): number[] {
  const out: number[] = [];
  for (const b of path) out.push(b >> 4, b & 15);
  const flag = out[0] as number;
  return out.slice(flag & 1 ? 1 : 2);
}
const isLeaf = (path: Uint8Array): boolean => (path[0] as number) >> 4 >= 2;

/** A node seen as a branch at this depth: up to 16 children (as sub-views) and a value. */
interface View {
  children: (Item | View | undefined)[];
  value: Uint8Array | undefined;
}

async function view(n: Item[] | undefined): Promise<View | undefined> {
  if (n === undefined) return undefined;
  if (n.length === 17)
    return { children: n.slice(0, 16), value: (n[16] as Uint8Array).length > 0 ? (n[16] as Uint8Array) : undefined };
  const path = nibbles(n[0] as Uint8Array);
  const leaf = isLeaf(n[0] as Uint8Array);
  if (path.length === 0) return leaf ? { children: [], value: n[1] as Uint8Array } : view(await resolveRef(n[1]));
  const children: (Item | View | undefined)[] = [];
  const rest = path.slice(1);
  // The remainder as a synthetic node (a View), or the extension's child when nothing remains.
  children[path[0] as number] =
    rest.length === 0 && !leaf ? (n[1] as Item) : ({ rest, leaf, target: n[1] } as unknown as View);
  return { children, value: undefined };
}

interface Synthetic {
  rest: number[];
  leaf: boolean;
  target: Item;
}
async function expand(c: Item | View | undefined): Promise<View | undefined> {
  if (c === undefined) return undefined;
  if (c instanceof Uint8Array || Array.isArray(c)) return view(await resolveRef(c));
  const s = c as unknown as Synthetic;
  if (s.rest !== undefined) {
    if (s.rest.length === 0)
      return s.leaf ? { children: [], value: s.target as Uint8Array } : view(await resolveRef(s.target));
    const children: (Item | View | undefined)[] = [];
    children[s.rest[0] as number] =
      s.rest.length === 1 && !s.leaf
        ? s.target
        : ({ rest: s.rest.slice(1), leaf: s.leaf, target: s.target } as unknown as View);
    return { children, value: undefined };
  }
  return c as View;
}
const same = (a: Item | View | undefined, b: Item | View | undefined): boolean =>
  a instanceof Uint8Array && b instanceof Uint8Array && a.length === b.length && Buffer.compare(a, b) === 0;

/** Every leaf that differs between the two subtrees: (path nibbles, value after or undefined). */
async function diff(
  a: Item | View | undefined,
  b: Item | View | undefined,
  path: number[],
  out: { key: number[]; before: Uint8Array | undefined; after: Uint8Array | undefined }[],
): Promise<void> {
  if (a === undefined && b === undefined) return;
  if (same(a, b)) return;
  const [va, vb] = [await expand(a), await expand(b)];
  const before = va?.value;
  const after = vb?.value;
  if ((before === undefined) !== (after === undefined) || (before && after && Buffer.compare(before, after) !== 0))
    out.push({ key: path, before, after });
  for (let i = 0; i < 16; i++) {
    const [ca, cb] = [va?.children[i], vb?.children[i]];
    if (ca === undefined && cb === undefined) continue;
    await diff(ca, cb, [...path, i], out);
  }
}
const keyBytes = (nibs: number[]): Uint8Array => {
  const out = new Uint8Array(nibs.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = ((nibs[2 * i] as number) << 4) | (nibs[2 * i + 1] as number);
  return out;
};

const stateRootOf = (n: number): Promise<Uint8Array> => canonicalStateRoot(chain, n);
const head = await canonicalHead(chain);

rmSync(outDir, { recursive: true, force: true });
const proto = new Level<Uint8Array, Uint8Array>(outDir, { keyEncoding: 'view', valueEncoding: 'view' });
await proto.open();
const blockKey = (n: number): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
};
const cat = (...parts: Uint8Array[]): Uint8Array => Uint8Array.from(Buffer.concat(parts));

// Block 0: the genesis state, every leaf (as a change from nothing), so reads at any block work.
let accountsWritten = 0;
let slotsWritten = 0;
let protoBytes = 0;
let genesisBytes = 0;
const t0 = performance.now();
const c0 = process.cpuUsage();
let prevRoot: Uint8Array | undefined;
for (let n = 0; n <= head; n++) {
  const root = await stateRootOf(n);
  const changes: { key: number[]; before: Uint8Array | undefined; after: Uint8Array | undefined }[] = [];
  await diff(prevRoot, root, [], changes);
  const batch = proto.batch();
  let bytes = 0;
  for (const ch of changes) {
    const addr = keyBytes(ch.key);
    const k = cat(Uint8Array.of(0x61), addr, blockKey(n));
    const v = ch.after ?? new Uint8Array(0);
    batch.put(k, v);
    bytes += k.length + v.length;
    if (n > 0) accountsWritten++;
    const sBefore = ch.before ? ((RLP.decode(ch.before) as Uint8Array[])[2] as Uint8Array) : EMPTY_ROOT;
    const sAfter = ch.after ? ((RLP.decode(ch.after) as Uint8Array[])[2] as Uint8Array) : EMPTY_ROOT;
    if (hex(sBefore) === hex(sAfter)) continue;
    const slots: typeof changes = [];
    await diff(
      hex(sBefore) === hex(EMPTY_ROOT) ? undefined : sBefore,
      hex(sAfter) === hex(EMPTY_ROOT) ? undefined : sAfter,
      [],
      slots,
    );
    for (const s of slots) {
      const sk = cat(Uint8Array.of(0x73), addr, keyBytes(s.key), blockKey(n));
      const sv = s.after ?? new Uint8Array(0);
      batch.put(sk, sv);
      bytes += sk.length + sv.length;
      if (n > 0) slotsWritten++;
    }
  }
  await batch.write();
  if (n === 0) genesisBytes = bytes;
  else protoBytes += bytes;
  prevRoot = root;
  if (n % 50 === 0) process.stderr.write(`history-proto: block ${n}/${head}, ${changes.length} accounts changed\n`);
}
const buildSecs = (performance.now() - t0) / 1000;
const buildCpu = process.cpuUsage(c0);
await (proto as unknown as { compactRange(a: Uint8Array, b: Uint8Array): Promise<void> }).compactRange(
  Uint8Array.of(0),
  Uint8Array.of(0xff),
);
await proto.close();
const protoDisk = await sizeOnDisk(outDir);

// The trie nodes the same blocks added: the TrieNodes rows of the datadir (genesis included).
let trieRows = 0;
let trieBytes = 0;
for await (const [k, v] of chain.iterator({
  gte: Uint8Array.of(Prefix.TrieNodes),
  lt: Uint8Array.of(Prefix.TrieNodes + 1),
})) {
  trieRows++;
  trieBytes += k.length + v.length;
}

console.log(
  JSON.stringify({
    blocks: head,
    accountChangesPerBlock: Number((accountsWritten / head).toFixed(1)),
    slotChangesPerBlock: Number((slotsWritten / head).toFixed(1)),
    historyBytesPerBlock: Math.round(protoBytes / head),
    historyGenesisBytes: genesisBytes,
    historyDiskBytesCompacted: protoDisk,
    trieNodeRows: trieRows,
    trieNodeBytesIncludingGenesis: trieBytes,
    buildSeconds: Number(buildSecs.toFixed(1)),
    buildCpuSeconds: Number(((buildCpu.user + buildCpu.system) / 1e6).toFixed(1)),
    nodeReadsForDiff: nodeReads,
  }),
);

// Reads: random (contract, slot, block) from the table (one reverse seek) and through the trie.
const db = new Level<Uint8Array, Uint8Array>(outDir, { keyEncoding: 'view', valueEncoding: 'view' });
await db.open();
const slotKeys: Uint8Array[] = [];
for await (const k of db.keys({ gte: Uint8Array.of(0x73), lt: Uint8Array.of(0x74) })) {
  if (slotKeys.length < 200_000) slotKeys.push(k.subarray(1, 65));
}
const rng = new Rng(7);
const seekTimes: number[] = [];
const trieTimes: number[] = [];
async function historyRead(addrSlot: Uint8Array, n: number): Promise<Uint8Array | undefined> {
  for await (const [k, v] of db.iterator({
    lte: cat(Uint8Array.of(0x73), addrSlot, blockKey(n)),
    gte: cat(Uint8Array.of(0x73), addrSlot),
    reverse: true,
    limit: 1,
  })) {
    void k;
    return v;
  }
  return undefined;
}
/** The value at `key` (nibble path of its bytes) in the trie under `root`; undefined when absent. */
async function trieWalk(root: Uint8Array, key: Uint8Array): Promise<Uint8Array | undefined> {
  const want: number[] = [];
  for (const b of key) want.push(b >> 4, b & 15);
  let cur: Item[] | undefined = await node(root);
  let i = 0;
  while (cur !== undefined) {
    if (cur.length === 17) {
      if (i === want.length) return cur[16] as Uint8Array;
      cur = await resolveRef(cur[want[i++] as number]);
      continue;
    }
    const p = nibbles(cur[0] as Uint8Array);
    for (const x of p) if (want[i++] !== x) return undefined;
    if (isLeaf(cur[0] as Uint8Array)) return cur[1] as Uint8Array;
    cur = await resolveRef(cur[1]);
  }
  return undefined;
}
async function trieRead(hashedAddr: Uint8Array, hashedSlot: Uint8Array, n: number): Promise<Uint8Array | undefined> {
  const account = await trieWalk(await stateRootOf(n), hashedAddr);
  if (account === undefined) return undefined;
  const storageRoot = (RLP.decode(account) as Uint8Array[])[2] as Uint8Array;
  if (hex(storageRoot) === hex(EMPTY_ROOT)) return undefined;
  return trieWalk(storageRoot, hashedSlot);
}
let mismatches = 0;
for (let i = 0; i < reads && slotKeys.length > 0; i++) {
  const addrSlot = slotKeys[rng.int(slotKeys.length)] as Uint8Array;
  const n = 1 + rng.int(head);
  const a = performance.now();
  const v1 = await historyRead(addrSlot, n);
  const b = performance.now();
  const v2 = await trieRead(addrSlot.subarray(0, 32), addrSlot.subarray(32), n);
  const c = performance.now();
  seekTimes.push(b - a);
  trieTimes.push(c - b);
  const norm = (v: Uint8Array | undefined): string => (v === undefined || v.length === 0 ? '' : hex(v));
  if (norm(v1) !== norm(v2)) mismatches++;
}
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((x, y) => x - y);
  return Number(((s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? 0) * 1000).toFixed(0));
};
console.log(
  JSON.stringify({
    reads: seekTimes.length,
    historySeekUs: { p50: pct(seekTimes, 0.5), p99: pct(seekTimes, 0.99) },
    archiveTrieWalkUs: { p50: pct(trieTimes, 0.5), p99: pct(trieTimes, 0.99) },
    mismatches,
  }),
);

// Historical eth_getProof without trie history: rebuild one contract's storage trie at block N.
const tokens = (tokensArg ?? '').split(',').filter((t) => t.length > 0);
for (const token of tokens) {
  const hashed = keccak256(Buffer.from(token.replace(/^0x/, ''), 'hex'));
  const n = Math.max(1, Math.floor(head / 2));
  const a = performance.now();
  const latest = new Map<string, Uint8Array>();
  for await (const [k, v] of db.iterator({
    gte: cat(Uint8Array.of(0x73), hashed),
    lte: cat(Uint8Array.of(0x73), hashed, new Uint8Array(40).fill(0xff)),
  })) {
    const blockN = Number(Buffer.from(k.subarray(65)).readBigUInt64BE());
    if (blockN <= n) latest.set(hex(k.subarray(33, 65)), v);
  }
  const trie = await createMPT({});
  let slots = 0;
  for (const [slot, v] of latest) {
    if (v.length === 0) continue;
    await trie.put(Buffer.from(slot, 'hex'), v);
    slots++;
  }
  const someSlot = [...latest.keys()][0] ?? '00';
  await createMerkleProof(trie, Buffer.from(someSlot, 'hex'));
  const ms = performance.now() - a;
  // The rebuilt root must be the archive's storage root of the contract at N.
  const account = await trieReadAccount(hashed, n);
  const want = account === undefined ? '' : hex((RLP.decode(account) as Uint8Array[])[2] as Uint8Array);
  console.log(
    JSON.stringify({
      token,
      block: n,
      slots,
      rebuildMs: Number(ms.toFixed(1)),
      rootMatches: hex(trie.root()) === want,
    }),
  );
}
async function trieReadAccount(hashedAddr: Uint8Array, n: number): Promise<Uint8Array | undefined> {
  return trieWalk(await stateRootOf(n), hashedAddr);
}
await db.close();
await chain.close();
