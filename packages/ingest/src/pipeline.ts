// The one import pipeline every source feeds (chain.rlp file, JSON-RPC upstream): consensus block
// bytes -> decode -> verify (parent link, transactions root, uncles hash, withdrawals root) ->
// execute with @ethereumjs/vm -> verify (state root, receipts root, bloom, gas used, requests
// hash) -> stage into the writer's group; `flush()` writes the group as ONE LevelDB batch and
// returns what it changed as a ChainCommit. `rewind(ancestor)` stages a reorg's undo into the
// next group, so the orphaned blocks' removal and the new branch land together.
import { RLP } from '@ethereumjs/rlp';
import { createBlockFromBytesArray, genTransactionsTrieRoot, genWithdrawalsTrieRoot } from '@ethereumjs/block';
import type { Block, BlockBytes } from '@ethereumjs/block';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { Caches } from '@ethereumjs/statemanager';
import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import { createVM, runBlock } from '@ethereumjs/vm';
import type { VM } from '@ethereumjs/vm';
import { keccak256 } from '@chainnode/core';
import { BlockFrameRecorder, loadKzgOnPointEvaluation, tuneVm } from '@chainnode/exec';
import { bytesToBigInt, logRecord } from '@chainnode/core';
import type { ChainCommit, CommittedBlock, LogRecord } from '@chainnode/core';
import {
  DEFAULT_STATE_TRIE,
  RewindBelowTrieWindowError,
  StateTrieSettingError,
  StoreWriter,
  formatStateTrie,
  readStateTrie,
} from '@chainnode/store';
import type {
  AnchorState,
  BlockInput,
  FlushStats,
  PruneReport,
  StateTrieMode,
  StateWrites,
  StoredReceipt,
} from '@chainnode/store';
import { BlockVerificationError, ChainMismatchError, ChainSourceError, ReorgTooDeepError } from './errors.js';
import { buildGenesis, commonFromGenesis } from './genesis.js';
import { verifyBlockData } from './replicate/block.js';
import type { ReplicaBlock } from './replicate/block.js';
import { claimWithdrawalsRoot, withdrawalsRootIsStorageRoot } from './replicate/op-stack.js';
import { StateMismatch, StateOverlay } from './replicate/state.js';
import type { ReplicationTimings } from './replicate/timings.js';
import { RecordingStateManager } from './write-set.js';
import type { StateSink } from './joined/state-download.js';

const hex = (b: Uint8Array): string => bytesToHex(b);

export function check(
  number: bigint,
  field: string,
  expected: Uint8Array | bigint,
  computed: Uint8Array | bigint,
): void {
  const same = typeof expected === 'bigint' ? expected === computed : equalsBytes(expected, computed as Uint8Array);
  if (!same) {
    const fmt = (v: Uint8Array | bigint) => (typeof v === 'bigint' ? v.toString() : hex(v));
    throw new BlockVerificationError(number, field, fmt(expected), fmt(computed));
  }
}

/** BLOCKHASH source for the EVM: recent hashes in memory, older ones from the store. */
class HashSource {
  private readonly recent = new Map<bigint, Uint8Array>();
  constructor(private readonly writer: StoreWriter) {}
  remember(n: bigint, hash: Uint8Array): void {
    this.recent.set(n, hash);
    this.recent.delete(n - 300n);
  }
  /** A rewind: the hashes above `n` are no longer canonical (lower ones are the same on both branches). */
  forgetAbove(n: bigint): void {
    for (const k of [...this.recent.keys()]) if (k > n) this.recent.delete(k);
  }
  asBlockchain() {
    return {
      getBlock: async (n: number) => {
        const num = BigInt(n);
        const hash = this.recent.get(num) ?? (await this.writer.canonicalHash(num)) ?? new Uint8Array(32);
        return { hash: () => hash };
      },
      putBlock: async () => {},
      shallowCopy() {
        return this;
      },
    };
  }
}

/** A pruning cycle's end as one line (its progress steps are not logged). */
function pruneNote(r: PruneReport, log: (line: string) => void): void {
  const s = r.seconds.toFixed(1);
  if (r.phase === 'done')
    log(
      `state trie: pruned below block ${r.from} (window to ${r.head}): ${r.marked} nodes kept, ${r.deleted} of ${r.scanned} deleted, ${r.written} written meanwhile, ${s} s, ${(r.setBytes / 2 ** 20).toFixed(0)} MiB of hash sets`,
    );
  else if (r.phase === 'failed') log(`state trie: pruning below block ${r.from} failed after ${s} s: ${r.error}`);
}

async function verifyStatic(block: Block, values: BlockBytes): Promise<void> {
  const h = block.header;
  const n = h.number;
  check(n, 'transactionsRoot', h.transactionsTrie, await genTransactionsTrieRoot(block.transactions));
  const uncles = values[2] as unknown as Uint8Array[][];
  check(n, 'uncleHash (sha3Uncles)', h.uncleHash, keccak256(RLP.encode(uncles)));
  if (h.withdrawalsRoot !== undefined) {
    check(n, 'withdrawalsRoot', h.withdrawalsRoot, await genWithdrawalsTrieRoot(block.withdrawals ?? []));
  }
}

function receiptsOf(result: Awaited<ReturnType<typeof runBlock>>, block: Block): StoredReceipt[] {
  return result.receipts.map((r, i) => ({
    type: block.transactions[i]?.type ?? 0,
    statusOrState: 'stateRoot' in r ? r.stateRoot : Uint8Array.of(r.status),
    cumulativeGasUsed: r.cumulativeBlockGasUsed,
  }));
}

/** The genesis the pipeline starts from when the datadir is empty. */
export interface GenesisChoice {
  json: GethGenesis;
  /**
   * Header RLP to store as block 0 instead of the one built from genesis.json (the caller has
   * checked that it differs at most in its state root: the anvil --init quirk). The state is
   * still the alloc's; block 1's executed state root checks it.
   */
  headerRlp?: Uint8Array;
}

export interface PipelineOptions {
  datadir: string;
  /** Required for an empty datadir; otherwise the stored genesis.json is used (and must agree). */
  genesis?: GenesisChoice;
  /** Let worker threads of this process open the datadir too (serve --follow). */
  shared?: boolean;
  /** Notes for the operator: each pruning cycle of a trie window, with its figures. */
  log?: ((line: string) => void) | undefined;
  /**
   * Called before an empty datadir's genesis is written, with the block built from genesis.json:
   * may throw (refuse) or return the header RLP to store instead (see GenesisChoice.headerRlp).
   */
  checkGenesis?: (built: Block, common: Common) => Promise<Uint8Array | undefined>;
  /**
   * Join the chain at a block N > 0 instead of starting at genesis (only for an empty datadir):
   * called with the chain's rules and genesis hash once genesis.json has built (and
   * `checkGenesis` accepted) block 0; returns block N with the total difficulty the upstream
   * states for it. Its data roots are verified here; the datadir then holds history from N on
   * and no state of its own (appendHistory).
   */
  anchor?: (common: Common, genesisHash: Uint8Array) => Promise<AnchorBlock>;
  /**
   * With `anchor`: `download` marks the new datadir to download block N's whole state before its
   * later blocks come in, with state (Meta.anchorState); `proofs` (the default) keeps it
   * history-only, state proven on demand.
   */
  joinState?: JoinState;
  /**
   * The state trie's retention (`--state-trie`): written into a datadir created from genesis
   * (absent: DEFAULT_STATE_TRIE); an existing datadir keeps its own, which a given value must
   * equal. Refused for a joined datadir (`anchor`, Meta.firstBlock): it holds no state trie of its
   * own, only the proven reads it caches.
   */
  stateTrie?: StateTrieMode;
  /**
   * `--trace-frames`: whether executed blocks' call frames are recorded (TxFrames), from now on;
   * kept in the datadir (absent: the datadir's own choice, recording unless turned off).
   */
  traceFrames?: boolean;
}

/** How a joined datadir gets its state: proven on demand, or its first block's downloaded whole. */
export type JoinState = 'proofs' | 'download';

/** The block a joining datadir starts at (PipelineOptions.anchor). */
export interface AnchorBlock {
  block: ReplicaBlock;
  /** The upstream's totalDifficulty of the block (not verifiable without the history below it). */
  totalDifficulty: bigint;
}

export interface PipelineHead {
  number: bigint;
  hash: Uint8Array;
  timestamp: bigint;
}

/**
 * A given `--state-trie` against the datadir's: an existing datadir's own setting (Meta.stateTrie;
 * absent: archive) must be the one given; a joined datadir, new or existing, takes none.
 */
async function checkStateTrie(writer: StoreWriter, opts: PipelineOptions, empty: boolean): Promise<void> {
  const want = opts.stateTrie;
  if (want === undefined) return;
  // A joined datadir proving state on demand holds no trie of its own; one that downloads its
  // first block's state keeps a trie (and a window) as a datadir from genesis does.
  const proving = empty
    ? opts.anchor !== undefined && opts.joinState !== 'download'
    : writer.firstBlock() > 0n && writer.anchorState() === undefined;
  if (proving)
    throw new StateTrieSettingError(
      `--state-trie: datadir ${opts.datadir} joins its chain above genesis and proves its state on demand, holding no state trie of its own; leave --state-trie out (or join with --join-state download)`,
    );
  if (empty) return;
  const have = await readStateTrie(writer.db);
  if (formatStateTrie(have) !== formatStateTrie(want))
    throw new StateTrieSettingError(
      `--state-trie ${formatStateTrie(want)}: datadir ${opts.datadir} keeps --state-trie ${formatStateTrie(have)} (fixed when it was created); leave the option out, or use another --datadir`,
    );
}

export class ImportPipeline {
  private td = 0n;
  /** State root of the head (the replicate path's parent state). */
  private stateRoot: Uint8Array = new Uint8Array(32);
  private prev: PipelineHead = { number: 0n, hash: new Uint8Array(32), timestamp: 0n };
  private readonly hashes: HashSource;
  private vm!: VM;
  private added: CommittedBlock[] = [];
  private removed: CommittedBlock[] = [];
  /** The durable head after the last flush. */
  private durable: PipelineHead = { number: 0n, hash: new Uint8Array(32), timestamp: 0n };
  createdGenesis = false;

  private constructor(
    readonly writer: StoreWriter,
    readonly common: Common,
    readonly genesisJson: GethGenesis,
    private readonly sm: RecordingStateManager,
    /** The state root of the genesis alloc (may differ from the stored block 0 header's). */
    private readonly genesisStateRoot: Uint8Array,
    readonly genesisHash: Uint8Array,
  ) {
    this.hashes = new HashSource(writer);
  }

  /**
   * Opens the datadir. With an empty datadir `opts.genesis` is required and written; otherwise
   * the stored genesis.json is used and `opts.genesis`, if given, must build the stored genesis.
   */
  static async open(opts: PipelineOptions): Promise<ImportPipeline> {
    const log = opts.log;
    const writer = await StoreWriter.open(opts.datadir, {
      ...(opts.shared === true ? { shared: true } : {}),
      ...(log !== undefined ? { prune: { onReport: (r: PruneReport) => pruneNote(r, log) } } : {}),
    });
    try {
      return await ImportPipeline.start(writer, opts);
    } catch (err) {
      await writer.close();
      throw err;
    }
  }

  private static async start(writer: StoreWriter, opts: PipelineOptions): Promise<ImportPipeline> {
    const stored = writer.storedGenesisHash();
    await checkStateTrie(writer, opts, stored === undefined);
    let json: GethGenesis;
    if (stored === undefined) {
      if (opts.genesis === undefined) throw new GenesisRequiredError(opts.datadir);
      json = opts.genesis.json;
    } else {
      const storedJson = await writer.genesisJson();
      json =
        (storedJson as GethGenesis | undefined) ??
        opts.genesis?.json ??
        (() => {
          throw new GenesisRequiredError(opts.datadir);
        })();
    }
    const common = commonFromGenesis(json);
    // Node cache in the MPT and account/storage/code caches in the state manager: reads of hot
    // state stay off LevelDB (writes still reach the trie db, hence the store, every block).
    const trie = new MerklePatriciaTrie({
      db: writer.trieDb,
      useKeyHashing: true,
      valueEncoding: 'view',
      common,
      cacheSize: 200_000,
    });
    const sm = new RecordingStateManager({ trie, common, caches: new Caches() });
    const genesis = await buildGenesis(json, common, {
      node: (hash, encoded, decoded) => writer.trieDb.putNodeSync(hash, encoded, decoded),
      code: (key, code) => writer.trieDb.putNodeSync(key, code),
    });
    await sm.setStateRoot(genesis.header.stateRoot);
    const genesisStateRoot = genesis.header.stateRoot;
    let headerRlp =
      stored === undefined && opts.genesis?.headerRlp !== undefined
        ? opts.genesis.headerRlp
        : genesis.header.serialize();
    if (stored === undefined && opts.checkGenesis !== undefined)
      headerRlp = (await opts.checkGenesis(genesis, common)) ?? headerRlp;
    const genesisHash = keccak256(headerRlp);
    let created = false;
    if (stored === undefined && opts.anchor !== undefined) {
      writer.trieDb.rejectBlock(); // a joined datadir holds no genesis state
      const a = await opts.anchor(common, genesisHash);
      await verifyBlockData(a.block, withdrawalsRootIsStorageRoot(json, a.block.timestamp));
      await writer.writeAnchor({
        chainConfig: json.config,
        genesisJson: json,
        genesisHash,
        block: historyInput(a.block, a.totalDifficulty),
        ...(opts.joinState === 'download'
          ? { downloadState: true, stateTrie: opts.stateTrie ?? DEFAULT_STATE_TRIE }
          : {}),
      });
      created = true;
    } else if (stored === undefined) {
      await writer.writeGenesis({
        chainConfig: json.config,
        genesisJson: json,
        stateRoot: genesisStateRoot,
        stateTrie: opts.stateTrie ?? DEFAULT_STATE_TRIE,
        block: {
          number: 0n,
          hash: genesisHash,
          headerRlp,
          body: {
            size: RLP.encode([RLP.decode(headerRlp) as Uint8Array[], [], [], ...(genesis.withdrawals ? [[]] : [])])
              .length,
            transactions: [],
            uncles: [],
            ...(genesis.withdrawals ? { withdrawals: [] } : {}),
          },
          totalDifficulty: genesis.header.difficulty,
          senders: [],
          txHashes: [],
          receipts: [],
          logs: [],
          logsBloom: genesis.header.logsBloom,
        },
      });
      created = true;
    } else {
      writer.trieDb.rejectBlock(); // genesis state already stored
      // A given genesis.json must be the stored one, or build the same block 0 here. The stored
      // block 0 may be an upstream's header rather than the one built here (anvil's genesis state
      // root deviates, docs/following.md), so a different file is compared with
      // both: the stored hash and the hash the stored genesis.json builds here (`genesisHash`).
      const given = opts.genesis;
      if (given !== undefined && given.headerRlp === undefined && JSON.stringify(given.json) !== JSON.stringify(json)) {
        const givenHash = await genesisHashOf(given.json);
        if (!equalsBytes(stored, givenHash) && !equalsBytes(genesisHash, givenHash)) {
          throw new ChainMismatchError(
            `datadir ${opts.datadir} holds a chain with genesis ${hex(stored)}, but the given genesis.json has genesis ${hex(givenHash)}; use another --datadir`,
          );
        }
      }
    }
    if (opts.traceFrames !== undefined) await writer.setRecordsFrames(opts.traceFrames);
    const p = new ImportPipeline(writer, common, json, sm, genesisStateRoot, stored ?? genesisHash);
    p.createdGenesis = created;
    await p.resetToDurable();
    return p;
  }

  /** Execution state, td and links from the durable head (after open or a rewind's failure). */
  private async resetToDurable(): Promise<void> {
    const durable = this.writer.durableHead();
    if (durable === undefined) throw new Error('store has no head after genesis');
    await this.moveTo(durable.number, durable.hash);
    this.durable = { ...this.prev };
  }

  private async moveTo(number: bigint, hash: Uint8Array): Promise<void> {
    const headerRlp = await this.writer.headerRlp(hash);
    const td = await this.writer.totalDifficulty(hash);
    if (headerRlp === undefined || td === undefined) throw new Error(`block ${number} rows missing`);
    const fields = RLP.decode(headerRlp) as Uint8Array[];
    this.td = td;
    this.prev = { number, hash, timestamp: bytesToBigInt(fields[11] as Uint8Array) };
    // Block 0's header may carry an upstream's state root (anvil --init); the alloc's is the state.
    this.stateRoot = number === 0n ? this.genesisStateRoot : (fields[3] as Uint8Array);
    if (!this.writer.holdsState()) return; // no state held (yet): nothing to execute against
    await this.sm.setStateRoot(this.stateRoot);
    this.hashes.forgetAbove(number);
    this.vm = await createVM({
      common: this.common,
      stateManager: this.sm,
      blockchain: this.hashes.asBlockchain() as never,
      setHardfork: true,
    });
    await tuneVm(this.vm);
    loadKzgOnPointEvaluation(this.vm);
  }

  /**
   * The datadir joined its chain at a block above genesis: it holds history from there on and no
   * state of its own, so blocks come in by appendHistory only.
   */
  historyOnly(): boolean {
    return this.writer.firstBlock() > 0n && this.writer.anchorState() === undefined;
  }

  /**
   * A joined datadir's first-block state (`--join-state download`): `pending` until downloaded,
   * then `whole`; undefined for a history-only joined datadir and for one from genesis.
   */
  anchorState(): AnchorState | undefined {
    return this.writer.anchorState();
  }

  /** The state root of the head (block 0: the genesis alloc's). */
  headStateRoot(): Uint8Array {
    return this.stateRoot;
  }

  /** Where a download of the first block's state writes (joined/state-download.ts). */
  stateSink(): StateSink {
    const w = this.writer;
    return {
      node: (hash) => w.trieDb.getNodeSync(hash),
      hasCode: (hash) => w.hasCode(hash),
      write: (nodes, codes) => w.writeAnchorStateRows(nodes, codes),
    };
  }

  /** The first block's state is downloaded whole: marked so, and the state set to it for the next blocks. */
  async anchorStateWhole(): Promise<void> {
    await this.writer.completeAnchorState();
    await this.resetToDurable();
  }

  private requireState(): void {
    if (this.writer.anchorState() === 'pending')
      throw new ChainSourceError(
        `the datadir joined its chain at block ${this.firstBlock()} and is still downloading that block's state: blocks come in once it is whole`,
      );
    if (!this.writer.holdsState())
      throw new ChainSourceError(
        `the datadir joined its chain at block ${this.firstBlock()} and holds no state of its own: its blocks come in history-only (--start-block), not executed or replicated`,
      );
  }

  /** The first block the datadir holds. */
  firstBlock(): bigint {
    return this.writer.firstBlock();
  }

  /** The last block staged or written. */
  head(): PipelineHead {
    return this.prev;
  }

  /** The head of the last batch that landed. */
  durableHead(): PipelineHead {
    return this.durable;
  }

  /** Canonical hash at `n` as staged or stored: only valid with nothing staged above the durable head. */
  canonicalHash(n: bigint): Promise<Uint8Array | undefined> {
    return this.writer.canonicalHash(n);
  }

  stagedBlocks(): number {
    return this.writer.stagedBlocks();
  }

  stagedBytes(): number {
    return this.writer.stagedBytes();
  }

  /**
   * Verifies, executes and stages one block given as consensus RLP (`[header, txs, uncles,
   * withdrawals?]`). Its parent must be the current head (see ParentMismatch).
   */
  async append(raw: Uint8Array, decoded?: BlockBytes): Promise<CommittedBlock> {
    this.requireState();
    const values = decoded ?? (RLP.decode(raw) as unknown as BlockBytes);
    const headerValues = values[0] as unknown as Uint8Array[];
    const number = bytesToBigInt(headerValues[8] as Uint8Array);
    if (number !== this.prev.number + 1n)
      throw new Error(`pipeline: block ${number} does not follow ${this.prev.number}`);
    let block: Block;
    try {
      block = createBlockFromBytesArray(values, { common: this.common, setHardfork: true });
    } catch (err) {
      throw new BlockVerificationError(number, 'encoding', 'a decodable block', (err as Error).message);
    }
    check(number, 'parentHash', this.prev.hash, block.header.parentHash);
    await verifyStatic(block, values);
    let result: Awaited<ReturnType<typeof runBlock>>;
    const record = this.writer.keepsStateHistory();
    if (record) this.sm.begin();
    // The call frames and state changes of every transaction, for traces answered without re-execution.
    const frames =
      this.writer.recordsFrames() && block.transactions.length > 0 ? new BlockFrameRecorder(this.vm, block) : undefined;
    try {
      result = await runBlock(this.vm, {
        block,
        generate: true,
        skipBlockValidation: true,
        skipHeaderValidation: true,
        setHardfork: true,
      });
    } catch (err) {
      this.sm.abandon();
      this.writer.trieDb.rejectBlock();
      throw new BlockVerificationError(number, 'execution', 'a valid block', (err as Error).message);
    } finally {
      frames?.detach();
    }
    const stateWrites = record ? await this.sm.end() : undefined;
    try {
      const h = block.header;
      check(number, 'stateRoot', h.stateRoot, result.stateRoot);
      check(number, 'receiptsRoot', h.receiptTrie, result.receiptsRoot);
      check(number, 'logsBloom', h.logsBloom, result.logsBloom);
      check(number, 'gasUsed', h.gasUsed, result.gasUsed);
      if (h.requestsHash !== undefined) {
        if (result.requestsHash === undefined)
          throw new BlockVerificationError(number, 'requestsHash', hex(h.requestsHash), 'none');
        check(number, 'requestsHash', h.requestsHash, result.requestsHash);
      }
    } catch (err) {
      this.writer.trieDb.rejectBlock();
      throw err;
    }
    const hash = block.hash();
    const txHashes = block.transactions.map((tx) => tx.hash());
    return this.stage(
      {
        number,
        hash,
        headerRlp: RLP.encode(headerValues),
        body: {
          size: raw.length,
          transactions: block.transactions.map((tx) => tx.serialize()),
          uncles: (values[2] as unknown as Uint8Array[][]).map((u) => RLP.encode(u)),
          ...(values[3] !== undefined ? { withdrawals: values[3] as unknown as Uint8Array[][] } : {}),
        },
        totalDifficulty: this.td + block.header.difficulty,
        senders: block.transactions.map((tx) => tx.getSenderAddress().bytes),
        txHashes,
        receipts: receiptsOf(result, block),
        logs: result.receipts.map((r) => r.logs.map(([address, topics, data]) => ({ address, topics, data }))),
        logsBloom: result.logsBloom,
        stateWrites,
        frames: frames?.row(hash),
      },
      block.header.timestamp,
      block.header.stateRoot,
    );
  }

  /** The number of `b`, checked to follow the current head (number and parent hash). */
  private checkFollows(b: ReplicaBlock): bigint {
    const number = b.number;
    if (number !== this.prev.number + 1n)
      throw new Error(`pipeline: block ${number} does not follow ${this.prev.number}`);
    check(number, 'parentHash', this.prev.hash, b.parentHash);
    return number;
  }

  /**
   * Verifies one replicated block without executing it (replicate/block.ts: every root the header
   * commits to, then the state root of the node's own parent state plus the block's changes) and
   * stages it. Its parent must be the current head.
   */
  async appendReplica(b: ReplicaBlock, timings?: ReplicationTimings): Promise<CommittedBlock> {
    this.requireState();
    const number = this.checkFollows(b);
    const t0 = performance.now();
    const storageWithdrawalsRoot = withdrawalsRootIsStorageRoot(this.genesisJson, b.timestamp);
    await verifyBlockData(b, storageWithdrawalsRoot);
    const t1 = performance.now();
    const overlay = new StateOverlay(this.writer.trieDb, this.stateRoot);
    const stateWrites: StateWrites | undefined = this.writer.keepsStateHistory()
      ? { accounts: [], slots: [], storage: [] }
      : undefined;
    try {
      await b.changes(overlay);
      if (storageWithdrawalsRoot && b.header.withdrawalsRoot !== undefined)
        await claimWithdrawalsRoot(overlay, number, b.header.withdrawalsRoot);
      let root: Uint8Array;
      try {
        root = await overlay.commit(stateWrites);
      } catch (err) {
        if (err instanceof StateMismatch)
          throw new BlockVerificationError(number, err.field, err.upstream, err.computed, 'upstream');
        throw err;
      }
      if (!equalsBytes(root, b.header.stateRoot))
        throw new BlockVerificationError(number, 'stateRoot', hex(b.header.stateRoot), hex(root), 'upstream');
    } catch (err) {
      this.writer.trieDb.rejectBlock();
      throw err;
    }
    if (timings !== undefined) {
      timings.rootsMs += t1 - t0;
      timings.stateMs += performance.now() - t1;
      timings.blocks++;
      timings.gas += b.header.gasUsed;
    }
    return this.stage(
      { ...historyInput(b, this.td + b.header.difficulty), stateWrites },
      b.timestamp,
      b.header.stateRoot,
    );
  }

  /**
   * Verifies one block's data against its header (replicate/block.ts: header hash, transactions,
   * uncles, withdrawals and receipts roots, logs bloom, gas used) and its parent link to the head,
   * and stages it without state: a joined datadir's history (historyOnly). The header's state root
   * is trusted as far as the hash chain from the anchor reaches; state is proven on demand
   * against it.
   */
  async appendHistory(b: ReplicaBlock, timings?: ReplicationTimings): Promise<CommittedBlock> {
    this.checkFollows(b);
    const t0 = performance.now();
    await verifyBlockData(b, withdrawalsRootIsStorageRoot(this.genesisJson, b.timestamp));
    if (timings !== undefined) {
      timings.rootsMs += performance.now() - t0;
      timings.blocks++;
      timings.gas += b.header.gasUsed;
    }
    return this.stage(historyInput(b, this.td + b.header.difficulty), b.timestamp, b.header.stateRoot, true);
  }

  /** Stages a verified block into the writer's group and moves the head to it. */
  private stage(input: BlockInput, timestamp: bigint, stateRoot: Uint8Array, history = false): CommittedBlock {
    const { number, hash, txHashes, logs } = input;
    if (history) this.writer.addHistoryBlock(input);
    else this.writer.addBlock(input);
    this.td = input.totalDifficulty;
    this.stateRoot = stateRoot;
    this.hashes.remember(number, hash);
    this.prev = { number, hash, timestamp };
    const records: LogRecord[] = [];
    let logIndex = 0;
    logs.forEach((txLogs, transactionIndex) => {
      for (const l of txLogs) {
        records.push(
          logRecord(l, number, hash, timestamp, txHashes[transactionIndex] as Uint8Array, transactionIndex, logIndex++),
        );
      }
    });
    const committed: CommittedBlock = { number, hash, logs: records };
    this.added.push(committed);
    return committed;
  }

  /**
   * Stages the undo of every block above `ancestor` (which must be canonical and at most the
   * durable head). Anything staged is flushed first — it is verified and canonical until now.
   * The next flush writes the undo and the blocks appended after it as one batch.
   */
  async rewind(ancestor: bigint): Promise<void> {
    if (this.writer.stagedBlocks() > 0 || this.behind !== undefined) await this.flushOnly();
    const hash = await this.writer.canonicalHash(ancestor);
    if (hash === undefined) throw new Error(`rewind: no canonical block ${ancestor}`);
    let removed: Awaited<ReturnType<StoreWriter['rewind']>>;
    try {
      removed = await this.writer.rewind(ancestor);
    } catch (err) {
      // The fork point's state trie is pruned: as a reorg past the allowed depth, one line.
      if (err instanceof RewindBelowTrieWindowError) throw new ReorgTooDeepError(err.message);
      throw err;
    }
    this.removed.push(...removed);
    await this.moveTo(ancestor, hash);
  }

  private async flushOnly(): Promise<{ stats: FlushStats; commit: ChainCommit | undefined }> {
    const stats = await this.writer.flush();
    this.landBehind();
    const durable = this.writer.durableHead();
    if (durable === undefined) throw new Error('no head after flush');
    const commit = this.takeCommit(durable);
    if (commit !== undefined) this.pending.push(commit);
    this.durable = { ...this.prev };
    return { stats, commit };
  }

  /** The blocks added and removed since the last group as one commit with head `head` (undefined: none). */
  private takeCommit(head: { number: bigint; hash: Uint8Array }): ChainCommit | undefined {
    const commit =
      this.added.length > 0 || this.removed.length > 0
        ? { removed: this.removed, added: this.added, head: { number: head.number, hash: head.hash } }
        : undefined;
    this.added = [];
    this.removed = [];
    return commit;
  }

  /** Commits flushed but not yet taken by the caller (a rewind may flush on its own). */
  private pending: ChainCommit[] = [];

  /** The group flushBehind handed to the writer, not known to have landed: its commit and head. */
  private behind: { commit: ChainCommit | undefined; head: PipelineHead } | undefined;

  /** The group handed over by flushBehind has landed (the writer settled it): its commit is taken. */
  private landBehind(): void {
    const b = this.behind;
    if (b === undefined) return;
    this.behind = undefined;
    if (b.commit !== undefined) this.pending.push(b.commit);
    this.durable = b.head;
  }

  /** Whether a group handed over by flushBehind may not have landed yet (flush() settles it). */
  flying(): boolean {
    return this.behind !== undefined;
  }

  /**
   * Hands the staged group to the writer as one atomic batch and returns once LevelDB has it, not
   * once it has landed, so the next blocks are verified and staged while it is written. The
   * commits returned are those of the groups that have landed (all but this one); this one's
   * comes with the next flushBehind or flush, which settle it first. durableHead() moves as they
   * land. A rewind, and any read of canonical rows, needs flush() first.
   */
  async flushBehind(): Promise<{ stats: FlushStats; commits: ChainCommit[] }> {
    const stats = await this.writer.flushBehind(); // the group before this one has landed
    this.landBehind();
    const head = { ...this.prev };
    const commit = this.takeCommit(head);
    if (stats.blocks > 0 || commit !== undefined) this.behind = { commit, head };
    const commits = this.pending;
    this.pending = [];
    return { stats, commits };
  }

  /** Writes the staged group (undo included) as one atomic batch; returns its stats and the commits written. */
  async flush(): Promise<{ stats: FlushStats; commits: ChainCommit[] }> {
    const { stats } = await this.flushOnly();
    const commits = this.pending;
    this.pending = [];
    return { stats, commits };
  }

  /** Drops whatever is staged and not flushed (after a verification failure) and closes. */
  async close(): Promise<void> {
    await this.writer.close();
  }
}

/** The rows of a block whose data a ReplicaBlock carries (replicated or history-only). */
function historyInput(b: ReplicaBlock, totalDifficulty: bigint): BlockInput {
  return {
    number: b.number,
    hash: b.hash,
    headerRlp: b.headerRlp,
    body: {
      size: b.size,
      transactions: b.transactions.map((t) => t.bytes),
      uncles: b.uncles.map((u) => RLP.encode(u)),
      ...(b.withdrawals !== undefined ? { withdrawals: b.withdrawals } : {}),
    },
    totalDifficulty,
    senders: b.transactions.map((t) => t.sender),
    txHashes: b.transactions.map((t) => t.hash),
    receipts: b.receipts.map((r) => ({
      type: r.type,
      // Stored as the executor stores it: a failed status is one 0x00 byte (its consensus
      // encoding is the empty string).
      statusOrState: r.statusOrState.length === 0 ? Uint8Array.of(0) : r.statusOrState,
      cumulativeGasUsed: r.cumulativeGasUsed,
      ...(r.depositNonce !== undefined ? { depositNonce: r.depositNonce } : {}),
      ...(r.depositReceiptVersion !== undefined ? { depositReceiptVersion: r.depositReceiptVersion } : {}),
    })),
    logs: b.receipts.map((r) => r.logs),
    logsBloom: b.header.logsBloom,
  };
}

/** An empty datadir and no genesis.json to start it from. */
export class GenesisRequiredError extends Error {
  constructor(readonly datadir: string) {
    super(`datadir ${datadir} is empty: --genesis <genesis.json> is required to start it`);
    this.name = 'GenesisRequiredError';
  }
}

/** The block-0 hash `json` builds, computed in a throwaway in-memory state (alloc included). */
async function genesisHashOf(json: GethGenesis): Promise<Uint8Array> {
  const common = commonFromGenesis(json);
  const block = await buildGenesis(json, common);
  return block.hash();
}
