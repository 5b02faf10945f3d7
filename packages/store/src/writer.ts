// The write side, used only by the ingest worker. Verified blocks are staged in memory and
// written by `flush()` as ONE LevelDB batch holding every table row, every trie node of the
// group and the head pointer (last). A crash before the batch lands leaves the previous head
// and nothing of the group; after it, the whole group.
import { bytesToBigInt } from '@chainnode/core';
import { openDb } from './db.js';
import type { Db } from './db.js';
import { LOG_INDEX_CHUNK, LogIndexKind, MetaKey, Prefix, SCHEMA_VERSION, decodePostings, encodeLogRow, headCodec, putU64, tables } from './schema.js';
import type { HeadPointer, KvBatch, StoredBody, StoredReceipt } from './schema.js';
import { TrieNodeDb } from './trie-db.js';

export interface LogInput {
  address: Uint8Array;
  topics: Uint8Array[];
  data: Uint8Array;
}

/** Everything stored about one verified block. */
export interface BlockInput {
  number: bigint;
  hash: Uint8Array;
  headerRlp: Uint8Array;
  body: StoredBody;
  totalDifficulty: bigint;
  senders: Uint8Array[];
  txHashes: Uint8Array[];
  receipts: StoredReceipt[];
  /** Logs per transaction, in order. */
  logs: LogInput[][];
  logsBloom: Uint8Array;
}

export interface GenesisInput {
  block: BlockInput;
  /** The `config` object of genesis.json, stored as JSON. */
  chainConfig: unknown;
}

/**
 * The writes of one group, staged straight into a native LevelDB write batch: each put is copied
 * out of JS at once (no op objects kept alive until the flush), and nothing reaches the database
 * before `write()`, which applies the whole batch atomically.
 */
class GroupBatch implements KvBatch {
  private readonly batch: ReturnType<Db['batch']>;
  bytes = 0;
  constructor(db: Db) {
    this.batch = db.batch();
  }
  put(key: Uint8Array, value: Uint8Array): void {
    this.batch.put(key, value);
    this.bytes += key.length + value.length;
  }
  del(key: Uint8Array): void {
    this.batch.del(key);
    this.bytes += key.length;
  }
  write(): Promise<void> {
    return this.batch.write();
  }
  close(): Promise<void> {
    return this.batch.close();
  }
}

/**
 * A value's open posting chunk as the database holds it after the last flush: its encoded bytes
 * (see postingCodec), how many ids they hold (0: no open chunk) and the last id.
 */
interface OpenChunk {
  bytes: Uint8Array;
  count: number;
  last: number;
}

const NO_BYTES = new Uint8Array(0);

/** One indexed value (an address, or a topic at a position) the writer has seen recently. */
interface ValueEntry {
  kind: number;
  value: Uint8Array;
  /** Next entry of the same hash bucket. */
  next: ValueEntry | undefined;
  /** LogIndex prefix ++ kind ++ value: a posting key without its last 8 bytes. */
  keyPrefix: Uint8Array;
  /** Its open chunk as the last successful flush left it; undefined when not known (read it). */
  open: OpenChunk | undefined;
  /** Log ids of the staged group. */
  ids: number[];
  /** Flush counter when it was last written, for eviction. */
  lastUse: number;
}

function valueHash(kind: number, v: Uint8Array): number {
  let h = Math.imul(kind + 1, 0x9e3779b1);
  for (let i = 0; i < v.length; i += 4) {
    const w = (v[i] as number) | ((v[i + 1] as number) << 8) | ((v[i + 2] as number) << 16) | ((v[i + 3] as number) << 24);
    h = Math.imul(h ^ w, 0x85ebca6b);
    h ^= h >>> 13;
  }
  return h ^ v.length;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The values of the staged group and their open posting chunks, kept across flushes so that a
 * flush appends to open chunks without reading them back from LevelDB and without decoding and
 * re-encoding the ids already there. An open chunk here is only ever what a successful flush
 * wrote (the writer is the only process with the datadir open). Bounded by an approximate byte
 * budget: values unused for the longest are dropped, and a dropped value's open chunk is simply
 * read back on its next write.
 */
class ValueTable {
  private readonly buckets = new Map<number, ValueEntry>();
  private bytes = 0;
  /** Values with ids in the staged group, in first-use order. */
  touched: ValueEntry[] = [];

  constructor(private readonly maxBytes: number) {}

  private static cost(e: ValueEntry): number {
    return 160 + 2 * e.value.length + (e.open?.bytes.length ?? 0);
  }

  /** Stages log `id` for (kind, value); a value repeated in one log counts once. */
  post(kind: number, value: Uint8Array, id: number): void {
    const h = valueHash(kind, value);
    const first = this.buckets.get(h);
    let e = first;
    while (e !== undefined && !(e.kind === kind && sameBytes(e.value, value))) e = e.next;
    if (e === undefined) {
      const owned = value.slice();
      const keyPrefix = new Uint8Array(2 + owned.length);
      keyPrefix[0] = Prefix.LogIndex;
      keyPrefix[1] = kind;
      keyPrefix.set(owned, 2);
      e = { kind, value: owned, next: first, keyPrefix, open: undefined, ids: [], lastUse: 0 };
      this.buckets.set(h, e);
      this.bytes += ValueTable.cost(e);
    }
    const ids = e.ids;
    if (ids.length === 0) this.touched.push(e);
    else if (ids[ids.length - 1] === id) return;
    ids.push(id);
  }

  /** Hands over the staged group's values (their ids stay with them) and starts a new group. */
  detach(): ValueEntry[] {
    const touched = this.touched;
    this.touched = [];
    return touched;
  }

  /** Records the open chunks a landed batch left for its values (see detach). */
  commit(flush: number, touched: ValueEntry[], after: OpenChunk[]): void {
    touched.forEach((e, i) => {
      this.bytes -= ValueTable.cost(e);
      e.open = after[i];
      e.lastUse = flush;
      this.bytes += ValueTable.cost(e);
    });
    for (let age = 16; this.bytes > this.maxBytes && age >= 0; age = age === 0 ? -1 : age >> 1) this.evict(flush - age);
  }

  /** After a failed batch: forget every open chunk (they are read back) and the staged ids. */
  reset(): void {
    this.buckets.clear();
    this.bytes = 0;
    this.touched = [];
  }

  /** Drops values last written before flush `before` until under 90% of the budget. */
  private evict(before: number): void {
    for (const [h, head] of this.buckets) {
      if (this.bytes <= this.maxBytes * 0.9) return;
      let keep: ValueEntry | undefined;
      for (let e: ValueEntry | undefined = head; e !== undefined; ) {
        const next: ValueEntry | undefined = e.next;
        if (e.lastUse < before && e.ids.length === 0) this.bytes -= ValueTable.cost(e);
        else {
          e.next = keep;
          keep = e;
        }
        e = next;
      }
      if (keep === undefined) this.buckets.delete(h);
      else this.buckets.set(h, keep);
    }
  }
}

/**
 * Bump allocation of key and value bytes for the write batch. The batch copies what it is given
 * at once, so these only have to live until then; allocating them from large blocks keeps them
 * off the JS heap (cheap to hand to native code) and spares the GC millions of tiny arrays.
 */
class Slab {
  private block = new Uint8Array(0);
  private at = 0;
  alloc(n: number): Uint8Array {
    if (this.at + n > this.block.length) {
      this.block = new Uint8Array(Math.max(1 << 20, n));
      this.at = 0;
    }
    const out = this.block.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

/** Appends unsigned LEB128 varints to a growable buffer. */
class VarintBuffer {
  private buf = new Uint8Array(4096);
  length = 0;

  push(d: number): void {
    if (this.length + 8 > this.buf.length) {
      const bigger = new Uint8Array(this.buf.length * 2);
      bigger.set(this.buf);
      this.buf = bigger;
    }
    const buf = this.buf;
    let at = this.length;
    while (d >= 0x80) {
      buf[at++] = (d % 0x80) | 0x80;
      d = Math.floor(d / 0x80);
    }
    buf[at++] = d;
    this.length = at;
  }

  /** `head` followed by what was pushed, in memory from `alloc`; empties the buffer. */
  take(head: Uint8Array, alloc: (n: number) => Uint8Array): Uint8Array {
    const out = alloc(head.length + this.length);
    out.set(head);
    out.set(this.buf.subarray(0, this.length), head.length);
    this.length = 0;
    return out;
  }
}

export interface WriterOptions {
  /** Byte budget of the open posting chunks kept in memory between flushes. Default 256 MiB. */
  openChunkCacheBytes?: number;
}

export interface FlushStats {
  blocks: number;
  txs: number;
  logs: number;
  trieNodes: number;
  bytes: number;
}

export class StoreWriter {
  readonly trieDb: TrieNodeDb;
  private group: GroupBatch;
  private readonly values: ValueTable;
  private readonly varints = new VarintBuffer();
  private readonly slab = new Slab();
  private flushes = 0;
  /** The batch handed to LevelDB and not yet landed (flushBehind). */
  private inFlight: Promise<void> | undefined;
  private failed: Error | undefined;
  private groupHead: HeadPointer | undefined;
  private groupStats = { blocks: 0, txs: 0, logs: 0 };
  private nextLogId = 0n;
  private head: HeadPointer | undefined;
  private genesisHash: Uint8Array | undefined;

  private constructor(
    readonly db: Db,
    options: WriterOptions,
  ) {
    this.trieDb = new TrieNodeDb(db, true);
    this.group = new GroupBatch(db);
    this.values = new ValueTable(options.openChunkCacheBytes ?? 256 * 2 ** 20);
  }

  static async open(datadir: string, options: WriterOptions = {}): Promise<StoreWriter> {
    const w = new StoreWriter(await openDb(datadir, { create: true }), options);
    try {
      await w.load();
    } catch (err) {
      await w.db.close();
      throw err;
    }
    return w;
  }

  private async load(): Promise<void> {
    const version = await tables.meta.get(this.db, MetaKey.SchemaVersion);
    if (version !== undefined && Number(bytesToBigInt(version)) !== SCHEMA_VERSION) {
      throw new Error(`store schema version ${bytesToBigInt(version)} is not ${SCHEMA_VERSION}; use a fresh datadir`);
    }
    this.genesisHash = await tables.meta.get(this.db, MetaKey.GenesisHash);
    const head = await tables.meta.get(this.db, MetaKey.Head);
    this.head = head === undefined ? undefined : headCodec.decode(head);
    if (this.head !== undefined) {
      const r = await tables.blockLogs.get(this.db, this.head.number);
      if (r === undefined) throw new Error(`block log range of head ${this.head.number} missing`);
      this.nextLogId = r.firstLogId + BigInt(r.count);
    }
  }

  /** The stored genesis hash, or undefined for an empty datadir. */
  storedGenesisHash(): Uint8Array | undefined {
    return this.genesisHash;
  }

  /** Last durable (flushed) head. */
  durableHead(): HeadPointer | undefined {
    return this.head;
  }

  canonicalHash(number: bigint): Promise<Uint8Array | undefined> {
    return tables.canonical.get(this.db, number);
  }

  async headerRlp(hash: Uint8Array): Promise<Uint8Array | undefined> {
    return tables.headers.get(this.db, hash);
  }

  async totalDifficulty(hash: Uint8Array): Promise<bigint | undefined> {
    return tables.totalDifficulty.get(this.db, hash);
  }

  /** Writes genesis (block 0, its state nodes, meta rows) as one batch. */
  async writeGenesis(g: GenesisInput): Promise<void> {
    if (this.genesisHash !== undefined) throw new Error('store already holds a genesis');
    const ops = this.group;
    tables.meta.put(ops, MetaKey.SchemaVersion, Uint8Array.of(SCHEMA_VERSION));
    tables.meta.put(ops, MetaKey.GenesisHash, g.block.hash);
    tables.meta.put(ops, MetaKey.ChainConfig, new TextEncoder().encode(JSON.stringify(g.chainConfig)));
    this.stageBlock(g.block);
    await this.flush();
    this.genesisHash = g.block.hash;
  }

  /** Stages a verified block (and the trie nodes its execution wrote) into the current group. */
  addBlock(b: BlockInput): void {
    this.stageBlock(b);
  }

  /**
   * Stages a block that was NOT executed here (synthetic or pre-executed elsewhere): the same
   * tables, batch and log index code as addBlock, but no state: nothing of the trie overlay is
   * taken, so the datadir holds no state for it. Used by the getLogs benchmark to build large
   * chains quickly; an importer of real chains must use addBlock.
   */
  addPreExecutedBlock(b: BlockInput): void {
    this.stageRows(b);
  }

  private stageBlock(b: BlockInput): void {
    this.trieDb.acceptBlock();
    this.stageRows(b);
  }

  private stageRows(b: BlockInput): void {
    const ops = this.group;
    tables.canonical.put(ops, b.number, b.hash);
    tables.hashToNumber.put(ops, b.hash, b.number);
    tables.headers.put(ops, b.hash, b.headerRlp);
    tables.bodies.put(ops, b.hash, b.body);
    tables.receipts.put(ops, b.hash, b.receipts);
    tables.totalDifficulty.put(ops, b.hash, b.totalDifficulty);
    tables.senders.put(ops, b.hash, b.senders);
    tables.blockTxHashes.put(ops, b.number, b.txHashes);
    tables.blooms.put(ops, b.number, b.logsBloom);
    b.txHashes.forEach((h, index) => tables.txLookup.put(ops, h, { number: b.number, index }));
    const firstLogId = this.nextLogId;
    // Log ids stay below 2^53 (one per log ever emitted), so they are counted as numbers here.
    let id = Number(firstLogId);
    let logIndex = 0;
    b.logs.forEach((txLogs, txIndex) => {
      for (const l of txLogs) {
        const key = this.slab.alloc(9);
        key[0] = Prefix.Logs;
        putU64(key, 1, id);
        const row = { blockNumber: b.number, txIndex, logIndex: logIndex++, address: l.address, topics: l.topics, data: l.data };
        ops.put(key, encodeLogRow(row, this.alloc));
        this.values.post(LogIndexKind.Address, l.address, id);
        for (let pos = 0; pos < l.topics.length && pos < 4; pos++) this.values.post(pos, l.topics[pos] as Uint8Array, id);
        id++;
      }
    });
    this.nextLogId = firstLogId + BigInt(logIndex);
    tables.blockLogs.put(ops, b.number, { firstLogId, count: logIndex });
    this.groupHead = { number: b.number, hash: b.hash };
    this.groupStats.blocks++;
    this.groupStats.txs += b.txHashes.length;
    this.groupStats.logs += logIndex;
  }

  private readonly alloc = (n: number): Uint8Array => this.slab.alloc(n);

  /** Approximate bytes staged (rows + trie nodes not counted) — for group sizing. */
  stagedBytes(): number {
    return this.group.bytes;
  }

  stagedBlocks(): number {
    return this.groupStats.blocks;
  }

  /** Writes the staged group as one atomic batch, head pointer last; durable when it returns. */
  async flush(): Promise<FlushStats> {
    const stats = await this.writeGroup();
    await this.settle();
    return stats;
  }

  /**
   * Like flush, but returns once the group's batch is handed to LevelDB, before it lands, so the
   * caller can stage the next group meanwhile. The batch is still atomic with its head pointer
   * last; it is awaited by the next flush, flushBehind or close (which throw if it failed, and
   * nothing more is written after a failure). durableHead() moves only when a batch has landed.
   */
  flushBehind(): Promise<FlushStats> {
    return this.writeGroup();
  }

  /** Waits for the batch in flight, if any; rethrows its failure. */
  private async settle(): Promise<void> {
    const p = this.inFlight;
    if (p === undefined) return;
    try {
      await p;
    } finally {
      if (this.inFlight === p) this.inFlight = undefined;
    }
  }

  private async writeGroup(): Promise<FlushStats> {
    await this.settle(); // open chunks are read (and cached) only as the last landed batch left them
    if (this.failed !== undefined) throw this.failed;
    const ops = this.group;
    const stats: FlushStats = { ...this.groupStats, trieNodes: 0, bytes: 0 };
    const head = this.groupHead;
    if (head === undefined) return stats;
    const written = await this.stagePostings(ops);
    const touched = this.values.detach();
    touched.forEach((e) => (e.ids = []));
    stats.trieNodes = this.trieDb.drainInto(ops);
    tables.meta.put(ops, MetaKey.Head, headCodec.encode(head));
    stats.bytes = ops.bytes;
    this.group = new GroupBatch(this.db);
    this.groupHead = undefined;
    this.groupStats = { blocks: 0, txs: 0, logs: 0 };
    const flush = ++this.flushes;
    const landed = ops.write().then(
      () => {
        this.values.commit(flush, touched, written);
        this.head = head;
      },
      (err: unknown) => {
        // Nothing of the group landed, and what was staged after it assumed it would: stop.
        this.values.reset();
        this.failed = err instanceof Error ? err : new Error(String(err));
        throw err;
      },
    );
    landed.catch(() => undefined); // reported by settle()
    this.inFlight = landed;
    return stats;
  }

  /**
   * Posting lists: a value's sorted log ids cut into full chunks of LOG_INDEX_CHUNK ids (keyed by
   * their last id) and one open remainder (keyed by OPEN_CHUNK). The open chunk left by the
   * previous batch is extended inside this batch, so the bytes depend only on the ids, never on
   * how blocks were grouped into batches (a resumed import equals an uninterrupted one). Open
   * chunks come from the cache of what earlier flushes wrote, else from LevelDB; new ids are
   * appended to their encoded bytes as deltas (the first id of a chunk is absolute), which is
   * exactly postingCodec.encode of the chunk's ids. Returns the open chunks as this batch leaves
   * them, for the cache once the batch has landed.
   */
  private async stagePostings(ops: GroupBatch): Promise<OpenChunk[]> {
    const touched = this.values.touched;
    const missing = touched.filter((e) => e.open === undefined);
    const postingKey = (e: ValueEntry, last: number | undefined, alloc: (n: number) => Uint8Array): Uint8Array => {
      const k = alloc(e.keyPrefix.length + 8);
      k.set(e.keyPrefix);
      if (last === undefined) k.fill(0xff, e.keyPrefix.length);
      else putU64(k, e.keyPrefix.length, last);
      return k;
    };
    const fresh = (n: number) => new Uint8Array(n);
    if (missing.length > 0) {
      const raw = await this.db.getMany(missing.map((e) => postingKey(e, undefined, fresh)));
      missing.forEach((e, j) => {
        const bytes = raw[j];
        if (bytes === undefined) e.open = { bytes: NO_BYTES, count: 0, last: 0 };
        else {
          const ids = decodePostings(bytes);
          e.open = { bytes, count: ids.length, last: ids[ids.length - 1] as number };
        }
      });
    }
    const varints = this.varints;
    varints.length = 0;
    return touched.map((e) => {
      const before = e.open as OpenChunk;
      let head = before.bytes;
      let count = before.count;
      let prev = before.last;
      for (const id of e.ids) {
        if (count > 0 && id <= prev) throw new Error(`log index: id ${id} does not follow ${prev}`);
        varints.push(count === 0 ? id : id - prev);
        prev = id;
        if (++count === LOG_INDEX_CHUNK) {
          ops.put(postingKey(e, id, this.alloc), varints.take(head, this.alloc));
          head = NO_BYTES;
          count = 0;
        }
      }
      if (count > 0) {
        // Kept in the value table after the flush: its own memory, not a slab's.
        const bytes = varints.take(head, fresh);
        ops.put(postingKey(e, undefined, this.alloc), bytes);
        return { bytes, count, last: prev };
      }
      if (before.count > 0) ops.del(postingKey(e, undefined, this.alloc));
      return { bytes: NO_BYTES, count: 0, last: prev };
    });
  }

  async close(): Promise<void> {
    if (this.db.status !== 'open') return;
    try {
      await this.settle();
    } finally {
      await this.group.close(); // drops whatever was staged and not flushed
      await this.db.close();
    }
  }
}

