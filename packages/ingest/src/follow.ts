// Following a live JSON-RPC upstream: catch up to its head (or --to) and, in follow mode, keep
// polling it. Every block goes through the one import pipeline; a block whose parent is not the
// local head, or an upstream head whose hash differs from ours at its height, is a reorg: walk
// back by parent hash to the common ancestor and apply undo + new branch in one batch. A reorg
// deeper than `reorgDepth` stops the ingest. Upstream faults (down, slow, errors, garbage) are
// retried with backoff and logged once per state change; verification failures stop it.
import type { Block } from '@ethereumjs/block';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { KECCAK256_RLP, bytesToHex, equalsBytes } from '@ethereumjs/util';
import { chainFamilyOf, createUpstreamClient } from '@chainnode/core';
import type { ChainCommit, FollowState, FollowStatus, UpstreamClient } from '@chainnode/core';
import type { StateTrieMode } from '@chainnode/store';
import {
  BlockVerificationError,
  ChainMismatchError,
  ChainSourceError,
  ReorgTooDeepError,
  UpstreamError,
} from './errors.js';
import { anvilGenesisJson, readGenesisJson } from './genesis.js';
import { ImportPipeline } from './pipeline.js';
import type { AnchorBlock, JoinState } from './pipeline.js';
import { downloadState, probeStateNodes } from './joined/state-download.js';
import { RpcBlockSource } from './rpc-source.js';
import { chooseHistorySource, chooseReplicaSource } from './replicate/sources.js';
import type { ReplicaSource, StateSourceKind } from './replicate/sources.js';
import { rangesAhead } from './replicate/ahead.js';
import type { ReplicaBlock } from './replicate/block.js';
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

/** Where a joining datadir starts: a block number, or the upstream's head minus K. */
export type StartBlock = { number: bigint } | { headMinus: bigint };

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
    firstBlock: 0n,
    lastError: undefined,
    lastErrorAt: undefined,
  };
}

/** FollowStatus.lagBlocks: how far the local head is below the upstream's (0 when ahead or unknown). */
export function blocksBehind(s: Pick<FollowStatus, 'upstreamHead' | 'localHead'>): bigint {
  return s.upstreamHead !== undefined && s.upstreamHead > s.localHead ? s.upstreamHead - s.localHead : 0n;
}

/**
 * How a datadir follows its upstream: the follow settings of `serve` (`--follow`, a network's
 * `follow=<URL>`), which the serve runtime hands to the datadir's ingest thread.
 */
export interface FollowSettings {
  /** http(s):// or ws(s):// JSON-RPC URL of the upstream. */
  url: string;
  /** genesis.json: required for an empty datadir. */
  genesisPath?: string;
  /** Deepest upstream reorg followed before the ingest stops. */
  reorgDepth: bigint;
  /** Poll interval when caught up. */
  pollMs: number;
  /**
   * How blocks become state: execute them with @ethereumjs/vm, or replicate them: take the
   * upstream's transactions, receipts and state changes and verify every root (replicate/).
   */
  ingest: IngestMode;
  /**
   * Join the chain at this block instead of starting at genesis (only for an empty datadir): a
   * number, or `{ headMinus: K }` for the upstream's head minus K. The datadir then holds
   * history from there on, verified by its roots and hash links, and no state of its own
   * (history-only ingest, whatever `ingest` says); state is then proven on demand from `url`.
   */
  startBlock?: StartBlock;
  /** The hash the start block must have (pins the anchor; without startBlock it names the block). */
  checkpoint?: Uint8Array;
  /**
   * How a joining datadir gets its state (PipelineOptions.joinState): `proofs` (default) keeps it
   * history-only, state proven on demand; `download` takes the start block's whole state from a
   * chainnode primary (joined/state-download.ts), then replicates every later block with state.
   * Fixed when the datadir joins; given again, it must be the datadir's.
   */
  joinState?: JoinState;
  /** History below a joined datadir's first block from this http(s):// upstream, verified (serving side only). */
  historyUpstream?: string;
  /**
   * With an http(s):// `url`: the same upstream's ws(s):// endpoint, for its subscriptions only
   * (new heads wake the follower; pending transaction hashes). A ws(s):// `url` subscribes on itself.
   */
  wsUrl?: string;
  /** `--state-trie`: the state trie's retention of a datadir created from genesis (PipelineOptions.stateTrie). */
  stateTrie?: StateTrieMode;
  /** `--trace-frames`: record executed blocks' call frames (PipelineOptions.traceFrames). */
  traceFrames?: boolean;
}

/** A Follower's options: the follow settings (defaults: reorgDepth 64, pollMs 1000, execute) and how it runs. */
export interface FollowerOptions
  extends Pick<FollowSettings, 'url'>,
    Partial<Omit<FollowSettings, 'url' | 'historyUpstream' | 'wsUrl'>> {
  datadir: string;
  /** Stop after this block (sync mode). */
  to?: bigint;
  /** Keep following after catching up (serve --follow); otherwise return at the head (sync). */
  follow?: boolean;
  /**
   * Blocks fetched ahead concurrently while catching up (default 8; 16 replicating); from a
   * primary that serves ranges, the blocks of one range request (default RANGE_SPAN).
   */
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
const EMPTY_TRIE_ROOT = bytesToHex(KECCAK256_RLP);

/** Blocks one range request asks a chainnode primary for, and such requests in flight at most. */
const RANGE_SPAN = 32;
const RANGE_DEPTH = 4;

const SOURCE_NAMES: Record<StateSourceKind, string> = {
  chainnode: 'a chainnode primary (chainnode_getStateDiff)',
  prestate: 'debug_traceBlockByHash with the prestateTracer in diffMode',
  parity: 'trace_replayBlockTransactions stateDiff',
};

/** The least time between the end of one step and the next when new heads wake the follower. */
const WAKE_GAP_MS = 10;

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
  private readonly client: UpstreamClient;
  private source!: RpcBlockSource;
  private replica: ReplicaSource | undefined;
  /** History-only ingest (a joined datadir): blocks' data verified, no state. */
  private history: ReplicaSource | undefined;
  private lastProgress = Date.now();
  private progressFrom = { at: Date.now(), number: 0n };
  private pipeline!: ImportPipeline;
  private readonly status: FollowStatus;
  private totals = { blocks: 0, txs: 0, logs: 0 };
  private lowerPolls = 0;
  /** Ends the current pause (set while pausing); `woken`: a wake came between pauses. */
  private wakeUp: (() => void) | undefined;
  private woken = false;
  private lastLogged = '';
  private readonly t0 = Date.now();
  private startNumber = 0n;
  private lastFlush = Date.now();

  constructor(private readonly opts: FollowerOptions) {
    this.client = createUpstreamClient(opts.url, { timeoutMs: opts.timeoutMs ?? 10_000 });
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
      s.firstBlock = this.pipeline.firstBlock();
    }
    s.lagBlocks = blocksBehind(s);
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

  /**
   * The upstream has a new head (a WebSocket upstream's newHeads): the poll's wait ends now, or
   * the next one does not start, but a step follows the previous one's end by WAKE_GAP_MS at
   * least, however often this is called.
   */
  wake(): void {
    if (this.wakeUp !== undefined) this.wakeUp();
    else this.woken = true;
  }

  /** The wait between polls: `ms`, ended early by wake() or the signal. */
  private pause(ms: number): Promise<void> {
    const signal = this.opts.signal;
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const started = Date.now();
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wakeUp = undefined;
        resolve();
      };
      let timer = setTimeout(done, this.woken ? Math.min(ms, WAKE_GAP_MS) : ms);
      this.woken = false;
      this.wakeUp = () => {
        clearTimeout(timer);
        timer = setTimeout(done, Math.max(0, Math.min(ms, started + WAKE_GAP_MS - Date.now())));
      };
      signal?.addEventListener('abort', done, { once: true });
    });
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
          await this.pause(this.opts.pollMs ?? 1000);
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
          (err instanceof BlockVerificationError &&
            (this.replica !== undefined || this.history !== undefined) &&
            this.opts.follow === true);
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
    const given: GethGenesis | undefined =
      this.opts.genesisPath !== undefined ? await readGenesisJson(this.opts.genesisPath) : undefined;
    const json = given !== undefined ? await this.asUpstreamBuildsIt(given) : undefined;
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
    const joining = this.opts.startBlock !== undefined || this.opts.checkpoint !== undefined;
    this.pipeline ??= await ImportPipeline.open({
      datadir: this.opts.datadir,
      ...(json !== undefined ? { genesis: { json } } : {}),
      ...(this.opts.shared ? { shared: true } : {}),
      log: this.opts.log,
      checkGenesis,
      ...(joining ? { anchor: (common: Common) => this.fetchAnchor(common) } : {}),
      ...(this.opts.joinState !== undefined ? { joinState: this.opts.joinState } : {}),
      ...(this.opts.stateTrie !== undefined ? { stateTrie: this.opts.stateTrie } : {}),
      ...(this.opts.traceFrames !== undefined ? { traceFrames: this.opts.traceFrames } : {}),
    });
    if (this.source === undefined) this.source = new RpcBlockSource(this.client, this.pipeline.common);
    if (this.pipeline.historyOnly()) {
      if (!joining && !this.pipeline.createdGenesis && this.history === undefined)
        this.log(`follow: the datadir joined its chain at block ${this.pipeline.firstBlock()}: history-only ingest`);
      this.history ??= await chooseHistorySource(this.client, this.source, this.pipeline.common, this.opts.timings);
    } else if (joining && !this.pipeline.createdGenesis && this.pipeline.firstBlock() === 0n) {
      throw new ChainSourceError(
        `--start-block: datadir ${this.opts.datadir} already holds a chain from genesis; join with an empty datadir`,
      );
    } else this.history = undefined; // the anchor came from the history source; blocks after it come with state
    const joined = this.pipeline.firstBlock() > 0n;
    if (joined && this.opts.joinState !== undefined && !this.pipeline.createdGenesis) {
      const have: JoinState = this.pipeline.anchorState() === undefined ? 'proofs' : 'download';
      if (have !== this.opts.joinState)
        throw new ChainSourceError(
          `--join-state ${this.opts.joinState}: datadir ${this.opts.datadir} joined its chain with --join-state ${have}, fixed when it joined; leave --join-state out or use another --datadir`,
        );
    }
    // A joined datadir with state replicates whatever --ingest says: nothing below its first
    // block is held, so no block can be executed (BLOCKHASH reads the 256 before it).
    const replicate = !execute || (joined && this.history === undefined);
    if (!replicate && this.history === undefined) assertExecutable(this.pipeline.genesisJson);
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
    if (replicate && this.replica === undefined && this.history === undefined) {
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
    if (this.pipeline.anchorState() === 'pending') await this.downloadAnchorState();
    else if (this.pipeline.anchorState() === 'whole' && this.status.stateDownload === undefined)
      this.status.stateDownload = { block: this.pipeline.firstBlock(), whole: true };
  }

  /**
   * A joined datadir's first block's whole state, from the upstream (`--join-state download`;
   * joined/state-download.ts), then marked whole: the blocks after it replicate with state.
   * Resumes where a stopped download left off; an upstream fault is retried (withRetries), a
   * node that does not hash to its parent's reference is a BlockVerificationError.
   */
  private async downloadAnchorState(): Promise<void> {
    const anchor = this.pipeline.durableHead();
    this.setState('syncing');
    this.log(
      `follow: downloading the whole state of block ${anchor.number} from ${this.client.origin} (--join-state download), every node checked by its hash`,
    );
    let published = 0;
    const show = (s: { fetched: number; local: number; codes: number; bytes: number }, whole: boolean): void => {
      this.status.stateDownload = {
        block: anchor.number,
        whole,
        nodes: s.fetched + s.local,
        codes: s.codes,
        bytes: s.bytes,
      };
      // The status crosses to the serving threads: once a second while the download runs.
      if (whole || Date.now() - published >= 1000) {
        published = Date.now();
        this.publish();
      }
    };
    const stats = await downloadState({
      client: this.client,
      block: anchor.number,
      stateRoot: this.pipeline.headStateRoot(),
      sink: this.pipeline.stateSink(),
      log: (line) => this.log(line),
      onProgress: (s) => show(s, false),
      ...(this.opts.signal !== undefined ? { signal: this.opts.signal } : {}),
    });
    if (!stats.complete) return; // stopped: the next run resumes it
    await this.pipeline.anchorStateWhole();
    show(stats, true);
  }

  /**
   * genesis.json as the upstream built its block 0: anvil --init reports the empty-trie root as
   * block 0's state root and deploys the EIP-2935 history contract when Prague is active at
   * genesis and the alloc lacks it (anvilGenesisJson); block 1's state root checks the result.
   */
  private async asUpstreamBuildsIt(json: GethGenesis): Promise<GethGenesis> {
    const anvil = anvilGenesisJson(json);
    if (anvil === undefined) return json;
    const b0 = (await this.client.call('eth_getBlockByNumber', ['0x0', false])) as { stateRoot?: unknown } | null;
    if (b0?.stateRoot !== EMPTY_TRIE_ROOT) return json;
    this.log(
      'follow: genesis.json has Prague at genesis and no EIP-2935 history contract; the upstream reports the empty-trie root for block 0, as anvil --init does, and anvil deploys that contract at genesis: the genesis state here holds it too',
    );
    return anvil;
  }

  /**
   * The block an empty datadir joins at (ImportPipeline's anchor): the start block by number (or
   * the upstream's head minus K), or the checkpoint by hash; both given, they must agree. Its
   * data roots are verified by the pipeline; its hash is what every later block links back to.
   */
  private async fetchAnchor(common: Common): Promise<AnchorBlock> {
    // Before the datadir exists: an upstream that cannot serve the state is refused while
    // another --join-state can still be chosen for the same datadir.
    if (this.opts.joinState === 'download') await probeStateNodes(this.client);
    this.source ??= new RpcBlockSource(this.client, common);
    this.history ??= await chooseHistorySource(this.client, this.source, common, this.opts.timings);
    const start = this.opts.startBlock;
    const checkpoint = this.opts.checkpoint;
    let number: bigint | undefined;
    if (start !== undefined) {
      if ('number' in start) number = start.number;
      else {
        const tip = await this.source.latest();
        number = tip.number > start.headMinus ? tip.number - start.headMinus : 1n;
      }
      if (number < 1n) throw new ChainSourceError('--start-block: the first block of a joined datadir is above 0');
    }
    const block =
      checkpoint !== undefined ? await this.history.byHash(checkpoint) : await this.history.byNumber(number as bigint);
    if (block === undefined)
      throw new UpstreamError(
        `${this.client.origin}: start block ${checkpoint !== undefined ? hex(checkpoint) : String(number)} not served`,
      );
    if (checkpoint !== undefined && !equalsBytes(block.hash, checkpoint))
      throw new ChainMismatchError(
        `${this.client.origin}: checkpoint ${hex(checkpoint)} answered with ${hex(block.hash)}`,
      );
    if (number !== undefined && block.number !== number)
      throw new ChainMismatchError(
        `--checkpoint ${hex(block.hash)} is block ${block.number}, not the --start-block ${number}`,
      );
    const json = (await this.client.call('eth_getBlockByHash', [hex(block.hash), false])) as {
      totalDifficulty?: unknown;
    } | null;
    const td = json?.totalDifficulty;
    const totalDifficulty =
      typeof td === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(td) ? BigInt(td) : block.header.difficulty;
    this.log(
      `follow: joining the chain at block ${block.number} (${hex(block.hash)}${checkpoint !== undefined ? ', the checkpoint' : ''}): history from there on, verified by its roots and hash links; ${this.opts.joinState === 'download' ? "that block's whole state downloaded, then every later block's state replicated" : 'state proven on demand'}`,
    );
    return { block, totalDifficulty };
  }

  /** Block `n` (a number) or of hash `id`, from whichever source this follower ingests by. */
  private async fetch(id: bigint | Uint8Array): Promise<FetchedBlock | undefined> {
    if (this.history !== undefined) {
      const b = typeof id === 'bigint' ? await this.history.byNumber(id) : await this.history.byHash(id);
      if (b === undefined) return undefined;
      return {
        number: b.number,
        hash: b.hash,
        parentHash: b.parentHash,
        append: () => this.pipeline.appendHistory(b, this.opts.timings),
      };
    }
    if (this.replica !== undefined) {
      const b = typeof id === 'bigint' ? await this.replica.byNumber(id) : await this.replica.byHash(id);
      return b === undefined ? undefined : this.replicaBlock(b);
    }
    const b = typeof id === 'bigint' ? await this.source.byNumber(id) : await this.source.byHash(id);
    if (b === undefined) return undefined;
    return { number: b.number, hash: b.hash, parentHash: b.parentHash, append: () => this.pipeline.append(b.raw) };
  }

  private replicaBlock(b: ReplicaBlock): FetchedBlock {
    return {
      number: b.number,
      hash: b.hash,
      parentHash: b.parentHash,
      append: () => this.pipeline.appendReplica(b, this.opts.timings),
    };
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
    const groupBlocks = this.opts.groupBlocks ?? 256;
    const groupMs = this.opts.groupMs ?? 1000;
    const t = this.opts.timings;
    try {
      while (this.pipeline.head().number < target && !this.opts.signal?.aborted) {
        const ahead = this.ahead(this.pipeline.head().number + 1n, target);
        let stop = false;
        try {
          for (;;) {
            const r = t === undefined ? await ahead.next() : await t.time('fetchWaitMs', () => ahead.next());
            if (r.done === true) break;
            const blk = r.value;
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
            // Written behind: the next blocks are verified while LevelDB writes this group; the
            // flush after the loop (and before any reorg's reads) settles it.
            if (this.pipeline.stagedBlocks() >= groupBlocks || Date.now() - this.lastFlush >= groupMs)
              await this.flush(true);
            this.progress(target);
            if (this.opts.signal?.aborted) break;
          }
        } finally {
          await ahead.return(undefined);
        }
        if (stop) break;
      }
    } finally {
      await this.flush();
    }
  }

  /**
   * The blocks from `from` towards `target`, in order: from a replica source that serves ranges,
   * all of them, a few range requests in flight; else one window of `prefetch` blocks fetched
   * together. undefined: the upstream does not have the next one.
   */
  private async *ahead(from: bigint, target: bigint): AsyncGenerator<FetchedBlock | undefined> {
    const replica = this.replica;
    if (replica?.range !== undefined) {
      const span = this.opts.prefetch ?? RANGE_SPAN;
      for await (const b of rangesAhead((a, z) => replica.range?.(a, z) ?? Promise.resolve([]), from, target, {
        span,
        depth: RANGE_DEPTH,
        ramp: true,
      }))
        yield b === undefined ? undefined : this.replicaBlock(b);
      return;
    }
    const window = this.opts.prefetch ?? (this.replica !== undefined || this.history !== undefined ? 16 : 8);
    const count = Number(target - from + 1n < BigInt(window) ? target - from + 1n : BigInt(window));
    const fetches = Array.from({ length: count }, (_, i) => this.byNumber(from + BigInt(i)));
    for (const f of fetches) f.catch(() => undefined);
    for (const f of fetches) {
      const blk = await f;
      yield blk;
      if (blk === undefined) return;
    }
  }

  /** A progress line every 5 s while catching up: where the ingest is, how far to go, how fast. */
  private progress(target: bigint): void {
    const now = Date.now();
    if (now - this.lastProgress < 5000) return;
    const head = this.pipeline.head().number;
    const from = this.progressFrom;
    const rate = from.number > 0n && now > from.at ? (Number(head - from.number) * 1000) / (now - from.at) : 0;
    this.log(
      `follow: block ${head} of ${target} (${target - head} to go${rate > 0 ? `, ${rate.toFixed(1)} blocks/s` : ''})`,
    );
    this.lastProgress = now;
    this.progressFrom = { at: now, number: head };
  }

  private checkDepth(ancestor: bigint): void {
    if (ancestor < this.pipeline.firstBlock())
      throw new ChainMismatchError(
        `upstream ${this.client.origin} rolls back below block ${this.pipeline.firstBlock()}, where this datadir joined its chain: use another --datadir`,
      );
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
      if (parentNumber < this.pipeline.firstBlock())
        throw new ChainMismatchError(
          `upstream ${this.client.origin}'s chain leaves ours below block ${this.pipeline.firstBlock()}, where this datadir joined it (a reorg past the anchor): use another --datadir`,
        );
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

  /** Writes what is staged; `behind`: returns once LevelDB has the batch (ImportPipeline.flushBehind). */
  private async flush(behind = false): Promise<void> {
    const t = this.opts.timings;
    const write = () => (behind ? this.pipeline.flushBehind() : this.pipeline.flush());
    const { stats, commits } = t === undefined ? await write() : await t.time('writeMs', write);
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
export function followUpstream(opts: FollowerOptions): Promise<FollowSummary> {
  return new Follower(opts).run();
}
