// `node bench/dist/trie-delta.js --datadir <archive datadir> [--from 1] [--chains 4,8,16,0]`: what the
// archive trie would cost if a node were stored as a delta against the node at the same path in the
// parent block's trie. For each block, its state trie (and every storage trie whose root changed) is
// walked beside its parent's, pairing nodes by path; a node whose hash differs from the parent's at
// its path is a node the block wrote. Stored whole it costs a TrieNodes row (33-byte key + RLP).
// Stored as a delta against a branch at the same path it costs the key, the base's hash, a byte of
// chain depth, a 2-byte bitmask of the children that changed and their references (a 32-byte hash
// or the inline node). Reading a delta node takes its base first, so a chain of deltas is cut every
// `chain` versions of a path (a whole node then; 0: never cut). Leaves and extensions are counted
// whole (a leaf's value changes as a whole; extensions are small). Prints bytes per block (keys and
// values, before LevelDB's compression: hashes do not compress) for each chain cut. The datadir must
// keep the archive trie; nothing is written, but LevelDB's lock means nothing else may have it open.
import { join, resolve } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { Prefix } from '@chainnode/store';
import { Level } from 'level';
import { canonicalHead, canonicalStateRoot } from './src/raw-chain.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:trie-delta');

const arg = (name: string, fallback?: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const datadir = resolve(arg('datadir') ?? '');
const from = Number(arg('from', '1'));
const chains = (arg('chains', '4,8,16,0') as string).split(',').map(Number);

type Nested = Uint8Array | Nested[];
const KEY_BYTES = 33;
const BASE_REF = 32 + 1 + 2;
const EMPTY_ROOT = Buffer.from('56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421', 'hex');

const db = new Level<Uint8Array, Uint8Array>(join(datadir, 'chain'), {
  keyEncoding: 'view',
  valueEncoding: 'view',
  createIfMissing: false,
});
await db.open();

const nodeKey = (hash: Uint8Array): Uint8Array => {
  const k = new Uint8Array(33);
  k[0] = Prefix.TrieNodes;
  k.set(hash, 1);
  return k;
};
const read = (hash: Uint8Array): Nested[] => {
  const raw = db.getSync(nodeKey(hash));
  if (raw === undefined) throw new Error(`trie node ${Buffer.from(hash).toString('hex')} missing`);
  return RLP.decode(raw) as Nested[];
};
const isHash = (r: Nested | undefined): r is Uint8Array => r instanceof Uint8Array && r.length === 32;
const sameRef = (a: Nested | undefined, b: Nested | undefined): boolean =>
  a !== undefined && b !== undefined && Buffer.from(RLP.encode(a)).equals(Buffer.from(RLP.encode(b)));
/** A child reference resolved to its node (a hash read, an inline node as it is); undefined: empty. */
const resolveRef = (r: Nested | undefined): Nested[] | undefined => {
  if (r === undefined || (r instanceof Uint8Array && r.length === 0)) return undefined;
  return isHash(r) ? read(r) : (r as Nested[]);
};
const nibbleLen = (hp: Uint8Array): number => ((hp[0] as number) & 0x10 ? 1 : 0) + 2 * (hp.length - 1);
const isLeaf = (n: Nested[]): boolean => n.length === 2 && ((((n[0] as Uint8Array)[0] as number) >> 4) & 2) === 2;

/** Per chain cut: the depth of the version each path holds now. */
const depths = chains.map(() => new Map<string, number>());
const totals = { whole: 0, nodes: 0, branches: 0, byChain: chains.map(() => 0) };

/**
 * Walks node reference `now` beside `before` (the same path in the parent's trie), counting the nodes
 * `now` has that `before` does not. `path` names the path (trie id and nibbles) for the chain depths;
 * `state`: the account trie (its leaves hold accounts whose storage tries are walked too).
 */
function walk(now: Nested | undefined, before: Nested | undefined, path: string, state: boolean): void {
  if (now === undefined || sameRef(now, before)) return;
  const node = resolveRef(now);
  if (node === undefined) return;
  const old = resolveRef(before);
  const stored = isHash(now);
  const size = stored ? KEY_BYTES + RLP.encode(node).length : 0;
  if (stored) {
    totals.whole += size;
    totals.nodes++;
  }
  if (node.length === 17) {
    const base = old !== undefined && old.length === 17 ? old : undefined;
    let delta = KEY_BYTES + BASE_REF;
    for (let i = 0; i < 16; i++) {
      const c = node[i] as Nested;
      const b = base?.[i] as Nested | undefined;
      if (base !== undefined && sameRef(c, b)) continue;
      delta += RLP.encode(c).length;
    }
    if (stored) {
      totals.branches++;
      chains.forEach((cut, k) => {
        const d = depths[k] as Map<string, number>;
        const prev = d.get(path);
        // A whole node has depth 0, a delta its base's + 1 (a path unseen so far: its base whole).
        const next = (prev ?? 0) + 1;
        const whole = base === undefined || (cut > 0 && next > cut) || delta >= size;
        d.set(path, whole ? 0 : next);
        totals.byChain[k] = (totals.byChain[k] as number) + (whole ? size : delta);
      });
    }
    for (let i = 0; i < 16; i++)
      walk(node[i] as Nested, base?.[i] as Nested | undefined, `${path}${i.toString(16)}`, state);
    return;
  }
  // Leaves and extensions: whole.
  totals.byChain.forEach((v, k) => {
    totals.byChain[k] = v + size;
  });
  const hp = node[0] as Uint8Array;
  const same = old !== undefined && old.length === 2 && Buffer.from(old[0] as Uint8Array).equals(Buffer.from(hp));
  if (!isLeaf(node)) {
    walk(node[1], same ? (old as Nested[])[1] : undefined, `${path}e${nibbleLen(hp)}`, state);
    return;
  }
  if (!state) return;
  // An account: walk its storage trie beside the parent's (same key: same account).
  const acct = RLP.decode(node[1] as Uint8Array) as Uint8Array[];
  const oldAcct = same ? (RLP.decode((old as Nested[])[1] as Uint8Array) as Uint8Array[]) : undefined;
  const root = acct[2] as Uint8Array;
  if (Buffer.from(root).equals(EMPTY_ROOT)) return;
  const oldRoot = oldAcct?.[2];
  const id = `s${path}${Buffer.from(hp).toString('hex')}:`;
  walk(root, oldRoot !== undefined && !Buffer.from(oldRoot).equals(EMPTY_ROOT) ? oldRoot : undefined, id, false);
}

const head = await canonicalHead(db);
const t0 = Date.now();
// The depths of the paths live at block from-1: their versions are counted from there (whole).
for (let n = from; n <= head; n++) walk(await canonicalStateRoot(db, n), await canonicalStateRoot(db, n - 1), '', true);
await db.close();
const blocks = head - from + 1;
const kb = (b: number): string => (b / blocks / 1024).toFixed(1);
console.log(
  `blocks ${from}-${head} (${blocks}), ${((Date.now() - t0) / 1000).toFixed(0)} s: ${Math.round(totals.nodes / blocks)} nodes written per block, ${Math.round(totals.branches / blocks)} of them branches`,
);
console.log(`whole nodes (today): ${kb(totals.whole)} KB per block (key + value bytes)`);
chains.forEach((cut, k) => {
  console.log(
    `branches as deltas, a whole node every ${cut === 0 ? 'never' : `${cut} versions`}: ${kb(totals.byChain[k] as number)} KB per block (${(((totals.byChain[k] as number) / totals.whole) * 100).toFixed(0)}%)`,
  );
});
