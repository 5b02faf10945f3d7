// The state root of a base state plus the writes a StoreStateManager holds in memory: what a
// simulated block's header names (eth_simulateV1). The base tries are read node by node from the
// store (SyncStateReader.node); the new nodes stay in memory and are dropped with the result.
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { Account, KECCAK256_RLP, ValueEncoding, hexToBytes } from '@ethereumjs/util';
import type { BatchDBOp, DB } from '@ethereumjs/util';
import type { Bytes, SyncStateReader } from '@chainnode/core';

/** The writes of an overlay, by address (latin1 keys of the address bytes). */
export interface OverlayWrites {
  /** Accounts as written (null: deleted). */
  accounts: ReadonlyMap<string, Account | null>;
  /** Slots written (32-byte latin1 keys, unpadded values; empty: zero). */
  storage: ReadonlyMap<string, ReadonlyMap<string, Uint8Array>>;
  /** Addresses whose stored slots no longer count. */
  cleared: ReadonlySet<string>;
}

/** The store's nodes below, the new nodes in memory on top (keys: unprefixed hex of the hash). */
class NodeDb implements DB<string, Uint8Array> {
  private readonly mem = new Map<string, Uint8Array>();
  constructor(private readonly node: (hash: Bytes) => Bytes | undefined) {}
  async get(key: string): Promise<Uint8Array | undefined> {
    return this.mem.get(key) ?? this.node(hexToBytes(`0x${key}`));
  }
  async put(key: string, val: Uint8Array): Promise<void> {
    this.mem.set(key, val);
  }
  async del(): Promise<void> {}
  async batch(ops: BatchDBOp<string, Uint8Array>[]): Promise<void> {
    for (const op of ops) if (op.type === 'put') this.mem.set(op.key, op.value);
  }
  shallowCopy(): DB<string, Uint8Array> {
    return this;
  }
  async open(): Promise<void> {}
}

const bytesOf = (k: string): Uint8Array => Uint8Array.from(Buffer.from(k, 'latin1'));

const same = (a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean =>
  a === b || (a != null && b != null && Buffer.compare(a, b) === 0);

/**
 * The roots of one overlay as it grows (a simulation's blocks, one root each): the tries are kept
 * from one root to the next and only what changed since the last root is put again.
 */
export class OverlayRoots {
  private readonly db: NodeDb;
  private readonly state: MerklePatriciaTrie;
  /** The account leaf last put per address (null: deleted). */
  private readonly leaves = new Map<string, Uint8Array | null>();
  private readonly storages = new Map<
    string,
    { trie: MerklePatriciaTrie; cleared: boolean; slots: Map<string, Uint8Array> }
  >();

  constructor(
    private readonly reader: SyncStateReader,
    private readonly stateRoot: Bytes,
  ) {
    const node = reader.node;
    if (node === undefined) throw new Error('the store does not serve trie nodes: no state root for simulated blocks');
    this.db = new NodeDb((h) => node.call(reader, h));
    this.state = this.trie(stateRoot);
  }

  private trie(root: Uint8Array): MerklePatriciaTrie {
    return new MerklePatriciaTrie({
      db: this.db as unknown as DB<string, string>,
      valueEncoding: ValueEncoding.Bytes,
      useKeyHashing: true,
      root,
    });
  }

  /** The storage root of `k` with its written slots. */
  private async storageRoot(k: string, writes: OverlayWrites, baseRoot: Uint8Array): Promise<Uint8Array> {
    const cleared = writes.cleared.has(k);
    let st = this.storages.get(k);
    if (st === undefined || st.cleared !== cleared) {
      st = { trie: this.trie(cleared ? KECCAK256_RLP : baseRoot), cleared, slots: new Map() };
      this.storages.set(k, st);
    }
    for (const [slot, value] of writes.storage.get(k) ?? []) {
      if (same(st.slots.get(slot), value)) continue;
      st.slots.set(slot, value);
      if (value.length === 0) await st.trie.del(bytesOf(slot));
      else await st.trie.put(bytesOf(slot), RLP.encode(value));
    }
    return st.trie.root();
  }

  /** The root of the base state with `writes` applied. */
  async root(writes: OverlayWrites): Promise<Uint8Array> {
    const keys = new Set([...writes.accounts.keys(), ...writes.storage.keys(), ...writes.cleared]);
    for (const k of keys) {
      const address = bytesOf(k);
      const written = writes.accounts.get(k);
      const base = this.reader.account(this.stateRoot, address);
      let leaf: Uint8Array | null = null;
      if (written !== null && (written !== undefined || base !== null)) {
        const a = written ?? new Account(base?.nonce, base?.balance, base?.storageRoot, base?.codeHash);
        const storageRoot = await this.storageRoot(k, writes, base?.storageRoot ?? KECCAK256_RLP);
        leaf = new Account(a.nonce, a.balance, storageRoot, a.codeHash).serialize();
      }
      if (this.leaves.has(k) ? same(this.leaves.get(k), leaf) : leaf === null && base === null) continue;
      this.leaves.set(k, leaf);
      if (leaf === null) await this.state.del(address);
      else await this.state.put(address, leaf);
    }
    return this.state.root();
  }
}
