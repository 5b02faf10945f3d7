// The @ethereumjs/mpt DB interface over the TrieNodes table. Keys arrive as unprefixed hex
// strings (the MPT's CheckpointDB uses KeyEncoding.String); values are bytes or hex strings as
// the caller's valueEncoding asks. Archive mode: nodes are content-addressed and never deleted,
// so `del` is ignored.
//
// Writes go to an in-memory overlay: `current` (the block being executed) and `pending`
// (verified blocks of the group not yet written). Reads look at current -> pending -> LevelDB.
import { RLP } from '@ethereumjs/rlp';
import type { BatchDBOp, DB, EncodingOpts } from '@ethereumjs/util';
import { tables } from '../schema/index.js';
import type { KvBatch, KvRead, KvSyncRead } from '../schema/index.js';

type Value = string | Uint8Array;
type Nested = Uint8Array | Nested[];

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

  constructor(
    private readonly kv: KvRead & KvSyncRead,
    private readonly writable: boolean,
  ) {}

  async get(key: string, opts?: EncodingOpts): Promise<Value | undefined> {
    const v = this.current.get(key) ?? this.pending.get(key) ?? (await tables.trieNodes.get(this.kv, keyBytes(key)));
    return v === undefined ? undefined : encodeOut(v, opts);
  }

  /** A node by its hash, synchronously (the overlay, then LevelDB's getSync). */
  getNodeSync(hash: Uint8Array): Uint8Array | undefined {
    const key = Buffer.from(hash).toString('hex');
    return this.current.get(key) ?? this.pending.get(key) ?? tables.trieNodes.getSync(this.kv, hash);
  }

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
  acceptBlock(stateRoot?: Uint8Array): void {
    if (stateRoot === undefined) {
      for (const [k, v] of this.current) this.pending.set(k, v);
    } else {
      for (const [k, v] of this.current) if (k.length === 66 && k.startsWith(CODE_KEY_PREFIX)) this.pending.set(k, v);
      this.keepReachable(stateRoot, true);
    }
    this.current.clear();
  }

  /** Moves the nodes of the current block reachable from `root` into pending. */
  private keepReachable(root: Uint8Array, accounts: boolean): void {
    const stack: { ref: Uint8Array | Nested; accounts: boolean }[] = [{ ref: root, accounts }];
    while (stack.length > 0) {
      const { ref, accounts: inAccounts } = stack.pop() as { ref: Uint8Array | Nested; accounts: boolean };
      let node: Nested;
      if (ref instanceof Uint8Array) {
        if (ref.length !== 32) continue;
        const key = Buffer.from(ref).toString('hex');
        const bytes = this.current.get(key);
        if (bytes === undefined) continue; // stored before this block: its subtree too
        if (this.pending.has(key)) continue;
        this.pending.set(key, bytes);
        node = RLP.decode(bytes) as Nested;
      } else node = ref; // a node embedded in its parent (under 32 bytes)
      if (!Array.isArray(node)) continue;
      if (node.length === 17) {
        for (let i = 0; i < 16; i++) {
          const c = node[i] as Uint8Array | Nested;
          if (Array.isArray(c) || (c as Uint8Array).length > 0) stack.push({ ref: c, accounts: inAccounts });
        }
      } else if (node.length === 2) {
        const path = node[0] as Uint8Array;
        const isLeaf = (path[0] as number) >> 4 >= 2;
        if (!isLeaf) stack.push({ ref: node[1] as Uint8Array | Nested, accounts: inAccounts });
        else if (inAccounts) {
          // An account leaf: [nonce, balance, storageRoot, codeHash]; its storage trie follows.
          const account = RLP.decode(node[1] as Uint8Array) as Uint8Array[];
          if (Array.isArray(account) && account.length === 4)
            stack.push({ ref: account[2] as Uint8Array, accounts: false });
        }
      }
    }
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
      if (watch !== undefined && key.length === 32) watch(key);
      n++;
    }
    this.pending.clear();
    return n;
  }
}
