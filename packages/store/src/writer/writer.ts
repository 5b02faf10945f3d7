// The write side, used only by the ingest worker. Verified blocks are staged in memory and
// written by `flush()` as ONE LevelDB batch holding every table row, every trie node of the
// group and the head pointer (last). A crash before the batch lands leaves the previous head
// and nothing of the group; after it, the whole group.
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from '../keccak.js';
import {
  LogJsonWriter,
  blockJsonHead,
  bytesToBigInt,
  decodeHeader,
  hashList,
  withdrawalsFromValues,
} from '@chainnode/core';
import type { LogRecord } from '@chainnode/core';
import { openDb } from '../db.js';
import type { Db } from '../db.js';
import { LogSegmentSealer } from '../logs/index.js';
import {
  LOG_INDEX_CHUNK,
  LogIndexKind,
  MetaKey,
  Prefix,
  SCHEMA_VERSION,
  decodePostings,
  encodeAddressLogsJson,
  encodeLogRow,
  headCodec,
  logIndexKeyLength,
  postingCodec,
  putU64,
  tables,
  u64Codec,
  writeLogIndexKey,
} from '../schema/index.js';
import type { HeadPointer, KvBatch, StoredBody, StoredReceipt } from '../schema/index.js';
import { TrieNodeDb, TriePruner, headerStateRoot, putTrieFrom, readStateTrie, readTrieFrom } from '../trie/index.js';
import type { PruneHost, PruneReport, TriePrunerOptions } from '../trie/index.js';
import { EMPTY_STATE_ROOT, stageStateStep } from '../history/index.js';
import type { HistoryStats, StateStep, StateWrites } from '../history/index.js';

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
  /**
   * What the block's execution (or replication) changed in the state, when its producer knows it
   * (history/write.ts): a datadir keeping state history stages its change set from it instead of
   * diffing the parent's and the block's state tries.
   */
  stateWrites?: StateWrites | undefined;
}

/** A block a rewind took off the canonical chain, with the logs it had. */
export interface RemovedBlock {
  number: bigint;
  hash: Uint8Array;
  logs: LogRecord[];
}

export interface GenesisInput {
  block: BlockInput;
  /** The `config` object of genesis.json, stored as JSON. */
  chainConfig: unknown;
  /** The whole genesis.json, stored as JSON when given. */
  genesisJson?: unknown;
  /**
   * The state root of the genesis alloc (which block 0's header may not carry: anvil --init).
   * Given, the datadir keeps flat state history (history/) from genesis on, and every block
   * after it must be added with its state (addBlock).
   */
  stateRoot?: Uint8Array;
}

/**
 * The writes of one group, staged straight into a native LevelDB write batch: each put is copied
 * out of JS at once (no op objects kept alive until the flush), and nothing reaches the database
 * before `write()`, which applies the whole batch atomically.
 */
class GroupBatch implements KvBatch {
  private readonly batch: ReturnType<Db['batch']>;
  private readonly native: NativeBatchOps | undefined;
  bytes = 0;
  constructor(db: Db) {
    this.batch = db.batch();
    // Rows go straight to classic-level's implementation methods (abstract-level's _put/_del
    // contract): the public put checks the key and value and builds an op object per call, which
    // cost more than the native copy itself at millions of rows per import. Keys and values here
    // are always Uint8Arrays (the 'view' encoding passes them through unchanged).
    const b = this.batch as unknown as Partial<NativeBatchOps>;
    this.native = typeof b._put === 'function' && typeof b._del === 'function' ? (b as NativeBatchOps) : undefined;
  }
  put(key: Uint8Array, value: Uint8Array): void {
    if (this.native !== undefined) this.native._put(key, value);
    else this.batch.put(key, value);
    this.bytes += key.length + value.length;
  }
  del(key: Uint8Array): void {
    if (this.native !== undefined) this.native._del(key);
    else this.batch.del(key);
    this.bytes += key.length;
  }
  /**
   * The group's last put (the head pointer), through the public API: abstract-level writes a batch
   * only if it counted an operation on it.
   */
  putLast(key: Uint8Array, value: Uint8Array): void {
    this.batch.put(key, value);
    this.bytes += key.length + value.length;
  }
  write(): Promise<void> {
    return this.batch.write();
  }
  close(): Promise<void> {
    return this.batch.close();
  }
}

/** The implementation methods of a classic-level chained batch. */
interface NativeBatchOps {
  _put(key: Uint8Array, value: Uint8Array): void;
  _del(key: Uint8Array): void;
}

const NO_BYTES = new Uint8Array(0);
const NONE = -1;

function valueHash(kind: number, v: Uint8Array): number {
  let h = Math.imul(kind + 1, 0x9e3779b1);
  for (let i = 0; i < v.length; i += 4) {
    const w =
      (v[i] as number) | ((v[i + 1] as number) << 8) | ((v[i + 2] as number) << 16) | ((v[i + 3] as number) << 24);
    h = Math.imul(h ^ w, 0x85ebca6b);
    h ^= h >>> 13;
  }
  return h ^ v.length;
}

// A value's record: REC int32 fields at REC * entry (32 bytes, so that looking a value up and
// extending its open chunk touch one cache line or two, not one per column). Log ids (up to 2^53)
// are split into low and high 32 bits.
const REC = 8;
const R_HASH = 0;
const R_KIND_LEN = 1; // kind << 16 | value length
const R_VALUE_AT = 2; // in the value arena
const R_LAST_USE = 3; // flush that last wrote the value
const R_OPEN_COUNT = 4; // ids in the open chunk; NONE: not known (read it back)
const R_OPEN_AT = 5; // the open chunk's bytes in the open arena: offset, length, capacity
const R_OPEN_LEN = 6;
const R_OPEN_CAP = 7;

/** Bytes of table memory per value besides its bytes and its open chunk (record, last id, slots). */
const ENTRY_COST = 4 * REC + 8 + 16;

/**
 * The indexed values (an address, or a topic at a position) the writer has seen recently, each
 * with its open posting chunk as the database holds it after the last flush, and the postings
 * (value, log id) staged for the current group. The open chunks are kept across flushes so that a
 * flush appends to them without reading them back from LevelDB and without decoding and
 * re-encoding the ids already there.
 *
 * A post only appends (hash, kind, value bytes, id) to flat arrays; the flush sorts the group's
 * postings by hash (stable radix sort, so each value's ids stay in order) and looks each distinct
 * value up once, instead of once per posting: the lookups are random memory accesses into a table
 * of up to millions of values, the appends are sequential. The table itself is typed arrays too:
 * open addressing (hash and entry number side by side), one small record per value, value bytes
 * in one arena, open-chunk bytes in another (each chunk with room to grow in place; the arena is
 * compacted when full). Nothing is allocated per post and the GC has no per-value objects to
 * trace. Bounded by an approximate byte budget: after a flush, the values written longest ago are
 * dropped (a dropped value's open chunk is read back on its next write). An open chunk here is only
 * ever what a flush wrote (the writer is the only process with the datadir open; after a failed
 * batch the writer stops).
 */
class ValueTable {
  private n = 0;
  private rec = new Int32Array(REC * 1024);
  /** Last id of each value's open chunk (of all its chunks when the open one is empty). */
  private openLast = new Float64Array(1024);
  /** Per slot: hash, entry number + 1 (0: empty); linear probing. */
  private slots = new Int32Array(2 * 4096);
  private values = new Uint8Array(1 << 16);
  private valuesEnd = 0;
  private opens = new Uint8Array(1 << 16);
  private opensEnd = 0;
  /** Sum of the open chunks' capacities. */
  private opensLive = 0;
  // The group's postings, in post order (so in log id order): hash, kind << 16 | length, the value
  // bytes' offset in `posted`, the log id.
  private pHash = new Int32Array(1 << 14);
  private pKindLen = new Int32Array(1 << 14);
  private pAt = new Int32Array(1 << 14);
  private pId = new Float64Array(1 << 14);
  private posts = 0;
  private posted = new Uint8Array(1 << 18);
  private postedEnd = 0;
  /** Hash bits of evicted values (they may have chunks in the database). */
  private readonly evicted = new Uint8Array(1 << 20);

  /**
   * `indexEmpty`: the LogIndex held nothing when the writer opened, so a value that is neither in
   * the table nor evicted from it has no chunk in the database (no read needed).
   */
  constructor(
    private readonly maxBytes: number,
    private indexEmpty: boolean,
  ) {}

  /** Stages log `id` for (kind, value). Ids arrive in increasing order; a repeat of (value, id) counts once. */
  post(kind: number, value: Uint8Array, id: number): void {
    const len = value.length;
    if (len > 0xffff) throw new RangeError(`log index: a ${len}-byte value`);
    const p = this.posts;
    if (p === this.pId.length) this.growPosts();
    if (this.postedEnd + len > this.posted.length) {
      const bigger = new Uint8Array(2 * (this.postedEnd + len));
      bigger.set(this.posted.subarray(0, this.postedEnd));
      this.posted = bigger;
    }
    const posted = this.posted;
    const at = this.postedEnd;
    for (let i = 0; i < len; i++) posted[at + i] = value[i] as number;
    this.postedEnd = at + len;
    this.pHash[p] = valueHash(kind, value);
    this.pKindLen[p] = (kind << 16) | len;
    this.pAt[p] = at;
    this.pId[p] = id;
    this.posts = p + 1;
  }

  private growPosts(): void {
    const n = 2 * this.pId.length;
    const grow = <T extends Int32Array | Float64Array>(a: T, b: T): T => {
      b.set(a as never);
      return b;
    };
    this.pHash = grow(this.pHash, new Int32Array(n));
    this.pKindLen = grow(this.pKindLen, new Int32Array(n));
    this.pAt = grow(this.pAt, new Int32Array(n));
    this.pId = grow(this.pId, new Float64Array(n));
  }

  /** The group's postings ordered by hash, each hash's postings in post order (LSD radix, 2 x 16 bits). */
  private sortedPosts(): Int32Array {
    const n = this.posts;
    const hash = this.pHash;
    let from = new Int32Array(n);
    let to = new Int32Array(n);
    for (let i = 0; i < n; i++) from[i] = i;
    const counts = new Int32Array(65_537);
    for (const shift of [0, 16]) {
      counts.fill(0);
      for (let i = 0; i < n; i++) {
        const b = (((hash[i] as number) >>> shift) & 0xffff) + 1;
        counts[b] = (counts[b] as number) + 1;
      }
      for (let b = 1; b <= 65_536; b++) counts[b] = (counts[b] as number) + (counts[b - 1] as number);
      for (let i = 0; i < n; i++) {
        const p = from[i] as number;
        const b = ((hash[p] as number) >>> shift) & 0xffff;
        to[counts[b] as number] = p;
        counts[b] = (counts[b] as number) + 1;
      }
      [from, to] = [to, from];
    }
    return from;
  }

  /** Posting p's value equals posting q's. */
  private samePosted(p: number, q: number): boolean {
    if (this.pKindLen[p] !== this.pKindLen[q]) return false;
    const posted = this.posted;
    const a = this.pAt[p] as number;
    const b = this.pAt[q] as number;
    const len = (this.pKindLen[p] as number) & 0xffff;
    for (let i = 0; i < len; i++) if (posted[a + i] !== posted[b + i]) return false;
    return true;
  }

  /** The entry of posting p's value, inserted (open chunk unknown) if new. */
  private entryOf(p: number): number {
    return this.findOrInsert(this.pHash[p] as number, this.pKindLen[p] as number, this.posted, this.pAt[p] as number);
  }

  /** The entry of the value `posted[at, at + len)` (hash h, kind << 16 | len), inserted if new. */
  private findOrInsert(h: number, kindLen: number, posted: Uint8Array, at: number): number {
    const len = kindLen & 0xffff;
    let slots = this.slots;
    let mask = (slots.length >> 1) - 1;
    let i = h & mask;
    for (;;) {
      const s = slots[2 * i + 1] as number;
      if (s === 0) break;
      if (slots[2 * i] === h) {
        const e = s - 1;
        if (this.rec[REC * e + R_KIND_LEN] === kindLen) {
          const v = this.rec[REC * e + R_VALUE_AT] as number;
          let same = true;
          for (let k = 0; k < len; k++) {
            if (this.values[v + k] !== posted[at + k]) {
              same = false;
              break;
            }
          }
          if (same) return e;
        }
      }
      i = (i + 1) & mask;
    }
    if (2 * (this.n + 1) > slots.length >> 1) {
      this.reslot(slots.length);
      slots = this.slots;
      mask = (slots.length >> 1) - 1;
      i = h & mask;
      while (slots[2 * i + 1] !== 0) i = (i + 1) & mask;
    }
    const e = this.insert(kindLen, posted.subarray(at, at + len), h);
    slots[2 * i] = h;
    slots[2 * i + 1] = e + 1;
    return e;
  }

  /** Re-slots every entry into `size` slots (a power of two above 2n). */
  private reslot(size: number): void {
    const slots = new Int32Array(2 * size);
    const mask = size - 1;
    const rec = this.rec;
    for (let e = 0; e < this.n; e++) {
      const h = rec[REC * e + R_HASH] as number;
      let i = h & mask;
      while (slots[2 * i + 1] !== 0) i = (i + 1) & mask;
      slots[2 * i] = h;
      slots[2 * i + 1] = e + 1;
    }
    this.slots = slots;
  }

  private insert(kindLen: number, value: Uint8Array, h: number): number {
    if (REC * (this.n + 1) > this.rec.length) {
      const rec = new Int32Array(2 * this.rec.length);
      rec.set(this.rec);
      this.rec = rec;
      const last = new Float64Array(2 * this.openLast.length);
      last.set(this.openLast);
      this.openLast = last;
    }
    if (this.valuesEnd + value.length > this.values.length) {
      const bigger = new Uint8Array(Math.max(2 * this.values.length, this.valuesEnd + value.length));
      bigger.set(this.values.subarray(0, this.valuesEnd));
      this.values = bigger;
    }
    const e = this.n++;
    this.values.set(value, this.valuesEnd);
    const r = REC * e;
    const rec = this.rec;
    rec.fill(0, r, r + REC);
    rec[r + R_HASH] = h;
    rec[r + R_KIND_LEN] = kindLen;
    rec[r + R_VALUE_AT] = this.valuesEnd;
    rec[r + R_OPEN_COUNT] = NONE;
    this.openLast[e] = 0;
    this.valuesEnd += value.length;
    return e;
  }

  /** LogIndex prefix ++ kind ++ value ++ (last id, or OPEN_CHUNK when undefined), from `alloc`. */
  postingKey(e: number, lastId: number | undefined, alloc: (n: number) => Uint8Array): Uint8Array {
    const kindLen = this.rec[REC * e + R_KIND_LEN] as number;
    const len = kindLen & 0xffff;
    const at = this.rec[REC * e + R_VALUE_AT] as number;
    return writeLogIndexKey(alloc(logIndexKeyLength(len)), kindLen >>> 16, this.values.subarray(at, at + len), lastId);
  }

  private evictedBit(h: number): number {
    return (h >>> 0) % (this.evicted.length * 8);
  }

  /**
   * Gives value e's open chunk (its first `len` bytes live) room for `need` bytes after them, at
   * the end of the arena; compacts the arena (and moves every chunk) when it is full.
   */
  private growOpen(e: number, len: number, need: number): void {
    const rec = this.rec;
    const r = REC * e;
    rec[r + R_OPEN_LEN] = len; // what a compaction keeps of it
    const cap = Math.max(32, 2 * (len + need));
    if (this.opensEnd + cap > this.opens.length) this.compactOpens(cap);
    const from = rec[r + R_OPEN_AT] as number;
    this.opens.copyWithin(this.opensEnd, from, from + len);
    this.opensLive += cap - (rec[r + R_OPEN_CAP] as number);
    rec[r + R_OPEN_AT] = this.opensEnd;
    rec[r + R_OPEN_CAP] = cap;
    this.opensEnd += cap;
  }

  /** Copies the open chunks (with their capacities) to a fresh arena with `extra` bytes free. */
  private compactOpens(extra: number): void {
    const rec = this.rec;
    let live = 0;
    for (let e = 0; e < this.n; e++) live += rec[REC * e + R_OPEN_CAP] as number;
    const target = new Uint8Array(Math.max(1 << 16, 2 * (live + extra)));
    let at = 0;
    for (let e = 0; e < this.n; e++) {
      const r = REC * e;
      const cap = rec[r + R_OPEN_CAP] as number;
      if (cap === 0) continue;
      const from = rec[r + R_OPEN_AT] as number;
      target.set(this.opens.subarray(from, from + (rec[r + R_OPEN_LEN] as number)), at);
      rec[r + R_OPEN_AT] = at;
      at += cap;
    }
    this.opens = target;
    this.opensEnd = at;
    this.opensLive = live;
  }

  /** Records `bytes` (count ids, the last one `lastId`) as value e's open chunk. */
  private setOpen(e: number, bytes: Uint8Array, count: number, lastId: number): void {
    const r = REC * e;
    if (bytes.length > (this.rec[r + R_OPEN_CAP] as number)) this.growOpen(e, 0, bytes.length);
    this.opens.set(bytes, this.rec[r + R_OPEN_AT] as number);
    this.rec[r + R_OPEN_LEN] = bytes.length;
    this.rec[r + R_OPEN_COUNT] = count;
    this.openLast[e] = lastId;
  }

  /**
   * Posting lists of the staged group, into `ops`: a value's sorted log ids cut into full chunks of
   * LOG_INDEX_CHUNK ids (keyed by their last id) and one open remainder (keyed by OPEN_CHUNK). The
   * open chunk left by the previous batch is extended inside this batch, so the bytes depend only
   * on the ids, never on how blocks were grouped into batches (a resumed import equals an
   * uninterrupted one). New ids are appended to the open chunk's bytes, in place, as LEB128 deltas
   * (the first id of a chunk is absolute), which is exactly postingCodec.encode of the chunk's ids.
   * The table then holds the open chunks as this batch leaves them (valid once it lands; a failed
   * batch stops the writer) and the staged postings are cleared.
   */
  async stage(db: Db, ops: GroupBatch, flush: number, alloc: (n: number) => Uint8Array): Promise<void> {
    const order = this.sortedPosts();
    const n = this.posts;
    // Runs of one value in `order`: [runStart[k], runStart[k + 1]) belongs to entry runEntry[k].
    // Postings of different values that share a hash are moved apart within their hash's run.
    const runStart: number[] = [];
    const runEntry: number[] = [];
    for (let s = 0; s < n; ) {
      const h = this.pHash[order[s] as number];
      let t = s + 1;
      while (t < n && this.pHash[order[t] as number] === h) t++;
      // [s, t): one hash. Usually one value; else split it, stably, value by value.
      for (let head = s; head < t; ) {
        const first = order[head] as number;
        let end = head + 1;
        for (let j = head + 1; j < t; j++) {
          const q = order[j] as number;
          if (!this.samePosted(first, q)) continue;
          if (j !== end) {
            // Move q down to `end`, keeping the order of what it jumps over.
            order.copyWithin(end + 1, end, j);
            order[end] = q;
          }
          end++;
        }
        runStart.push(head);
        runEntry.push(this.entryOf(first));
        head = end;
      }
      s = t;
    }
    runStart.push(n);
    const rec = this.rec;
    // Open chunks not in the table: known empty on a fresh index, else read back.
    const missing: number[] = [];
    for (const e of runEntry) {
      const r = REC * e;
      if (rec[r + R_OPEN_COUNT] !== NONE) continue;
      const bit = this.evictedBit(rec[r + R_HASH] as number);
      if (this.indexEmpty && ((this.evicted[bit >> 3] as number) & (1 << (bit & 7))) === 0)
        this.setOpen(e, NO_BYTES, 0, 0);
      else missing.push(e);
    }
    if (missing.length > 0) {
      const fresh = (k: number) => new Uint8Array(k);
      const raw = await db.getMany(missing.map((e) => this.postingKey(e, undefined, fresh)));
      missing.forEach((e, j) => {
        const bytes = raw[j];
        if (bytes === undefined) this.setOpen(e, NO_BYTES, 0, 0);
        else {
          const ids = decodePostings(bytes);
          this.setOpen(e, bytes, ids.length, ids[ids.length - 1] as number);
        }
      });
    }
    for (let k = 0; k < runEntry.length; k++) {
      const e = runEntry[k] as number;
      const r = REC * e;
      const before = rec[r + R_OPEN_COUNT] as number;
      let count = before;
      let prev = this.openLast[e] as number;
      let len = rec[r + R_OPEN_LEN] as number;
      let cap = rec[r + R_OPEN_CAP] as number;
      let at = rec[r + R_OPEN_AT] as number;
      let opens = this.opens;
      for (let j = runStart[k] as number; j < (runStart[k + 1] as number); j++) {
        const id = this.pId[order[j] as number] as number;
        if (j > (runStart[k] as number) && id === prev) continue; // the value twice in one log
        if (count > 0 && id <= prev) throw new Error(`log index: id ${id} does not follow ${prev}`);
        let d = count === 0 ? id : id - prev;
        prev = id;
        if (len + 8 > cap) {
          this.growOpen(e, len, 8);
          opens = this.opens;
          at = rec[r + R_OPEN_AT] as number;
          cap = rec[r + R_OPEN_CAP] as number;
        }
        while (d >= 0x80) {
          opens[at + len++] = (d % 0x80) | 0x80;
          d = Math.floor(d / 0x80);
        }
        opens[at + len++] = d;
        if (++count === LOG_INDEX_CHUNK) {
          // A full chunk: put from the arena (the batch copies it); the open chunk starts empty.
          ops.put(this.postingKey(e, id, alloc), opens.subarray(at, at + len));
          len = 0;
          count = 0;
        }
      }
      if (count > 0) ops.put(this.postingKey(e, undefined, alloc), opens.subarray(at, at + len));
      else if (before > 0) ops.del(this.postingKey(e, undefined, alloc));
      rec[r + R_OPEN_LEN] = len;
      rec[r + R_OPEN_COUNT] = count;
      this.openLast[e] = prev;
      rec[r + R_LAST_USE] = flush;
    }
    this.posts = 0;
    this.postedEnd = 0;
    this.evict(flush);
  }

  private bytes(): number {
    return this.n * ENTRY_COST + this.valuesEnd + this.opensLive;
  }

  /** Over budget: drops the values written longest ago, down to 90% of the budget. */
  private evict(flush: number): void {
    if (this.bytes() <= this.maxBytes) return;
    const rec = this.rec;
    const cost = (e: number) =>
      ENTRY_COST + ((rec[REC * e + R_KIND_LEN] as number) & 0xffff) + (rec[REC * e + R_OPEN_CAP] as number);
    // Bytes per age (flushes since last written); the oldest go first.
    const byAge = new Map<number, number>();
    for (let e = 0; e < this.n; e++) {
      const age = flush - (rec[REC * e + R_LAST_USE] as number);
      byAge.set(age, (byAge.get(age) ?? 0) + cost(e));
    }
    let left = this.bytes();
    let cut = Infinity; // drop ages >= cut
    for (const age of [...byAge.keys()].sort((a, b) => b - a)) {
      if (left <= this.maxBytes * 0.9) break;
      left -= byAge.get(age) as number;
      cut = age;
    }
    const values = new Uint8Array(Math.max(1 << 16, this.valuesEnd));
    let valuesEnd = 0;
    let kept = 0;
    for (let e = 0; e < this.n; e++) {
      const r = REC * e;
      if (flush - (rec[r + R_LAST_USE] as number) >= cut) {
        const bit = this.evictedBit(rec[r + R_HASH] as number);
        this.evicted[bit >> 3] = (this.evicted[bit >> 3] as number) | (1 << (bit & 7));
        continue;
      }
      const len = (rec[r + R_KIND_LEN] as number) & 0xffff;
      const from = rec[r + R_VALUE_AT] as number;
      values.set(this.values.subarray(from, from + len), valuesEnd);
      rec.copyWithin(REC * kept, r, r + REC);
      rec[REC * kept + R_VALUE_AT] = valuesEnd;
      this.openLast[kept] = this.openLast[e] as number;
      valuesEnd += len;
      kept++;
    }
    this.n = kept;
    this.values = values;
    this.valuesEnd = valuesEnd;
    let size = 4096;
    while (size < 2 * (kept + 1)) size *= 2;
    this.reslot(size);
    this.compactOpens(0);
  }

  /**
   * A reorg truncated (kind, value)'s postings in the batch being staged: its open chunk is now
   * `ids` (fewer than LOG_INDEX_CHUNK, possibly none), whatever the database still holds.
   */
  replaceOpen(kind: number, value: Uint8Array, ids: number[], flush: number): void {
    if (this.posts !== 0) throw new Error('log index: replaceOpen with postings staged');
    const e = this.findOrInsert(valueHash(kind, value), (kind << 16) | value.length, value, 0);
    this.setOpen(
      e,
      ids.length === 0 ? NO_BYTES : postingCodec.encode(ids),
      ids.length,
      ids.length === 0 ? 0 : (ids[ids.length - 1] as number),
    );
    this.rec[REC * e + R_LAST_USE] = flush;
  }

  /** After a failed batch: forget everything (nothing more is written). */
  reset(): void {
    this.n = 0;
    this.slots.fill(0);
    this.valuesEnd = 0;
    this.opensEnd = 0;
    this.opensLive = 0;
    this.posts = 0;
    this.postedEnd = 0;
    this.indexEmpty = false;
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

export interface WriterOptions {
  /** Let worker threads of this process open the datadir too (classic-level multithreading). */
  shared?: boolean;
  /** Byte budget of the open posting chunks kept in memory between flushes. Default 256 MiB. */
  openChunkCacheBytes?: number;
  /** A datadir with a trie window (Meta.stateTrie): the pruner's progress report and tuning. */
  prune?: TriePrunerOptions | undefined;
}

/** A rewind below Meta.trieFrom: the fork point's state trie is pruned, the reorg cannot be followed. */
export class RewindBelowTrieWindowError extends Error {
  constructor(
    readonly ancestor: bigint,
    readonly trieFrom: bigint,
    readonly window: number,
  ) {
    super(
      `rewind to block ${ancestor}: the state trie is kept from block ${trieFrom} on (--state-trie window=${window}); a reorg deeper than the window cannot be followed`,
    );
    this.name = 'RewindBelowTrieWindowError';
  }
}

export interface FlushStats {
  blocks: number;
  txs: number;
  logs: number;
  trieNodes: number;
  bytes: number;
  /** Key + value bytes of the group's state history rows (0 without state history). */
  historyBytes: number;
}

export class StoreWriter {
  readonly trieDb: TrieNodeDb;
  private group: GroupBatch;
  private values: ValueTable;
  private readonly cacheBytes: number;
  private readonly slab = new Slab();
  private flushes = 0;
  /** The batch handed to LevelDB and not yet landed (flushBehind). */
  private inFlight: Promise<void> | undefined;
  private failed: Error | undefined;
  private groupHead: HeadPointer | undefined;
  private groupStats = { blocks: 0, txs: 0, logs: 0 };
  private nextLogId = 0n;
  /** Meta.logsJsonFrom as this writer leaves it; `stored`: already in the database. */
  private logsJsonFrom: { value: bigint; stored: boolean } | undefined;
  private head: HeadPointer | undefined;
  private genesisHash: Uint8Array | undefined;
  private firstBlockNumber = 0n;
  private segments!: LogSegmentSealer;
  /** A rewind is staged (it unseals log segments): no sealing until its batch has landed. */
  private rewound = false;
  /**
   * The flat state history (Meta.stateHistory present): the genesis state root, the state root of
   * the last block staged, and the staged blocks' state steps, whose change sets writeGroup stages.
   */
  private history: { genesisRoot: Uint8Array; lastRoot: Uint8Array; steps: StateStep[] } | undefined;
  /** Meta.trieFrom as this writer keeps it: no rewind below it (set before the pruner persists it). */
  private trieFrom = 0n;
  /** The trie window's pruner (a datadir with `window=<N>` that holds its own state). */
  private pruner: TriePruner | undefined;
  /** The pruner's delete in flight: a group drained after it was filtered lands after it. */
  private pruneDelete: Promise<void> | undefined;

  private constructor(
    readonly db: Db,
    private readonly options: WriterOptions,
  ) {
    this.trieDb = new TrieNodeDb(db, true);
    this.group = new GroupBatch(db);
    this.cacheBytes = options.openChunkCacheBytes ?? 256 * 2 ** 20;
    this.values = new ValueTable(this.cacheBytes, false);
  }

  static async open(datadir: string, options: WriterOptions = {}): Promise<StoreWriter> {
    const w = new StoreWriter(
      await openDb(datadir, { create: true, bulkLoad: true, shared: options.shared === true }),
      options,
    );
    try {
      await w.load();
      w.segments = await LogSegmentSealer.open(w.db, datadir);
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
    const first = await tables.meta.get(this.db, MetaKey.FirstBlock);
    if (first !== undefined) this.firstBlockNumber = u64Codec.decode(first);
    const head = await tables.meta.get(this.db, MetaKey.Head);
    this.head = head === undefined ? undefined : headCodec.decode(head);
    if (this.head !== undefined) {
      const r = await tables.blockLogs.get(this.db, this.head.number);
      if (r === undefined) throw new Error(`block log range of head ${this.head.number} missing`);
      this.nextLogId = r.firstLogId + BigInt(r.count);
    }
    const from = await tables.meta.get(this.db, MetaKey.LogsJsonFrom);
    // A datadir written before AddressLogsJson existed has rows only from its next block on.
    if (from !== undefined) this.logsJsonFrom = { value: u64Codec.decode(from), stored: true };
    else this.logsJsonFrom = { value: this.head === undefined ? 0n : this.head.number + 1n, stored: false };
    // No log written yet: the log index is empty, so values new to the writer need no read-back.
    this.values = new ValueTable(this.cacheBytes, this.nextLogId === 0n);
    const genesisRoot = await tables.meta.get(this.db, MetaKey.StateHistory);
    if (genesisRoot !== undefined) {
      this.history = { genesisRoot, lastRoot: genesisRoot, steps: [] };
      if (this.head !== undefined) this.history.lastRoot = await this.stateRootOf(this.head.number, this.head.hash);
    }
    this.trieFrom = await readTrieFrom(this.db);
    const mode = await readStateTrie(this.db);
    if (mode.kind === 'window' && this.firstBlockNumber === 0n)
      this.pruner = new TriePruner(this.pruneHost(), mode.blocks, this.options.prune);
  }

  /** What the pruner does through the writer (trie-prune.ts PruneHost). */
  private pruneHost(): PruneHost {
    return {
      db: this.db,
      watchTrieNodes: (watch) => {
        this.trieDb.watch = watch;
      },
      persistTrieFrom: async (from) => {
        if (from > this.trieFrom) this.trieFrom = from;
        const batch = this.db.batch();
        putTrieFrom(batch, from);
        await batch.write();
      },
      deleteTrieNodes: async (keys, keep) => {
        await this.pruneDelete;
        // Filtered and handed to LevelDB in one turn: a node drained before is kept; a group drained
        // after waits for this delete (writeGroup), so its puts land after it.
        const dead = keys.filter((k) => !keep(k.subarray(1)));
        if (dead.length === 0) return 0;
        const batch = this.db.batch();
        for (const k of dead) batch.del(k);
        const done = batch.write();
        this.pruneDelete = done.then(
          () => undefined,
          () => undefined,
        );
        await done;
        return dead.length;
      },
    };
  }

  /** The lowest block whose state trie is complete (Meta.trieFrom, or the start of a cycle running). */
  stateTrieFrom(): bigint {
    return this.trieFrom;
  }

  /**
   * Runs a pruning cycle at the durable head now (after the one running, if any), whatever the
   * cadence; undefined in archive mode or while the chain is within the window.
   */
  async pruneTrie(): Promise<PruneReport | undefined> {
    const head = this.head;
    if (this.pruner === undefined || head === undefined) return undefined;
    await this.pruner.idle();
    const from = this.pruner.windowStart(head.number);
    if (from > this.trieFrom) this.trieFrom = from;
    return this.pruner.runNow(head.number, this.trieFrom);
  }

  /** Resolves when no pruning cycle runs. */
  pruneIdle(): Promise<void> {
    return this.pruner?.idle() ?? Promise.resolve();
  }

  /** The state root of stored block `number` (block 0: the genesis alloc's); only with state history. */
  private async stateRootOf(number: bigint, hash: Uint8Array): Promise<Uint8Array> {
    const h = this.history;
    if (h === undefined) throw new Error('state root: no state history');
    if (number === 0n) return h.genesisRoot;
    const rlp = await tables.headers.get(this.db, hash);
    if (rlp === undefined) throw new Error(`header of block ${number} missing`);
    return headerStateRoot(rlp);
  }

  /** With state history: the block's change set is staged at the group's flush (writeGroup). */
  private stageStateStep(number: bigint, root: Uint8Array, writes?: StateWrites): void {
    const h = this.history;
    if (h === undefined) return;
    h.steps.push({ number, parentRoot: h.lastRoot, root, writes });
    h.lastRoot = root;
  }

  /** The datadir keeps flat state history: blocks added with their write sets save the trie diff. */
  keepsStateHistory(): boolean {
    return this.history !== undefined;
  }

  /** Blocks without state cannot be added to a datadir that keeps state history. */
  private requireNoHistory(what: string): void {
    if (this.history !== undefined) throw new Error(`${what}: this datadir keeps state history; add blocks with state`);
  }

  /** The stored genesis hash, or undefined for an empty datadir. */
  storedGenesisHash(): Uint8Array | undefined {
    return this.genesisHash;
  }

  /** The genesis.json stored at writeGenesis, if it was. */
  async genesisJson(): Promise<unknown> {
    const raw = await tables.meta.get(this.db, MetaKey.GenesisJson);
    return raw === undefined ? undefined : JSON.parse(new TextDecoder().decode(raw));
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
    if (g.genesisJson !== undefined)
      tables.meta.put(ops, MetaKey.GenesisJson, new TextEncoder().encode(JSON.stringify(g.genesisJson)));
    if (g.stateRoot !== undefined) {
      tables.meta.put(ops, MetaKey.StateHistory, g.stateRoot);
      this.history = { genesisRoot: g.stateRoot, lastRoot: EMPTY_STATE_ROOT, steps: [] };
      this.stageStateStep(0n, g.stateRoot);
    }
    // Every node the genesis alloc wrote: block 0's header may name another state root (anvil's).
    this.stageBlock(g.block, false);
    await this.flush();
    this.genesisHash = g.block.hash;
  }

  /**
   * Starts an empty datadir at block N > 0 instead of genesis (a node joining its chain there):
   * the meta rows (the chain's genesis hash as its identity, config, genesis.json, first block N),
   * and block N's rows without state, as one batch. Rows of every table exist from N on only;
   * the state trie holds only what proven reads add later (ChainStore.addProvenState).
   */
  async writeAnchor(g: GenesisInput & { genesisHash: Uint8Array }): Promise<void> {
    if (this.genesisHash !== undefined) throw new Error('store already holds a chain');
    if (this.head !== undefined) throw new Error('store already holds a head');
    const n = g.block.number;
    if (n <= 0n) throw new Error('an anchor is a block above genesis');
    const ops = this.group;
    tables.meta.put(ops, MetaKey.SchemaVersion, Uint8Array.of(SCHEMA_VERSION));
    tables.meta.put(ops, MetaKey.GenesisHash, g.genesisHash);
    tables.meta.put(ops, MetaKey.ChainConfig, new TextEncoder().encode(JSON.stringify(g.chainConfig)));
    if (g.genesisJson !== undefined)
      tables.meta.put(ops, MetaKey.GenesisJson, new TextEncoder().encode(JSON.stringify(g.genesisJson)));
    tables.meta.put(ops, MetaKey.FirstBlock, u64Codec.encode(n));
    this.logsJsonFrom = { value: n, stored: false };
    this.firstBlockNumber = n;
    this.stageHistoryBlock(g.block);
    await this.flush();
    this.genesisHash = g.genesisHash;
  }

  /** The first block the datadir holds (0 from genesis; N when it joined its chain at N). */
  firstBlock(): bigint {
    return this.firstBlockNumber;
  }

  /**
   * Stages a block whose data roots were verified and whose state this store does not hold (a
   * joined datadir's history): the same rows as addBlock, no trie nodes.
   */
  addHistoryBlock(b: BlockInput): void {
    this.requireNoHistory('addHistoryBlock');
    this.stageHistoryBlock(b);
  }

  private stageHistoryBlock(b: BlockInput): void {
    this.trieDb.rejectBlock();
    this.stageBlock(b);
  }

  /** Stages a verified block (and the trie nodes its execution wrote) into the current group. */
  addBlock(b: BlockInput): void {
    this.stageBlock(b);
    if (this.history !== undefined) this.stageStateStep(b.number, headerStateRoot(b.headerRlp), b.stateWrites);
  }

  /**
   * Stages a block that was NOT executed here (synthetic or pre-executed elsewhere): the same
   * tables, batch and log index code as addBlock, but no state: nothing of the trie overlay is
   * taken, so the datadir holds no state for it. Used by the getLogs benchmark to build large
   * chains quickly; an importer of real chains must use addBlock.
   */
  addPreExecutedBlock(b: BlockInput, opts: { logsJson?: boolean } = {}): void {
    this.requireNoHistory('addPreExecutedBlock');
    this.stageRows(b);
    if (opts.logsJson === true) this.stageLogsJson(b, decodeHeader(b.headerRlp, b.hash).timestamp);
    else this.withoutLogsJson(b.number);
  }

  private stageBlock(b: BlockInput, reachableOnly = true): void {
    const header = decodeHeader(b.headerRlp, b.hash);
    // Only the nodes of the block's final state trie are kept (trie-db.ts): the same set
    // whichever way the state was reached (executed, or replicated from a diff).
    this.trieDb.acceptBlock(reachableOnly ? header.stateRoot : undefined);
    this.stageRows(b);
    // The ready-to-serve hashes-only answer of the block, its tx hashes in it (schema.ts,
    // BlockJson). Not for addPreExecutedBlock's synthetic bench chains: readers format blocks
    // without the row.
    const text = blockJsonHead(
      {
        header,
        size: b.body.size,
        totalDifficulty: b.totalDifficulty,
        uncleHashes: b.body.uncles.map((u) => keccak256(u)),
        ...(b.body.withdrawals !== undefined ? { withdrawals: withdrawalsFromValues(b.body.withdrawals) } : {}),
      },
      false,
      hashList(b.txHashes),
    );
    tables.blockJson.stage(this.group, b.hash, { whole: true, ascii: Buffer.from(text, 'latin1') }, this.alloc);
    this.stageLogsJson(b, header.timestamp);
  }

  /**
   * The ready-to-serve JSON of a block's logs (schema.ts, AddressLogsJson): one row per address
   * that emitted logs in the block.
   */
  private stageLogsJson(b: BlockInput, timestamp: bigint): void {
    const byAddress = new Map<string, { address: Uint8Array; entries: { logIndex: number; text: string }[] }>();
    const writer = new LogJsonWriter();
    let logIndex = 0;
    b.logs.forEach((txLogs, transactionIndex) => {
      const transactionHash = b.txHashes[transactionIndex];
      if (transactionHash === undefined) throw new Error(`block ${b.number}: logs of unknown tx ${transactionIndex}`);
      for (const l of txLogs) {
        const text = writer.write({
          ...l,
          blockNumber: b.number,
          blockHash: b.hash,
          blockTimestamp: timestamp,
          transactionHash,
          transactionIndex,
          logIndex,
        });
        const key = Buffer.from(l.address.buffer, l.address.byteOffset, l.address.byteLength).toString('latin1');
        let row = byAddress.get(key);
        if (row === undefined) byAddress.set(key, (row = { address: l.address, entries: [] }));
        row.entries.push({ logIndex: logIndex++, text });
      }
    });
    for (const row of byAddress.values()) {
      tables.addressLogsJson.stage(
        this.group,
        { address: row.address, number: b.number },
        encodeAddressLogsJson(row.entries, this.alloc),
        this.alloc,
      );
    }
  }

  /** A block staged without AddressLogsJson rows: readers may use the rows only above it. */
  private withoutLogsJson(number: bigint): void {
    if (this.logsJsonFrom === undefined || number + 1n > this.logsJsonFrom.value)
      this.logsJsonFrom = { value: number + 1n, stored: false };
  }

  private stageRows(b: BlockInput): void {
    const ops = this.group;
    const alloc = this.alloc;
    tables.canonical.stage(ops, b.number, b.hash, alloc);
    tables.hashToNumber.stage(ops, b.hash, b.number, alloc);
    tables.headers.stage(ops, b.hash, b.headerRlp, alloc);
    tables.bodies.stage(ops, b.hash, b.body, alloc);
    tables.receipts.stage(ops, b.hash, b.receipts, alloc);
    tables.totalDifficulty.stage(ops, b.hash, b.totalDifficulty, alloc);
    tables.senders.stage(ops, b.hash, b.senders, alloc);
    tables.blockTxHashes.stage(ops, b.number, b.txHashes, alloc);
    tables.blooms.stage(ops, b.number, b.logsBloom, alloc);
    for (let index = 0; index < b.txHashes.length; index++)
      tables.txLookup.stage(ops, b.txHashes[index] as Uint8Array, { number: b.number, index }, alloc);
    const firstLogId = this.nextLogId;
    // Log ids stay below 2^53 (one per log ever emitted), so they are counted as numbers here.
    let id = Number(firstLogId);
    let logIndex = 0;
    b.logs.forEach((txLogs, txIndex) => {
      for (const l of txLogs) {
        const key = this.slab.alloc(9);
        key[0] = Prefix.Logs;
        putU64(key, 1, id);
        const row = {
          blockNumber: b.number,
          txIndex,
          logIndex: logIndex++,
          address: l.address,
          topics: l.topics,
          data: l.data,
        };
        ops.put(key, encodeLogRow(row, this.alloc));
        this.values.post(LogIndexKind.Address, l.address, id);
        for (let pos = 0; pos < l.topics.length && pos < 4; pos++)
          this.values.post(pos, l.topics[pos] as Uint8Array, id);
        id++;
      }
    });
    this.nextLogId = firstLogId + BigInt(logIndex);
    tables.blockLogs.stage(ops, b.number, { firstLogId, count: logIndex }, alloc);
    this.groupHead = { number: b.number, hash: b.hash };
    this.groupStats.blocks++;
    this.groupStats.txs += b.txHashes.length;
    this.groupStats.logs += logIndex;
  }

  private readonly alloc = (n: number): Uint8Array => this.slab.alloc(n);

  /** Trie nodes as the group sees them: staged, then stored. */
  private readonly nodeSource = (hash: Uint8Array): Uint8Array | undefined => this.trieDb.getNodeSync(hash);

  /** The staged blocks' state history rows (their tries are all reachable until drainInto). */
  private async stageStateHistory(ops: GroupBatch): Promise<number> {
    const h = this.history;
    if (h === undefined) return 0;
    const steps = h.steps;
    h.steps = [];
    const stats: HistoryStats = { accounts: 0, slots: 0, bytes: 0 };
    for (const step of steps) await stageStateStep(ops, this.nodeSource, step, 'put', this.alloc, stats);
    return stats.bytes;
  }

  /**
   * Stages, into the current group, the undo of every canonical block above `ancestor` (a reorg:
   * the caller then stages the new branch's blocks into the same group, and one flush writes it
   * all, so no reader ever sees the ancestor as head or a mix of branches). The undo is derived
   * from what those blocks wrote: their canonical-number, tx-hash-list, bloom and log-range rows,
   * their log rows, their tx-hash lookups and their log-index postings (log ids are a dense tail
   * above the ancestor's last log, so each touched posting list is cut at the first orphaned id,
   * leaving exactly the chunks it had before those logs were added). Rows keyed by block hash
   * (headers, bodies, receipts, senders, total difficulty, hash -> number) stay: readers see a
   * block by hash only while the canonical row of its number names it, and a later reorg back to
   * it rewrites the same bytes. Trie nodes are content-addressed and need no undo.
   *
   * Must be called with nothing staged and no batch in flight (after flush()). Returns the
   * removed blocks, oldest first, with the logs they had.
   */
  async rewind(ancestor: bigint): Promise<RemovedBlock[]> {
    await this.settle();
    if (this.failed !== undefined) throw this.failed;
    if (this.groupHead !== undefined || this.group.bytes !== 0) throw new Error('rewind: blocks are staged');
    const head = this.head;
    if (head === undefined || ancestor >= head.number) return [];
    if (ancestor < this.firstBlockNumber)
      throw new Error(
        ancestor < 0n ? 'rewind: below genesis' : `rewind: below the first block ${this.firstBlockNumber}`,
      );
    if (ancestor < this.trieFrom && this.pruner !== undefined)
      throw new RewindBelowTrieWindowError(ancestor, this.trieFrom, this.pruner.window);
    const ancestorHash = await tables.canonical.get(this.db, ancestor);
    const ancestorLogs = await tables.blockLogs.get(this.db, ancestor);
    if (ancestorHash === undefined || ancestorLogs === undefined)
      throw new Error(`rewind: block ${ancestor} rows missing`);
    const cut = ancestorLogs.firstLogId + BigInt(ancestorLogs.count);
    const ops = this.group;
    const removed: RemovedBlock[] = [];
    const ancestorRoot = this.history === undefined ? undefined : await this.stateRootOf(ancestor, ancestorHash);
    let parentRoot = ancestorRoot;
    for (let n = ancestor + 1n; n <= head.number; n++) {
      const [hash, txHashes, range] = await Promise.all([
        tables.canonical.get(this.db, n),
        tables.blockTxHashes.get(this.db, n),
        tables.blockLogs.get(this.db, n),
      ]);
      if (hash === undefined || txHashes === undefined || range === undefined)
        throw new Error(`rewind: block ${n} rows missing`);
      const headerRlp = await tables.headers.get(this.db, hash);
      if (headerRlp === undefined) throw new Error(`rewind: header of block ${n} missing`);
      const timestamp = bytesToBigInt((RLP.decode(headerRlp) as Uint8Array[])[11] as Uint8Array);
      if (parentRoot !== undefined) {
        // The block's state history rows: the keys its change set wrote, from the same trie diff.
        const root = headerStateRoot(headerRlp);
        await stageStateStep(ops, this.nodeSource, { number: n, parentRoot, root }, 'del', this.alloc);
        parentRoot = root;
      }
      const logs: LogRecord[] = [];
      for await (const [, row] of tables.logs.range(this.db, {
        gte: range.firstLogId,
        lt: range.firstLogId + BigInt(range.count),
      })) {
        logs.push({
          address: row.address,
          topics: row.topics,
          data: row.data,
          blockNumber: n,
          blockHash: hash,
          blockTimestamp: timestamp,
          transactionHash: txHashes[row.txIndex] as Uint8Array,
          transactionIndex: row.txIndex,
          logIndex: row.logIndex,
        });
      }
      removed.push({ number: n, hash, logs });
      ops.del(tables.canonical.key(n));
      ops.del(tables.blockTxHashes.key(n));
      ops.del(tables.blooms.key(n));
      ops.del(tables.blockLogs.key(n));
      for (const t of txHashes) ops.del(tables.txLookup.key(t));
      for (let id = range.firstLogId; id < range.firstLogId + BigInt(range.count); id++) ops.del(tables.logs.key(id));
      const rowsOf = new Map<string, Uint8Array>();
      for (const l of logs) rowsOf.set(Buffer.from(l.address).toString('hex'), l.address);
      for (const address of rowsOf.values()) ops.del(tables.addressLogsJson.key({ address, number: n }));
    }
    // The posting lists of every value the orphaned logs carried, cut at `cut`.
    const touched = new Map<string, { kind: number; value: Uint8Array }>();
    const touch = (kind: number, value: Uint8Array) =>
      touched.set(`${kind}:${Buffer.from(value).toString('hex')}`, { kind, value });
    for (const b of removed) {
      for (const l of b.logs) {
        touch(LogIndexKind.Address, l.address);
        for (let pos = 0; pos < l.topics.length && pos < 4; pos++) touch(pos, l.topics[pos] as Uint8Array);
      }
    }
    const flush = ++this.flushes;
    const fresh = (k: number) => new Uint8Array(k);
    for (const { kind, value } of touched.values()) {
      const from = writeLogIndexKey(fresh(logIndexKeyLength(value.length)), kind, value, Number(cut));
      const to = writeLogIndexKey(fresh(logIndexKeyLength(value.length)), kind, value, undefined);
      const kept: number[] = [];
      for await (const [k, v] of this.db.iterator({ gte: from, lte: to })) {
        for (const id of decodePostings(v)) if (id < Number(cut)) kept.push(id);
        ops.del(k.slice());
      }
      if (kept.length >= LOG_INDEX_CHUNK) throw new Error('rewind: a cut posting chunk is full');
      if (kept.length > 0) ops.put(to, postingCodec.encode(kept));
      this.values.replaceOpen(kind, value, kept, flush);
    }
    await this.segments.unsealFrom(ancestor + 1n, ops);
    this.rewound = true;
    if (this.history !== undefined && ancestorRoot !== undefined) this.history.lastRoot = ancestorRoot;
    this.nextLogId = cut;
    this.groupHead = { number: ancestor, hash: ancestorHash };
    return removed;
  }

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
    await this.sealLogSegments();
    return stats;
  }

  /**
   * Seals the log segments (log-segments.ts) that the durable head has left SEAL_DEPTH behind.
   * Between groups only: it reads what landed and writes a batch of its own.
   */
  private async sealLogSegments(): Promise<void> {
    const rows = this.logsJsonFrom;
    if (this.rewound || this.head === undefined || rows === undefined || !rows.stored) return;
    await this.segments.sealBelow(rows.value, this.head.number);
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
    await this.sealLogSegments();
    const ops = this.group;
    const stats: FlushStats = { ...this.groupStats, trieNodes: 0, bytes: 0, historyBytes: 0 };
    const head = this.groupHead;
    if (head === undefined) return stats;
    const flush = ++this.flushes;
    await this.values.stage(this.db, ops, flush, this.alloc);
    stats.historyBytes = await this.stageStateHistory(ops);
    stats.trieNodes = this.trieDb.drainInto(ops);
    // A pruning delete filtered before this drain may name a node of this group: it lands first.
    if (this.pruneDelete !== undefined) await this.pruneDelete;
    const rowsFrom = this.logsJsonFrom;
    if (rowsFrom !== undefined && !rowsFrom.stored)
      tables.meta.put(ops, MetaKey.LogsJsonFrom, u64Codec.encode(rowsFrom.value));
    ops.putLast(tables.meta.key(MetaKey.Head), headCodec.encode(head));
    stats.bytes = ops.bytes;
    this.group = new GroupBatch(this.db);
    this.groupHead = undefined;
    this.groupStats = { blocks: 0, txs: 0, logs: 0 };
    this.rewound = false; // the next seal comes after this batch has landed (settle())
    const landed = ops.write().then(
      () => {
        this.head = head;
        if (rowsFrom !== undefined && this.logsJsonFrom === rowsFrom) rowsFrom.stored = true;
        // In this turn, before the next group drains: a cycle starting here watches every node after it.
        const from = this.pruner?.poke(head.number, this.trieFrom);
        if (from !== undefined && from > this.trieFrom) this.trieFrom = from;
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

  async close(): Promise<void> {
    if (this.db.status !== 'open') return;
    try {
      await this.pruner?.close();
      await this.settle();
    } finally {
      await this.group.close(); // drops whatever was staged and not flushed
      await this.db.close();
    }
  }
}
