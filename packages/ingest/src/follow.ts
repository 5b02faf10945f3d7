// Following a live JSON-RPC upstream: catch up to its head (or --to) and, in follow mode, keep
// polling it. Every block goes through the one import pipeline; a block whose parent is not the
// local head, or an upstream head whose hash differs from ours at its height, is a reorg: walk
// back by parent hash to the common ancestor and apply undo + new branch in one batch. A reorg
// deeper than `reorgDepth` stops the ingest. Upstream faults (down, slow, errors, garbage) are
// retried with backoff and logged once per state change; verification failures stop it.
import type { Block } from '@ethereumjs/block';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import { chainFamilyOf } from '@chainnode/core';
import type { ChainCommit } from '@chainnode/core';
import {
  BlockVerificationError,
  ChainMismatchError,
  ChainSourceError,
  ReorgTooDeepError,
  UpstreamError,
} from './errors.js';
import { readGenesisJson } from './genesis.js';
import { ImportPipeline } from './pipeline.js';
import { createRpcClient } from './rpc-client.js';
import type { RpcClient } from './rpc-client.js';
import { RpcBlockSource } from './rpc-source.js';
import { chooseReplicaSource } from './replicate/sources.js';
import type { ReplicaSource, StateSourceKind } from './replicate/sources.js';
import type { ReplicationTimings } from './replicate/timings.js';

/** A fetched block, whichever way it is ingested. */
interface FetchedBlock {
  number: bigint;
  hash: Uint8Array;
  parentHash: Uint8Array;
  append(): Promise<unknown>;
}

/** Refuses to execute a chain whose rules @ethereumjs/vm does not implement. */
export function assertExecutable(json: GethGenesis): void {
  if (chainFamilyOf(json) === 'optimism')
    throw new ChainSourceError(
      'genesis.json describes an OP-stack chain (config.optimism): its deposit transactions (type 0x7e) and fee vaults cannot be executed here; use --ingest replicate',
    );
}

export type IngestMode = 'execute' | 'replicate';

export type FollowState = 'starting' | 'syncing' | 'following' | 'retrying' | 'failed' | 'stopped';

/** What /health and the metrics show about the ingest. */
export interface FollowStatus {
  state: FollowState;
  /** The upstream's origin only (no path: it may hold a key). */
  upstream: string;
  upstreamHead: bigint | undefined;
  upstreamHeadTimestamp: bigint | undefined;
  localHead: bigint;
  localHeadTimestamp: bigint;
  /** Upstream head - local head (0 when ahead or unknown). */
  lagBlocks: bigint;
  /** Upstream head's timestamp - local head's timestamp, seconds (0 when unknown). */
  lagSeconds: number;
  reorgs: number;
  blocksImported: number;
  lastError: string | undefined;
  /** Date.now() of the last error. */
  lastErrorAt: number | undefined;
}

/** The status of a follower that has not reached its upstream yet (the one definition: the serving side starts from it too). */
export function initialFollowStatus(upstream = ''): FollowStatus {
  return {
    state: 'starting',
    upstream,
    upstreamHead: undefined,
    upstreamHeadTimestamp: undefined,
    localHead: 0n,
    localHeadTimestamp: 0n,
    lagBlocks: 0n,
    lagSeconds: 0,
    reorgs: 0,
    blocksImported: 0,
    lastError: undefined,
    lastErrorAt: undefined,
  };
}

export interface FollowOptions {
  /** http(s):// or ws(s):// JSON-RPC URL of the upstream. */
  url: string;
  datadir: string;
  /** genesis.json: required for an empty datadir. */
  genesisPath?: string;
  /** Stop after this block (sync mode). */
  to?: bigint;
  /** Keep following after catching up (serve --follow); otherwise return at the head (sync). */
  follow?: boolean;
  reorgDepth?: bigint;
  /** Poll interval when caught up (default 1000 ms). */
  pollMs?: number;
  /** Blocks fetched ahead concurrently while catching up (default 8). */
  prefetch?: number;
  /** Consecutive polls with the upstream below our head (same chain) before rolling back (default 3). */
  rollbackPolls?: number;
  /** Sync mode: give up after this many consecutive upstream failures (default 5). */
  maxRetries?: number;
  groupBlocks?: number;
  groupMs?: number;
  shared?: boolean;
  /** Upstream call timeout (default 10 s). */
  timeoutMs?: number;
  /**
   * How blocks become state: execute them with @ethereumjs/vm (default), or replicate them:
   * take the upstream's transactions, receipts and state changes and verify every root
   * (replicate/). */
  ingest?: IngestMode;
  /** Replication's state source; probed from the upstream when absent. */
  stateSource?: StateSourceKind;
  /** Filled with where replication's time goes (the benchmark reads it). */
  timings?: ReplicationTimings;
  /** The datadir holds a chain (genesis written if it was empty) and the upstream is that chain. */
  onReady?: () => void;
  onCommit?: (commit: ChainCommit) => void;
  onStatus?: (status: FollowStatus) => void;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

export interface FollowSummary {
  head: { number: bigint; hash: Uint8Array };
  startNumber: bigint;
  blocks: number;
  txs: number;
  logs: number;
  reorgs: number;
  elapsedMs: number;
  createdGenesis: boolean;
}

const hex = (b: Uint8Array): string => bytesToHex(b);

const SOURCE_NAMES: Record<StateSourceKind, string> = {
  chainnode: 'a chainnode primary (chainnode_getStateDiff)',
  prestate: 'debug_traceBlockByHash with the prestateTracer in diffMode',
  parity: 'trace_replayBlockTransactions stateDiff',
};

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** Header fields of genesis.json's block vs the upstream's block 0: names of those that differ. */
const HEADER_FIELDS = [
  'parentHash',
  'uncleHash',
  'coinbase',
  'stateRoot',
  'transactionsTrie',
  'receiptTrie',
  'logsBloom',
  'difficulty',
  'number',
  'gasLimit',
  'gasUsed',
  'timestamp',
  'extraData',
  'mixHash',
  'nonce',
  'baseFeePerGas',
  'withdrawalsRoot',
  'blobGasUsed',
  'excessBlobGas',
  'parentBeaconBlockRoot',
  'requestsHash',
];

function differingFields(a: Uint8Array[], b: Uint8Array[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined || !equalsBytes(x, y)) out.push(HEADER_FIELDS[i] ?? `field ${i}`);
  }
  return out;
}

export class Follower {
  private readonly client: RpcClient;
  private source!: RpcBlockSource;
  private replica: ReplicaSource | undefined;
  private pipeline!: ImportPipeline;
  private readonly status: FollowStatus;
  private totals = { blocks: 0, txs: 0, logs: 0 };
  private lowerPolls = 0;
  private lastLogged = '';
  private readonly t0 = Date.now();
  private startNumber = 0n;
  private lastFlush = Date.now();

  constructor(private readonly opts: FollowOptions) {
    this.client = createRpcClient(opts.url, { timeoutMs: opts.timeoutMs ?? 10_000 });
    this.status = initialFollowStatus(this.client.origin);
  }

  private log(line: string): void {
    this.opts.log?.(line);
  }

  /** Logs `line` only if the state it describes changed since the last such line. */
  private logOnce(key: string, line: string): void {
    if (key === this.lastLogged) return;
    this.lastLogged = key;
    this.log(line);
  }

  private publish(): void {
    const s = this.status;
    const head = this.pipeline?.durableHead();
    if (head !== undefined) {
      s.localHead = head.number;
      s.localHeadTimestamp = head.timestamp;
    }
    s.lagBlocks = s.upstreamHead !== undefined && s.upstreamHead > s.localHead ? s.upstreamHead - s.localHead : 0n;
    s.lagSeconds =
      s.upstreamHeadTimestamp !== undefined && s.upstreamHeadTimestamp > s.localHeadTimestamp
        ? Number(s.upstreamHeadTimestamp - s.localHeadTimestamp)
        : 0;
    this.opts.onStatus?.({ ...s });
  }

  private setState(state: FollowState): void {
    if (this.status.state === state) return;
    this.status.state = state;
    this.publish();
  }

  /** Runs until caught up (sync) or until the signal aborts (follow); throws on a stop-worthy failure. */
  async run(): Promise<FollowSummary> {
    try {
      await this.withRetries(() => this.open());
      this.startNumber = this.pipeline.head().number;
      this.publish();
      this.opts.onReady?.();
      for (;;) {
        if (this.opts.signal?.aborted) break;
        const caughtUp = await this.withRetries(() => this.step());
        if (caughtUp === undefined) break; // aborted while retrying
        if (caughtUp && !this.opts.follow) break;
        if (caughtUp) {
          this.setState('following');
          await sleep(this.opts.pollMs ?? 1000, this.opts.signal);
        }
      }
      this.setState('stopped');
      const head = this.pipeline.durableHead();
      return {
        head: { number: head.number, hash: head.hash },
        startNumber: this.startNumber,
        ...this.totals,
        reorgs: this.status.reorgs,
        elapsedMs: Date.now() - this.t0,
        createdGenesis: this.pipeline.createdGenesis,
      };
    } catch (err) {
      this.status.lastError = (err as Error).message;
      this.status.lastErrorAt = Date.now();
      this.status.state = 'failed';
      if (this.pipeline !== undefined) this.publish();
      else this.opts.onStatus?.({ ...this.status });
      throw err;
    } finally {
      await this.client.close();
      if (this.pipeline !== undefined) await this.pipeline.close();
    }
  }

  /** Retries `fn` on UpstreamErrors with exponential backoff (250 ms .. 30 s). */
  private async withRetries<T>(fn: () => Promise<T>): Promise<T | undefined> {
    let failures = 0;
    for (;;) {
      try {
        const v = await fn();
        if (failures > 0) {
          this.logOnce('ok', `follow: upstream ${this.client.origin} answers again`);
          this.status.state = 'syncing';
          this.publish();
        }
        return v;
      } catch (err) {
        // A replicated block that fails verification is the upstream's data, not the chain's
        // rules: nothing of it was written, and the upstream may answer truthfully on a retry
        // (another backend, a fixed proxy). Executing, the same block fails the same way: stop.
        const retryable =
          err instanceof UpstreamError ||
          (err instanceof BlockVerificationError && this.replica !== undefined && this.opts.follow === true);
        if (!retryable) throw err;
        failures++;
        this.status.lastError = err.message;
        this.status.lastErrorAt = Date.now();
        this.status.state = 'retrying';
        if (this.pipeline !== undefined) this.publish();
        this.logOnce(`err:${err.message.replace(/\d+ ms/, '')}`, `follow: ${err.message}; retrying with backoff`);
        if (!this.opts.follow && failures >= (this.opts.maxRetries ?? 5)) throw err;
        await sleep(Math.min(30_000, 250 * 2 ** Math.min(failures - 1, 7)), this.opts.signal);
        if (this.opts.signal?.aborted) return undefined;
      }
    }
  }

  private async open(): Promise<void> {
    const json: GethGenesis | undefined =
      this.opts.genesisPath !== undefined ? await readGenesisJson(this.opts.genesisPath) : undefined;
    const execute = (this.opts.ingest ?? 'execute') === 'execute';
    if (json !== undefined && execute) assertExecutable(json);
    const upstreamChainId = await this.probeChainId();
    let upstream0: unknown;
    const checkGenesis = async (built: Block, common: Common): Promise<Uint8Array | undefined> => {
      const ours = BigInt(common.chainId());
      if (ours !== upstreamChainId)
        throw new ChainMismatchError(
          `upstream ${this.client.origin} has chain id ${upstreamChainId}, genesis.json has ${ours}`,
        );
      this.source = new RpcBlockSource(this.client, common);
      upstream0 = await this.source.blockJson(0n);
      if (upstream0 === null) throw new UpstreamError(`${this.client.origin}: no block 0`);
      const theirs = this.source.headerFromJson(upstream0);
      if (equalsBytes(theirs.hash(), built.hash())) return undefined;
      const diff = differingFields(built.header.raw(), theirs.raw());
      if (diff.length === 1 && diff[0] === 'stateRoot') {
        this.log(
          `follow: upstream block 0 ${hex(theirs.hash())} differs from genesis.json's ${hex(built.hash())} only in its state root ` +
            `(${hex(theirs.stateRoot)} vs ${hex(built.header.stateRoot)}; anvil --init reports the empty-trie root): storing the upstream's block 0 header over the alloc's state; block 1's executed state root checks the alloc`,
        );
        return theirs.serialize();
      }
      throw new ChainMismatchError(
        `upstream ${this.client.origin} block 0 is ${hex(theirs.hash())}, genesis.json builds ${hex(built.hash())} (differing: ${diff.join(', ')})`,
      );
    };
    this.pipeline ??= await ImportPipeline.open({
      datadir: this.opts.datadir,
      ...(json !== undefined ? { genesis: { json } } : {}),
      ...(this.opts.shared ? { shared: true } : {}),
      checkGenesis,
    });
    if (execute) assertExecutable(this.pipeline.genesisJson);
    if (this.source === undefined) this.source = new RpcBlockSource(this.client, this.pipeline.common);
    // A datadir that already holds a chain: the upstream must be that chain.
    const ours = BigInt(this.pipeline.common.chainId());
    if (ours !== upstreamChainId)
      throw new ChainMismatchError(
        `upstream ${this.client.origin} has chain id ${upstreamChainId}, datadir ${this.opts.datadir} holds chain id ${ours}`,
      );
    const tip0 = await this.source.tipByHash(this.pipeline.genesisHash);
    if (tip0 === undefined || tip0.number !== 0n) {
      const up0 = await this.source.blockJson(0n);
      const h = up0 === null ? 'nothing' : hex(this.source.headerFromJson(up0).hash());
      throw new ChainMismatchError(
        `upstream ${this.client.origin} block 0 is ${h}, datadir ${this.opts.datadir} holds genesis ${hex(this.pipeline.genesisHash)}`,
      );
    }
    if (!execute && this.replica === undefined) {
      this.replica = await chooseReplicaSource(
        this.client,
        this.source,
        this.pipeline.common,
        this.pipeline.genesisJson as unknown as Record<string, unknown>,
        this.opts.stateSource,
        this.opts.timings,
      );
      this.log(`follow: replicating from ${this.client.origin}: state changes from ${SOURCE_NAMES[this.replica.kind]}`);
    }
  }

  /** Block `n` (a number) or of hash `id`, from whichever source this follower ingests by. */
  private async fetch(id: bigint | Uint8Array): Promise<FetchedBlock | undefined> {
    if (this.replica !== undefined) {
      const b = typeof id === 'bigint' ? await this.replica.byNumber(id) : await this.replica.byHash(id);
      if (b === undefined) return undefined;
      return { ...b, append: () => this.pipeline.appendReplica(b, this.opts.timings) };
    }
    const b = typeof id === 'bigint' ? await this.source.byNumber(id) : await this.source.byHash(id);
    if (b === undefined) return undefined;
    return { number: b.number, hash: b.hash, parentHash: b.parentHash, append: () => this.pipeline.append(b.raw) };
  }

  private byNumber(n: bigint): Promise<FetchedBlock | undefined> {
    return this.fetch(n);
  }

  private byHash(hash: Uint8Array): Promise<FetchedBlock | undefined> {
    return this.fetch(hash);
  }

  private probeChainId(): Promise<bigint> {
    return RpcBlockSource.chainIdOf(this.client);
  }

  /** One pass: returns true when caught up with the upstream (or --to). */
  private async step(): Promise<boolean> {
    const tip = await this.source.latest();
    this.status.upstreamHead = tip.number;
    this.status.upstreamHeadTimestamp = tip.timestamp;
    const local = this.pipeline.head();
    const to = this.opts.to;
    if (equalsBytes(tip.hash, local.hash)) {
      this.lowerPolls = 0;
      this.publish();
      return true;
    }
    if (to !== undefined && local.number >= to) return true; // sync --to: done
    if (tip.number < local.number) {
      const ours = await this.pipeline.canonicalHash(tip.number);
      if (ours !== undefined && equalsBytes(ours, tip.hash)) {
        // The upstream reports an older head of our own chain: a lagging (load-balanced) node, or
        // a rollback. Only when it persists and the upstream no longer has our head, roll back.
        this.lowerPolls++;
        if (
          this.lowerPolls >= (this.opts.rollbackPolls ?? 3) &&
          (await this.source.tipByHash(local.hash)) === undefined
        ) {
          this.checkDepth(tip.number);
          await this.pipeline.rewind(tip.number);
          await this.flush();
          this.status.reorgs++;
          this.log(
            `follow: upstream rolled back to block ${tip.number} (${hex(tip.hash)}); dropped ${local.number - tip.number} blocks`,
          );
          this.lowerPolls = 0;
        }
        this.publish();
        return true;
      }
    }
    this.lowerPolls = 0;
    if (tip.number <= local.number) {
      const blk = await this.byHash(tip.hash);
      if (blk === undefined)
        throw new UpstreamError(`${this.client.origin}: head ${hex(tip.hash)} vanished (reorging?)`);
      await this.reconcile(blk);
      return equalsBytes(this.pipeline.head().hash, tip.hash);
    }
    this.setState('syncing');
    const target = to !== undefined && to < tip.number ? to : tip.number;
    await this.catchUp(target);
    return this.pipeline.head().number >= target;
  }

  private async catchUp(target: bigint): Promise<void> {
    const window = this.opts.prefetch ?? (this.replica !== undefined ? 16 : 8);
    const groupBlocks = this.opts.groupBlocks ?? 256;
    const groupMs = this.opts.groupMs ?? 1000;
    try {
      while (this.pipeline.head().number < target && !this.opts.signal?.aborted) {
        const from = this.pipeline.head().number + 1n;
        const count = Number(target - from + 1n < BigInt(window) ? target - from + 1n : BigInt(window));
        const fetches = Array.from({ length: count }, (_, i) => this.byNumber(from + BigInt(i)));
        for (const f of fetches) f.catch(() => undefined);
        let stop = false;
        for (const f of fetches) {
          const t = this.opts.timings;
          const blk = t === undefined ? await f : await t.time('fetchWaitMs', () => f);
          if (blk === undefined) {
            stop = true; // the upstream no longer has it (reorg to a shorter chain): re-poll
            break;
          }
          if (!equalsBytes(blk.parentHash, this.pipeline.head().hash)) {
            await this.reconcile(blk);
            stop = true;
            break;
          }
          await blk.append();
          if (this.pipeline.stagedBlocks() >= groupBlocks || Date.now() - this.lastFlush >= groupMs) await this.flush();
        }
        if (stop) break;
      }
    } finally {
      await this.flush();
    }
  }

  private checkDepth(ancestor: bigint): void {
    const depth = this.opts.reorgDepth ?? 64n;
    const head = this.pipeline.head().number;
    if (head - ancestor > depth) {
      throw new ReorgTooDeepError(
        `upstream reorg from block ${ancestor + 1n} replaces ${head - ancestor} blocks, deeper than --reorg-depth ${depth}; ingest stopped`,
      );
    }
  }

  /** `blk` does not extend our head: walk back by parent hash to our chain, then switch branches. */
  private async reconcile(blk: FetchedBlock): Promise<void> {
    await this.flush(); // canonical reads below see everything verified so far
    const branch: FetchedBlock[] = [blk];
    let ancestor: bigint;
    for (;;) {
      const first = branch[0] as FetchedBlock;
      const parentNumber = first.number - 1n;
      if (parentNumber < 0n) throw new ChainMismatchError(`upstream ${this.client.origin} has another genesis`);
      if (parentNumber <= this.pipeline.head().number) {
        const ours = await this.pipeline.canonicalHash(parentNumber);
        if (ours !== undefined && equalsBytes(ours, first.parentHash)) {
          ancestor = parentNumber;
          break;
        }
      }
      this.checkDepth(parentNumber - 1n);
      const parent = await this.byHash(first.parentHash);
      if (parent === undefined)
        throw new UpstreamError(
          `${this.client.origin}: parent ${hex(first.parentHash)} of block ${first.number} not served (reorging?)`,
        );
      branch.unshift(parent);
    }
    this.checkDepth(ancestor);
    const oldHead = this.pipeline.head();
    await this.pipeline.rewind(ancestor);
    for (const b of branch) await b.append();
    await this.flush();
    this.status.reorgs++;
    this.log(
      `follow: reorg at block ${ancestor + 1n}: replaced ${oldHead.number - ancestor} blocks (head was ${oldHead.number} ${hex(oldHead.hash)}), now ${this.pipeline.head().number} ${hex(this.pipeline.head().hash)}`,
    );
  }

  private async flush(): Promise<void> {
    const t = this.opts.timings;
    const { stats, commits } =
      t === undefined ? await this.pipeline.flush() : await t.time('writeMs', () => this.pipeline.flush());
    this.lastFlush = Date.now();
    this.totals = {
      blocks: this.totals.blocks + stats.blocks,
      txs: this.totals.txs + stats.txs,
      logs: this.totals.logs + stats.logs,
    };
    this.status.blocksImported = this.totals.blocks;
    for (const c of commits) this.opts.onCommit?.(c);
    if (commits.length > 0) this.publish();
  }
}

/** `node-cli sync --from <URL>` / `serve --follow`: see Follower. */
export function followUpstream(opts: FollowOptions): Promise<FollowSummary> {
  return new Follower(opts).run();
}
