// `db convert`'s step that turns a datadir's whole branch nodes into deltas (node-delta.ts), as the
// writer keeps them now: block by block from the first one whose parent's trie is held, its state
// trie is walked beside its parent's, path by path (the writer's pairing, trie-db.ts), and each
// branch the block wrote is rewritten as a delta against the parent's branch at its path.
// Rows are only ever rewritten once and never after serving as a base (`seen`), and a delta is
// not written when its base's chain already leads back to the node (no cycle, whatever an
// interrupted run left). Resumable: Meta.trieDeltas records the last block done, in the batch of
// the rows it rewrote. A row reads the same node whole or as a delta, so a run stopped anywhere
// leaves a datadir that answers exactly as before.
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP } from '@ethereumjs/util';
import type { Db } from '../db.js';
import { MetaKey, tables } from '../schema/index.js';
import {
  HashSet,
  deltaBase,
  deltaRow,
  headerStateRoot,
  isDelta,
  nodeBytes,
  readTrieFrom,
  sameChild,
} from '../trie/index.js';

type Nested = Uint8Array | Nested[];

/** Blocks per batch (and per progress report). */
const BLOCKS_PER_BATCH = 16;
const EMPTY_ROOT = Buffer.from(KECCAK256_RLP);

export interface TrieDeltaStats {
  /** Blocks walked by this run. */
  blocks: number;
  /** Rows rewritten as deltas, and their bytes before and after. */
  rows: number;
  bytesBefore: number;
  bytesAfter: number;
}

interface Visit {
  ref: Nested;
  base: Nested | undefined;
  accounts: boolean;
}

/** The state root the header of canonical block `n` names. */
export async function stateRootAt(db: Db, n: bigint): Promise<Uint8Array> {
  const hash = await tables.canonical.get(db, n);
  const rlp = hash === undefined ? undefined : await tables.headers.get(db, hash);
  if (rlp === undefined) throw new Error(`datadir: header of canonical block ${n} missing`);
  return headerStateRoot(rlp);
}

/** Rewrites the whole branch nodes of blocks up to `head` as deltas; nothing when Meta.trieDeltas says it is done. */
export async function convertTrieDeltas(
  db: Db,
  head: bigint,
  onProgress?: (line: string) => void,
): Promise<TrieDeltaStats> {
  const stats: TrieDeltaStats = { blocks: 0, rows: 0, bytesBefore: 0, bytesAfter: 0 };
  const done = await tables.meta.get(db, MetaKey.TrieDeltas);
  const mark = done === undefined ? undefined : Buffer.from(done).toString('utf8');
  if (mark === 'all') return stats;
  const trieFrom = await readTrieFrom(db);
  let n = mark === undefined ? trieFrom + 1n : BigInt(mark) + 1n;
  if (n <= trieFrom) n = trieFrom + 1n;
  if (n > head) return stats;
  const seen = new HashSet();
  const overlay = new Map<string, Uint8Array>();
  const raw = (hash: Uint8Array): Uint8Array | undefined =>
    overlay.get(Buffer.from(hash).toString('hex')) ?? tables.trieNodes.getSync(db, hash);
  const node = (hash: Uint8Array): Nested[] => {
    const row = raw(hash);
    if (row === undefined) throw new Error(`datadir: trie node ${Buffer.from(hash).toString('hex')} missing`);
    return RLP.decode(nodeBytes(row, raw)) as Nested[];
  };
  /** True when the chain of `row` (a base row) leads to `hash`. */
  const leadsTo = (row: Uint8Array, hash: Uint8Array): boolean => {
    for (let r: Uint8Array | undefined = row; r !== undefined && isDelta(r); ) {
      const b = deltaBase(r);
      if (Buffer.compare(b, hash) === 0) return true;
      r = raw(b);
    }
    return false;
  };
  let parentRoot = await stateRootAt(db, n - 1n);
  const t0 = performance.now();
  let batch = db.batch();
  for (; n <= head; n++) {
    const root = await stateRootAt(db, n);
    const stack: Visit[] = [{ ref: root, base: parentRoot, accounts: true }];
    while (stack.length > 0) {
      const { ref, base, accounts } = stack.pop() as Visit;
      if (base !== undefined && sameChild(ref, base)) continue;
      let cur: Nested[];
      if (ref instanceof Uint8Array) {
        if (ref.length !== 32 || EMPTY_ROOT.equals(ref)) continue;
        const row = raw(ref);
        if (row === undefined) throw new Error(`datadir: trie node ${Buffer.from(ref).toString('hex')} missing`);
        cur = RLP.decode(nodeBytes(row, raw)) as Nested[];
        if (seen.add(ref) && !isDelta(row) && base instanceof Uint8Array && base.length === 32 && cur.length === 17) {
          const baseRow = raw(base);
          if (baseRow !== undefined && !leadsTo(baseRow, ref)) {
            const delta = deltaRow(cur, row, node(base), base, baseRow);
            if (isDelta(delta)) {
              batch.put(tables.trieNodes.key(ref), delta);
              overlay.set(Buffer.from(ref).toString('hex'), delta);
              stats.rows++;
              stats.bytesBefore += row.length;
              stats.bytesAfter += delta.length;
            }
          }
        }
        if (base instanceof Uint8Array && base.length === 32) seen.add(base);
      } else cur = ref as Nested[];
      const old =
        base instanceof Uint8Array
          ? base.length === 32 && !EMPTY_ROOT.equals(base)
            ? node(base)
            : undefined
          : (base as Nested[] | undefined);
      pushChildren(cur, old, accounts, stack);
    }
    parentRoot = root;
    stats.blocks++;
    if (stats.blocks % BLOCKS_PER_BATCH === 0 || n === head) {
      tables.meta.put(batch, MetaKey.TrieDeltas, Buffer.from(n.toString(), 'utf8'));
      await batch.write();
      batch = db.batch();
      overlay.clear();
      onProgress?.(
        `trie deltas: block ${n} of ${head}, ${stats.rows} nodes rewritten (${stats.bytesBefore} -> ${stats.bytesAfter} bytes), ${((performance.now() - t0) / 1000).toFixed(0)} s`,
      );
    }
  }
  return stats;
}

/** The children of `cur` with their counterparts in `old` (the same path in the parent's trie). */
function pushChildren(cur: Nested[], old: Nested[] | undefined, accounts: boolean, out: Visit[]): void {
  if (cur.length === 17) {
    const oldBranch = old?.length === 17 ? old : undefined;
    for (let i = 0; i < 16; i++) {
      const c = cur[i] as Nested;
      if (Array.isArray(c) || c.length > 0) out.push({ ref: c, base: oldBranch?.[i], accounts });
    }
    return;
  }
  if (cur.length !== 2) return;
  const path = cur[0] as Uint8Array;
  const samePath = old?.length === 2 && sameChild(old[0], path);
  if ((path[0] as number) >> 4 < 2) {
    out.push({ ref: cur[1] as Nested, base: samePath ? old?.[1] : undefined, accounts });
    return;
  }
  if (!accounts) return;
  // An account leaf: [nonce, balance, storageRoot, codeHash]; its storage trie beside the parent's.
  const account = RLP.decode(cur[1] as Uint8Array) as Uint8Array[];
  const oldAccount = samePath ? (RLP.decode(old?.[1] as Uint8Array) as Uint8Array[]) : undefined;
  if (Array.isArray(account) && account.length === 4)
    out.push({ ref: account[2] as Uint8Array, base: oldAccount?.[2], accounts: false });
}
