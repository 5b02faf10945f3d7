// A ChainCommit in one buffer, for the hops between threads: the ingest thread posts each commit
// to the thread that owns it, which hands it to every serving thread. Posted as objects, a
// mainnet-shaped block's ~600 logs were some 4,000 small byte arrays, each cloned on every hop
// and rebuilt on the other side: ~20 ms between a block's commit and its being served. One
// buffer is copied whole (or transferred) and read in place: the logs' fields are views of it.
//
// Layout (little-endian): u32 removed, u32 added, head (u64 number, 32 hash), then each block:
// u64 number, 32 hash, u32 logs, then each log: 20 address, u8 topics, 32 x topics, u32 data
// length, data, u64 blockNumber, 32 blockHash, u64 blockTimestamp, 32 transactionHash, u32
// transactionIndex, u32 logIndex.
import type { ChainCommit, CommittedBlock } from './chain-events.js';
import type { LogRecord } from './types.js';

const HASH = 32;
const ADDRESS = 20;

function bytesOf(b: Uint8Array, width: number, what: string): Uint8Array {
  if (b.length !== width) throw new RangeError(`packCommit: ${what} is ${b.length} bytes, not ${width}`);
  return b;
}

function logSize(l: LogRecord): number {
  return ADDRESS + 1 + HASH * l.topics.length + 4 + l.data.length + 8 + HASH + 8 + HASH + 4 + 4;
}

function blockSize(b: CommittedBlock): number {
  let n = 8 + HASH + 4;
  for (const l of b.logs) n += logSize(l);
  return n;
}

/** `commit` in one buffer (unpackCommit reads it back). */
export function packCommit(commit: ChainCommit): Uint8Array<ArrayBuffer> {
  let size = 4 + 4 + 8 + HASH;
  for (const b of commit.removed) size += blockSize(b);
  for (const b of commit.added) size += blockSize(b);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  const u32 = (v: number) => {
    view.setUint32(at, v, true);
    at += 4;
  };
  const u64 = (v: bigint) => {
    view.setBigUint64(at, v, true);
    at += 8;
  };
  const put = (b: Uint8Array) => {
    out.set(b, at);
    at += b.length;
  };
  const block = (b: CommittedBlock) => {
    u64(b.number);
    put(bytesOf(b.hash, HASH, 'a block hash'));
    u32(b.logs.length);
    for (const l of b.logs) {
      put(bytesOf(l.address, ADDRESS, 'a log address'));
      if (l.topics.length > 255) throw new RangeError('packCommit: a log has over 255 topics');
      out[at++] = l.topics.length;
      for (const t of l.topics) put(bytesOf(t, HASH, 'a log topic'));
      u32(l.data.length);
      put(l.data);
      u64(l.blockNumber);
      put(bytesOf(l.blockHash, HASH, "a log's block hash"));
      u64(l.blockTimestamp);
      put(bytesOf(l.transactionHash, HASH, "a log's transaction hash"));
      u32(l.transactionIndex);
      u32(l.logIndex);
    }
  };
  u32(commit.removed.length);
  u32(commit.added.length);
  u64(commit.head.number);
  put(bytesOf(commit.head.hash, HASH, 'the head hash'));
  for (const b of commit.removed) block(b);
  for (const b of commit.added) block(b);
  return out;
}

/** The commit packCommit wrote into `packed` (its byte fields are views of `packed`). */
export function unpackCommit(packed: Uint8Array): ChainCommit {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  let at = 0;
  const need = (n: number) => {
    if (at + n > packed.length) throw new RangeError('unpackCommit: the buffer ends early');
  };
  const u32 = () => {
    need(4);
    const v = view.getUint32(at, true);
    at += 4;
    return v;
  };
  const u64 = () => {
    need(8);
    const v = view.getBigUint64(at, true);
    at += 8;
    return v;
  };
  const take = (n: number) => {
    need(n);
    const b = packed.subarray(at, at + n);
    at += n;
    return b;
  };
  const block = (): CommittedBlock => {
    const number = u64();
    const hash = take(HASH);
    const count = u32();
    const logs: LogRecord[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const address = take(ADDRESS);
      need(1);
      const topicCount = packed[at++] as number;
      const topics: Uint8Array[] = new Array(topicCount);
      for (let t = 0; t < topicCount; t++) topics[t] = take(HASH);
      const data = take(u32());
      logs[i] = {
        address,
        topics,
        data,
        blockNumber: u64(),
        blockHash: take(HASH),
        blockTimestamp: u64(),
        transactionHash: take(HASH),
        transactionIndex: u32(),
        logIndex: u32(),
      };
    }
    return { number, hash, logs };
  };
  const removedCount = u32();
  const addedCount = u32();
  const head = { number: u64(), hash: take(HASH) };
  const removed = Array.from({ length: removedCount }, block);
  const added = Array.from({ length: addedCount }, block);
  if (at !== packed.length) throw new RangeError('unpackCommit: bytes left over');
  return { removed, added, head };
}

/** `commit` without its blocks' logs: what a store applying it needs (numbers and hashes). */
export function commitWithoutLogs(commit: ChainCommit): ChainCommit {
  const strip = (b: CommittedBlock): CommittedBlock => ({ number: b.number, hash: b.hash, logs: [] });
  return { removed: commit.removed.map(strip), added: commit.added.map(strip), head: commit.head };
}
