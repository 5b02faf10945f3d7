// The store's state reads: accounts, storage words and code at a state root (the trie walks of
// trie-read.ts over a shared node cache) or after a block (the flat state history of history/,
// with a cheap trie walk tried first), EIP-1186 proofs, the trie diffs a replica asks for, the
// synchronous reader an EVM runs over, and the verified proof nodes a joined node keeps. One per
// open store (LevelChainStore holds it and hands its ChainStore methods here); every cache is
// content-addressed (by state root, storage root, node or code hash) or keyed by a block hash
// read only once the block was found canonical, so nothing here goes stale on a commit but the
// trie window's first block (onCommit).
import { MissingTrieNodeError, SingleFlight, bytesEqual, bytesToBigInt, Lru } from '@chainnode/core';
import type {
  AccountProofRecord,
  AccountRecord,
  BlockRef,
  BlockTouches,
  Bytes,
  StateDiffLimits,
  StateDiffRecord,
  StateTrieView,
  StorageProofRecord,
  SyncStateReader,
} from '@chainnode/core';
import { KECCAK256_NULL, KECCAK256_RLP, setLengthLeft } from '@ethereumjs/util';
import type { Db } from '../db.js';
import { HashCache, PairCache, cacheKeyOf } from '../hash-cache.js';
import {
  accountAt as historyAccountAt,
  historyStateDiff,
  pointAccountAtCanonical,
  pointStorageAtCanonical,
  readAtCanonical,
  storageAt as historyStorageAt,
} from '../history/index.js';
import { AddressHashes, keccak256 } from '../keccak.js';
import { MetaKey, codeNodeKey, tables } from '../schema/index.js';
import {
  NodeSlab,
  accountFields,
  copyNodes,
  decodeTrieFrom,
  parseStateTrie,
  diffStates,
  isDelta,
  nodeBytes,
  rlpString,
  trieGet,
} from '../trie/index.js';
import type { NodeSource, RawNodeGet } from '../trie/index.js';
import { byteKey, cachedHit, guarded, openSyncGuarded } from './guard.js';

/** An account as the state reads need it (absent accounts are cached as `null`). */
interface AccountView {
  nonce: bigint;
  balance: bigint;
  codeHash: Uint8Array;
  storageRoot: Uint8Array;
}

const ZERO_WORD = new Uint8Array(32);

/** A copy of `b` (a storage value: at most 32 bytes) left-padded to 32 bytes. */
function word32(b: Uint8Array): Uint8Array {
  if (b.length > 32) throw new Error('storage: value longer than 32 bytes');
  const out = new Uint8Array(32);
  out.set(b, 32 - b.length);
  return out;
}

/**
 * Trie nodes a by-block state read may load from disk before it leaves the read to the state
 * history's one seek. The seek is one asynchronous LevelDB call, about the CPU of 15 node reads
 * from the page cache (~120 µs against 8 µs each, 2 cores under load); 4 bound what a deep walk
 * wastes before the seek, and let the small chains' walks finish (fixture chain, cold random
 * eth_getStorageAt p50: 63 µs with 4, 138 µs with 2, 264 µs with 0, the trie walk alone 60 µs).
 */
export const WALK_DISK_READS = 4;
/**
 * The same with the history's point reads (pointRowAtCanonical: ~3 synchronous reads, no thread
 * pool): a walk that goes to disk costs as much, so only walks through cached nodes are tried
 * (mainnet-shaped chain, 621 blocks, window=128, cold random eth_getStorageAt: p90 ~390 µs with 4,
 * ~250 µs with 0, under a load of 12).
 */
export const WALK_DISK_READS_POINT = 0;
/** Thrown (not an Error: no stack to capture) when a walk would exceed its disk reads. */
const OVER_BUDGET = Symbol('over budget');

/**
 * What the state diffs' node cache may hold (diffNodes), per thread that serves diffs: a block's
 * diff reads its new nodes and their parent-trie counterparts, which the next block's diff reads
 * again (its old side, and the bases of its delta rows). On the mainnet-shaped chain that is
 * ~5,600 nodes (~2.2 MB) a block: at 4 MiB (two generations of 2) the previous block's nodes were
 * mostly gone when the next diff asked for them, and a primary read 6,600 rows a block from
 * LevelDB; at 32 MiB, 3,200 (each new node once). Filled only by a thread that serves diffs
 * (a primary's replicas): nothing on a node that has none.
 */
const DIFF_NODE_BYTES = 32 << 20;
/** Entries of diffNodes at most (rows of ~250-550 bytes: the byte budget binds first). */
const DIFF_NODES = 131_072;

/** A copy of an account record (callers own what they get). */
function copyAccount(a: AccountRecord | null): AccountRecord | null {
  return a === null
    ? null
    : { nonce: a.nonce, balance: a.balance, codeHash: a.codeHash.slice(), storageRoot: a.storageRoot.slice() };
}

export interface StateReadsOptions {
  /** Bytes of the trie-node cache (NodeSlab). */
  nodeCacheBytes: number;
  /**
   * The genesis alloc's state root when the datadir keeps flat state history (Meta.stateHistory,
   * fixed at creation): block 0's header may name another (anvil --init: the empty trie's).
   */
  genesisStateRoot: Uint8Array | undefined;
  /** OpenChainStoreOptions.walkDiskReads, resolved. */
  walkDiskReads: number;
  /** Meta.stateTrie (fixed at creation) with Meta.trieFrom as last read (stateTrie()). */
  trieWindow: StateTrieView;
  /** Meta.stateLatest: the history's reads try point reads first (pointRowAtCanonical). */
  pointReads: boolean;
  /**
   * A joined datadir still downloading its first block's state (Meta.anchorState `pending`): no
   * history yet. The first commit after the download (onCommit) finds Meta.stateHistory and the
   * reads take up the history and the trie window from then on.
   */
  historyPending?: boolean;
  /** OpenChainStoreOptions.walkDiskReads as given (else the default for the reads in use). */
  walkDiskReadsGiven?: number | undefined;
}

export class StateReads {
  /** Accounts by (state root, address) and storage words by (storage root, slot word): hash-cache.ts. */
  private readonly accounts = new PairCache<AccountView | null>(16_384);
  private readonly slots = new PairCache<Uint8Array>(65_536);
  /**
   * Accounts and storage words after a block, read from the state history: by (block hash,
   * address) and (block hash, address ++ slot word). The state after a block never changes and a
   * read is cached only once its block was found canonical, so no entry goes stale.
   */
  private readonly historyAccounts = new PairCache<AccountRecord | null>(16_384);
  private readonly historySlots = new PairCache<Uint8Array>(65_536);
  /**
   * Recent proofs (with their answer text, rpc's memo): for a body asked again and again (a wallet
   * polling its account). Small on purpose: random proofs almost never repeat, and 2,048 kept
   * records (4-8 KB each with their text) lived long enough to be promoted and then died in the
   * old generation: 128 took the GC threads' CPU down ~4% of a core and p99 from 24 to 19 ms at
   * the same rate (account proofs at random blocks, one app thread). Even 128 records lived long
   * enough to be promoted (~2.5 MB per young collection on random slot proofs), so a proof is
   * admitted only when its request was seen recently (`proofSeen`): a repeated body is kept from
   * its second call on, and a proof asked once never enters the cache and dies young.
   */
  private readonly proofs = new Lru<string, AccountProofRecord>(128);
  /**
   * The proofs' admission filter: a 32-bit digest of each recent request by a slot of its own
   * (4,096 slots, 16 KiB, no objects). A digest shared by two requests only admits one early.
   */
  private readonly proofSeen = new Int32Array(4096);
  /** Contract code by code hash (content-addressed): 4,096 codes. */
  private readonly codes = new HashCache<Uint8Array>(4096);
  /**
   * Trie nodes and delta rows the state diffs read (stateDiff), by hash (content-addressed: never
   * stale), apart from trieNodes. Consecutive blocks' diffs share most of them (block N's trie is
   * the parent side of N + 1's diff, and the base of N's deltas): a replica asks for them in
   * order. DIFF_NODE_BYTES of rows, at most DIFF_NODES.
   */
  private readonly diffNodes = new HashCache<Uint8Array>(DIFF_NODES, DIFF_NODE_BYTES);
  /** The state history's loads in progress, one per block hash and address or slot (single-flight). */
  private readonly loading = {
    historyAccounts: new SingleFlight<string, AccountRecord | null | undefined>(),
    historySlots: new SingleFlight<string, Uint8Array | undefined>(),
  };
  /**
   * Trie nodes by hash (node-slab.ts), shared by the storage, account and proof walks: a node is
   * read once whichever path asks first. 32 MiB of node bytes (~64,000 branch nodes of ~530
   * bytes; more of the smaller leaves) and a 131,072-slot index (5.5 MiB).
   */
  private readonly trieNodes: NodeSlab;
  /** keccak256 of recently read accounts' addresses (keccak.ts): 4,096 addresses, 212 KB. */
  private readonly addressHashes = new AddressHashes(4096);
  private genesisStateRoot: Uint8Array | undefined;
  private walkDiskReads: number;
  private trieWindow: StateTrieView;
  private pointReads: boolean;
  private historyPending: boolean;
  private readonly walkDiskReadsGiven: number | undefined;

  constructor(
    private readonly db: Db,
    /** State roots of canonical blocks by hash: the block reads' cache (LevelChainStore), read here. */
    private readonly stateRoots: HashCache<Uint8Array>,
    o: StateReadsOptions,
  ) {
    this.trieNodes = new NodeSlab(o.nodeCacheBytes, Math.max(1, Math.round(o.nodeCacheBytes / 256)));
    this.genesisStateRoot = o.genesisStateRoot;
    this.walkDiskReads = o.walkDiskReads;
    this.trieWindow = o.trieWindow;
    this.pointReads = o.pointReads;
    this.historyPending = o.historyPending === true;
    this.walkDiskReadsGiven = o.walkDiskReadsGiven;
  }

  /** A commit was applied (LevelChainStore.applyCommit): loads in flight do not fill caches; the window may have moved. */
  onCommit(): void {
    for (const flight of Object.values(this.loading)) flight.clear();
    if (this.db.status !== 'open') return;
    if (this.historyPending) this.takeUpHistory();
    this.stateTrie(true);
  }

  /**
   * A joined datadir whose first block's state was pending at open: once its download has ended
   * (Meta.stateHistory written, with the first change set, in the batch that marked it whole), the
   * by-block reads use the history, and the trie window (Meta.stateTrie) applies, as at an open.
   */
  private takeUpHistory(): void {
    const root = tables.meta.getSync(this.db, MetaKey.StateHistory);
    if (root === undefined) return;
    this.historyPending = false;
    this.pointReads = tables.meta.getSync(this.db, MetaKey.StateLatest) !== undefined;
    this.walkDiskReads = this.walkDiskReadsGiven ?? (this.pointReads ? WALK_DISK_READS_POINT : WALK_DISK_READS);
    const mode = tables.meta.getSync(this.db, MetaKey.StateTrie);
    const trie = mode === undefined ? undefined : parseStateTrie(Buffer.from(mode).toString('utf8'));
    this.trieWindow =
      trie === undefined || trie.kind === 'archive'
        ? { mode: 'archive' }
        : {
            mode: 'window',
            blocks: trie.blocks,
            trieFrom: decodeTrieFrom(tables.meta.getSync(this.db, MetaKey.TrieFrom)),
          };
    this.genesisStateRoot = root;
  }

  private guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return guarded(this.db, what, fn);
  }

  private hit<T>(v: T | undefined): Promise<T> | undefined {
    return cachedHit(this.db, v);
  }

  private openSync<T>(what: string, fn: () => T): T {
    return openSyncGuarded(this.db, what, fn);
  }

  // --- state ----------------------------------------------------------------------------------

  /** Trie nodes by hash for the trie walks of lookups and proofs (content-addressed: never stale). */
  // No single-flight needed: a synchronous load fills the cache before any other caller runs.
  // What it returns is a view of the slab: valid for the walk that asked, copied by whoever keeps it.
  private readonly nodeSource: NodeSource = (hash) => {
    const v = this.trieNodes.get(hash);
    if (v !== undefined) return v;
    if (this.diskReads-- <= 0) throw OVER_BUDGET;
    const raw = tables.trieNodes.getSync(this.db, hash);
    return raw === undefined ? undefined : this.trieNodes.set(hash, nodeBytes(raw, this.rawNode));
  };

  /** A TrieNodes row as stored (a delta's base, node-delta.ts): straight from LevelDB. */
  private readonly rawNode: RawNodeGet = (hash) => tables.trieNodes.getSync(this.db, hash);

  /** Node loads from disk the walk in progress may still make (trieFirst); unbounded otherwise. */
  private diskReads = Number.POSITIVE_INFINITY;

  /**
   * `walk` (a synchronous trie walk) when it needs at most walkDiskReads nodes from disk, else
   * undefined; undefined too when a node is missing (then the history answers).
   */
  private trieFirst<T>(walk: () => T): T | undefined {
    this.diskReads = this.walkDiskReads;
    try {
      return walk();
    } catch (err) {
      if (err === OVER_BUDGET || err instanceof MissingTrieNodeError) return undefined;
      throw err;
    } finally {
      this.diskReads = Number.POSITIVE_INFINITY;
    }
  }

  /** The value at hashed key `path` of the trie `root` (null when absent): trie-read.ts, synchronous reads. */
  private trieLookup(root: Uint8Array, path: Uint8Array): Uint8Array | null {
    if (bytesEqual(root, KECCAK256_RLP)) return null;
    return trieGet(this.nodeSource, root, path);
  }

  /** The account `address` in the state `stateRoot` (null when absent), cached by both. */
  private accountView(stateRoot: Uint8Array, address: Uint8Array): AccountView | null {
    const hit = this.accounts.get(stateRoot, address);
    if (hit !== undefined) return hit;
    // trie-read.ts walks the trie with synchronous reads: the account is loaded and cached before
    // any other caller runs, so concurrent misses share it without a single-flight.
    const raw = this.trieLookup(stateRoot, this.addressHashes.of(address));
    let view: AccountView | null = null;
    if (raw !== null) {
      // raw is a view of the node cache (trieGet): the roots are copied (32-byte copies live in
      // their array objects, no memory of their own).
      const a = accountFields(raw);
      view = { nonce: a.nonce, balance: a.balance, codeHash: a.codeHash.slice(), storageRoot: a.storageRoot.slice() };
    }
    this.accounts.set(stateRoot, address, view);
    return view;
  }

  // --- state reads for accounts, code and an EVM ------------------------------------------------

  /** Whether the datadir keeps flat state history (history/): then the *AtBlock reads answer. */
  async hasStateHistory(): Promise<boolean> {
    return this.guard('stateHistory', async () => this.genesisStateRoot !== undefined);
  }

  /**
   * The account `address` after the canonical block `block` (null: absent), from the state history
   * (one reverse seek, in a snapshot where `block` is canonical: readAtCanonical). Undefined when
   * the datadir keeps none or `block` is no longer canonical: the caller walks its state trie.
   */
  accountAtBlock(block: BlockRef, address: Bytes): Promise<AccountRecord | null | undefined> {
    if (this.genesisStateRoot === undefined) return Promise.resolve(undefined);
    // `null` (no account) is an answer: each step runs only while the ones before found nothing.
    let hit = this.historyAccounts.get(block.hash, address);
    if (hit === undefined)
      hit = this.openSync('accountAtBlock', () => this.cheapWalk(block, (root) => this.accountView(root, address)));
    if (hit === undefined) hit = this.openSync('accountAtBlock', () => this.pointAccount(block, address));
    // A hit answers at once; a closed store still throws (guard).
    if (hit !== undefined) return this.hit(copyAccount(hit)) ?? this.guard('accountAtBlock', async () => hit);
    const flight = byteKey(block.hash) + byteKey(address);
    return this.guard('accountAtBlock', async () => {
      const account = await this.loading.historyAccounts.run(flight, async () => {
        const addressKey = this.addressHashes.of(address).slice();
        const found = await readAtCanonical(this.db, block, (view) =>
          historyAccountAt(view, block.number, address, addressKey),
        );
        if (found !== undefined) this.historyAccounts.set(block.hash, address, found);
        return found;
      });
      return account === undefined ? undefined : copyAccount(account);
    });
  }

  /** accountAtBlock's point reads (pointRowAtCanonical), cached; undefined: the seek answers. */
  private pointAccount(block: BlockRef, address: Uint8Array): AccountRecord | null | undefined {
    if (!this.pointReads) return undefined;
    const found = pointAccountAtCanonical(this.db, block, this.addressHashes.of(address));
    if (found !== undefined) this.historyAccounts.set(block.hash, address, found);
    return found;
  }

  /** storageAtBlock's point reads (pointRowAtCanonical), cached under `key`; undefined: the seek answers. */
  private pointSlot(block: BlockRef, address: Uint8Array, word: Uint8Array, key: Uint8Array): Uint8Array | undefined {
    if (!this.pointReads) return undefined;
    const found = pointStorageAtCanonical(this.db, block, address, word, this.addressHashes.of(address));
    if (found !== undefined) this.historySlots.set(block.hash, key, found);
    return found;
  }

  /** The state trie's retention; `fresh`: with Meta.trieFrom read now (a pruner advances it). */
  stateTrie(fresh = false): StateTrieView {
    const w = this.trieWindow;
    if (fresh && w.mode === 'window') {
      const raw = this.openSync('stateTrie', () => tables.meta.getSync(this.db, MetaKey.TrieFrom));
      this.trieWindow = { ...w, trieFrom: decodeTrieFrom(raw) };
    }
    return this.trieWindow;
  }

  /**
   * The trie walk `walk` at the state root of `block` (cached: rpc resolved it) when it reads few
   * nodes from disk (trieFirst); never below the trie window (Meta.trieFrom), whose nodes may be
   * pruned: the history answers there. A walk through cached nodes costs a few µs, a seek in the history
   * an asynchronous LevelDB call (~120 µs of CPU): the seek is for the walks that go deep on disk.
   */
  private cheapWalk<T>(block: BlockRef, walk: (root: Uint8Array) => T): T | undefined {
    // Block 0's state is the alloc's, whatever root its header names.
    const root = block.number === 0n ? this.genesisStateRoot : this.stateRoots.get(block.hash);
    if (root === undefined || this.walkDiskReads < 0) return undefined;
    if (this.trieWindow.mode === 'window' && block.number < this.trieWindow.trieFrom) return undefined;
    return this.trieFirst(() => walk(root));
  }

  /** The storage word `slot` of `address` after the canonical block `block` (32 bytes); undefined as accountAtBlock. */
  storageAtBlock(block: BlockRef, address: Bytes, slot: Bytes): Promise<Bytes | undefined> {
    if (this.genesisStateRoot === undefined) return Promise.resolve(undefined);
    const word = setLengthLeft(slot, 32);
    const key = new Uint8Array(52);
    key.set(address.subarray(0, 20), 0);
    key.set(word, 20);
    const hit =
      this.historySlots.get(block.hash, key) ??
      this.openSync('storageAtBlock', () =>
        this.cheapWalk(block, (root) => {
          const account = this.accountView(root, address);
          return account === null ? new Uint8Array(32) : this.storageSync(account.storageRoot, word);
        }),
      ) ??
      this.openSync('storageAtBlock', () => this.pointSlot(block, address, word, key));
    if (hit !== undefined) return this.hit(hit.slice()) ?? this.guard('storageAtBlock', async () => hit);
    const flight = byteKey(block.hash) + byteKey(key);
    return this.guard('storageAtBlock', async () => {
      const value = await this.loading.historySlots.run(flight, async () => {
        const found = await readAtCanonical(this.db, block, (view) =>
          historyStorageAt(view, block.number, address, word),
        );
        if (found !== undefined) this.historySlots.set(block.hash, key, found);
        return found;
      });
      return value?.slice();
    });
  }

  async account(stateRoot: Bytes, address: Bytes): Promise<AccountRecord | null> {
    return this.guard('account', async () => this.accountSync(stateRoot, address));
  }

  private accountSync(stateRoot: Uint8Array, address: Uint8Array): AccountRecord | null {
    const v = this.accountView(stateRoot, address);
    return v === null
      ? null
      : { nonce: v.nonce, balance: v.balance, codeHash: v.codeHash.slice(), storageRoot: v.storageRoot.slice() };
  }

  code(codeHash: Bytes): Promise<Bytes | undefined> {
    return this.guard('code', async () => this.codeSync(codeHash));
  }

  /** Code rows are keyed 'c' ++ codeHash (the state manager's prefixed code keys, schema.ts). */
  private codeSync(codeHash: Uint8Array): Uint8Array | undefined {
    if (bytesEqual(codeHash, KECCAK256_NULL)) return new Uint8Array();
    let code = this.codes.get(codeHash);
    if (code === undefined) {
      code = tables.trieNodes.getSync(this.db, codeNodeKey(codeHash));
      if (code === undefined) return undefined;
      this.codes.set(codeHash, code);
    }
    return code.slice();
  }

  private storageSync(storageRoot: Uint8Array, slot: Uint8Array): Uint8Array {
    if (bytesEqual(storageRoot, KECCAK256_RLP)) return new Uint8Array(32);
    const word = setLengthLeft(slot, 32);
    let value = this.slots.get(storageRoot, word);
    if (value === undefined) {
      const v = this.trieLookup(storageRoot, keccak256(word));
      value = v === null ? ZERO_WORD : word32(rlpString(v));
      this.slots.set(storageRoot, word, value);
    }
    return value.slice();
  }

  private readonly syncReader: SyncStateReader = {
    account: (stateRoot, address) => this.openSync('account', () => this.accountSync(stateRoot, address)),
    storage: (storageRoot, slot) => this.openSync('storage', () => this.storageSync(storageRoot, slot)),
    code: (codeHash) => this.openSync('code', () => this.codeSync(codeHash)),
    node: (hash) => this.openSync('node', () => this.nodeSource(hash)?.slice()),
  };

  stateReader(): SyncStateReader {
    return this.syncReader;
  }

  storageAt(stateRoot: Bytes, address: Bytes, slot: Bytes): Promise<Bytes> {
    return this.guard('storageAt', async () => {
      const account = this.accountView(stateRoot, address);
      if (account === null || bytesEqual(account.storageRoot, KECCAK256_RLP)) return new Uint8Array(32);
      const word = setLengthLeft(slot, 32);
      let value = this.slots.get(account.storageRoot, word);
      if (value === undefined) {
        // Synchronous walk (trie-read.ts): filled before any other caller runs.
        const v = this.trieLookup(account.storageRoot, keccak256(word));
        value = v === null ? ZERO_WORD : word32(rlpString(v)); // a copy: v is a view of the node cache
        this.slots.set(account.storageRoot, word, value);
      }
      return value.slice(); // callers own what they get
    });
  }

  proof(stateRoot: Bytes, address: Bytes, slots: Bytes[]): Promise<AccountProofRecord> {
    let digest = cacheKeyOf(stateRoot, address);
    for (const slot of slots) digest = Math.imul(digest ^ cacheKeyOf(slot), 0x01000193);
    const at = digest & (this.proofSeen.length - 1);
    if (this.proofSeen[at] !== digest) {
      // First sight (lately): answered, not kept.
      this.proofSeen[at] = digest;
      return this.guard('proof', async () => this.loadProof(stateRoot, address, slots, undefined));
    }
    let cacheKey = byteKey(stateRoot) + byteKey(address);
    for (const slot of slots) cacheKey += String.fromCharCode(slot.length) + byteKey(slot); // slots vary in width
    // The load is wholly synchronous (trie-read.ts): it fills the cache before any other caller
    // runs, so concurrent misses cannot pile up (no single-flight needed).
    return (
      this.hit(this.proofs.get(cacheKey)) ??
      this.guard('proof', async () => this.proofs.get(cacheKey) ?? this.loadProof(stateRoot, address, slots, cacheKey))
    );
  }

  /**
   * EIP-1186 proof by the synchronous trie walk (trie-read.ts): the nodes read by hash along the
   * account's and each slot's path, root first, from the shared node cache or one getSync each.
   */
  private loadProof(
    stateRoot: Uint8Array,
    address: Uint8Array,
    slots: Uint8Array[],
    cacheKey: string | undefined,
  ): AccountProofRecord {
    // Each walk's nodes are views of the node cache's slab, valid while the walk runs: copied
    // after it into one buffer per walk, since the record outlives it (memo, answer written later).
    let accountProof: Uint8Array[] = [];
    const raw = bytesEqual(stateRoot, KECCAK256_RLP)
      ? null
      : trieGet(this.nodeSource, stateRoot, this.addressHashes.of(address), accountProof);
    accountProof = copyNodes(accountProof);
    const account = raw === null ? null : accountFields(raw);
    // The roots are views of the node cache (trieGet): the record keeps copies.
    const storageRoot = account === null ? KECCAK256_RLP : account.storageRoot.slice();
    const storageProof: StorageProofRecord[] = [];
    for (const slot of slots) {
      const key = setLengthLeft(slot, 32);
      if (account === null || bytesEqual(storageRoot, KECCAK256_RLP)) {
        storageProof.push({ key, value: 0n, proof: [] });
        continue;
      }
      const proof: Uint8Array[] = [];
      const v = trieGet(this.nodeSource, storageRoot, keccak256(key), proof);
      storageProof.push({ key, value: v === null ? 0n : bytesToBigInt(rlpString(v)), proof: copyNodes(proof) });
    }
    const record: AccountProofRecord = {
      address,
      nonce: account?.nonce ?? 0n,
      balance: account?.balance ?? 0n,
      codeHash: account === null ? KECCAK256_NULL : account.codeHash.slice(),
      storageHash: storageRoot,
      accountProof,
      storageProof,
    };
    if (cacheKey !== undefined) this.proofs.set(cacheKey, record);
    return record;
  }

  // --- state diffs and proven state ---------------------------------------------------------

  historyStateDiff(
    block: BlockRef,
    touches: BlockTouches,
    limits: StateDiffLimits,
  ): Promise<StateDiffRecord | undefined> {
    return this.guard('historyStateDiff', () =>
      historyStateDiff(this.db, block, touches, (h) => this.codeSync(h), limits, this.pointReads),
    );
  }

  stateDiff(parentRoot: Bytes, root: Bytes, limits: StateDiffLimits): Promise<StateDiffRecord> {
    // The nodes of a diff go to diffNodes, not to the node cache (they would push hot proof paths
    // out of it); nodes the node cache holds are taken from it. A node's delta bases are read
    // through diffNodes too (diffRow): the parent's node at the same path is the base of most.
    const nodes: NodeSource = (hash) => {
      const hit = this.trieNodes.get(hash);
      if (hit !== undefined) return hit;
      const kept = this.diffNodes.get(hash);
      if (kept !== undefined && !isDelta(kept)) return kept;
      const raw = kept ?? tables.trieNodes.getSync(this.db, hash);
      if (raw === undefined) return undefined;
      const node = nodeBytes(raw, this.diffRow);
      this.diffNodes.set(hash, node, node.length);
      return node;
    };
    return this.guard('stateDiff', () => diffStates(nodes, (h) => this.codeSync(h), parentRoot, root, limits));
  }

  /**
   * A TrieNodes row for a delta's base in a state diff: a whole node from either cache, else the
   * row as stored (kept in diffNodes). A view of the node cache is used at once by nodeBytes,
   * never kept.
   */
  private readonly diffRow: RawNodeGet = (hash) => {
    const hit = this.trieNodes.get(hash) ?? this.diffNodes.get(hash);
    if (hit !== undefined) return hit;
    const raw = tables.trieNodes.getSync(this.db, hash);
    if (raw !== undefined) this.diffNodes.set(hash, raw, raw.length);
    return raw;
  };

  /**
   * Trie nodes by hash (ChainStore.stateNodes), whole: a delta row is rebuilt from its bases. Read
   * straight from LevelDB, not through the walks' cache: a state download asks each node once.
   */
  stateNodes(hashes: Bytes[]): Promise<(Bytes | undefined)[]> {
    return this.guard('stateNodes', async () =>
      hashes.map((hash) => {
        if (hash.length !== 32) throw new Error('stateNodes: a trie node hash is 32 bytes');
        const raw = tables.trieNodes.getSync(this.db, hash);
        return raw === undefined ? undefined : nodeBytes(raw, this.rawNode);
      }),
    );
  }

  /**
   * Verified proof nodes and code (ChainStore.addProvenState) into TrieNodes, keyed by their own
   * keccak (code under 'c' ++ codeHash, as the state manager keys it): content-addressed, they
   * slot into the archive trie the walks read, whoever wrote the rest. They go into the node and
   * code caches before the call returns (a read right after it finds them); the batch that writes
   * them is built and written after the current callbacks (the answer that proved them goes
   * out first).
   */
  addProvenState(nodes: Bytes[], codes: Bytes[]): Promise<void> {
    const rows: [Uint8Array, Uint8Array][] = [];
    for (const n of nodes) {
      const hash = keccak256(n);
      this.trieNodes.set(hash, n);
      rows.push([tables.trieNodes.key(hash), n.slice()]);
    }
    for (const c of codes) {
      const hash = keccak256(c);
      this.codes.set(hash, c.slice());
      rows.push([tables.trieNodes.key(codeNodeKey(hash)), c.slice()]);
    }
    return this.guard('addProvenState', async () => {
      await new Promise<void>((r) => setImmediate(r));
      const batch = this.db.batch();
      for (const [k, v] of rows) batch.put(k, v);
      await batch.write();
    });
  }
}
