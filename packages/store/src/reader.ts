// The read side of the store: LevelChainStore implements core's read-only ChainStore over the
// tables of schema.ts. Decoding happens here (through core's codecs); small LRU caches keep the
// hot paths (block by number/hash) off LevelDB.
import { RLP } from '@ethereumjs/rlp';
import { MerklePatriciaTrie, createMerkleProof } from '@ethereumjs/mpt';
import { createAccountFromRLP, KECCAK256_NULL, KECCAK256_RLP, setLengthLeft } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import {
  LimitExceededError,
  RpcError,
  StoreUnavailableError,
  bytesEqual,
  bytesToBigInt,
  decodeHeader,
  decodeTransaction,
  withdrawalsFromValues,
} from '@chainnode/core';
import type {
  AccountProofRecord,
  BlockRecord,
  Bytes,
  ChainHead,
  ChainInfo,
  ChainStore,
  HeaderRecord,
  LogQuery,
  LogQueryOptions,
  LogQueryResult,
  LogRecord,
  StorageProofRecord,
  TxWithLocation,
  UncleRecord,
} from '@chainnode/core';
import { DatadirEmptyError, openDb } from './db.js';
import type { Db } from './db.js';
import { Lru } from './lru.js';
import { LogIndexKind, MetaKey, SCHEMA_VERSION, headCodec, tables } from './schema.js';
import type { StoredLog } from './schema.js';
import { TrieNodeDb } from './trie-db.js';

const hexKey = (b: Uint8Array): string => Buffer.from(b).toString('hex');

interface BlockLogContext {
  hash: Uint8Array;
  timestamp: bigint;
  txHashes: Uint8Array[];
}

interface Constraint {
  kind: number;
  values: Uint8Array[];
}

/** Topic/address constraints of a query: empty `addresses` or a null/empty position is a wildcard. */
function constraintsOf(query: LogQuery): Constraint[] {
  const out: Constraint[] = [];
  if (query.addresses.length > 0) out.push({ kind: LogIndexKind.Address, values: query.addresses });
  query.topics.forEach((t, i) => {
    if (t !== null && t.length > 0) out.push({ kind: i, values: t });
  });
  return out;
}

function logMatches(log: StoredLog, query: LogQuery): boolean {
  if (query.addresses.length > 0 && !query.addresses.some((a) => bytesEqual(a, log.address))) return false;
  for (let i = 0; i < query.topics.length; i++) {
    const t = query.topics[i];
    if (t === null || t === undefined || t.length === 0) continue;
    const have = log.topics[i];
    if (have === undefined || !t.some((x) => bytesEqual(x, have))) return false;
  }
  return true;
}

function bloomHas(bloom: Uint8Array, value: Uint8Array): boolean {
  const h = keccak256(value);
  for (let i = 0; i < 6; i += 2) {
    const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
    const byte = bloom[255 - (bit >> 3)] as number;
    if ((byte & (1 << (bit & 7))) === 0) return false;
  }
  return true;
}

function bloomMayMatch(bloom: Uint8Array, constraints: Constraint[]): boolean {
  return constraints.every((c) => c.values.some((v) => bloomHas(bloom, v)));
}

function checkDeadline(deadline: number): void {
  if (Date.now() > deadline) throw new LimitExceededError('query timeout exceeded');
}

function unionSorted(lists: bigint[][]): bigint[] {
  if (lists.length === 1) return lists[0] as bigint[];
  const all = lists.flat().sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const out: bigint[] = [];
  for (const id of all) if (out.length === 0 || out[out.length - 1] !== id) out.push(id);
  return out;
}

function intersectSorted(a: bigint[], b: bigint[]): bigint[] {
  const out: bigint[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as bigint;
    const y = b[j] as bigint;
    if (x === y) {
      out.push(x);
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return out;
}

export class LevelChainStore implements ChainStore {
  private readonly blocks = new Lru<string, BlockRecord>(1024);
  private readonly headers = new Lru<string, HeaderRecord>(4096);
  private readonly canonicalCache = new Lru<bigint, Uint8Array>(8192);
  private readonly logContexts = new Lru<bigint, BlockLogContext>(1024);
  private readonly trieDb: TrieNodeDb;

  private constructor(
    private readonly db: Db,
    private readonly chainInfo: ChainInfo,
  ) {
    this.trieDb = new TrieNodeDb(db, false);
  }

  static async open(datadir: string): Promise<LevelChainStore> {
    const db = await openDb(datadir, { create: false });
    try {
      const version = await tables.meta.get(db, MetaKey.SchemaVersion);
      const genesisHash = await tables.meta.get(db, MetaKey.GenesisHash);
      const config = await tables.meta.get(db, MetaKey.ChainConfig);
      const head = await tables.meta.get(db, MetaKey.Head);
      if (version === undefined || genesisHash === undefined || config === undefined || head === undefined) {
        throw new DatadirEmptyError(datadir);
      }
      const v = Number(bytesToBigInt(version));
      if (v !== SCHEMA_VERSION) throw new Error(`datadir ${datadir} has store schema version ${v}, this build reads ${SCHEMA_VERSION}`);
      const parsed = JSON.parse(new TextDecoder().decode(config)) as { chainId?: number | string };
      if (parsed.chainId === undefined) throw new Error(`datadir ${datadir}: stored chain config has no chainId`);
      const chainId = BigInt(parsed.chainId);
      return new LevelChainStore(db, { chainId, networkId: chainId, genesisHash });
    } catch (err) {
      await db.close();
      throw err;
    }
  }

  info(): ChainInfo {
    return this.chainInfo;
  }

  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.db.status !== 'open') throw new StoreUnavailableError(`store unavailable: ${what}: database is ${this.db.status}`);
    try {
      return await fn();
    } catch (err) {
      if (err instanceof RpcError || err instanceof StoreUnavailableError) throw err;
      throw new StoreUnavailableError(`store unavailable: ${what} failed`, { cause: err });
    }
  }

  head(): Promise<ChainHead> {
    return this.guard('head', async () => {
      const raw = await tables.meta.get(this.db, MetaKey.Head);
      if (raw === undefined) throw new Error('head pointer missing');
      return headCodec.decode(raw);
    });
  }

  canonicalHash(number: bigint): Promise<Bytes | undefined> {
    return this.guard('canonicalHash', () => this.canonical(number));
  }

  private async canonical(number: bigint): Promise<Uint8Array | undefined> {
    if (number < 0n || number >= 2n ** 64n) return undefined;
    const hit = this.canonicalCache.get(number);
    if (hit !== undefined) return hit;
    const hash = await tables.canonical.get(this.db, number);
    if (hash !== undefined) this.canonicalCache.set(number, hash);
    return hash;
  }

  blockNumber(hash: Bytes): Promise<bigint | undefined> {
    return this.guard('blockNumber', () => this.canonicalNumber(hash));
  }

  /** Number of `hash` if it is canonical. */
  private async canonicalNumber(hash: Uint8Array): Promise<bigint | undefined> {
    if (hash.length !== 32) return undefined;
    const n = await tables.hashToNumber.get(this.db, hash);
    if (n === undefined) return undefined;
    const c = await this.canonical(n);
    return c !== undefined && bytesEqual(c, hash) ? n : undefined;
  }

  header(hash: Bytes): Promise<HeaderRecord | undefined> {
    return this.guard('header', () => this.headerOf(hash));
  }

  private async headerOf(hash: Uint8Array): Promise<HeaderRecord | undefined> {
    const key = hexKey(hash);
    const hit = this.headers.get(key);
    if (hit !== undefined) return hit;
    if ((await this.canonicalNumber(hash)) === undefined) return undefined;
    const raw = await tables.headers.get(this.db, hash);
    if (raw === undefined) return undefined;
    const h = decodeHeader(raw);
    this.headers.set(key, h);
    return h;
  }

  block(hash: Bytes): Promise<BlockRecord | undefined> {
    return this.guard('block', () => this.blockOf(hash));
  }

  private async blockOf(hash: Uint8Array): Promise<BlockRecord | undefined> {
    const key = hexKey(hash);
    const hit = this.blocks.get(key);
    if (hit !== undefined) return hit;
    const header = await this.headerOf(hash);
    if (header === undefined) return undefined;
    const [body, senders, td] = await Promise.all([
      tables.bodies.get(this.db, hash),
      tables.senders.get(this.db, hash),
      tables.totalDifficulty.get(this.db, hash),
    ]);
    if (body === undefined || senders === undefined || td === undefined) throw new Error(`block ${header.number}: body rows missing`);
    if (senders.length !== body.transactions.length) throw new Error(`block ${header.number}: ${senders.length} senders for ${body.transactions.length} txs`);
    const record: BlockRecord = {
      header,
      size: body.size,
      totalDifficulty: td,
      transactions: body.transactions.map((raw, i) => decodeTransaction(raw, senders[i] as Uint8Array)),
      uncleHashes: body.uncles.map((u) => keccak256(u)),
    };
    if (body.withdrawals !== undefined) record.withdrawals = withdrawalsFromValues(body.withdrawals);
    this.blocks.set(key, record);
    return record;
  }

  uncle(blockHash: Bytes, index: number): Promise<UncleRecord | undefined> {
    return this.guard('uncle', async () => {
      if ((await this.canonicalNumber(blockHash)) === undefined) return undefined;
      const body = await tables.bodies.get(this.db, blockHash);
      const raw = body?.uncles[index];
      if (raw === undefined) return undefined;
      const size = RLP.encode([RLP.decode(raw) as Uint8Array[], [], []]).length;
      return { header: decodeHeader(raw), size };
    });
  }

  transaction(hash: Bytes): Promise<TxWithLocation | undefined> {
    return this.guard('transaction', async () => {
      if (hash.length !== 32) return undefined;
      const loc = await tables.txLookup.get(this.db, hash);
      if (loc === undefined) return undefined;
      const blockHash = await this.canonical(loc.number);
      if (blockHash === undefined) return undefined;
      const block = await this.blockOf(blockHash);
      const tx = block?.transactions[loc.index];
      if (block === undefined || tx === undefined || !bytesEqual(tx.hash, hash)) return undefined;
      const out: TxWithLocation = {
        tx,
        blockHash,
        blockNumber: loc.number,
        transactionIndex: loc.index,
        blockTimestamp: block.header.timestamp,
      };
      if (block.header.baseFeePerGas !== undefined) out.baseFeePerGas = block.header.baseFeePerGas;
      return out;
    });
  }

  // --- logs -----------------------------------------------------------------------------------

  /** Log id range [start, end) covering blocks [from, to] (to clamped to the head). */
  private async logIdRange(from: bigint, to: bigint): Promise<{ start: bigint; end: bigint; to: bigint } | undefined> {
    const head = await this.head();
    const last = to > head.number ? head.number : to;
    if (from > last || from < 0n) return undefined;
    const [first, lastRange] = await tables.blockLogs.getMany(this.db, [from, last]);
    if (first === undefined || lastRange === undefined) throw new Error(`block log range missing for ${from}..${last}`);
    return { start: first.firstLogId, end: lastRange.firstLogId + BigInt(lastRange.count), to: last };
  }

  private async logContext(number: bigint): Promise<BlockLogContext> {
    const hit = this.logContexts.get(number);
    if (hit !== undefined) return hit;
    const hash = await this.canonical(number);
    if (hash === undefined) throw new Error(`canonical hash of block ${number} missing`);
    const header = await this.headerOf(hash);
    const txHashes = await tables.blockTxHashes.get(this.db, number);
    if (header === undefined || txHashes === undefined) throw new Error(`block ${number}: header or tx hashes missing`);
    const ctx = { hash, timestamp: header.timestamp, txHashes };
    this.logContexts.set(number, ctx);
    return ctx;
  }

  private async toRecord(log: StoredLog): Promise<LogRecord> {
    const ctx = await this.logContext(log.blockNumber);
    const txHash = ctx.txHashes[log.txIndex];
    if (txHash === undefined) throw new Error(`block ${log.blockNumber}: log of unknown tx ${log.txIndex}`);
    return {
      address: log.address,
      topics: log.topics,
      data: log.data,
      blockNumber: log.blockNumber,
      blockHash: ctx.hash,
      blockTimestamp: ctx.timestamp,
      transactionHash: txHash,
      transactionIndex: log.txIndex,
      logIndex: log.logIndex,
    };
  }

  private async finish(matched: StoredLog[], query: LogQuery, limit: number): Promise<LogQueryResult> {
    if (matched.length > limit) {
      const over = matched[limit] as StoredLog;
      return { kind: 'too-many', lastFittingBlock: over.blockNumber - 1n };
    }
    const logs: LogRecord[] = [];
    for (const l of matched) logs.push(await this.toRecord(l));
    void query;
    return { kind: 'ok', logs };
  }

  /** Log ids of one (kind, value) in [start, end), read from the posting-list chunks. */
  private async postings(kind: number, value: Uint8Array, start: bigint, end: bigint, deadline: number): Promise<bigint[]> {
    const out: bigint[] = [];
    const take = (ids: bigint[]) => {
      for (const id of ids) if (id >= start && id < end) out.push(id);
    };
    // The chunk that starts at or before `start` may hold ids >= start.
    for await (const [, ids] of tables.logIndex.range(this.db, {
      gte: { kind, value, firstLogId: 0n },
      lte: { kind, value, firstLogId: start },
      reverse: true,
      limit: 1,
    })) take(ids);
    let n = 0;
    for await (const [, ids] of tables.logIndex.range(this.db, {
      gt: { kind, value, firstLogId: start },
      lt: { kind, value, firstLogId: end },
    })) {
      take(ids);
      if (++n % 64 === 0) checkDeadline(deadline);
    }
    return out;
  }

  logs(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    return this.guard('logs', async () => {
      const range = await this.logIdRange(query.fromBlock, query.toBlock);
      if (range === undefined || range.start >= range.end) return { kind: 'ok', logs: [] };
      const constraints = constraintsOf(query);
      const want = options.limit + 1;
      const matched: StoredLog[] = [];
      if (constraints.length === 0) {
        let n = 0;
        for await (const [, log] of tables.logs.range(this.db, { gte: range.start, lt: range.end, limit: want })) {
          matched.push(log);
          if (++n % 256 === 0) checkDeadline(options.deadline);
        }
        return this.finish(matched, query, options.limit);
      }
      let ids: bigint[] | undefined;
      for (const c of constraints) {
        const lists: bigint[][] = [];
        for (const v of c.values) {
          lists.push(await this.postings(c.kind, v, range.start, range.end, options.deadline));
          checkDeadline(options.deadline);
        }
        const union = unionSorted(lists);
        ids = ids === undefined ? union : intersectSorted(ids, union);
        if (ids.length === 0) return { kind: 'ok', logs: [] };
      }
      const picked = (ids ?? []).slice(0, want);
      for (let i = 0; i < picked.length; i += 512) {
        checkDeadline(options.deadline);
        const chunk = picked.slice(i, i + 512);
        const logs = await tables.logs.getMany(this.db, chunk);
        logs.forEach((l, j) => {
          if (l === undefined) throw new Error(`log ${chunk[j]} indexed but missing`);
          // The index is exact per value; re-check guards against a corrupted index.
          if (logMatches(l, query)) matched.push(l);
        });
      }
      return this.finish(matched, query, options.limit);
    });
  }

  /**
   * The same query answered by scanning per-block blooms (and the logs of the blocks whose bloom
   * may match). Slower for selective queries over long ranges; the getLogs benchmark compares it
   * with the index path.
   */
  logsByBloomScan(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    return this.guard('logsByBloomScan', async () => {
      const range = await this.logIdRange(query.fromBlock, query.toBlock);
      if (range === undefined) return { kind: 'ok', logs: [] };
      const constraints = constraintsOf(query);
      const want = options.limit + 1;
      const matched: StoredLog[] = [];
      let n = 0;
      for await (const [number, bloom] of tables.blooms.range(this.db, { gte: query.fromBlock, lte: range.to })) {
        if (++n % 256 === 0) checkDeadline(options.deadline);
        if (!bloomMayMatch(bloom, constraints)) continue;
        const r = await tables.blockLogs.get(this.db, number);
        if (r === undefined || r.count === 0) continue;
        for await (const [, log] of tables.logs.range(this.db, { gte: r.firstLogId, lt: r.firstLogId + BigInt(r.count) })) {
          if (logMatches(log, query)) matched.push(log);
        }
        if (matched.length >= want) break;
      }
      return this.finish(matched.slice(0, want), query, options.limit);
    });
  }

  // --- state ----------------------------------------------------------------------------------

  private trie(root: Uint8Array): MerklePatriciaTrie {
    return new MerklePatriciaTrie({ db: this.trieDb, root, useKeyHashing: true, valueEncoding: 'view' });
  }

  storageAt(stateRoot: Bytes, address: Bytes, slot: Bytes): Promise<Bytes> {
    return this.guard('storageAt', async () => {
      const raw = await this.trie(stateRoot).get(address);
      if (raw === null) return new Uint8Array(32);
      const account = createAccountFromRLP(raw);
      if (bytesEqual(account.storageRoot, KECCAK256_RLP)) return new Uint8Array(32);
      const v = await this.trie(account.storageRoot).get(setLengthLeft(slot, 32));
      if (v === null) return new Uint8Array(32);
      return setLengthLeft(RLP.decode(v) as Uint8Array, 32);
    });
  }

  proof(stateRoot: Bytes, address: Bytes, slots: Bytes[]): Promise<AccountProofRecord> {
    return this.guard('proof', async () => {
      const trie = this.trie(stateRoot);
      const accountProof = await createMerkleProof(trie, address);
      const raw = await trie.get(address);
      const account = raw === null ? undefined : createAccountFromRLP(raw);
      const storageRoot = account?.storageRoot ?? KECCAK256_RLP;
      const storageTrie = this.trie(storageRoot);
      const storageProof: StorageProofRecord[] = [];
      for (const slot of slots) {
        const key = setLengthLeft(slot, 32);
        if (account === undefined || bytesEqual(storageRoot, KECCAK256_RLP)) {
          storageProof.push({ key, value: 0n, proof: [] });
          continue;
        }
        const proof = await createMerkleProof(storageTrie, key);
        const v = await storageTrie.get(key);
        storageProof.push({ key, value: v === null ? 0n : bytesToBigInt(RLP.decode(v) as Uint8Array), proof });
      }
      return {
        address,
        nonce: account?.nonce ?? 0n,
        balance: account?.balance ?? 0n,
        codeHash: account?.codeHash ?? KECCAK256_NULL,
        storageHash: storageRoot,
        accountProof,
        storageProof,
      };
    });
  }

  async close(): Promise<void> {
    if (this.db.status === 'open' || this.db.status === 'opening') await this.db.close();
  }
}

export async function openChainStore(datadir: string): Promise<ChainStore> {
  return LevelChainStore.open(datadir);
}
