// The read side of the store: LevelChainStore implements core's read-only ChainStore over the
// tables of schema.ts. Decoding happens here (through core's codecs); bounded LRU caches keep the
// hot paths (head, block by number/hash, tx lookups, receipts, trace rows) off LevelDB. The state
// (accounts, storage, code, proofs, trie diffs: state-reads.ts) is a part of its own, which the
// store hands those methods to; guard.ts is what every read goes through.
//
// Why caching is exact here: without a follower, classic-level holds the datadir's exclusive lock
// for as long as the store is open, so nothing writes the chain under it: the head, the canonical
// number -> hash map and the tx lookup rows are fixed; everything else is content-addressed (by
// block hash, state root, storage root or node hash) and immutable anyway. With `serve --follow`
// an ingest thread of the same process writes: after each durable batch the serving thread calls
// applyCommit(), which moves the cached head and drops every entry the commit made stale (canonical
// numbers, tx locations, records of orphaned blocks, per-block log contexts). A read that was in
// flight across a commit does not fill the caches (generation check). Cached records are shared
// between callers and must be treated as read-only.
import { RLP } from '@ethereumjs/rlp';
import {
  DEPOSIT_TX_TYPE,
  rlpHeaderLength,
  writeRlpBytes,
  writeRlpHeader,
  SingleFlight,
  bytesEqual,
  bytesToBigInt,
  decodeHeader,
  decodeTransaction,
  blockJsonAscii,
  withdrawalsFromValues,
  Lru,
} from '@chainnode/core';
import type {
  AccountProofRecord,
  AppearancePage,
  AppearanceQuery,
  BlockJsonFields,
  AccountRecord,
  BlockRecord,
  BlockRef,
  BlockTouches,
  Bytes,
  ChainCommit,
  ChainHead,
  ChainInfo,
  ChainStore,
  HeaderRecord,
  LogQuery,
  LogQueryOptions,
  LogQueryResult,
  LogTextQueryResult,
  LogRecord,
  ReadyJson,
  ReceiptRecord,
  StateDiffLimits,
  StateDiffRecord,
  SyncStateReader,
  StateTrieView,
  TxRecord,
  TxWithLocation,
  UncleRecord,
} from '@chainnode/core';
import { DatadirEmptyError, openDb } from '../db.js';
import { byteKey, cachedHit, guarded } from './guard.js';
import { StateReads, WALK_DISK_READS, WALK_DISK_READS_POINT } from './state-reads.js';
import type { StateReadsOptions } from './state-reads.js';
import { TraceReads } from './trace-reads.js';
import type { Db } from '../db.js';
import { LogQueries, readBlockLogsSync } from '../logs/index.js';
import {
  MetaKey,
  Prefix,
  SCHEMA_VERSION,
  BODY_ROW_TXS,
  bodyRowOf,
  readBodySync,
  headCodec,
  decodeBlockExtras,
  splitBlockTxHashes,
  storedReceiptAt,
  tables,
  u64Codec,
} from '../schema/index.js';
import {
  bodyTransaction,
  bodyHoldsTransactions,
  bodyRowTransaction,
  headerStateRoot,
  headerTxFields,
  bodyBlockFields,
  readStateTrie,
  readTrieFrom,
} from '../trie/index.js';
import type { StoredReceipt } from '../schema/index.js';
import { keccak256 } from '../keccak.js';
import { HashCache, PairCache } from '../hash-cache.js';
import { hasLatest, stateHistoryRoot } from '../history/index.js';
import type { HeaderTxFields } from '../trie/index.js';

/** No transaction hashes (a block without transactions). */
const EMPTY = new Uint8Array(0);

/** The body rows of a block read so far for transactions looked up alone (bodyTransactionSync). */
interface BodyRowsSeen {
  /** BodyTxs rows by position. */
  parts: Map<number, Uint8Array>;
  /** An earlier release's Bodies row, every transaction inline. */
  inline?: Uint8Array;
}

/** txRows: a block's rows for its transactions looked up alone, and the header fields they show. */
interface TxRows extends BodyRowsSeen {
  head: HeaderTxFields;
  senders: Uint8Array;
}

/** What a BlockTxHashes row's extras (schema.ts blockExtras) give a hashes-only block answer besides the header. */
function extrasFields(extras: Uint8Array): Omit<BlockJsonFields, 'header' | 'totalDifficulty'> {
  const { size, uncleHashes, withdrawals } = decodeBlockExtras(extras);
  const fields: Omit<BlockJsonFields, 'header' | 'totalDifficulty'> = { size, uncleHashes };
  if (withdrawals !== undefined) fields.withdrawals = withdrawalsFromValues(withdrawals);
  return fields;
}

/**
 * An OP-stack deposit's encoding has no nonce: op-geth's answers show its receipt's depositNonce
 * (and depositReceiptVersion) instead, when the receipt has them.
 */
function withDepositReceipt(tx: TxRecord, receipt: StoredReceipt | undefined): void {
  if (tx.type !== DEPOSIT_TX_TYPE || receipt === undefined) return;
  if (receipt.depositNonce !== undefined) tx.nonce = receipt.depositNonce;
  if (receipt.depositReceiptVersion !== undefined) tx.depositReceiptVersion = receipt.depositReceiptVersion;
}

/** What the receipts cache may hold, by receiptsWeight(). */
const RECEIPT_CACHE_BYTES = 64 << 20;

/** Receipts read alone kept (receiptAt): a few hundred bytes each. */
const RECEIPTS_ALONE = 16_384;

/**
 * Estimated heap bytes of a block's receipt records and of the JSON texts rpc's memo keeps on
 * them: per receipt its object and text; per log its record, its five byte arrays and its text
 * (data twice as hex, topics 66 characters each). Measured on the mainnet-shaped chain (40 blocks,
 * 248 receipts and 702 logs each, after a collection): 1.62 MB of heap per block, this gives 1.58.
 */
function receiptsWeight(receipts: readonly ReceiptRecord[]): number {
  let w = 0;
  for (const r of receipts) {
    w += 1200;
    for (const log of r.logs) w += 1200 + 3 * log.data.length + 170 * log.topics.length;
  }
  return w;
}

export class LevelChainStore implements ChainStore {
  /**
   * Blocks as read (their transactions decoded when first read; a full answer is written from
   * their encodings, and its text memoised on them): 256.
   * A decoded block is a large graph of small objects that the collector walks while it is kept:
   * with 1,024 of the varied bench's full-transaction blocks held, every other call got ~30%
   * dearer (random slot proofs right after that mix: 90 µs of server CPU each instead of 65),
   * and at mainnet's few hundred transactions per block 1,024 would be hundreds of MB of heap.
   */
  private readonly blocks = new Lru<string, BlockRecord>(256);
  /** Block number by block hash (immutable: a block's number never changes). */
  private readonly numbers = new HashCache<bigint>(65_536);
  /** State roots of canonical blocks by hash (dropped when a reorg removes the block): 16,384 x 32 bytes. */
  private readonly stateRoots = new HashCache<Uint8Array>(16_384);
  private readonly headers = new Lru<string, HeaderRecord>(4096);
  private readonly canonicalCache = new Lru<bigint, Uint8Array>(8192);
  private readonly txCache = new Lru<string, TxWithLocation>(16_384);
  /**
   * Of the blocks whose transactions were last looked up alone (loadTransaction): the senders row
   * and the BodyTxs rows read so far as stored (or an earlier release's Bodies row holding them
   * all), and the two header fields a transaction's answer shows. The other transactions of a
   * block asked next, or at once, read no row again. 64 blocks: ~1 MB at mainnet's shape (5 KB
   * of senders, a few 5 KB rows each), ~8 MB of an earlier release's 120 KB bodies.
   */
  private readonly txRows = new HashCache<TxRows>(64);
  /** Hashes-only block answers (about 1.5 KB each): what readyBlockJson hands out. */
  private readonly readyJson = new HashCache<ReadyJson>(4096);
  /**
   * Receipts with their logs by block hash (rows keyed by hash never change; dropped on reorg):
   * 1,024 blocks, and about RECEIPT_CACHE_BYTES of them by receiptsWeight() (the records and the
   * JSON texts rpc's memo hangs on them), so ~40 blocks at mainnet's few hundred receipts (1.6 MB each with their texts).
   */
  private readonly receiptCache = new HashCache<ReceiptRecord[]>(1024, RECEIPT_CACHE_BYTES);
  /** Receipts read alone (receiptAt), by block hash and index: their logs copied out of the block's row. */
  private readonly receiptsAlone = new PairCache<{ receipt: ReceiptRecord; previous: ReceiptRecord | undefined }>(
    RECEIPTS_ALONE,
  );
  /**
   * Cache misses in progress, one load per key however many callers wait (single-flight; the state
   * history's by block hash and address or slot). Loads that are wholly synchronous (canonical
   * numbers, accounts and slots read through the trie: the cold path) need none.
   */
  private readonly loading = {
    headers: new SingleFlight<string, HeaderRecord | undefined>(),
    blocks: new SingleFlight<string, BlockRecord | undefined>(),
    txs: new SingleFlight<string, TxWithLocation | undefined>(),
  };
  /** The head, read once: no writer can move it while this store holds the datadir lock. */
  private headCache: ChainHead | undefined;
  /** Bumped by applyCommit: a read that started under an older generation does not fill caches. */
  private gen = 0;
  private readonly logQueries: LogQueries;
  /** Accounts, storage, code, proofs and state diffs (state-reads.ts). */
  private readonly state: StateReads;
  /** Address appearances and recorded trace rows (trace-reads.ts). */
  private readonly traces: TraceReads;
  /** StateReadsOptions.genesisStateRoot: block 0's state root when the datadir keeps state history. */
  private readonly genesisStateRoot: Uint8Array | undefined;

  private constructor(
    private readonly db: Db,
    datadir: string,
    private readonly chainInfo: ChainInfo,
    state: StateReadsOptions,
    /** Whether the datadir holds TxLookup rows of an earlier release (read after TxLookupShort). */
    private readonly legacyTxLookups: boolean,
  ) {
    // Block 0's state is the alloc's when the datadir keeps state history (stateRootOf).
    this.genesisStateRoot = state.genesisStateRoot;
    this.state = new StateReads(db, this.stateRoots, state);
    this.traces = new TraceReads(db, {
      canonicalNumber: (hash) => this.canonicalNumber(hash),
      canonicalSync: (number) => this.canonicalSync(number),
      firstBlock: () => this.chainInfo.firstBlock ?? 0n,
    });
    this.logQueries = new LogQueries(db, datadir, {
      head: () => this.head(),
      generation: () => this.gen,
      firstBlock: () => this.chainInfo.firstBlock ?? 0n,
    });
  }

  static async open(datadir: string, options: OpenChainStoreOptions = {}): Promise<LevelChainStore> {
    const db = await openDb(datadir, { create: false, shared: options.shared });
    try {
      const version = await tables.meta.get(db, MetaKey.SchemaVersion);
      const genesisHash = await tables.meta.get(db, MetaKey.GenesisHash);
      const config = await tables.meta.get(db, MetaKey.ChainConfig);
      const head = await tables.meta.get(db, MetaKey.Head);
      if (version === undefined || genesisHash === undefined || config === undefined || head === undefined) {
        throw new DatadirEmptyError(datadir);
      }
      const v = Number(bytesToBigInt(version));
      if (v !== SCHEMA_VERSION)
        throw new Error(`datadir ${datadir} has store schema version ${v}, this build reads ${SCHEMA_VERSION}`);
      const parsed = JSON.parse(new TextDecoder().decode(config)) as { chainId?: number | string };
      if (parsed.chainId === undefined) throw new Error(`datadir ${datadir}: stored chain config has no chainId`);
      const chainId = BigInt(parsed.chainId);
      const genesisRaw = await tables.meta.get(db, MetaKey.GenesisJson);
      const genesis: unknown =
        genesisRaw === undefined ? { config: parsed } : JSON.parse(new TextDecoder().decode(genesisRaw));
      const first = await tables.meta.get(db, MetaKey.FirstBlock);
      const firstBlock = first === undefined ? 0n : u64Codec.decode(first);
      const pointReads = await hasLatest(db);
      return new LevelChainStore(
        db,
        datadir,
        { chainId, networkId: chainId, genesisHash, genesis, firstBlock },
        {
          nodeCacheBytes: options.nodeCacheBytes ?? NODE_CACHE_BYTES,
          genesisStateRoot: await stateHistoryRoot(db),
          walkDiskReads: options.walkDiskReads ?? (pointReads ? WALK_DISK_READS_POINT : WALK_DISK_READS),
          trieWindow: await trieWindowOf(db),
          pointReads,
          historyPending: Buffer.from((await tables.meta.get(db, MetaKey.AnchorState)) ?? []).toString() === 'pending',
          walkDiskReadsGiven: options.walkDiskReads,
        },
        await hasLegacyTxLookups(db),
      );
    } catch (err) {
      await db.close();
      throw err;
    }
  }

  info(): ChainInfo {
    return this.chainInfo;
  }

  private guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return guarded(this.db, what, fn);
  }

  /** Cache hits skip guard()'s async wrapper; the open check still comes first. */
  private hit<T>(v: T | undefined): Promise<T> | undefined {
    return cachedHit(this.db, v);
  }

  head(): Promise<ChainHead> {
    return (
      this.hit(this.headCache) ??
      this.guard('head', async () => {
        if (this.headCache !== undefined) return this.headCache;
        const raw = tables.meta.getSync(this.db, MetaKey.Head);
        if (raw === undefined) throw new Error('head pointer missing');
        this.headCache = headCodec.decode(raw);
        return this.headCache;
      })
    );
  }

  canonicalHash(number: bigint): Promise<Bytes | undefined> {
    return this.hit(this.canonicalCache.get(number)) ?? this.guard('canonicalHash', () => this.canonical(number));
  }

  private async canonical(number: bigint): Promise<Uint8Array | undefined> {
    if (number < 0n || number >= 2n ** 64n) return undefined;
    const hit = this.canonicalCache.get(number);
    if (hit !== undefined) return hit;
    // A synchronous read (cold path): it fills the cache before any other caller can run, so
    // concurrent misses cannot pile up (no single-flight needed) and no commit can land between
    // the read and the fill (no generation check needed).
    return this.canonicalSync(number);
  }

  /** The canonical hash of `number` from the cache, else one synchronous read that fills it. */
  private canonicalSync(number: bigint): Uint8Array | undefined {
    const hit = this.canonicalCache.get(number);
    if (hit !== undefined) return hit;
    const hash = tables.canonical.getSync(this.db, number);
    if (hash !== undefined) {
      this.canonicalCache.set(number, hash);
      this.numbers.set(hash, number); // a block's number never changes (canonicalNumber)
    }
    return hash;
  }

  blockNumber(hash: Bytes): Promise<bigint | undefined> {
    return this.guard('blockNumber', () => this.canonicalNumber(hash));
  }

  /** Number of `hash` if it is canonical. */
  private async canonicalNumber(hash: Uint8Array): Promise<bigint | undefined> {
    if (hash.length !== 32) return undefined;
    // A block's number never changes, so hash -> number is cached without invalidation; whether
    // the block is canonical is asked of the canonical table (cache) each time.
    let n = this.numbers.get(hash);
    if (n === undefined) {
      n = tables.hashToNumber.getSync(this.db, hash);
      if (n === undefined) return undefined;
      this.numbers.set(hash, n);
    }
    const c = await this.canonical(n);
    return c !== undefined && bytesEqual(c, hash) ? n : undefined;
  }

  header(hash: Bytes): Promise<HeaderRecord | undefined> {
    return this.hit(this.headers.get(byteKey(hash))) ?? this.guard('header', () => this.headerOf(hash));
  }

  private async headerOf(hash: Uint8Array): Promise<HeaderRecord | undefined> {
    const key = byteKey(hash);
    const hit = this.headers.get(key);
    if (hit !== undefined) return hit;
    return this.loading.headers.run(key, () => this.loadHeader(hash, key));
  }

  private async loadHeader(hash: Uint8Array, key: string): Promise<HeaderRecord | undefined> {
    const gen = this.gen;
    if ((await this.canonicalNumber(hash)) === undefined) return undefined;
    const raw = tables.headers.getSync(this.db, hash);
    if (raw === undefined) return undefined;
    const h = decodeHeader(raw, hash.slice());
    if (gen === this.gen) this.headers.set(key, h);
    return h;
  }

  /**
   * The state root of canonical block `hash` (of block 0: the alloc's, when the datadir knows it):
   * the header row's 4th item read in place (trie-read.ts's headerStateRoot), not the whole header decoded. Cached by hash like header(): a hit needs no
   * canonical check because applyCommit drops the roots of the blocks a reorg removes.
   */
  stateRoot(hash: Bytes): Promise<Bytes | undefined> {
    return this.hit(this.stateRoots.get(hash)) ?? this.guard('stateRoot', () => this.stateRootOf(hash));
  }

  /**
   * The state root of canonical block `number`: canonicalHash then stateRoot, answered from both
   * caches in one step when they hold it (the canonical hash by number is dropped for every number
   * a commit changes, so a hit is the canonical block's root).
   */
  canonicalStateRoot(number: bigint): Promise<Bytes | undefined> {
    const hash = this.canonicalCache.get(number);
    const root = hash === undefined ? undefined : this.stateRoots.get(hash);
    return (
      this.hit(root) ??
      this.guard('canonicalStateRoot', async () => {
        const h = await this.canonical(number);
        return h === undefined ? undefined : this.stateRootOf(h);
      })
    );
  }

  private async stateRootOf(hash: Uint8Array): Promise<Uint8Array | undefined> {
    const gen = this.gen;
    const number = await this.canonicalNumber(hash);
    if (number === undefined) return undefined;
    // Block 0's state is the alloc's, whatever root its header names (anvil --init: the empty trie's).
    if (number === 0n && this.genesisStateRoot !== undefined) return this.genesisStateRoot;
    // From here on synchronous: the first of concurrent misses fills the cache, the rest find it.
    const hit = this.stateRoots.get(hash);
    if (hit !== undefined) return hit;
    const raw = tables.headers.getSync(this.db, hash);
    if (raw === undefined) return undefined;
    const root = headerStateRoot(raw);
    if (gen === this.gen) this.stateRoots.set(hash, root);
    return root;
  }

  block(hash: Bytes): Promise<BlockRecord | undefined> {
    return this.hit(this.blocks.get(byteKey(hash))) ?? this.guard('block', () => this.blockOf(hash));
  }

  private async blockOf(hash: Uint8Array): Promise<BlockRecord | undefined> {
    const key = byteKey(hash);
    const hit = this.blocks.get(key);
    if (hit !== undefined) return hit;
    return this.loading.blocks.run(key, () => this.loadBlock(hash, key));
  }

  private async loadBlock(hash: Uint8Array, key: string): Promise<BlockRecord | undefined> {
    const gen = this.gen;
    const header = await this.headerOf(hash);
    if (header === undefined) return undefined;
    // Synchronous point reads (KvSyncRead), and the tx hashes stored at import instead of keccak
    // of every transaction here.
    const body = readBodySync(this.db, hash);
    const senders = tables.senders.getSync(this.db, hash);
    const td = tables.totalDifficulty.getSync(this.db, hash);
    // BlockTxHashes is keyed by number: under a follower the row may already belong to a block of
    // another branch written since the header was checked (its commit not yet applied here), so it
    // is used only while the number is still this block's; otherwise the hashes are recomputed.
    const stillCanonical = (): boolean => {
      const c = this.canonicalSync(header.number);
      return c !== undefined && bytesEqual(c, hash);
    };
    const txHashes =
      body === undefined || body.transactions.length === 0
        ? []
        : stillCanonical()
          ? tables.blockTxHashes.getSync(this.db, header.number)?.hashes
          : body.transactions.map((raw) => keccak256(raw));
    if (body === undefined || senders === undefined || td === undefined || txHashes === undefined)
      throw new Error(`block ${header.number}: body rows missing`);
    if (senders.length !== body.transactions.length)
      throw new Error(`block ${header.number}: ${senders.length} senders for ${body.transactions.length} txs`);
    if (txHashes.length !== body.transactions.length)
      throw new Error(`block ${header.number}: ${txHashes.length} tx hashes for ${body.transactions.length} txs`);
    const hashes = txHashes.map((h) => h.slice());
    // Transactions are decoded when first read (a full block, a transaction lookup), not for a
    // hashes-only answer, which takes transactionHashes.
    let txs: TxRecord[] | undefined;
    const record = {
      header,
      size: body.size,
      totalDifficulty: td,
      transactionHashes: hashes,
      uncleHashes: body.uncles.map((u) => keccak256(u)),
    } as BlockRecord;
    Object.defineProperty(record, 'transactions', {
      enumerable: true,
      get: (): TxRecord[] => {
        if (txs !== undefined) return txs;
        const decoded = body.transactions.map((raw, i) =>
          decodeTransaction(raw, senders[i] as Uint8Array, hashes[i] as Uint8Array),
        );
        if (decoded.some((tx) => tx.type === DEPOSIT_TX_TYPE)) {
          const receipts = tables.receipts.getSync(this.db, hash);
          decoded.forEach((tx, i) => {
            withDepositReceipt(tx, receipts?.[i]);
          });
        }
        txs = decoded;
        return txs;
      },
    });
    // The encodings too: a full-transaction answer is written from them without decoding.
    record.transactionEncodings = { raw: body.transactions, senders };
    if (body.withdrawals !== undefined) record.withdrawals = withdrawalsFromValues(body.withdrawals);
    if (gen === this.gen) this.blocks.set(key, record);
    return record;
  }

  readyBlockJson(hash: Bytes): Promise<ReadyJson | undefined> {
    return this.hit(this.readyJson.get(hash)) ?? this.guard('readyBlockJson', () => this.loadReadyJson(hash));
  }

  /**
   * The hashes-only answer written from the block's BlockTxHashes row, whose extras hold its
   * header, total difficulty, size, uncle hashes and withdrawals: one read (after the number,
   * which a by-number request has just cached). A row of an earlier release takes the rows it
   * lacks (loadReadyJsonFromRows). The same bytes as the block formatted (rpc's blockText).
   * Undefined when the block is not canonical. BlockJson rows a datadir of an earlier release
   * still holds are not read (`db convert` deletes them).
   */
  private async loadReadyJson(hash: Uint8Array): Promise<ReadyJson | undefined> {
    const hit = this.readyJson.get(hash);
    if (hit !== undefined) return hit;
    const gen = this.gen;
    const number = await this.canonicalNumber(hash);
    if (number === undefined) return undefined;
    // From here on synchronous reads: no commit lands between them.
    const row = this.blockTxHashesRowOf(hash, number);
    const extras = row?.extras === undefined ? undefined : decodeBlockExtras(row.extras);
    if (row === undefined || extras?.header === undefined) return this.loadReadyJsonFromRows(hash);
    const key = byteKey(hash);
    let header = this.headers.get(key);
    if (header === undefined) {
      header = decodeHeader(extras.header.rlp, hash.slice());
      if (gen === this.gen) this.headers.set(key, header);
    }
    const fields: BlockJsonFields = {
      header,
      totalDifficulty: extras.header.totalDifficulty,
      size: extras.size,
      uncleHashes: extras.uncleHashes,
    };
    if (extras.withdrawals !== undefined) fields.withdrawals = withdrawalsFromValues(extras.withdrawals);
    const ready: ReadyJson = { ascii: blockJsonAscii(fields, row.hashes) };
    if (gen === this.gen) this.readyJson.set(hash, ready);
    return ready;
  }

  /**
   * The BlockTxHashes row of block `hash` at `number`, split in place; undefined when the
   * DATABASE no longer maps the number to this block. The row is keyed by number: under a
   * follower it may already belong to a block of another branch (written, its commit not yet
   * applied here), so it is read first and the canonical table checked after.
   */
  private blockTxHashesRowOf(
    hash: Uint8Array,
    number: bigint,
  ): { hashes: Uint8Array; extras?: Uint8Array } | undefined {
    const raw = tables.blockTxHashes.getRawSync(this.db, number);
    const now = tables.canonical.getSync(this.db, number);
    return raw !== undefined && now !== undefined && bytesEqual(now, hash) ? splitBlockTxHashes(raw) : undefined;
  }

  /**
   * The hashes-only answer from the rows of an earlier release's layout: header and total
   * difficulty from their tables; size, uncle hashes and withdrawals from the BlockTxHashes
   * row's extras of that release, or from the body when the row is the hashes alone.
   */
  private async loadReadyJsonFromRows(hash: Uint8Array): Promise<ReadyJson | undefined> {
    const gen = this.gen;
    const header = await this.headerOf(hash);
    if (header === undefined) return undefined;
    // From here on synchronous reads: no commit lands between them.
    const td = tables.totalDifficulty.getSync(this.db, hash);
    if (td === undefined) throw new Error(`block ${header.number}: total difficulty missing`);
    const row = this.blockTxHashesRowOf(hash, header.number);
    let txHashes: Uint8Array;
    let fields: BlockJsonFields;
    if (row?.extras !== undefined) {
      txHashes = row.hashes;
      fields = { header, totalDifficulty: td, ...extrasFields(row.extras) };
    } else {
      const body = this.bodyReadyFields(hash, header.number, row?.hashes);
      if (body === undefined) return undefined;
      txHashes = body.txHashes;
      fields = { header, totalDifficulty: td, ...body.fields };
    }
    const ready: ReadyJson = { ascii: blockJsonAscii(fields, txHashes) };
    if (gen === this.gen) this.readyJson.set(hash, ready);
    return ready;
  }

  /**
   * The size, uncle hashes and withdrawals of a block from its body, read in place
   * (trie-read.ts bodyBlockFields), and its tx hashes: `hashes`, the canonical BlockTxHashes row
   * of a datadir of an earlier release (undefined when the number is no longer this block's:
   * then undefined unless the block has no transactions).
   */
  private bodyReadyFields(
    hash: Uint8Array,
    number: bigint,
    hashes: Uint8Array | undefined,
  ): { fields: Omit<BlockJsonFields, 'header' | 'totalDifficulty'>; txHashes: Uint8Array } | undefined {
    const raw = tables.bodies.getRawSync(this.db, hash);
    if (raw === undefined) throw new Error(`block ${number}: body missing`);
    const body = bodyBlockFields(raw);
    let txHashes: Uint8Array = EMPTY;
    if (body.txCount > 0) {
      if (hashes === undefined) return undefined;
      if (hashes.length !== body.txCount * 32)
        throw new Error(`block ${number}: ${hashes.length / 32} tx hashes for ${body.txCount} txs`);
      txHashes = hashes;
    }
    const fields: Omit<BlockJsonFields, 'header' | 'totalDifficulty'> = {
      size: body.size,
      uncleHashes: body.uncles.length === 1 ? [] : (RLP.decode(body.uncles) as Uint8Array[]).map((u) => keccak256(u)),
    };
    if (body.withdrawals !== undefined)
      fields.withdrawals = withdrawalsFromValues(RLP.decode(body.withdrawals) as Uint8Array[][]);
    return { fields, txHashes };
  }

  uncle(blockHash: Bytes, index: number): Promise<UncleRecord | undefined> {
    return this.guard('uncle', async () => {
      if ((await this.canonicalNumber(blockHash)) === undefined) return undefined;
      const body = tables.bodies.getSync(this.db, blockHash);
      const raw = body?.uncles[index];
      if (raw === undefined) return undefined;
      const size = RLP.encode([RLP.decode(raw) as Uint8Array[], [], []]).length;
      return { header: decodeHeader(raw), size };
    });
  }

  transaction(hash: Bytes): Promise<TxWithLocation | undefined> {
    return (
      this.hit(this.txCache.get(byteKey(hash))) ??
      this.guard('transaction', async () => {
        if (hash.length !== 32) return undefined;
        const key = byteKey(hash);
        const hit = this.txCache.get(key);
        if (hit !== undefined) return hit;
        return this.loading.txs.run(key, () => this.loadTransaction(hash, key));
      })
    );
  }

  /**
   * A transaction by hash: its location, the canonical hash of that number, and then either the
   * block record when it is cached or, on a miss (a random lookup on a chain larger than the
   * caches), just that transaction: its item of the body row read in place (trie-read.ts
   * bodyTransaction), its sender, and it alone decoded. Loading the whole block for it decoded
   * every transaction of the block and read three more rows (total difficulty, tx hashes,
   * uncles hashed) that the answer does not show.
   */
  private async loadTransaction(hash: Uint8Array, key: string): Promise<TxWithLocation | undefined> {
    const loc = this.txLocationSync(hash);
    return loc === undefined ? undefined : this.loadTransactionAt(hash, key, loc);
  }

  /**
   * Where transaction `hash` is, by its lookup row (TxLookupShort, keyed by half the hash, else an
   * earlier release's TxLookup row): unchecked, the caller compares the transaction found there.
   */
  private txLocationSync(hash: Uint8Array): { number: bigint; index: number } | undefined {
    return (
      tables.txLookupShort.getSync(this.db, hash) ??
      (this.legacyTxLookups ? tables.txLookup.getSync(this.db, hash) : undefined)
    );
  }

  /**
   * Transaction `hash` where its location says it is (the lookup's, or the block's hash row at a
   * position): undefined when the canonical block there holds another transaction.
   */
  private async loadTransactionAt(
    hash: Uint8Array,
    key: string,
    loc: { number: bigint; index: number },
  ): Promise<TxWithLocation | undefined> {
    const gen = this.gen;
    const blockHash = await this.canonical(loc.number);
    if (blockHash === undefined) return undefined;
    let tx: TxRecord | undefined;
    let fields: HeaderTxFields;
    const block = this.blocks.get(byteKey(blockHash));
    if (block !== undefined) {
      // The one transaction from the cached block's encodings, not all of them decoded.
      const enc = block.transactionEncodings;
      const raw = enc?.raw[loc.index];
      const sender = enc?.senders[loc.index];
      if (raw === undefined || sender === undefined) tx = block.transactions[loc.index];
      else {
        tx = decodeTransaction(raw, sender, block.transactionHashes?.[loc.index] ?? keccak256(raw));
        if (tx.type === DEPOSIT_TX_TYPE)
          withDepositReceipt(tx, tables.receipts.getSync(this.db, blockHash)?.[loc.index]);
      }
      fields = block.header;
    } else {
      // Rows keyed by block hash: they never change, so no canonical re-check is needed after them.
      // Read synchronously: the first of concurrent lookups in the block files them for the rest.
      let rows = this.txRows.get(blockHash);
      if (rows === undefined) {
        // The two header fields the answer shows: from a cached header, else read in place from
        // the header row (no decoding of the other ~20 fields).
        let head: HeaderTxFields | undefined = this.headers.get(byteKey(blockHash));
        if (head === undefined) {
          const raw = tables.headers.getSync(this.db, blockHash);
          if (raw === undefined) return undefined;
          head = headerTxFields(raw);
        }
        const senders = tables.senders.getRawSync(this.db, blockHash);
        if (senders === undefined) throw new Error(`block ${loc.number}: senders row missing`);
        rows = { head, senders, parts: new Map() };
        this.txRows.set(blockHash, rows);
      }
      const { senders } = rows;
      fields = rows.head;
      const raw = this.bodyTransactionSync(blockHash, loc, rows);
      const at = loc.index * 20;
      if (raw !== undefined) {
        if (at + 20 > senders.length) throw new Error(`block ${loc.number}: no sender for tx ${loc.index}`);
        // A location of another branch's block (written by a follower, not yet applied here)
        // points at another transaction: its hash tells.
        const txHash = keccak256(raw);
        if (bytesEqual(txHash, hash)) tx = decodeTransaction(raw, senders.slice(at, at + 20), txHash);
        if (tx?.type === DEPOSIT_TX_TYPE)
          withDepositReceipt(tx, tables.receipts.getSync(this.db, blockHash)?.[loc.index]);
      }
    }
    if (tx === undefined || !bytesEqual(tx.hash, hash)) return undefined;
    const out: TxWithLocation = {
      tx,
      blockHash,
      blockNumber: loc.number,
      transactionIndex: loc.index,
      blockTimestamp: fields.timestamp,
    };
    if (fields.baseFeePerGas !== undefined) out.baseFeePerGas = fields.baseFeePerGas;
    if (gen === this.gen) this.txCache.set(key, out);
    return out;
  }

  /**
   * Transaction `loc.index` of the block `hash` from its BodyTxs row, or from the Bodies row of an
   * earlier release that holds every transaction; undefined past its last transaction. `seen`
   * keeps the rows read (txRows), so the block's other transactions read none again.
   */
  private bodyTransactionSync(
    hash: Uint8Array,
    loc: { number: bigint; index: number },
    seen: BodyRowsSeen = { parts: new Map() },
  ): Uint8Array | undefined {
    if (seen.inline !== undefined) return bodyTransaction(seen.inline, loc.index);
    const r = bodyRowOf(loc.index);
    let part = seen.parts.get(r);
    if (part === undefined) {
      part = tables.bodyTxs.getRawSync(this.db, { hash, row: r });
      if (part === undefined) {
        // Past the last transaction, or an earlier release's body holding them inline.
        const body = tables.bodies.getRawSync(this.db, hash);
        if (body === undefined) throw new Error(`block ${loc.number}: body row missing`);
        if (!bodyHoldsTransactions(body)) return undefined;
        seen.inline = body;
        return bodyTransaction(body, loc.index);
      }
      seen.parts.set(r, part);
    }
    return bodyRowTransaction(part, loc.index % BODY_ROW_TXS);
  }

  /**
   * A follower's batch has landed (serve --follow; called on the serving thread before the commit
   * is published): `latest` moves to the commit's head at once, and whatever the commit made stale
   * is dropped. Entries keyed by block hash stay unless their block was orphaned; state entries
   * are keyed by state root and never go stale.
   */
  applyCommit(commit: ChainCommit): void {
    this.gen++;
    for (const flight of Object.values(this.loading)) flight.clear();
    this.headCache = { number: commit.head.number, hash: commit.head.hash };
    this.state.onCommit();
    const numbers: bigint[] = [];
    for (const b of commit.removed) {
      numbers.push(b.number);
      this.blocks.delete(byteKey(b.hash));
      this.readyJson.delete(b.hash);
      this.headers.delete(byteKey(b.hash));
      this.stateRoots.delete(b.hash);
      this.txRows.delete(b.hash);
      this.receiptCache.delete(b.hash);
    }
    this.traces.onRemoved(commit.removed.map((b) => b.hash));
    for (const b of commit.added) numbers.push(b.number);
    for (const n of numbers) this.canonicalCache.delete(n);
    // A tx of an orphaned block may be in the new branch at another place, or nowhere.
    if (commit.removed.length > 0) {
      this.txCache.clear();
      this.receiptsAlone.clear();
    }
    this.logQueries.forget(numbers, commit.removed.length > 0);
  }

  // --- address appearances and recorded call frames (trace-reads.ts) ------------------------------

  appearances(query: AppearanceQuery): Promise<AppearancePage | undefined> {
    return this.traces.appearances(query);
  }

  appearanceRange(
    address: Bytes,
    from: bigint,
    to: bigint,
  ): Promise<{ positions: AppearancePage['positions']; framesFrom: bigint | undefined } | undefined> {
    return this.traces.appearanceRange(address, from, to);
  }

  txFrames(blockHash: Bytes, index?: number): Promise<Bytes | undefined> {
    return this.traces.txFrames(blockHash, index);
  }

  txStateDiffs(blockHash: Bytes, index?: number): Promise<Bytes | undefined> {
    return this.traces.txStateDiffs(blockHash, index);
  }

  frameBlooms(from: bigint, to: bigint): Promise<(Bytes | undefined)[]> {
    return this.traces.frameBlooms(from, to);
  }

  frameIndexedBlocks(from: bigint, to: bigint): Promise<bigint[]> {
    return this.traces.frameIndexedBlocks(from, to);
  }

  // --- logs (the query code lives in logs.ts) ---------------------------------------------------

  logs(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    return this.guard('logs', () => this.logQueries.logs(query, options));
  }

  logsText(query: LogQuery, options: LogQueryOptions): Promise<LogTextQueryResult | undefined> {
    return this.guard('logsText', () => this.logQueries.logsText(query, options));
  }

  /**
   * The same query answered by scanning per-block blooms: the baseline the getLogs benchmark
   * compares the index with.
   */
  logsByBloomScan(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    return this.guard('logsByBloomScan', () => this.logQueries.logsByBloomScan(query, options));
  }

  // --- receipts -------------------------------------------------------------------------------

  receipts(blockHash: Bytes): Promise<ReceiptRecord[] | undefined> {
    return this.hit(this.receiptCache.get(blockHash)) ?? this.guard('receipts', () => this.loadReceipts(blockHash));
  }

  /**
   * The Receipts row of a canonical block, and its logs (BlockLogs gives the block's log id range,
   * its LogBlocks row is one synchronous read: logs/log-blocks.ts) grouped by transaction: wholly synchronous after the
   * canonical check, so concurrent misses share the first load.
   */
  private async loadReceipts(blockHash: Uint8Array): Promise<ReceiptRecord[] | undefined> {
    const gen = this.gen;
    const number = await this.canonicalNumber(blockHash);
    if (number === undefined) return undefined;
    const hit = this.receiptCache.get(blockHash);
    if (hit !== undefined) return hit;
    const rows = tables.receipts.getSync(this.db, blockHash);
    const headRaw = tables.headers.getSync(this.db, blockHash);
    if (rows === undefined || headRaw === undefined) throw new Error(`block ${number}: receipts rows missing`);
    const receipts: ReceiptRecord[] = rows.map(receiptRecord);
    const range = tables.blockLogs.getSync(this.db, number);
    if (range !== undefined && range.count > 0) {
      // BlockTxHashes is keyed by number: read it only while the number is still this block's.
      const txHashes = tables.blockTxHashes.getSync(this.db, number)?.hashes;
      const now = tables.canonical.getSync(this.db, number);
      if (txHashes === undefined || now === undefined || !bytesEqual(now, blockHash))
        throw new Error(`block ${number}: tx hashes missing`);
      const timestamp = headerTxFields(headRaw).timestamp;
      // Records are immutable: the logs of a block share one copy of its hash, those of a
      // transaction one copy of its hash (a copy per log was most of a cold load's garbage).
      const sharedBlockHash = blockHash.slice();
      let txHashIndex = -1;
      let sharedTxHash = sharedBlockHash;
      for (const log of readBlockLogsSync(this.db, number, range)) {
        const receipt = receipts[log.txIndex];
        const txHash = txHashes[log.txIndex];
        if (receipt === undefined || txHash === undefined)
          throw new Error(`block ${number}: log of unknown tx ${log.txIndex}`);
        if (log.txIndex !== txHashIndex) {
          txHashIndex = log.txIndex;
          sharedTxHash = txHash.slice();
        }
        const record: LogRecord = {
          address: log.address,
          topics: log.topics,
          data: log.data,
          blockNumber: number,
          blockHash: sharedBlockHash,
          blockTimestamp: timestamp,
          transactionHash: sharedTxHash,
          transactionIndex: log.txIndex,
          logIndex: log.logIndex,
        };
        receipt.logs.push(record);
      }
    }
    if (gen === this.gen) this.receiptCache.set(blockHash, receipts, receiptsWeight(receipts));
    return receipts;
  }

  /**
   * Receipt `index` of a canonical block and the one before it, as receipts() gives them when the
   * block's receipts are cached; else read alone: its item of the Receipts row, and only this
   * transaction's logs built from the block's LogBlocks row (indexed once in the log queries'
   * cache), copied out of it, and kept in a cache of single receipts (a receipt asked again is the
   * same record, so its formatted text is remembered with it).
   */
  receiptAt(
    blockHash: Bytes,
    index: number,
  ): Promise<{ receipt: ReceiptRecord; previous: ReceiptRecord | undefined } | undefined> {
    return this.guard('receiptAt', async () => {
      const number = await this.canonicalNumber(blockHash);
      if (number === undefined) return undefined;
      const cached = this.receiptCache.get(blockHash);
      if (cached !== undefined) {
        const receipt = cached[index];
        return receipt === undefined ? undefined : { receipt, previous: cached[index - 1] };
      }
      const key = Uint8Array.of(index >>> 24, index >>> 16, index >>> 8, index);
      const alone = this.receiptsAlone.get(blockHash, key);
      if (alone !== undefined) return alone;
      const gen = this.gen;
      const rows = tables.receipts.getRawSync(this.db, blockHash);
      const headRaw = tables.headers.getSync(this.db, blockHash);
      if (rows === undefined || headRaw === undefined) throw new Error(`block ${number}: receipts rows missing`);
      const row = storedReceiptAt(rows, index);
      if (row === undefined) return undefined;
      const receipt = receiptRecord(row);
      const previous = index === 0 ? undefined : storedReceiptAt(rows, index - 1);
      const range = tables.blockLogs.getSync(this.db, number);
      const logs = range === undefined ? [] : this.logQueries.txLogsSync(number, range, index);
      if (logs.length > 0) {
        const hashes = tables.blockTxHashes.getRawSync(this.db, number);
        const now = tables.canonical.getSync(this.db, number);
        if (hashes === undefined || now === undefined || !bytesEqual(now, blockHash))
          throw new Error(`block ${number}: tx hashes missing`);
        const transactionHash = splitBlockTxHashes(hashes).hashes.slice(32 * index, 32 * index + 32);
        const sharedBlockHash = blockHash.slice();
        const blockTimestamp = headerTxFields(headRaw).timestamp;
        // Copies: the views would keep the block's whole decompressed log row alive in the cache.
        // Written out in the field order receipts() gives its records (one shape for the formatter).
        for (const l of logs)
          receipt.logs.push({
            address: l.address.slice(),
            topics: l.topics.map((t) => t.slice()),
            data: l.data.slice(),
            blockNumber: number,
            blockHash: sharedBlockHash,
            blockTimestamp,
            transactionHash,
            transactionIndex: index,
            logIndex: l.logIndex,
          });
      }
      const out = { receipt, previous: previous === undefined ? undefined : receiptRecord(previous) };
      if (gen === this.gen) this.receiptsAlone.set(blockHash, key, out);
      return out;
    });
  }

  /**
   * Transaction `index` of the canonical block `number`: its hash from the block's BlockTxHashes
   * row, then that transaction at that position (cached as transaction(hash) caches it; on a miss
   * its item of the body row, alone decoded, with no lookup by hash).
   */
  transactionAt(number: bigint, index: number): Promise<TxWithLocation | undefined> {
    return this.guard('transactionAt', async () => {
      const raw = tables.blockTxHashes.getRawSync(this.db, number);
      if (raw === undefined || !Number.isSafeInteger(index) || index < 0) return undefined;
      const { hashes } = splitBlockTxHashes(raw);
      if (32 * index + 32 > hashes.length) return undefined;
      // Its hash from the block's hash row, its location known: no lookup by hash to read.
      const hash = hashes.slice(32 * index, 32 * index + 32);
      const key = byteKey(hash);
      const tx =
        this.txCache.get(key) ??
        (await this.loading.txs.run(key, () => this.loadTransactionAt(hash, key, { number, index })));
      return tx?.blockNumber === number && tx.transactionIndex === index ? tx : undefined;
    });
  }

  // --- state (state-reads.ts) -----------------------------------------------------------------

  hasStateHistory(): Promise<boolean> {
    return this.state.hasStateHistory();
  }

  accountAtBlock(block: BlockRef, address: Bytes): Promise<AccountRecord | null | undefined> {
    return this.state.accountAtBlock(block, address);
  }

  storageAtBlock(block: BlockRef, address: Bytes, slot: Bytes): Promise<Bytes | undefined> {
    return this.state.storageAtBlock(block, address, slot);
  }

  stateTrie(fresh = false): StateTrieView {
    return this.state.stateTrie(fresh);
  }

  account(stateRoot: Bytes, address: Bytes): Promise<AccountRecord | null> {
    return this.state.account(stateRoot, address);
  }

  code(codeHash: Bytes): Promise<Bytes | undefined> {
    return this.state.code(codeHash);
  }

  stateReader(): SyncStateReader {
    return this.state.stateReader();
  }

  storageAt(stateRoot: Bytes, address: Bytes, slot: Bytes): Promise<Bytes> {
    return this.state.storageAt(stateRoot, address, slot);
  }

  proof(stateRoot: Bytes, address: Bytes, slots: Bytes[]): Promise<AccountProofRecord> {
    return this.state.proof(stateRoot, address, slots);
  }

  stateDiff(parentRoot: Bytes, root: Bytes, limits: StateDiffLimits): Promise<StateDiffRecord> {
    return this.state.stateDiff(parentRoot, root, limits);
  }

  historyStateDiff(
    block: BlockRef,
    touches: BlockTouches,
    limits: StateDiffLimits,
  ): Promise<StateDiffRecord | undefined> {
    return this.state.historyStateDiff(block, touches, limits);
  }

  stateNodes(hashes: Bytes[]): Promise<(Bytes | undefined)[]> {
    return this.state.stateNodes(hashes);
  }

  addProvenState(nodes: Bytes[], codes: Bytes[]): Promise<void> {
    return this.state.addProvenState(nodes, codes);
  }

  // --- consensus encodings (debug_getRaw*) -----------------------------------------------------

  rawHeader(hash: Bytes): Promise<Bytes | undefined> {
    return this.guard('rawHeader', async () => {
      if ((await this.canonicalNumber(hash)) === undefined) return undefined;
      return tables.headers.getSync(this.db, hash);
    });
  }

  /**
   * The block's RLP [header, [tx..], [uncle..], withdrawals?] from its header and body rows: a
   * legacy transaction and an uncle header are RLP lists already and go in as they are; a typed
   * transaction is a byte string of its encoding.
   */
  rawBlock(hash: Bytes): Promise<Bytes | undefined> {
    return this.guard('rawBlock', async () => {
      if ((await this.canonicalNumber(hash)) === undefined) return undefined;
      const header = tables.headers.getSync(this.db, hash);
      const body = readBodySync(this.db, hash);
      if (header === undefined || body === undefined) return undefined;
      const txs = body.transactions.map((tx) => ((tx[0] as number) >= 0xc0 ? tx : stringItem(tx)));
      const parts = [header, listItem(txs), listItem(body.uncles)];
      if (body.withdrawals !== undefined) parts.push(RLP.encode(body.withdrawals));
      const block = listItem(parts);
      if (block.length !== body.size) throw new Error('block: RLP length differs from the stored size');
      return block;
    });
  }

  rawTransaction(txHash: Bytes): Promise<Bytes | undefined> {
    return this.guard('rawTransaction', async () => {
      if (txHash.length !== 32) return undefined;
      const loc = this.txLocationSync(txHash);
      if (loc === undefined) return undefined;
      const blockHash = await this.canonical(loc.number);
      if (blockHash === undefined) return undefined;
      const raw = this.bodyTransactionSync(blockHash, loc);
      // A location of another branch's block (a follower's write not yet applied here) names another transaction.
      return raw !== undefined && bytesEqual(keccak256(raw), txHash) ? raw : undefined;
    });
  }

  async close(): Promise<void> {
    if (this.db.status === 'open' || this.db.status === 'opening') await this.db.close();
    this.logQueries.close();
  }
}

export interface OpenChainStoreOptions {
  /** Allow worker threads of this process to open the datadir too (see openDb). */
  shared?: boolean;
  /** Bytes of the trie-node cache (NodeSlab; default 32 MiB, at least 4096): tests make it wrap. */
  nodeCacheBytes?: number;
  /**
   * Trie nodes a by-block state read (accountAtBlock, storageAtBlock) may load from disk before it
   * leaves the read to the state history (default WALK_DISK_READS; WALK_DISK_READS_POINT where the
   * history has point reads, Meta.stateLatest); -1: no walk, every such read from the history (the
   * tests that compare the history with the trie).
   */
  walkDiskReads?: number;
}

/** The RLP list of already-encoded items. */
function listItem(items: Uint8Array[]): Uint8Array {
  let len = 0;
  for (const i of items) len += i.length;
  const out = new Uint8Array(rlpHeaderLength(len) + len);
  let at = writeRlpHeader(out, 0, 0xc0, len);
  for (const i of items) {
    out.set(i, at);
    at += i.length;
  }
  return out;
}

/** The RLP byte string of `b`. */
function stringItem(b: Uint8Array): Uint8Array {
  const out = new Uint8Array(rlpHeaderLength(b.length) + b.length);
  writeRlpBytes(out, 0, b);
  return out;
}

/** The trie-node cache of each open store (one per serving thread): 32 MiB of node bytes. */
const NODE_CACHE_BYTES = 32 << 20;

export async function openChainStore(datadir: string, options: OpenChainStoreOptions = {}): Promise<ChainStore> {
  return LevelChainStore.open(datadir, options);
}

/** The datadir's state trie retention and, for a window, the block its trie is complete from. */
async function trieWindowOf(db: Db): Promise<StateTrieView> {
  const m = await readStateTrie(db);
  return m.kind === 'archive'
    ? { mode: 'archive' }
    : { mode: 'window', blocks: m.blocks, trieFrom: await readTrieFrom(db) };
}

/** A receipt's record from its Receipts row item (its logs added by the caller). */
function receiptRecord(r: StoredReceipt): ReceiptRecord {
  const out: ReceiptRecord = {
    type: r.type,
    statusOrState: r.statusOrState,
    cumulativeGasUsed: r.cumulativeGasUsed,
    logs: [],
  };
  if (r.depositNonce !== undefined) out.depositNonce = r.depositNonce;
  if (r.depositReceiptVersion !== undefined) out.depositReceiptVersion = r.depositReceiptVersion;
  return out;
}

/** Whether `db` holds a TxLookup row of an earlier release (schema.ts): one key read. */
async function hasLegacyTxLookups(db: Db): Promise<boolean> {
  const range = { gte: Uint8Array.of(Prefix.TxLookup), lt: Uint8Array.of(Prefix.TxLookup + 1), limit: 1 };
  return (await db.keys(range).all()).length > 0;
}
