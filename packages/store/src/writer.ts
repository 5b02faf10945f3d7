// The write side, used only by the ingest worker. Verified blocks are staged in memory and
// written by `flush()` as ONE LevelDB batch holding every table row, every trie node of the
// group and the head pointer (last). A crash before the batch lands leaves the previous head
// and nothing of the group; after it, the whole group.
import { bytesToBigInt } from '@chainnode/core';
import { openDb } from './db.js';
import type { Db } from './db.js';
import { LOG_INDEX_CHUNK, LogIndexKind, MetaKey, OPEN_CHUNK, SCHEMA_VERSION, decodePostings, headCodec, tables } from './schema.js';
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

class Ops implements KvBatch {
  readonly ops: ({ type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array })[] = [];
  bytes = 0;
  put(key: Uint8Array, value: Uint8Array): void {
    this.ops.push({ type: 'put', key, value });
    this.bytes += key.length + value.length;
  }
  del(key: Uint8Array): void {
    this.ops.push({ type: 'del', key });
    this.bytes += key.length;
  }
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
  private group = new Ops();
  private postings = new Map<string, { kind: number; value: Uint8Array; ids: number[] }>();
  private groupHead: HeadPointer | undefined;
  private groupStats = { blocks: 0, txs: 0, logs: 0 };
  private nextLogId = 0n;
  private head: HeadPointer | undefined;
  private genesisHash: Uint8Array | undefined;

  private constructor(readonly db: Db) {
    this.trieDb = new TrieNodeDb(db, true);
  }

  static async open(datadir: string): Promise<StoreWriter> {
    const w = new StoreWriter(await openDb(datadir, { create: true }));
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
    let logIndex = 0;
    b.logs.forEach((txLogs, txIndex) => {
      for (const l of txLogs) {
        const id = this.nextLogId++;
        tables.logs.put(ops, id, { blockNumber: b.number, txIndex, logIndex: logIndex++, ...l });
        const n = Number(id);
        this.post(LogIndexKind.Address, l.address, n);
        for (let pos = 0; pos < l.topics.length && pos < 4; pos++) this.post(pos, l.topics[pos] as Uint8Array, n);
      }
    });
    tables.blockLogs.put(ops, b.number, { firstLogId, count: logIndex });
    this.groupHead = { number: b.number, hash: b.hash };
    this.groupStats.blocks++;
    this.groupStats.txs += b.txHashes.length;
    this.groupStats.logs += logIndex;
  }

  private post(kind: number, value: Uint8Array, id: number): void {
    const key = String.fromCharCode(kind) + Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1');
    const p = this.postings.get(key);
    if (p === undefined) this.postings.set(key, { kind, value, ids: [id] });
    else if (p.ids[p.ids.length - 1] !== id) p.ids.push(id); // a topic repeated in one log counts once
  }

  /** Approximate bytes staged (rows + trie nodes not counted) — for group sizing. */
  stagedBytes(): number {
    return this.group.bytes;
  }

  stagedBlocks(): number {
    return this.groupStats.blocks;
  }

  /** Writes the staged group as one atomic batch, head pointer last. */
  async flush(): Promise<FlushStats> {
    const ops = this.group;
    const stats: FlushStats = { ...this.groupStats, trieNodes: 0, bytes: 0 };
    if (this.groupHead === undefined) return stats;
    await this.stagePostings(ops);
    stats.trieNodes = this.trieDb.drainInto(ops);
    tables.meta.put(ops, MetaKey.Head, headCodec.encode(this.groupHead));
    stats.bytes = ops.bytes;
    await this.db.batch(ops.ops);
    this.head = this.groupHead;
    this.group = new Ops();
    this.postings = new Map();
    this.groupHead = undefined;
    this.groupStats = { blocks: 0, txs: 0, logs: 0 };
    return stats;
  }

  /**
   * Posting lists: a value's sorted log ids cut into full chunks of LOG_INDEX_CHUNK ids (keyed by
   * their last id) and one open remainder (keyed by OPEN_CHUNK). The open chunk left by the
   * previous batch is read and extended inside this batch, so the bytes depend only on the ids,
   * never on how blocks were grouped into batches (a resumed import equals an uninterrupted one).
   */
  private async stagePostings(ops: Ops): Promise<void> {
    const entries = [...this.postings.values()];
    const openKeys = entries.map((p) => tables.logIndex.key({ kind: p.kind, value: p.value, lastLogId: OPEN_CHUNK }));
    const existing = await this.db.getMany(openKeys);
    entries.forEach((p, i) => {
      const openKey = openKeys[i] as Uint8Array;
      const before = existing[i];
      const ids = before === undefined ? p.ids : decodePostings(before).concat(p.ids);
      let at = 0;
      for (; ids.length - at >= LOG_INDEX_CHUNK; at += LOG_INDEX_CHUNK) {
        const full = ids.slice(at, at + LOG_INDEX_CHUNK);
        tables.logIndex.put(ops, { kind: p.kind, value: p.value, lastLogId: BigInt(full[full.length - 1] as number) }, full);
      }
      if (at < ids.length) ops.put(openKey, tables.logIndex.valueCodec.encode(at === 0 ? ids : ids.slice(at)));
      else if (before !== undefined) ops.del(openKey);
    });
  }

  async close(): Promise<void> {
    if (this.db.status === 'open') await this.db.close();
  }
}

