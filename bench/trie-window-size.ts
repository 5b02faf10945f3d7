// `node bench/dist/trie-window-size.js --datadir <archive datadir> [--window 128] [--step 100]`: how the
// windowed trie's size grows with the chain. For heads h = step, 2*step, ..., the datadir's head: the
// trie nodes reachable from block h's state root alone (the live state at h), and from the roots of
// blocks [h - window + 1, h] (what `--state-trie window=<N>` keeps at head h, code rows aside), as node
// counts and key + value bytes (a TrieNodes row is a 33-byte key and the node's RLP). Per block of a
// chain of length L in window mode the trie costs (window set at L) / L: the live state, which grows
// with the accounts and slots the chain creates, plus `window` blocks of replaced nodes, which do not
// grow with L. The datadir must keep the archive trie (every root reachable); it is opened read-only
// in spirit (nothing is written) but LevelDB's lock means nothing else may have it open.
import { join, resolve } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { Prefix, nodeBytes } from '@chainnode/store';
import type { RawNodeGet } from '@chainnode/store';
import { Level } from 'level';
import { printRunRecord } from './src/run-record.js';
import { canonicalHead, canonicalStateRoot } from './src/raw-chain.js';

printRunRecord('bench:trie-window-size');

const arg = (name: string, fallback?: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const datadir = resolve(arg('datadir') ?? '');
const window = Number(arg('window', '128'));
const step = Number(arg('step', '100'));

type Nested = Uint8Array | Nested[];
const EMPTY_ROOT = '56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
const KEY_BYTES = 33;

const db = new Level<Uint8Array, Uint8Array>(join(datadir, 'chain'), {
  keyEncoding: 'view',
  valueEncoding: 'view',
  createIfMissing: false,
});
await db.open();

// Rows as stored: a delta's bases are read to rebuild it (their bytes count where they are reached).
const raw: RawNodeGet = (h) => db.getSync(Uint8Array.of(Prefix.TrieNodes, ...h));
const stateRoot = (n: number): Promise<Uint8Array> => canonicalStateRoot(db, n);
const head = (): Promise<number> => canonicalHead(db);

/** Nodes and key + value bytes reachable from `roots`, each node once, `seen` shared across calls. */
async function reach(roots: Uint8Array[], seen: Set<string>): Promise<{ nodes: number; bytes: number }> {
  let nodes = 0;
  let bytes = 0;
  const todo: { hash: Uint8Array; accounts: boolean }[] = roots.map((hash) => ({ hash, accounts: true }));
  while (todo.length > 0) {
    const batch = todo.splice(Math.max(0, todo.length - 512)).filter((v) => {
      const h = Buffer.from(v.hash).toString('hex');
      if (h === EMPTY_ROOT || seen.has(h)) return false;
      seen.add(h);
      return true;
    });
    if (batch.length === 0) continue;
    const values = await db.getMany(batch.map((v) => Uint8Array.of(Prefix.TrieNodes, ...v.hash)));
    for (let i = 0; i < batch.length; i++) {
      const v = batch[i] as { hash: Uint8Array; accounts: boolean };
      const value = values[i];
      if (value === undefined)
        throw new Error(`trie node ${Buffer.from(v.hash).toString('hex')} missing: an archive datadir is needed`);
      nodes++;
      bytes += KEY_BYTES + value.length;
      children(RLP.decode(nodeBytes(value, raw)) as Nested, v.accounts, todo);
    }
  }
  return { nodes, bytes };
}

function children(node: Nested, accounts: boolean, out: { hash: Uint8Array; accounts: boolean }[]): void {
  const stack: Nested[] = [node];
  while (stack.length > 0) {
    const n = stack.pop() as Nested;
    if (!Array.isArray(n)) continue;
    const ref = (r: Nested) => {
      if (Array.isArray(r)) stack.push(r);
      else if (r.length === 32) out.push({ hash: r, accounts });
    };
    if (n.length === 17) for (let i = 0; i < 16; i++) ref(n[i] as Nested);
    else if (n.length === 2) {
      const leaf = ((n[0] as Uint8Array)[0] as number) >> 4 >= 2;
      if (!leaf) ref(n[1] as Nested);
      else if (accounts) {
        const account = RLP.decode(n[1] as Uint8Array) as Nested;
        const root = Array.isArray(account) && account.length === 4 ? (account[2] as Uint8Array) : undefined;
        if (root !== undefined && root.length === 32) out.push({ hash: root, accounts: false });
      }
    }
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const top = await head();
console.log(`datadir ${datadir}: head ${top}; window ${window}`);
console.log(
  'head | live state at head: nodes, bytes | window set: nodes, bytes | window set per block of the chain | replaced nodes per block in the window',
);
const heads: number[] = [];
for (let h = step; h < top; h += step) heads.push(h);
heads.push(top);
for (const h of heads) {
  const seen = new Set<string>();
  const live = await reach([await stateRoot(h)], seen);
  const roots: Uint8Array[] = [];
  for (let n = Math.max(0, h - window + 1); n < h; n++) roots.push(await stateRoot(n));
  const older = await reach(roots, seen);
  const all = { nodes: live.nodes + older.nodes, bytes: live.bytes + older.bytes };
  const span = Math.min(window, h + 1) - 1;
  console.log(
    `${h} | ${fmt(live.nodes)}, ${fmt(live.bytes)} | ${fmt(all.nodes)}, ${fmt(all.bytes)} | ${fmt(all.bytes / (h + 1))} | ${span > 0 ? fmt(older.bytes / span) : '-'}`,
  );
}
await db.close();
