// The judge of replication: a block's state changes, whatever source they came from, applied to
// the node's OWN parent state in its archive trie; the root that results must equal the header's
// stateRoot, or nothing of the block is written. Changes are kept as an overlay keyed by the
// hashed trie keys (keccak256(address), keccak256(slot)), so a source that knows only hashed keys
// (a chainnode primary's trie diff) and one that knows addresses and slots (tracers) meet here.
// Storage roots are always recomputed from the node's own storage tries, never taken from a
// source.
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_NULL, KECCAK256_RLP, bigIntToUnpaddedBytes, bytesToHex, equalsBytes } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/store';
import { bytesToBigInt, encodeNested } from '@chainnode/core';
import { trieGetSync, updateTrie } from '@chainnode/store';
import type { NodePut, StateWrites, StoreWriter, SyncDecodedGet } from '@chainnode/store';

type TrieNodeDb = StoreWriter['trieDb'];

/** What an account's leaf holds, storage root aside (the overlay recomputes it). */
export interface AccountValues {
  nonce: bigint;
  balance: bigint;
  codeHash: Uint8Array;
}

interface Entry {
  /** The account's leaf in the parent state (undefined: absent). */
  baseLeaf: Uint8Array | undefined;
  /** Values as of now: undefined = the account does not exist. */
  values: AccountValues | undefined;
  /** The storage root the account had in the parent state (the empty root when it had none). */
  baseStorageRoot: Uint8Array;
  /** The account's storage was destroyed in this block: slots start from empty. */
  wiped: boolean;
  /** hex(hashed slot) -> value bytes (minimal big-endian; empty = deleted). */
  storage: Map<string, Uint8Array>;
  /** Slots kept as explicit zero-valued leaves (an upstream whose trie holds them: anvil). */
  zeroLeaves: Set<string>;
  /** A source's claim of the resulting storage root, checked after it is recomputed. */
  claimedStorageRoot?: Uint8Array | undefined;
  /** Printable name: the address when known, else the hashed key. */
  name: string;
}

/** The leaf value of a zero-valued slot: RLP of the empty string. */
const ZERO_LEAF = Uint8Array.of(0x80);

/** A verification failure of the state: the caller turns it into the block's error. */
export class StateMismatch extends Error {
  constructor(
    readonly field: string,
    readonly upstream: string,
    readonly computed: string,
  ) {
    super(`${field} mismatch: upstream says ${upstream}, computed ${computed}`);
  }
}

function decodeAccount(rlp: Uint8Array): { values: AccountValues; storageRoot: Uint8Array } {
  const f = RLP.decode(rlp) as Uint8Array[];
  if (!Array.isArray(f) || f.length !== 4) throw new Error('account leaf is not a 4-item list');
  return {
    values: {
      nonce: bytesToBigInt(f[0] as Uint8Array),
      balance: bytesToBigInt(f[1] as Uint8Array),
      codeHash: f[3] as Uint8Array,
    },
    storageRoot: f[2] as Uint8Array,
  };
}

/**
 * One block's state changes over a parent state root. Fill it with the setters, in the order
 * the block made the changes; then `commit()` computes the new root into the trie db's current
 * block.
 */
export class StateOverlay {
  private readonly entries = new Map<string, Entry>();
  private readonly codes = new Map<string, Uint8Array>();
  /** The account trie's root as changed so far by commit(). */
  private accountRoot: Uint8Array;
  private readonly nodeGet: (hash: Uint8Array) => Uint8Array | undefined;
  private readonly nodePut: NodePut;
  private readonly nodeDecoded: SyncDecodedGet;

  constructor(
    private readonly db: TrieNodeDb,
    parentRoot: Uint8Array,
  ) {
    this.accountRoot = parentRoot;
    this.nodeGet = (h) => db.getNodeSync(h);
    this.nodePut = (h, e, d) => db.putNodeSync(h, e, d);
    this.nodeDecoded = db.getDecodedSync;
  }

  /** The entry of hashed key `key`, loaded from the parent state on first use. */
  private async entry(key: Uint8Array, name?: string): Promise<Entry> {
    const k = bytesToHex(key);
    let e = this.entries.get(k);
    if (e === undefined) {
      const leaf = trieGetSync(this.accountRoot, key, this.nodeGet, this.nodeDecoded);
      if (leaf === undefined)
        e = {
          baseLeaf: undefined,
          values: undefined,
          baseStorageRoot: KECCAK256_RLP,
          wiped: false,
          storage: new Map(),
          zeroLeaves: new Set(),
          name: name ?? k,
        };
      else {
        const a = decodeAccount(leaf);
        e = {
          baseLeaf: leaf,
          values: a.values,
          baseStorageRoot: a.storageRoot,
          wiped: false,
          storage: new Map(),
          zeroLeaves: new Set(),
          name: name ?? k,
        };
      }
      this.entries.set(k, e);
    } else if (name !== undefined && e.name.length > name.length) e.name = name;
    return e;
  }

  /** The account's current values (undefined if it does not exist). */
  async get(key: Uint8Array): Promise<AccountValues | undefined> {
    return (await this.entry(key)).values;
  }

  /** Sets the given fields; an absent account is created with zero/empty for the others. */
  async setFields(key: Uint8Array, fields: Partial<AccountValues>, name?: string): Promise<void> {
    const e = await this.entry(key, name);
    const cur = e.values ?? { nonce: 0n, balance: 0n, codeHash: KECCAK256_NULL };
    e.values = { ...cur, ...fields };
  }

  /** Stores `code` (its hash is computed here) and points the account at it. */
  async setCode(key: Uint8Array, code: Uint8Array, name?: string): Promise<void> {
    const hash = code.length === 0 ? KECCAK256_NULL : keccak256(code);
    if (code.length > 0) this.codes.set(bytesToHex(hash), code);
    await this.setFields(key, { codeHash: hash }, name);
  }

  /** Code given for a code hash a source names (checked to hash to it). */
  provideCode(codeHash: Uint8Array, code: Uint8Array): void {
    const h = keccak256(code);
    if (!equalsBytes(h, codeHash))
      throw new StateMismatch(`code for hash ${bytesToHex(codeHash)}`, bytesToHex(codeHash), bytesToHex(h));
    this.codes.set(bytesToHex(h), code);
  }

  /** The account is gone (self-destruct, EIP-161): values and storage. */
  async remove(key: Uint8Array, name?: string): Promise<void> {
    const e = await this.entry(key, name);
    e.values = undefined;
    e.wiped = true;
    e.storage.clear();
    e.zeroLeaves.clear();
  }

  /** A slot's current value (empty when zero or absent). */
  async getStorage(key: Uint8Array, slotKey: Uint8Array): Promise<Uint8Array> {
    const e = await this.entry(key);
    const set = e.storage.get(bytesToHex(slotKey));
    if (set !== undefined) return set;
    if (e.wiped || e.values === undefined) return new Uint8Array(0);
    const leaf = trieGetSync(e.baseStorageRoot, slotKey, this.nodeGet, this.nodeDecoded);
    return leaf === undefined ? new Uint8Array(0) : (RLP.decode(leaf) as Uint8Array);
  }

  /**
   * Keeps `slotKey` as a zero-valued leaf unless it holds a value: geth never stores one, but an
   * upstream that does (anvil) commits to it in its state root.
   */
  async keepZeroLeaf(key: Uint8Array, slotKey: Uint8Array, name?: string): Promise<void> {
    if ((await this.getStorage(key, slotKey)).length > 0) return;
    await this.setStorage(key, slotKey, new Uint8Array(0), name, true);
  }

  /**
   * A storage slot's new value (minimal big-endian bytes; zero or empty deletes it, or with
   * `zeroLeaf` keeps it as a zero-valued leaf: an upstream whose trie does that, anvil).
   */
  async setStorage(
    key: Uint8Array,
    slotKey: Uint8Array,
    value: Uint8Array,
    name?: string,
    zeroLeaf = false,
  ): Promise<void> {
    const e = await this.entry(key, name);
    if (e.values === undefined) e.values = { nonce: 0n, balance: 0n, codeHash: KECCAK256_NULL };
    let i = 0;
    while (i < value.length && value[i] === 0) i++;
    const k = bytesToHex(slotKey);
    if (i === value.length && zeroLeaf) {
      e.storage.delete(k);
      e.zeroLeaves.add(k);
      return;
    }
    e.storage.set(k, value.subarray(i));
    e.zeroLeaves.delete(k);
  }

  /** The storage root a source claims for the account: compared with the recomputed one. */
  async claimStorageRoot(key: Uint8Array, root: Uint8Array, name?: string): Promise<void> {
    (await this.entry(key, name)).claimedStorageRoot = root;
  }

  /** Touched hashed keys (hex) with their printable names. */
  touched(): string[] {
    return [...this.entries.values()].map((e) => e.name);
  }

  /**
   * Writes every change into the trie (nodes land in the trie db's current block) and returns
   * the new state root. Throws StateMismatch when a claimed storage root differs. With `writes`,
   * the block's change set is collected into it (the flat state history's rows).
   */
  async commit(writes?: StateWrites): Promise<Uint8Array> {
    for (const [h, code] of this.codes) await this.db.put(`63${h.slice(2)}`, code);
    const accountChanges: [Uint8Array, Uint8Array | undefined][] = [];
    for (const [k, e] of this.entries) {
      const key = Uint8Array.from(Buffer.from(k.slice(2), 'hex'));
      if (e.values === undefined) {
        accountChanges.push([key, undefined]);
        if (writes !== undefined && e.baseLeaf !== undefined) {
          writes.accounts.push([key, null]);
          writes.storage.push([key, e.baseStorageRoot, KECCAK256_RLP]);
        }
        continue;
      }
      let storageRoot = e.wiped ? KECCAK256_RLP : e.baseStorageRoot;
      // The slots' leaves in the parent's storage trie, in the changes' order (collect's "before").
      let before: (Uint8Array | undefined)[] | undefined;
      if (e.storage.size > 0 || e.zeroLeaves.size > 0) {
        const changes: [Uint8Array, Uint8Array | undefined][] = [];
        for (const [sk, v] of e.storage)
          changes.push([
            Uint8Array.from(Buffer.from(sk.slice(2), 'hex')),
            v.length === 0 ? undefined : encodeNested(v),
          ]);
        for (const sk of e.zeroLeaves) changes.push([Uint8Array.from(Buffer.from(sk.slice(2), 'hex')), ZERO_LEAF]);
        before = [];
        storageRoot = updateTrie(storageRoot, changes, this.nodeGet, this.nodePut, this.nodeDecoded, before);
      }
      if (e.claimedStorageRoot !== undefined && !equalsBytes(e.claimedStorageRoot, storageRoot))
        throw new StateMismatch(
          `storageRoot of account ${e.name}`,
          bytesToHex(e.claimedStorageRoot),
          bytesToHex(storageRoot),
        );
      const v = e.values;
      const leaf = encodeNested([
        bigIntToUnpaddedBytes(v.nonce),
        bigIntToUnpaddedBytes(v.balance),
        storageRoot,
        v.codeHash,
      ]);
      accountChanges.push([key, leaf]);
      if (writes !== undefined) this.collect(writes, key, e, leaf, storageRoot, before);
    }
    this.accountRoot = updateTrie(this.accountRoot, accountChanges, this.nodeGet, this.nodePut, this.nodeDecoded);
    return this.accountRoot;
  }

  /**
   * Adds an account's changes to `writes` (store's StateWrites): its leaf when it differs from the
   * parent's; a wiped or created account's storage as its two roots (the writer diffs them),
   * another's written slots whose value differs from the parent's. `before`: the written slots'
   * leaves in the parent's storage trie (e.storage's, then e.zeroLeaves', in order), as the
   * storage update read them.
   */
  private collect(
    writes: StateWrites,
    key: Uint8Array,
    e: Entry,
    leaf: Uint8Array,
    storageRoot: Uint8Array,
    before: (Uint8Array | undefined)[] | undefined,
  ): void {
    if (e.baseLeaf !== undefined && equalsBytes(e.baseLeaf, leaf)) return;
    writes.accounts.push([key, leaf]);
    if (e.wiped || e.baseLeaf === undefined) {
      writes.storage.push([key, e.baseLeaf === undefined ? KECCAK256_RLP : e.baseStorageRoot, storageRoot]);
      return;
    }
    let i = 0;
    const slot = (sk: string, after: Uint8Array | null): void => {
      const slotKey = Uint8Array.from(Buffer.from(sk.slice(2), 'hex'));
      const old =
        before !== undefined ? before[i++] : trieGetSync(e.baseStorageRoot, slotKey, this.nodeGet, this.nodeDecoded);
      const was = old === undefined ? null : (RLP.decode(old) as Uint8Array);
      if (was === null || after === null ? was !== after : !equalsBytes(was, after))
        writes.slots.push([key, slotKey, after]);
    };
    for (const [sk, v] of e.storage) slot(sk, v.length === 0 ? null : v);
    // A zero-valued leaf's value is the empty string (not a cleared slot).
    for (const sk of e.zeroLeaves) slot(sk, new Uint8Array(0));
  }
}
