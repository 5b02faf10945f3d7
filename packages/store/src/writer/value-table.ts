// The writer's value table: the values it writes, deduplicated across flushes.
import type { Db } from '../db.js';
import {
  LOG_INDEX_CHUNK,
  Prefix,
  decodePostings,
  logIndexKeyLength,
  postingCodec,
  writeLogIndexKey,
} from '../schema/index.js';
import type { GroupBatch } from './group-batch.js';

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
export class ValueTable {
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
   * `indexEmpty`: the index held nothing when the writer opened, so a value that is neither in
   * the table nor evicted from it has no chunk in the database (no read needed). `prefix`: the
   * table of the posting lists (LogIndex, or Appearances: the same layout).
   */
  constructor(
    private readonly maxBytes: number,
    private indexEmpty: boolean,
    private readonly prefix: number = Prefix.LogIndex,
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

  /** The table's prefix ++ kind ++ value ++ (last id, or OPEN_CHUNK when undefined), from `alloc`. */
  postingKey(e: number, lastId: number | undefined, alloc: (n: number) => Uint8Array): Uint8Array {
    const kindLen = this.rec[REC * e + R_KIND_LEN] as number;
    const len = kindLen & 0xffff;
    const at = this.rec[REC * e + R_VALUE_AT] as number;
    const value = this.values.subarray(at, at + len);
    return writeLogIndexKey(alloc(logIndexKeyLength(len)), kindLen >>> 16, value, lastId, this.prefix);
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

  /**
   * A rewind: (kind, value)'s postings from id `cut` on are deleted in `ops` (the chunks holding
   * them are read, and what is below `cut` is kept as the open chunk) and the table's open chunk
   * follows.
   */
  async cut(db: Db, ops: GroupBatch, kind: number, value: Uint8Array, cut: number, flush: number): Promise<void> {
    const fresh = (k: number) => new Uint8Array(k);
    const from = writeLogIndexKey(fresh(logIndexKeyLength(value.length)), kind, value, cut, this.prefix);
    const to = writeLogIndexKey(fresh(logIndexKeyLength(value.length)), kind, value, undefined, this.prefix);
    const kept: number[] = [];
    for await (const [k, v] of db.iterator({ gte: from, lte: to })) {
      for (const id of decodePostings(v)) if (id < cut) kept.push(id);
      ops.del(k.slice());
    }
    if (kept.length >= LOG_INDEX_CHUNK) throw new Error('rewind: a cut posting chunk is full');
    if (kept.length > 0) ops.put(to, postingCodec.encode(kept));
    this.replaceOpen(kind, value, kept, flush);
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
