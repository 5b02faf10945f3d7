// The @ethereumjs/mpt DB interface over the TrieNodes table. Keys arrive as unprefixed hex
// strings (the MPT's CheckpointDB uses KeyEncoding.String); values are bytes or hex strings as
// the caller's valueEncoding asks. Archive mode: nodes are content-addressed and never deleted,
// so `del` is ignored.
//
// Writes go to an in-memory overlay: `current` (the block being executed), `pending` (verified
// blocks of the group not yet written) and `flying` (the group handed to LevelDB and not landed
// yet: the writer's flushBehind). Reads look at current -> pending -> flying -> LevelDB.
// With `deltas` (node-delta.ts) a verified block's new branch nodes are kept as
// deltas against the node at the same path in the parent's trie; reads rebuild them, so the
// MPT, the replica's trie update and the pruner only ever see whole nodes.
import { RLP } from '@ethereumjs/rlp';
import type { BatchDBOp, DB, EncodingOpts } from '@ethereumjs/util';
import { Lru } from '@chainnode/core';
import { tables } from '../schema/index.js';
import type { KvBatch, KvRead, KvSyncRead } from '../schema/index.js';
import { deltaChain, deltaRow, isDelta, nodeBytes, sameChild } from './node-delta.js';
import type { Nested } from './trie-update.js';

type Value = string | Uint8Array;
/** Nodes recently written or rebuilt, kept for the next blocks' reads and pairing (decoded: about 2 KB each, ~32 MB). */
const RECENT_NODES = 16_384;
/**
 * Rows recently read from LevelDB, the least recently used dropped first, a generation at a time
 * (core's Lru; a row and its hex key: about 600 bytes each, ~20 MB at most). A block's update
 * reads the same upper nodes of the account
 * trie, and of busy contracts' storage tries, for each key it changes; a getSync each was a
 * third of a replicated block's state update.
 */
const READ_ROWS = 32_768;
interface RecentNode {
  /** The row as stored (whole, or a delta). */
  row: Uint8Array;
  /** The node's RLP. */
  bytes: Uint8Array;
  node: Nested[] | undefined;
}
/** A row read from LevelDB, and the node decoded once asked for (whole rows only). */
interface ReadRow {
  row: Uint8Array;
  node: Nested | undefined;
}
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

/** A hash's first four bytes as one number (TrieNodeDb's filter of the block's node keys). */
function headOf(hash: Uint8Array): number {
  return (
    (((hash[0] as number) << 24) | ((hash[1] as number) << 16) | ((hash[2] as number) << 8) | (hash[3] as number)) >>> 0
  );
}

export class TrieNodeDb implements DB<string, Value> {
  private current = new Map<string, Uint8Array>();
  /**
   * The first four bytes of every key of `current`: keepReachable passes over a child written
   * before this block (most of a branch's sixteen) on a number, without building its hex key.
   */
  private readonly currentHeads = new Set<number>();
  private pending = new Map<string, Uint8Array>();
  /** The last group drained into a batch that has not landed yet (empty once it has: landed()). */
  private flying = new Map<string, Uint8Array>();
  /** Told of every node drained into a group (the pruner's cycle: trie-prune.ts). */
  watch: ((hash: Uint8Array) => void) | undefined;
  /** Keep new branch nodes as deltas (node-delta.ts) when acceptBlock is given the parent's root. */
  deltas = false;
  /** Recently written or rebuilt nodes by hex hash (content-addressed: never stale; a row never changes once stored). */
  private readonly recent = new Lru<string, RecentNode>(RECENT_NODES);
  /**
   * Rows read from LevelDB by hex hash (recently used kept). Content-addressed, so a row read
   * is the node's for good, but for a node the window's pruner deleted and a later block wrote
   * again, as another row: drainInto drops those.
   */
  private readonly readRows = new Lru<string, ReadRow>(READ_ROWS);
  /** The nodes of `current` as the trie update built them (decoded), by hex hash. */
  private readonly currentDecoded = new Map<string, Nested>();

  constructor(
    private readonly kv: KvRead & KvSyncRead,
    private readonly writable: boolean,
  ) {}

  async get(key: string, opts?: EncodingOpts): Promise<Value | undefined> {
    const v =
      this.current.get(key) ??
      this.pending.get(key) ??
      this.flying.get(key) ??
      (await tables.trieNodes.get(this.kv, keyBytes(key)));
    if (v === undefined) return undefined;
    // A node key (not 'c' ++ codeHash): a delta row is rebuilt.
    return encodeOut(key.length === 64 ? this.whole(key, v) : v, opts);
  }

  /** A node by its hash, synchronously (the overlay, then LevelDB's getSync). */
  getNodeSync(hash: Uint8Array): Uint8Array | undefined {
    const row = this.rawGet(hash);
    return row === undefined ? undefined : this.whole(Buffer.from(hash).toString('hex'), row);
  }

  /** The node of row `row` stored under hex `key`: the row itself, or the delta rebuilt (remembered). */
  private whole(key: string, row: Uint8Array): Uint8Array {
    if (!isDelta(row)) return row;
    const hit = this.recent.get(key);
    if (hit !== undefined) return hit.bytes;
    const bytes = nodeBytes(row, this.rawGet);
    this.remember(key, { row, bytes, node: undefined });
    return bytes;
  }

  /** A stored node of the parent's trie by hash: its row and the node decoded (remembered); undefined when missing. */
  private stored(hash: Uint8Array): RecentNode | undefined {
    const key = Buffer.from(hash).toString('hex');
    let e = this.recent.get(key);
    if (e === undefined) {
      const pending = this.pending.get(key) ?? this.flying.get(key);
      const read = pending === undefined ? this.readRow(key, hash) : undefined;
      const row = pending ?? read?.row;
      if (row === undefined) return undefined;
      // A whole row read already by the block's update is decoded already.
      const node = read !== undefined && !isDelta(row) ? (read.node as Nested[] | undefined) : undefined;
      e = { row, bytes: nodeBytes(row, this.rawGet), node };
      this.remember(key, e);
    }
    e.node ??= RLP.decode(e.bytes) as Nested[];
    return e;
  }

  private remember(key: string, e: RecentNode): void {
    this.recent.set(key, e);
  }

  /** A TrieNodes row as stored (whole or delta), from the overlay or LevelDB. */
  private readonly rawGet = (hash: Uint8Array): Uint8Array | undefined => {
    const key = Buffer.from(hash).toString('hex');
    return this.current.get(key) ?? this.pending.get(key) ?? this.flying.get(key) ?? this.readRow(key, hash)?.row;
  };

  /** The row of `hash` (hex `key`) in LevelDB, through the read cache. */
  private readRow(key: string, hash: Uint8Array): ReadRow | undefined {
    let e = this.readRows.get(key);
    if (e !== undefined) return e;
    const row = tables.trieNodes.getSync(this.kv, hash);
    if (row === undefined) return undefined;
    e = { row, node: undefined };
    this.readRows.set(key, e);
    return e;
  }

  /**
   * A node by its hash, decoded, when it is held decoded or stored (a whole row decoded here, a
   * delta row rebuilt and decoded, and kept); undefined otherwise (the caller reads its bytes, and
   * finds none when the store lacks it). Never to be changed by the caller.
   */
  readonly getDecodedSync = (hash: Uint8Array): Nested | undefined => {
    const key = Buffer.from(hash).toString('hex');
    const built = this.currentDecoded.get(key);
    if (built !== undefined) return built;
    if (this.current.has(key) || this.pending.has(key) || this.flying.has(key)) return this.recent.get(key)?.node;
    const e = this.readRow(key, hash);
    if (e === undefined) return undefined;
    if (e.node === undefined) {
      // Rebuilt once and kept decoded (stored()): a branch the block's update passes again (each
      // key under it) is not rebuilt, nor its bytes decoded again, per visit.
      if (isDelta(e.row)) return this.stored(hash)?.node;
      e.node = RLP.decode(e.row) as Nested;
    }
    return e.node;
  };

  /** Stages a node of the block being verified, synchronously (with its decoded list when the caller has it). */
  putNodeSync(hash: Uint8Array, encoded: Uint8Array, decoded?: Nested): void {
    if (!this.writable) throw new Error('trie db is read-only');
    const key = Buffer.from(hash).toString('hex');
    this.current.set(key, encoded);
    this.currentHeads.add(headOf(hash));
    if (decoded !== undefined) this.currentDecoded.set(key, decoded);
  }

  async put(key: string, val: Value): Promise<void> {
    if (!this.writable) throw new Error('trie db is read-only');
    this.current.set(key, toBytes(val));
    this.currentHeads.add(Number.parseInt((key.startsWith('0x') ? key.slice(2) : key).slice(0, 8), 16));
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
    this.currentHeads.clear();
    this.currentDecoded.clear();
  }

  /** Whether a child reference may be a node written in this block: embedded, or a hash `current` may hold. */
  private mayBeNew(ref: Nested): boolean {
    return Array.isArray(ref) || (ref.length === 32 && this.currentHeads.has(headOf(ref)));
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
      let old: Nested[] | undefined;
      if (ref instanceof Uint8Array) {
        if (ref.length !== 32) continue;
        const key = Buffer.from(ref).toString('hex');
        const bytes = this.current.get(key);
        if (bytes === undefined) continue; // stored before this block: its subtree too
        if (this.pending.has(key)) continue;
        // The parent trie's node at this path, rewritten unchanged: stored, and its subtree too.
        if (base instanceof Uint8Array && sameChild(ref, base)) continue;
        node = this.currentDecoded.get(key) ?? (RLP.decode(bytes) as Nested);
        old = this.counterpart(ref, base);
        if (!this.deltas) {
          // Every row is the node's bytes: nothing to look up, nothing to pair with next block.
          this.pending.set(key, bytes);
        } else {
          // A branch stored already keeps its row as it is (whole or delta): a row is the one its
          // first writer chose, whichever way later blocks reach the same node again. Any other
          // node's row is its bytes, however it was reached: nothing to look up. Asked of LevelDB
          // itself, not the read cache: a pruned row may linger there, its delta's base gone.
          const stored =
            Array.isArray(node) && node.length === 17
              ? (this.flying.get(key) ?? tables.trieNodes.getSync(this.kv, ref))
              : undefined;
          const row = stored ?? this.rowFor(node, bytes, base, old);
          this.pending.set(key, row);
          // The next block's pairing reads it as its parent's: remembered decoded.
          if (Array.isArray(node)) this.remember(key, { row, bytes, node: node as Nested[] });
        }
      } else {
        node = ref; // a node embedded in its parent (under 32 bytes)
        old = this.counterpart(ref, base);
      }
      if (!Array.isArray(node)) continue;
      if (node.length === 17) {
        const oldBranch = old?.length === 17 ? old : undefined;
        for (let i = 0; i < 16; i++) {
          const c = node[i] as Uint8Array | Nested;
          if (this.mayBeNew(c)) stack.push({ ref: c, accounts, base: oldBranch?.[i] as Nested | undefined });
        }
      } else if (node.length === 2) {
        const path = node[0] as Uint8Array;
        const samePath = old?.length === 2 && sameChild(old[0] as Nested, path);
        const isLeaf = (path[0] as number) >> 4 >= 2;
        if (!isLeaf) {
          if (this.mayBeNew(node[1] as Nested))
            stack.push({ ref: node[1] as Uint8Array | Nested, accounts, base: samePath ? old?.[1] : undefined });
        } else if (accounts) {
          // An account leaf: [nonce, balance, storageRoot, codeHash]; its storage trie follows.
          const account = RLP.decode(node[1] as Uint8Array) as Uint8Array[];
          const oldAccount = samePath ? (RLP.decode(old?.[1] as Uint8Array) as Uint8Array[]) : undefined;
          if (Array.isArray(account) && account.length === 4 && this.mayBeNew(account[2] as Uint8Array))
            stack.push({ ref: account[2] as Uint8Array, accounts: false, base: oldAccount?.[2] });
        }
      }
    }
  }

  /**
   * The row to keep for a node not stored yet (decoded `node`, RLP `bytes`) whose parent-trie
   * counterpart is `base` (decoded: `old`).
   */
  private rowFor(node: Nested, bytes: Uint8Array, base: Nested | undefined, old: Nested[] | undefined): Uint8Array {
    if (!(base instanceof Uint8Array) || base.length !== 32 || old === undefined) return bytes;
    if (!Array.isArray(node) || node.length !== 17) return bytes;
    const baseRow = this.recent.get(Buffer.from(base).toString('hex'))?.row;
    return baseRow === undefined ? bytes : deltaRow(node, bytes, old, base, baseRow);
  }

  /** The parent-trie counterpart `base` of node reference `ref`, decoded; undefined when empty, missing or the same. */
  private counterpart(ref: Nested, base: Nested | undefined): Nested[] | undefined {
    if (base === undefined || sameChild(ref, base)) return undefined;
    if (Array.isArray(base)) return base;
    if (base.length !== 32) return undefined;
    return this.stored(base)?.node;
  }

  /** The executed block failed verification: forget its nodes. */
  rejectBlock(): void {
    this.current.clear();
    this.currentHeads.clear();
    this.currentDecoded.clear();
  }

  /**
   * Moves the group's nodes into `batch`. They stay readable from memory until the batch has
   * landed (landed()): the next group's blocks read their parents' nodes meanwhile.
   */
  drainInto(batch: KvBatch): number {
    let n = 0;
    const watch = this.watch;
    for (const [k, v] of this.pending) {
      const key = keyBytes(k);
      tables.trieNodes.put(batch, key, v);
      // A node pruned and written again may be written as another row than the one cached.
      this.readRows.delete(k);
      if (watch !== undefined && key.length === 32) {
        watch(key);
        // A delta needs its bases: a pruning cycle running now keeps them with it.
        for (const base of deltaChain(v, this.rawGet)) watch(base);
      }
      n++;
    }
    this.flying = this.pending;
    this.pending = new Map();
    return n;
  }

  /** The batch drainInto filled has landed (or failed, and the writer stops): LevelDB answers for its nodes. */
  landed(): void {
    this.flying = new Map();
  }
}
