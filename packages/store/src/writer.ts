// The write side, used only by the ingest worker. Verified blocks are staged in memory and
// written by `flush()` as ONE LevelDB batch holding every table row, every trie node of the
// group and the head pointer (last). A crash before the batch lands leaves the previous head
// and nothing of the group; after it, the whole group.
import { bytesToBigInt } from '@chainnode/core';
import { openDb } from './db.js';
import type { Db } from './db.js';
import { LOG_INDEX_CHUNK, LogIndexKind, MetaKey, SCHEMA_VERSION, headCodec, tables } from './schema.js';
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
  readonly ops: { type: 'put'; key: Uint8Array; value: Uint8Array }[] = [];
  bytes = 0;
  put(key: Uint8Array, value: Uint8Array): void {
    this.ops.push({ type: 'put', key, value });
    this.bytes += key.length + value.length;
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
  private postings = new Map<string, { kind: number; value: Uint8Array; ids: bigint[] }>();
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

  private stageBlock(b: BlockInput): void {
    this.trieDb.acceptBlock();
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
        this.post(LogIndexKind.Address, l.address, id);
        l.topics.forEach((t, pos) => {
          if (pos < 4) this.post(pos, t, id);
        });
      }
    });
    tables.blockLogs.put(ops, b.number, { firstLogId, count: logIndex });
    this.groupHead = { number: b.number, hash: b.hash };
    this.groupStats.blocks++;
    this.groupStats.txs += b.txHashes.length;
    this.groupStats.logs += logIndex;
  }

  private post(kind: number, value: Uint8Array, id: bigint): void {
    const key = `${kind}:${Buffer.from(value).toString('hex')}`;
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
   * Posting lists are chunked by aligned log-id buckets (LOG_INDEX_CHUNK ids): the chunk key is
   * the bucket start, so the index bytes do not depend on how blocks were grouped into batches
   * (a resumed import equals an uninterrupted one). A bucket left open by the previous batch is
   * read and extended inside this batch.
   */
  private async stagePostings(ops: KvBatch): Promise<void> {
    const chunks: { kind: number; value: Uint8Array; firstLogId: bigint; ids: bigint[] }[] = [];
    for (const p of this.postings.values()) {
      let cur: (typeof chunks)[number] | undefined;
      for (const id of p.ids) {
        const start = id - (id % LOG_INDEX_CHUNK);
        if (cur === undefined || cur.firstLogId !== start) {
          cur = { kind: p.kind, value: p.value, firstLogId: start, ids: [] };
          chunks.push(cur);
        }
        cur.ids.push(id);
      }
    }
    const existing = await tables.logIndex.getMany(this.db, chunks);
    chunks.forEach((c, i) => {
      const before = existing[i];
      tables.logIndex.put(ops, c, before === undefined ? c.ids : before.concat(c.ids));
    });
  }

  async close(): Promise<void> {
    if (this.db.status === 'open') await this.db.close();
  }
}

