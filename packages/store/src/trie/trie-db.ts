// The @ethereumjs/mpt DB interface over the TrieNodes table. Keys arrive as unprefixed hex
// strings (the MPT's CheckpointDB uses KeyEncoding.String); values are bytes or hex strings as
// the caller's valueEncoding asks. Archive mode: nodes are content-addressed and never deleted,
// so `del` is ignored.
//
// Writes go to an in-memory overlay: `current` (the block being executed) and `pending`
// (verified blocks of the group not yet written). Reads look at current -> pending -> LevelDB.
// With `deltas` (node-delta.ts) a verified block's new branch nodes are kept as
// deltas against the node at the same path in the parent's trie; reads rebuild them, so the
// MPT, the replica's trie update and the pruner only ever see whole nodes.
import { RLP } from '@ethereumjs/rlp';
import type { BatchDBOp, DB, EncodingOpts } from '@ethereumjs/util';
import { tables } from '../schema/index.js';
import type { KvBatch, KvRead, KvSyncRead } from '../schema/index.js';
import { deltaChain, deltaRow, nodeBytes, sameChild } from './node-delta.js';

type Value = string | Uint8Array;
type Nested = Uint8Array | Nested[];
/** A node reference to keep (if new) and its counterpart in the parent's trie (same path). */
interface Visit {
  ref: Uint8Array | Nested;
  accounts: boolean;
  base: Nested | undefined;
}

/** Code is stored under 'c' ++ codeHash (the state manager's key), hex: '63…'. */
const CODE_KEY_PREFIX = '63';

function keyBytes(key: string): Uint8Array {
  return Uint8Array.from(Buffer.from(key, 'hex'));
}

function toBytes(v: Value): Uint8Array {
  return typeof v === 'string' ? Uint8Array.from(Buffer.from(v.startsWith('0x') ? v.slice(2) : v, 'hex')) : v;
}

function encodeOut(v: Uint8Array, opts?: EncodingOpts): Value {
  return opts?.valueEncoding === 'string' ? Buffer.from(v).toString('hex') : v;
}

export class TrieNodeDb implements DB<string, Value> {
  private current = new Map<string, Uint8Array>();
  private pending = new Map<string, Uint8Array>();
  /** Told of every node drained into a group (the pruner's cycle: trie-prune.ts). */
  watch: ((hash: Uint8Array) => void) | undefined;
  /** Keep new branch nodes as deltas (node-delta.ts) when acceptBlock is given the parent's root. */
  deltas = false;

  constructor(
    private readonly kv: KvRead & KvSyncRead,
    private readonly writable: boolean,
  ) {}

  async get(key: string, opts?: EncodingOpts): Promise<Value | undefined> {
    const v = this.current.get(key) ?? this.pending.get(key) ?? (await tables.trieNodes.get(this.kv, keyBytes(key)));
    if (v === undefined) return undefined;
    // A node key (not 'c' ++ codeHash): a delta row is rebuilt.
    return encodeOut(key.length === 64 ? nodeBytes(v, this.rawGet) : v, opts);
  }

  /** A node by its hash, synchronously (the overlay, then LevelDB's getSync). */
  getNodeSync(hash: Uint8Array): Uint8Array | undefined {
    const row = this.rawGet(hash);
    return row === undefined ? undefined : nodeBytes(row, this.rawGet);
  }

  /** A TrieNodes row as stored (whole or delta), from the overlay or LevelDB. */
  private readonly rawGet = (hash: Uint8Array): Uint8Array | undefined => {
    const key = Buffer.from(hash).toString('hex');
    return this.current.get(key) ?? this.pending.get(key) ?? tables.trieNodes.getSync(this.kv, hash);
  };

  /** Stages a node of the block being verified, synchronously. */
  putNodeSync(hash: Uint8Array, encoded: Uint8Array): void {
    if (!this.writable) throw new Error('trie db is read-only');
    this.current.set(Buffer.from(hash).toString('hex'), encoded);
  }

  async put(key: string, val: Value): Promise<void> {
    if (!this.writable) throw new Error('trie db is read-only');
    this.current.set(key, toBytes(val));
  }

  async del(): Promise<void> {
    // archive mode: never delete
  }

  async batch(ops: BatchDBOp<string, Value>[]): Promise<void> {
    for (const op of ops) if (op.type === 'put') await this.put(op.key, op.value);
  }

  shallowCopy(): DB<string, Value> {
    return this;
  }

  async open(): Promise<void> {}

  /**
   * The block verified: its nodes join the group to be written. With `stateRoot`, only the nodes
   * written for this block that its final state trie reaches are kept (code entries always): the
   * intermediate nodes of states within the block (between transactions, or an order of updates
   * a source chose) are dropped, so the stored node set depends on the resulting state alone.
   */
  acceptBlock(stateRoot?: Uint8Array, parentRoot?: Uint8Array): void {
    if (stateRoot === undefined) {
      for (const [k, v] of this.current) this.pending.set(k, v);
    } else {
      for (const [k, v] of this.current) if (k.length === 66 && k.startsWith(CODE_KEY_PREFIX)) this.pending.set(k, v);
      this.keepReachable(stateRoot, this.deltas ? parentRoot : undefined);
    }
    this.current.clear();
  }

  /**
   * Moves the nodes of the current block reachable from `root` into pending. With `parentRoot`,
   * the parent's trie is walked beside, path by path, and a new branch node whose counterpart
   * is a stored branch is kept as a delta against it (node-delta.ts); a node whose hash is stored
   * already keeps its stored row (so a delta is only ever written against older rows, and the
   * rows are the same however blocks are grouped or the state reached).
   */
  private keepReachable(root: Uint8Array, parentRoot: Uint8Array | undefined): void {
    const stack: Visit[] = [{ ref: root, accounts: true, base: parentRoot }];
    while (stack.length > 0) {
      const { ref, accounts, base } = stack.pop() as Visit;
      let node: Nested;
      if (ref instanceof Uint8Array) {
        if (ref.length !== 32) continue;
        const key = Buffer.from(ref).toString('hex');
        const bytes = this.current.get(key);
        if (bytes === undefined) continue; // stored before this block: its subtree too
        if (this.pending.has(key)) continue;
        node = RLP.decode(bytes) as Nested;
        // A node stored already keeps its row as it is (whole or delta): a row is the one its
        // first writer chose, whichever way later blocks reach the same node again.
        this.pending.set(key, tables.trieNodes.getSync(this.kv, ref) ?? this.rowFor(node, bytes, base));
      } else node = ref; // a node embedded in its parent (under 32 bytes)
      if (!Array.isArray(node)) continue;
      const old = base === undefined || sameChild(ref, base) ? undefined : this.resolve(base);
      if (node.length === 17) {
        const oldBranch = old?.length === 17 ? old : undefined;
        for (let i = 0; i < 16; i++) {
          const c = node[i] as Uint8Array | Nested;
          if (Array.isArray(c) || (c as Uint8Array).length > 0)
            stack.push({ ref: c, accounts, base: oldBranch?.[i] as Nested | undefined });
        }
      } else if (node.length === 2) {
        const path = node[0] as Uint8Array;
        const samePath = old?.length === 2 && sameChild(old[0] as Nested, path);
        const isLeaf = (path[0] as number) >> 4 >= 2;
        if (!isLeaf)
          stack.push({ ref: node[1] as Uint8Array | Nested, accounts, base: samePath ? old?.[1] : undefined });
        else if (accounts) {
          // An account leaf: [nonce, balance, storageRoot, codeHash]; its storage trie follows.
          const account = RLP.decode(node[1] as Uint8Array) as Uint8Array[];
          const oldAccount = samePath ? (RLP.decode(old?.[1] as Uint8Array) as Uint8Array[]) : undefined;
          if (Array.isArray(account) && account.length === 4)
            stack.push({ ref: account[2] as Uint8Array, accounts: false, base: oldAccount?.[2] });
        }
      }
    }
  }

  /** The row to keep for a node not stored yet (decoded `node`, RLP `bytes`) whose parent-trie counterpart is `base`. */
  private rowFor(node: Nested, bytes: Uint8Array, base: Nested | undefined): Uint8Array {
    if (!(base instanceof Uint8Array) || base.length !== 32 || !Array.isArray(node) || node.length !== 17) return bytes;
    const baseKey = Buffer.from(base).toString('hex');
    const baseRow = this.pending.get(baseKey) ?? tables.trieNodes.getSync(this.kv, base);
    if (baseRow === undefined) return bytes;
    const baseNode = RLP.decode(nodeBytes(baseRow, this.rawGet)) as Nested[];
    return deltaRow(node, bytes, baseNode, base, baseRow);
  }

  /** A node reference of the parent's trie, decoded (a stored node rebuilt); undefined when empty or missing. */
  private resolve(ref: Nested): Nested[] | undefined {
    if (Array.isArray(ref)) return ref;
    if (ref.length !== 32) return undefined;
    const row = this.pending.get(Buffer.from(ref).toString('hex')) ?? tables.trieNodes.getSync(this.kv, ref);
    return row === undefined ? undefined : (RLP.decode(nodeBytes(row, this.rawGet)) as Nested[]);
  }

  /** The executed block failed verification: forget its nodes. */
  rejectBlock(): void {
    this.current.clear();
  }

  /** Moves the group's nodes into `batch`. */
  drainInto(batch: KvBatch): number {
    let n = 0;
    const watch = this.watch;
    for (const [k, v] of this.pending) {
      const key = keyBytes(k);
      tables.trieNodes.put(batch, key, v);
      if (watch !== undefined && key.length === 32) {
        watch(key);
        // A delta needs its bases: a pruning cycle running now keeps them with it.
        for (const base of deltaChain(v, this.rawGet)) watch(base);
      }
      n++;
    }
    this.pending.clear();
    return n;
  }
}
