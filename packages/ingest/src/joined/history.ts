// History below the first block, from a history upstream, verified: a ChainStore around a joined
// datadir's (first block N) that answers blocks, transactions, receipts, logs and raw data below N
// from `--history-upstream`, never from trust:
// - headers below N are verified by hash links down from N's header (the node's own): a walk
//   fetches headers in batches, newest first, each hashing to its child's parent hash; the
//   verified hashes are kept (32 bytes a block), so each block below N is walked once. The walk
//   is bounded: a block more than `maxWalk` blocks below N is not answered (its error says so);
//   block 0 needs no walk (its hash is the datadir's genesis hash).
// - a block's body and receipts are fetched whole (replicate's history sources: a chainnode
//   primary's raw block and receipts, any node's JSON) and verified against that verified header
//   (replicate/block.ts: transactions, uncles, withdrawals and receipts roots, logs bloom, gas
//   used; senders recovered from the signatures);
// - eth_getLogs below N reads the verified headers' logs blooms and fetches the receipts of the
//   blocks whose bloom may match;
// - a transaction by hash the store does not hold is located by the upstream, then looked up in
//   the verified block at that number (the upstream's word on the location is not trusted).
// An answer that does not verify is never served: the call fails with HistoryNotVerifiedError and
// the refusal is counted (stats.rejected). State below N is proven by the proven-state layer (proven-state.ts)
// against these verified headers' state roots (it asks the same upstream).
// The store reports no first block (info().firstBlock): with a history upstream, every number is
// answered, so rpc's 4444 for history below N does not apply.
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import {
  LimitExceededError,
  Lru,
  ServerError,
  SingleFlight,
  bloomUnion,
  createUpstreamClient,
  decodeHeader,
  decodeTransaction,
  logsBloomOf,
  withdrawalsFromValues,
} from '@chainnode/core';
import type {
  BlockRecord,
  ChainStore,
  HeaderRecord,
  LogQuery,
  LogQueryOptions,
  LogQueryResult,
  LogRecord,
  ReceiptRecord,
  TxWithLocation,
  UncleRecord,
  UpstreamClient,
} from '@chainnode/core';
import { keccak256, logMatches, queryBloomMatcher } from '@chainnode/store';
import { BlockVerificationError, UpstreamError } from '../errors.js';
import { commonFromGenesis } from '../genesis.js';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { RpcBlockSource } from '../rpc-source.js';
import { verifyBlockData } from '../replicate/block.js';
import { withdrawalsRootIsStorageRoot } from '../replicate/op-stack.js';
import type { ReplicaBlock } from '../replicate/block.js';
import { encodeReplicaReceipt, hexList, receiptFromRaw } from '../replicate/envelopes.js';
import type { ReplicaReceipt } from '../replicate/envelopes.js';
import { orderedTrieRoot } from '../replicate/ordered-trie.js';
import { ChainnodeSource, chooseHistorySource } from '../replicate/sources.js';
import type { ReplicaSource } from '../replicate/sources.js';

/** What the history upstream answered that does not match this node's headers: never served. */
export class HistoryNotVerifiedError extends ServerError {
  constructor(origin: string, reason: string) {
    super(`history not verified: ${origin} answered history that does not match this node's headers (${reason})`);
  }
}

/** Counts since start (the metrics and /health show them). */
export interface HistoryStats {
  /** Requests made to the history upstream (a header batch counts once). */
  fetches: number;
  /** Headers verified by hash links below the first block. */
  headers: number;
  /** Blocks (bodies and receipts) verified against their headers. */
  blocks: number;
  /** Answers that did not verify (a lie, or a broken upstream). */
  rejected: number;
  /** Requests that failed (no answer, an error, not JSON). */
  failed: number;
}

export interface HistoryUpstreamOptions {
  url: string;
  /** Requests in flight at once; more wait in line (default 8). */
  concurrency?: number;
  /** Per request, queueing excluded (default 10 s). */
  timeoutMs?: number;
  /** Largest reply accepted (default 32 MiB: a block with its receipts, or a batch of headers). */
  maxReplyBytes?: number;
  /**
   * How far below the first block the header walk goes (default 100,000 blocks: 3.2 MB of hashes,
   * about 250 requests of 400 headers; two weeks of mainnet).
   */
  maxWalk?: number;
  /** Headers per batch request (default 400). */
  batchSize?: number;
  /** Called on each refused answer (the log names the upstream). */
  onRejected?: (origin: string, reason: string) => void;
}

interface VerifiedBlock {
  record: BlockRecord;
  receipts: ReceiptRecord[];
  replica: ReplicaBlock;
}

const qhex = (n: bigint): string => `0x${n.toString(16)}`;
const key = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** The history layer around a joined datadir's store (see the file comment). */
export class HistoryUpstream {
  readonly stats: HistoryStats = { fetches: 0, headers: 0, blocks: 0, rejected: 0, failed: 0 };
  readonly store: ChainStore;
  readonly origin: string;
  private readonly client: UpstreamClient;
  private readonly maxWalk: number;
  private readonly batchSize: number;
  /** hashes[i]: the verified hash of block first-1-i; tds[i] its total difficulty. */
  private readonly hashes: Uint8Array[] = [];
  private readonly tds: bigint[] = [];
  /** The parent hash and total difficulty the next block down must have. */
  private next: { parent: Uint8Array; td: bigint } | undefined;
  private walking: Promise<void> = Promise.resolve();
  private source: Promise<ReplicaSource> | undefined;
  private blockSource: { blocks: RpcBlockSource; common: Common } | undefined;
  private readonly numbers = new Lru<string, bigint>(65_536);
  private readonly headerRlp = new Lru<bigint, Uint8Array>(8192);
  private readonly blocks = new Lru<string, VerifiedBlock>(128);
  private readonly loads = new SingleFlight<string, VerifiedBlock>();
  /** The logs of blocks read by eth_getLogs (receipts verified, no senders recovered). */
  private readonly blockLogs = new Lru<string, LogRecord[]>(1024);
  private readonly logLoads = new SingleFlight<string, LogRecord[]>();

  constructor(
    private readonly inner: ChainStore,
    private readonly opts: HistoryUpstreamOptions,
  ) {
    // It trusts nothing: every answer is verified against the node's own headers.
    this.client = createUpstreamClient(opts.url, {
      concurrency: opts.concurrency ?? 8,
      timeoutMs: opts.timeoutMs ?? 10_000,
      maxReplyBytes: opts.maxReplyBytes ?? 32 * 2 ** 20,
      httpOnly: { name: '--history-upstream' },
    });
    this.origin = this.client.origin;
    this.maxWalk = opts.maxWalk ?? 100_000;
    this.batchSize = Math.max(1, opts.batchSize ?? 400);
    this.store = this.wrap();
  }

  /** The first block the datadir holds (0: nothing lies below, every call passes through). */
  first(): bigint {
    return this.inner.info().firstBlock ?? 0n;
  }

  /** The chain's rules (from the datadir's genesis.json) and a header reader under them. */
  private rules(): { blocks: RpcBlockSource; common: Common } {
    if (this.blockSource === undefined) {
      const genesis = this.inner.info().genesis as GethGenesis | undefined;
      if (genesis === undefined) throw new ServerError('history upstream: the datadir holds no genesis.json');
      const common = commonFromGenesis(genesis);
      this.blockSource = { blocks: new RpcBlockSource(this.client, common), common };
    }
    return this.blockSource;
  }

  private reject(reason: string): never {
    this.stats.rejected++;
    this.opts.onRejected?.(this.origin, reason);
    throw new HistoryNotVerifiedError(this.origin, reason);
  }

  /** Runs one upstream request: failures counted and reported as -32000, lies as refusals. */
  private async ask<T>(fn: () => Promise<T>): Promise<T> {
    this.stats.fetches++;
    try {
      return await fn();
    } catch (err) {
      if (err instanceof HistoryNotVerifiedError) throw err;
      if (err instanceof BlockVerificationError) return this.reject(err.message);
      this.stats.failed++;
      if (err instanceof UpstreamError)
        throw new ServerError(`history below block ${this.first()}: the history upstream failed: ${err.message}`);
      throw err;
    }
  }

  // ---- the verified header chain below the first block ------------------------------------

  /** The verified canonical hash of block n < first (the walk reaches it first). */
  async hashAt(n: bigint): Promise<Uint8Array> {
    const first = this.first();
    if (n === 0n) return this.inner.info().genesisHash;
    if (first - n > BigInt(this.maxWalk))
      throw new ServerError(
        `history below block ${first}: block ${n} lies more than ${this.maxWalk} blocks below the first block this node holds, further than its header walk verifies`,
      );
    const i = Number(first - 1n - n);
    if (i >= this.hashes.length) await this.walkTo(n);
    return this.hashes[i] as Uint8Array;
  }

  /** Total difficulty of verified block n < first. */
  private async tdAt(n: bigint, header: HeaderRecord): Promise<bigint> {
    if (n === 0n) return header.difficulty;
    await this.hashAt(n);
    return this.tds[Number(this.first() - 1n - n)] as bigint;
  }

  /** Walks down to block n, one walk at a time (concurrent callers wait for it). */
  private walkTo(n: bigint): Promise<void> {
    const run = this.walking.then(async () => {
      const first = this.first();
      if (this.next === undefined) {
        const hash = await this.inner.canonicalHash(first);
        const block = hash === undefined ? undefined : await this.inner.block(hash);
        if (block === undefined) throw new ServerError(`history: block ${first} is not in the datadir`);
        this.next = { parent: block.header.parentHash, td: block.totalDifficulty - block.header.difficulty };
      }
      while (first - 1n - BigInt(this.hashes.length) >= n) {
        const top = first - 1n - BigInt(this.hashes.length);
        const bottom = top - BigInt(this.batchSize) + 1n > n ? top - BigInt(this.batchSize) + 1n : n;
        const numbers: bigint[] = [];
        for (let m = top; m >= bottom; m--) numbers.push(m);
        const jsons = await this.ask(() =>
          this.client.batch(
            'eth_getBlockByNumber',
            numbers.map((m) => [qhex(m), false]),
          ),
        );
        const src = this.rules().blocks;
        for (let j = 0; j < numbers.length; j++) {
          const m = numbers[j] as bigint;
          const json = jsons[j];
          if (json === null || json === undefined) {
            this.stats.failed++;
            throw new ServerError(`history below block ${first}: the history upstream does not have block ${m}`);
          }
          let header: ReturnType<RpcBlockSource['headerFromJson']>;
          try {
            header = src.headerFromJson(json); // its fields hash to the hash it states
          } catch (err) {
            return this.reject(`block ${m}: ${(err as Error).message}`);
          }
          const hash = header.hash();
          const next = this.next as { parent: Uint8Array; td: bigint };
          if (header.number !== m || !equalsBytes(hash, next.parent))
            this.reject(
              `block ${m}: its header hashes to ${bytesToHex(hash)}, the parent hash of block ${m + 1n} is ${bytesToHex(next.parent)}`,
            );
          this.hashes.push(hash);
          this.tds.push(next.td);
          this.next = { parent: header.parentHash, td: next.td - header.difficulty };
          this.numbers.set(key(hash), m);
          this.headerRlp.set(m, header.serialize());
          this.stats.headers++;
        }
      }
    });
    this.walking = run.catch(() => undefined);
    return run;
  }

  /** The verified header of block n < first: from the walk's recent headers, else fetched and checked. */
  private async headerAt(n: bigint): Promise<HeaderRecord> {
    const hash = await this.hashAt(n);
    const rlp = this.headerRlp.get(n);
    if (rlp !== undefined) return decodeHeader(rlp, hash);
    return (await this.verifiedBlock(n, hash)).record.header;
  }

  /** The verified headers of [from, to] (all below first), fetched in batches where not recent. */
  private async headersIn(from: bigint, to: bigint): Promise<HeaderRecord[]> {
    await this.hashAt(from);
    const missing: bigint[] = [];
    for (let m = from; m <= to; m++) if (this.headerRlp.get(m) === undefined) missing.push(m);
    for (let i = 0; i < missing.length; i += this.batchSize) {
      const part = missing.slice(i, i + this.batchSize);
      const jsons = await this.ask(() =>
        this.client.batch(
          'eth_getBlockByNumber',
          part.map((m) => [qhex(m), false]),
        ),
      );
      const src = this.rules().blocks;
      for (let j = 0; j < part.length; j++) {
        const m = part[j] as bigint;
        let header: ReturnType<RpcBlockSource['headerFromJson']>;
        try {
          header = src.headerFromJson(jsons[j]);
        } catch (err) {
          return this.reject(`block ${m}: ${(err as Error).message}`);
        }
        const want = await this.hashAt(m);
        if (!equalsBytes(header.hash(), want))
          this.reject(
            `block ${m}: its header hashes to ${bytesToHex(header.hash())}, the verified hash is ${bytesToHex(want)}`,
          );
        this.headerRlp.set(m, header.serialize());
      }
    }
    const out: HeaderRecord[] = [];
    for (let m = from; m <= to; m++) {
      const rlp = this.headerRlp.get(m);
      out.push(rlp !== undefined ? decodeHeader(rlp, await this.hashAt(m)) : await this.headerAt(m));
    }
    return out;
  }

  /**
   * The number of a block below first named by hash, or undefined: the upstream says where the
   * hash lies, and the walk's verified hash at that number must be it.
   */
  private async numberOf(hash: Uint8Array): Promise<bigint | undefined> {
    const first = this.first();
    if (first === 0n || hash.length !== 32) return undefined;
    const known = this.numbers.get(key(hash));
    if (known !== undefined) return known;
    if (equalsBytes(hash, this.inner.info().genesisHash)) return 0n;
    const json = await this.ask(() => this.client.call('eth_getBlockByHash', [bytesToHex(hash), false]));
    if (json === null || typeof json !== 'object') return undefined;
    const num = (json as { number?: unknown }).number;
    if (typeof num !== 'string' || !/^0x[0-9a-fA-F]{1,16}$/.test(num)) return undefined;
    const n = BigInt(num);
    if (n >= first || first - n > BigInt(this.maxWalk)) return undefined;
    return equalsBytes(await this.hashAt(n), hash) ? n : undefined;
  }

  // ---- verified blocks -----------------------------------------------------------------------

  private async replicaSource(): Promise<ReplicaSource> {
    this.source ??= chooseHistorySource(this.client, this.rules().blocks, this.rules().common).catch((err: unknown) => {
      this.source = undefined;
      throw err;
    });
    return this.source;
  }

  /** Block n (hash: its verified hash) with its receipts, fetched once and verified against the header. */
  private verifiedBlock(n: bigint, hash: Uint8Array): Promise<VerifiedBlock> {
    const k = key(hash);
    const hit = this.blocks.get(k);
    if (hit !== undefined) return Promise.resolve(hit);
    return this.loads.run(k, async () => {
      const b = await this.ask(async () => (await this.replicaSource()).byHash(hash));
      if (b === undefined) {
        this.stats.failed++;
        throw new ServerError(`history below block ${this.first()}: the history upstream does not have block ${n}`);
      }
      if (b.number !== n || !equalsBytes(b.hash, hash))
        this.reject(`block ${n}: the upstream answered block ${b.number} (${bytesToHex(b.hash)})`);
      try {
        // The header hashes to the verified hash; every root is recomputed (but an OP-stack
        // withdrawalsRoot from Isthmus: a storage root, trusted like the state root).
        await verifyBlockData(b, withdrawalsRootIsStorageRoot(this.inner.info().genesis, b.timestamp));
      } catch (err) {
        if (err instanceof BlockVerificationError) this.reject(err.message);
        throw err;
      }
      const v = this.records(b, await this.tdAt(n, b.header));
      this.blocks.set(k, v);
      this.numbers.set(k, n);
      this.stats.blocks++;
      return v;
    });
  }

  /** The records the store would hold for `b` had it imported it. */
  private records(b: ReplicaBlock, totalDifficulty: bigint): VerifiedBlock {
    const header = b.header;
    const record: BlockRecord = {
      header,
      size: b.size,
      totalDifficulty,
      transactions: b.transactions.map((t) => decodeTransaction(t.bytes, t.sender, t.hash)),
      transactionHashes: b.transactions.map((t) => t.hash),
      uncleHashes: b.uncles.map((u) => keccak256(RLP.encode(u))),
    };
    if (b.withdrawals !== undefined) record.withdrawals = withdrawalsFromValues(b.withdrawals);
    let logIndex = 0;
    const receipts: ReceiptRecord[] = b.receipts.map((r, transactionIndex) => {
      const out: ReceiptRecord = {
        type: r.type,
        // As the executor stores it: a failed status is one 0x00 byte.
        statusOrState: r.statusOrState.length === 0 ? Uint8Array.of(0) : r.statusOrState,
        cumulativeGasUsed: r.cumulativeGasUsed,
        logs: r.logs.map(
          (l): LogRecord => ({
            address: l.address,
            topics: l.topics,
            data: l.data,
            blockNumber: b.number,
            blockHash: b.hash,
            blockTimestamp: header.timestamp,
            transactionHash: (b.transactions[transactionIndex] as { hash: Uint8Array }).hash,
            transactionIndex,
            logIndex: logIndex++,
          }),
        ),
      };
      if (r.depositNonce !== undefined) out.depositNonce = r.depositNonce;
      if (r.depositReceiptVersion !== undefined) out.depositReceiptVersion = r.depositReceiptVersion;
      return out;
    });
    return { record, receipts, replica: b };
  }

  /**
   * The logs of verified header `h` (below first): from a block already verified, else its raw
   * block and raw receipts (a chainnode primary's, or any node serving debug_getRawBlock and
   * debug_getRawReceipts): the header must hash to h's hash, the transactions to its transactions
   * root (their hashes name the logs' transactions), the receipts to its receipts root and their
   * logs to its logs bloom. No sender is recovered: eth_getLogs does not show one. Other upstreams:
   * the whole verified block.
   */
  private logsOf(h: HeaderRecord): Promise<LogRecord[]> {
    const k = key(h.hash);
    const done = this.blocks.get(k);
    if (done !== undefined) return Promise.resolve(done.receipts.flatMap((r) => r.logs));
    const hit = this.blockLogs.get(k);
    if (hit !== undefined) return Promise.resolve(hit);
    return this.logLoads.run(k, async () => {
      const src = await this.ask(() => this.replicaSource());
      if (!(src instanceof ChainnodeSource))
        return (await this.verifiedBlock(h.number, h.hash)).receipts.flatMap((r) => r.logs);
      const id = bytesToHex(h.hash);
      const [rawBlock, rawReceipts] = await this.ask(() =>
        Promise.all([this.client.call('debug_getRawBlock', [id]), this.client.call('debug_getRawReceipts', [id])]),
      );
      const logs = this.checkLogs(h, rawBlock, rawReceipts);
      this.blockLogs.set(k, logs);
      return logs;
    });
  }

  /** The checks of logsOf (a refusal names the block and what differed). */
  private checkLogs(h: HeaderRecord, rawBlock: unknown, rawReceipts: unknown): LogRecord[] {
    const n = h.number;
    let txs: Uint8Array[];
    let receipts: ReplicaReceipt[];
    try {
      const values = RLP.decode(hexList([rawBlock], 'debug_getRawBlock', this.origin)[0] as Uint8Array) as unknown[];
      if (!Array.isArray(values) || !Array.isArray(values[0]) || !Array.isArray(values[1]))
        throw new Error('not a block');
      const headerRlp = RLP.encode(values[0] as Uint8Array[]);
      if (!equalsBytes(keccak256(headerRlp), h.hash))
        return this.reject(`block ${n}: the raw block is of another header`);
      txs = (values[1] as (Uint8Array | Uint8Array[])[]).map((t) => (t instanceof Uint8Array ? t : RLP.encode(t)));
      receipts = hexList(rawReceipts, 'debug_getRawReceipts', this.origin).map((r) => receiptFromRaw(r));
    } catch (err) {
      if (err instanceof HistoryNotVerifiedError) throw err;
      return this.reject(`block ${n}: undecodable block or receipts (${(err as Error).message})`);
    }
    if (!equalsBytes(orderedTrieRoot(txs), h.transactionsRoot))
      this.reject(`block ${n}: transactionsRoot mismatch: the transactions do not hash to the header's`);
    if (receipts.length !== txs.length)
      this.reject(`block ${n}: ${receipts.length} receipts for ${txs.length} transactions`);
    const blooms = receipts.map((r) => logsBloomOf(r.logs));
    const encoded = receipts.map((r, i) => encodeReplicaReceipt(r, blooms[i]));
    if (!equalsBytes(orderedTrieRoot(encoded), h.receiptsRoot))
      this.reject(`block ${n}: receiptsRoot mismatch: the receipts do not hash to the header's`);
    if (!equalsBytes(bloomUnion(blooms), h.logsBloom)) this.reject(`block ${n}: logsBloom mismatch`);
    let logIndex = 0;
    return receipts.flatMap((r, transactionIndex) => {
      const transactionHash = keccak256(txs[transactionIndex] as Uint8Array);
      return r.logs.map(
        (l): LogRecord => ({
          address: l.address,
          topics: l.topics,
          data: l.data,
          blockNumber: n,
          blockHash: h.hash,
          blockTimestamp: h.timestamp,
          transactionHash,
          transactionIndex,
          logIndex: logIndex++,
        }),
      );
    });
  }

  /** The verified block of a hash below first, or undefined when the hash is not one. */
  private async byHash(hash: Uint8Array): Promise<VerifiedBlock | undefined> {
    const n = await this.numberOf(hash);
    return n === undefined ? undefined : this.verifiedBlock(n, hash);
  }

  /** A transaction the store does not hold: located by the upstream, found in the verified block. */
  private async transaction(hash: Uint8Array): Promise<{ at: TxWithLocation; raw: Uint8Array } | undefined> {
    if (this.first() === 0n || hash.length !== 32) return undefined;
    const json = await this.ask(() => this.client.call('eth_getTransactionByHash', [bytesToHex(hash)]));
    if (json === null || typeof json !== 'object') return undefined;
    const num = (json as { blockNumber?: unknown }).blockNumber;
    if (typeof num !== 'string' || !/^0x[0-9a-fA-F]{1,16}$/.test(num)) return undefined;
    const n = BigInt(num);
    if (n >= this.first()) return undefined; // not below the first block: the store would hold it
    const blockHash = await this.hashAt(n);
    const v = await this.verifiedBlock(n, blockHash);
    const index = v.replica.transactions.findIndex((t) => equalsBytes(t.hash, hash));
    if (index < 0) this.reject(`transaction ${bytesToHex(hash)} is not in block ${n}, where the upstream located it`);
    const at: TxWithLocation = {
      tx: v.record.transactions[index] as BlockRecord['transactions'][number],
      blockHash,
      blockNumber: n,
      transactionIndex: index,
      blockTimestamp: v.record.header.timestamp,
    };
    if (v.record.header.baseFeePerGas !== undefined) at.baseFeePerGas = v.record.header.baseFeePerGas;
    return { at, raw: (v.replica.transactions[index] as { bytes: Uint8Array }).bytes };
  }

  /** eth_getLogs over a range that starts below first: verified blooms, then verified receipts. */
  private async logs(query: LogQuery, options: LogQueryOptions): Promise<LogQueryResult> {
    const first = this.first();
    const lowTo = query.toBlock < first ? query.toBlock : first - 1n;
    const out: LogRecord[] = [];
    const mayMatch = queryBloomMatcher(query);
    const span = 64n;
    for (let from = query.fromBlock; from <= lowTo; from += span) {
      if (Date.now() > options.deadline) throw new LimitExceededError('query timeout exceeded');
      const to = from + span - 1n < lowTo ? from + span - 1n : lowTo;
      const headers = await this.headersIn(from, to);
      const candidates = headers.filter((h) => mayMatch(h.logsBloom));
      // The logs of the candidate blocks, fetched ahead (the client bounds what is in flight), read in block order.
      const loading = candidates.map((h) => this.logsOf(h));
      for (const p of loading) p.catch(() => undefined); // a later one failing while an earlier is awaited
      for (let i = 0; i < candidates.length; i++) {
        const logs = await (loading[i] as Promise<LogRecord[]>);
        const matched = logs.filter((l) => logMatches(l, query));
        if (out.length + matched.length > options.limit)
          return { kind: 'too-many', lastFittingBlock: (candidates[i] as HeaderRecord).number - 1n };
        out.push(...matched);
      }
    }
    if (query.toBlock < first) return { kind: 'ok', logs: out };
    const rest = await this.inner.logs(
      { ...query, fromBlock: first },
      { limit: options.limit - out.length, deadline: options.deadline },
    );
    if (rest.kind === 'too-many') return rest;
    return { kind: 'ok', logs: [...out, ...rest.logs] };
  }

  // ---- the store ---------------------------------------------------------------------------

  private wrap(): ChainStore {
    const inner = this.inner;
    const below = (n: bigint): boolean => n < this.first();
    const local = async <T>(hit: Promise<T | undefined>, miss: () => Promise<T | undefined>): Promise<T | undefined> =>
      (await hit) ?? miss();
    const overrides: Partial<ChainStore> = {
      info: () => {
        const i = { ...inner.info() };
        delete i.firstBlock;
        return i;
      },
      canonicalHash: async (n) => (below(n) ? this.hashAt(n) : inner.canonicalHash(n)),
      blockNumber: (hash) => local(inner.blockNumber(hash), () => this.numberOf(hash)),
      header: (hash) => local(inner.header(hash), async () => (await this.byHash(hash))?.record.header),
      stateRoot: (hash) =>
        local(
          inner.stateRoot !== undefined ? inner.stateRoot(hash) : inner.header(hash).then((h) => h?.stateRoot),
          async () => (await this.byHash(hash))?.record.header.stateRoot,
        ),
      canonicalStateRoot: async (n) => {
        if (below(n)) return (await this.headerAt(n)).stateRoot;
        if (inner.canonicalStateRoot !== undefined) return inner.canonicalStateRoot(n);
        const hash = await inner.canonicalHash(n);
        return hash === undefined ? undefined : (await inner.header(hash))?.stateRoot;
      },
      block: (hash) => local(inner.block(hash), async () => (await this.byHash(hash))?.record),
      receipts: (hash) => local(inner.receipts(hash), async () => (await this.byHash(hash))?.receipts),
      uncle: (hash, index) =>
        local(inner.uncle(hash, index), async (): Promise<UncleRecord | undefined> => {
          const values = (await this.byHash(hash))?.replica.uncles[index];
          if (values === undefined) return undefined;
          return { header: decodeHeader(RLP.encode(values)), size: RLP.encode([values, [], []]).length };
        }),
      transaction: (hash) => local(inner.transaction(hash), async () => (await this.transaction(hash))?.at),
      rawTransaction: (hash) => local(inner.rawTransaction(hash), async () => (await this.transaction(hash))?.raw),
      rawHeader: (hash) => local(inner.rawHeader(hash), async () => (await this.byHash(hash))?.replica.headerRlp),
      rawBlock: (hash) =>
        local(inner.rawBlock(hash), async () => {
          const v = await this.byHash(hash);
          return v === undefined ? undefined : rawBlockOf(v.replica);
        }),
      logs: (query, options) => (below(query.fromBlock) ? this.logs(query, options) : inner.logs(query, options)),
      logsText: async (query, options) =>
        below(query.fromBlock) || inner.logsText === undefined ? undefined : inner.logsText(query, options),
    };
    return new Proxy(inner, {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && prop in overrides) return overrides[prop as keyof ChainStore];
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  }
}

/** The block's RLP: [header, transactions (legacy as lists, typed as strings), uncles(, withdrawals)]. */
function rawBlockOf(b: ReplicaBlock): Uint8Array {
  const txs = b.transactions.map((t) => (t.type === 0 ? RLP.decode(t.bytes) : t.bytes));
  const parts: unknown[] = [RLP.decode(b.headerRlp), txs, b.uncles];
  if (b.withdrawals !== undefined) parts.push(b.withdrawals);
  return RLP.encode(parts as never);
}

/** The history-backed `store` (see HistoryUpstream). */
export function withHistoryUpstream(
  store: ChainStore,
  opts: HistoryUpstreamOptions,
): { store: ChainStore; history: HistoryUpstream } {
  const history = new HistoryUpstream(store, opts);
  return { store: history.store, history };
}
