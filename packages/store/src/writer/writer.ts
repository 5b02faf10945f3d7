// The write side, used only by the ingest worker. Verified blocks are staged in memory and
// written by `flush()` as ONE LevelDB batch holding every table row, every trie node of the
// group and the head pointer (last). A crash before the batch lands leaves the previous head
// and nothing of the group; after it, the whole group.
import { RLP } from '@ethereumjs/rlp';
import { LogJsonWriter, bytesToBigInt, concatBytes, decodeHeader, logRecord, traceRowOf } from '@chainnode/core';
import type { LogRecord } from '@chainnode/core';
import { openDb } from '../db.js';
import type { Db } from '../db.js';
import { LogSegmentSealer, encodeLogBlock, readBlockLogs } from '../logs/index.js';
import {
  APPEARANCE_KIND,
  LogIndexKind,
  MetaKey,
  Prefix,
  SCHEMA_VERSION,
  appearanceId,
  blockExtras,
  codeNodeKey,
  encodeAddressLogsJson,
  headCodec,
  stageBody,
  tables,
  u64Codec,
} from '../schema/index.js';
import { postAppearances, removedAppearances } from '../appearances/stage.js';
import { FrameAppearanceWriter } from '../appearances/frames.js';
import type { HeadPointer, StoredBody, StoredReceipt } from '../schema/index.js';
import {
  TrieNodeDb,
  TriePruner,
  headerStateRoot,
  putStateTrie,
  pruneUnfinished,
  putTrieFrom,
  putTriePruned,
  readStateTrie,
  readTrieFrom,
  readTriePruned,
} from '../trie/index.js';
import type { PruneHost, PruneReport, StateTrieMode, TriePrunerOptions } from '../trie/index.js';
import { EMPTY_STATE_ROOT, LatestRows, hasLatest, stageStateStep } from '../history/index.js';
import type { HistoryStats, PendingLatest, StateStep, StateWrites } from '../history/index.js';
import { GroupBatch, Slab } from './group-batch.js';
import { ValueTable } from './value-table.js';
import { PartedBatch } from './parted-batch.js';

/** Bytes of a part of a downloaded first block's change set (completeAnchorState). */
const ANCHOR_STATE_PART_BYTES = 64 * 2 ** 20;

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
  /**
   * The block's recorded call frames (TxFrames rows, TRACE_ROW_TXS transactions each, in
   * order), their bloom (FrameBlooms), per transaction the addresses its frames name
   * (FrameAppearances), and its state changes (TxStateDiffs rows, cut as the frames), when its
   * import recorded them (the changes when it recorded those too).
   */
  frames?:
    | {
        rows: readonly Uint8Array[];
        bloom: Uint8Array;
        txAddresses: readonly (readonly Uint8Array[])[];
        changes?: readonly Uint8Array[] | undefined;
      }
    | undefined;
}

/** A block a rewind took off the canonical chain, with the logs it had. */
export interface RemovedBlock {
  number: bigint;
  hash: Uint8Array;
  logs: LogRecord[];
}

/** Meta.anchorState: a joined datadir's first-block state being downloaded, or whole. */
export type AnchorState = 'pending' | 'whole';

function parseAnchorState(raw: Uint8Array): AnchorState {
  const v = new TextDecoder().decode(raw);
  if (v !== 'pending' && v !== 'whole') throw new Error(`meta anchorState: unknown value ${JSON.stringify(v)}`);
  return v;
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
  /** With `stateRoot`: the state trie's retention (Meta.stateTrie, trie-window.ts); absent: archive. */
  stateTrie?: StateTrieMode;
}

export interface WriterOptions {
  /** Let worker threads of this process open the datadir too (classic-level multithreading). */
  shared?: boolean;
  /** Byte budget of the open posting chunks kept in memory between flushes. Default 256 MiB. */
  openChunkCacheBytes?: number;
  /** A datadir with a trie window (Meta.stateTrie): the pruner's progress report and tuning. */
  prune?: TriePrunerOptions | undefined;
  /** Bytes of each part a downloaded first block's change set is written in (default 64 MiB; tests make it small). */
  anchorStatePartBytes?: number | undefined;
  /**
   * Keep new branch nodes as deltas (node-delta.ts). Default true; false writes every node
   * whole, as earlier releases did (for comparisons: tests, benches).
   */
  trieDeltas?: boolean;
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
  /** The address-appearance index's posting lists (Appearances). */
  private appearances: ValueTable;
  /** The call-frame part of the address-appearance index (FrameAppearances). */
  private frameAppearances: FrameAppearanceWriter | undefined;
  private readonly cacheBytes: number;
  private readonly slab = new Slab();
  private flushes = 0;
  /** The batch handed to LevelDB and not yet landed (flushBehind). */
  private inFlight: Promise<void> | undefined;
  /** A seal of log segments running beside the next group (sealBehind); flush, rewind and close wait for it. */
  private sealing: Promise<void> | undefined;
  private failed: Error | undefined;
  private groupHead: HeadPointer | undefined;
  private groupStats = { blocks: 0, txs: 0, logs: 0 };
  private nextLogId = 0n;
  /** Meta.logsJsonFrom as this writer leaves it; `stored`: already in the database. */
  private logsJsonFrom: { value: bigint; stored: boolean } | undefined;
  /** Meta.traceFrames: the executing import records no call frames. */
  private framesOff = false;
  /** Meta.appearancesFrom as this writer leaves it; `stored`: already in the database. */
  private appearancesFrom: { value: bigint; stored: boolean } | undefined;
  private head: HeadPointer | undefined;
  private genesisHash: Uint8Array | undefined;
  private firstBlockNumber = 0n;
  /** Meta.anchorState of a joined datadir that downloads its first block's state (absent: proofs on demand). */
  private anchorStateValue: AnchorState | undefined;
  private segments!: LogSegmentSealer;
  /** A rewind is staged (it unseals log segments): no sealing until its batch has landed. */
  private rewound = false;
  /**
   * The flat state history (Meta.stateHistory present): the genesis state root, the state root of
   * the last block staged, and the staged blocks' state steps, whose change sets writeGroup stages.
   */
  /**
   * `latest`: the datadir keeps StateLatest rows (Meta.stateLatest), written with the history's;
   * `pending`: those a rewind staged into the current group, until it is written.
   */
  private history:
    | { genesisRoot: Uint8Array; lastRoot: Uint8Array; steps: StateStep[]; latest: boolean; pending: PendingLatest }
    | undefined;
  /** Meta.trieFrom as this writer keeps it: no rewind below it (set before the pruner persists it). */
  private trieFrom = 0n;
  /**
   * Opened after a pruning cycle was stopped before its sweep finished (a crash, a close): where
   * the first cycle's cadence counts from instead of trieFrom (the last finished cycle's start, 0
   * if none), so the first group landed starts one that deletes what the stopped cycle left.
   */
  private pruneResumeBase: bigint | undefined;
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
    this.appearances = new ValueTable(this.cacheBytes / 4, false, Prefix.Appearances);
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
    const anchorState = await tables.meta.get(this.db, MetaKey.AnchorState);
    if (anchorState !== undefined) this.anchorStateValue = parseAnchorState(anchorState);
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
    this.framesOff = (await tables.meta.get(this.db, MetaKey.TraceFrames)) !== undefined;
    // A datadir written before the Appearances table existed has it from its next block on.
    const appearancesFrom = await tables.meta.get(this.db, MetaKey.AppearancesFrom);
    this.appearancesFrom =
      appearancesFrom !== undefined
        ? { value: u64Codec.decode(appearancesFrom), stored: true }
        : { value: this.head === undefined ? 0n : this.head.number + 1n, stored: false };
    this.appearances = new ValueTable(this.cacheBytes / 4, this.head === undefined, Prefix.Appearances);
    this.frameAppearances = await FrameAppearanceWriter.open(this.db, this.cacheBytes / 16, this.head?.number);
    const genesisRoot = await tables.meta.get(this.db, MetaKey.StateHistory);
    if (genesisRoot !== undefined) {
      this.history = {
        genesisRoot,
        lastRoot: genesisRoot,
        steps: [],
        latest: await hasLatest(this.db),
        pending: new Map(),
      };
      if (this.head !== undefined) this.history.lastRoot = await this.stateRootOf(this.head.number, this.head.hash);
    }
    this.trieFrom = await readTrieFrom(this.db);
    const pruned = await readTriePruned(this.db);
    if (pruneUnfinished(this.trieFrom, pruned)) this.pruneResumeBase = pruned ?? 0n;
    await this.startPruner();
  }

  /**
   * The trie window's pruner, for a datadir with a window (readStateTrie: with state history) that
   * holds its own state (from genesis, or joined with its first block's state downloaded and its
   * history started): at open, when writeGenesis has made one, and when a download completes.
   */
  private async startPruner(): Promise<void> {
    const mode = await readStateTrie(this.db);
    const ownState = this.firstBlockNumber === 0n || (this.anchorStateValue === 'whole' && this.history !== undefined);
    if (mode.kind === 'window' && ownState && this.pruner === undefined)
      this.pruner = new TriePruner(this.pruneHost(), mode.blocks, {
        ...this.options.prune,
        firstBlock: this.firstBlockNumber,
      });
    // Deltas for a datadir that holds its own state (a joined one holds proven nodes only); the
    // window's pruner keeps the bases of the deltas it keeps (trie-prune.ts).
    this.trieDb.deltas = this.firstBlockNumber === 0n && this.options.trieDeltas !== false;
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
      persistPruned: async (from) => {
        const batch = this.db.batch();
        putTriePruned(batch, from);
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

  /** Whether the executing import records its blocks' call frames (Meta.traceFrames). */
  recordsFrames(): boolean {
    return !this.framesOff;
  }

  /** Records call frames from the next block on, or stops (`--trace-frames`); kept in the datadir. */
  async setRecordsFrames(on: boolean): Promise<void> {
    if (on === !this.framesOff) return;
    if (on) await this.db.del(tables.meta.key(MetaKey.TraceFrames));
    else await this.db.put(tables.meta.key(MetaKey.TraceFrames), Buffer.from('off', 'utf8'));
    this.framesOff = !on;
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
      tables.meta.put(ops, MetaKey.StateLatest, new Uint8Array(0));
      tables.meta.put(ops, MetaKey.HistoryIndex, new Uint8Array(0));
      // With the history the writer knows each block's parent root: its new nodes are deltas.
      if (this.options.trieDeltas !== false) tables.meta.put(ops, MetaKey.TrieDeltas, Buffer.from('all', 'utf8'));
      if (g.stateTrie !== undefined) putStateTrie(ops, g.stateTrie);
      this.history = {
        genesisRoot: g.stateRoot,
        lastRoot: EMPTY_STATE_ROOT,
        steps: [],
        latest: true,
        pending: new Map(),
      };
      this.stageStateStep(0n, g.stateRoot);
    }
    // Every node the genesis alloc wrote: block 0's header may name another state root (anvil's).
    this.stageBlock(g.block, false);
    await this.flush();
    this.genesisHash = g.block.hash;
    // A window (given here, or set before genesis) gets its pruner now, as at the next open.
    await this.startPruner();
  }

  /**
   * Starts an empty datadir at block N > 0 instead of genesis (a node joining its chain there):
   * the meta rows (the chain's genesis hash as its identity, config, genesis.json, first block N),
   * and block N's rows without state, as one batch. Rows of every table exist from N on only;
   * the state trie holds only what proven reads add later (ChainStore.addProvenState).
   */
  async writeAnchor(g: GenesisInput & { genesisHash: Uint8Array; downloadState?: boolean }): Promise<void> {
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
    if (g.downloadState === true) {
      tables.meta.put(ops, MetaKey.AnchorState, new TextEncoder().encode('pending'));
      if (g.stateTrie !== undefined) putStateTrie(ops, g.stateTrie);
      this.anchorStateValue = 'pending';
    }
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
   * A joined datadir's first-block state (Meta.anchorState): `pending` while it is downloaded,
   * `whole` once every node and code of it is written; undefined: state proven on demand (or a
   * datadir from genesis).
   */
  anchorState(): AnchorState | undefined {
    return this.anchorStateValue;
  }

  /** The datadir holds the whole state of its head: from genesis, or joined with its first block's state downloaded. */
  holdsState(): boolean {
    return this.firstBlockNumber === 0n || this.anchorStateValue === 'whole';
  }

  /** The code of this hash is stored: a resumed state download skips its fetch. */
  hasCode(codeHash: Uint8Array): boolean {
    return tables.trieNodes.getSync(this.db, codeNodeKey(codeHash)) !== undefined;
  }

  /**
   * Writes trie nodes and code of the first block's state (a download in progress: Meta.anchorState
   * `pending`), keyed by their own keccak as addProvenState keys them; the caller verified each
   * against the hash its parent names. Durable when the promise settles.
   */
  async writeAnchorStateRows(
    nodes: { hash: Uint8Array; bytes: Uint8Array }[],
    codes: { hash: Uint8Array; bytes: Uint8Array }[],
  ): Promise<void> {
    if (this.anchorStateValue !== 'pending')
      throw new Error('writeAnchorStateRows: no first-block state download pending');
    const batch = this.db.batch();
    for (const n of nodes) batch.put(tables.trieNodes.key(n.hash), n.bytes);
    for (const c of codes) batch.put(tables.trieNodes.key(codeNodeKey(c.hash)), c.bytes);
    await batch.write();
  }

  /**
   * Marks the first block's state whole (every node and code written): later blocks come with
   * state. In the same batch the flat state history starts (Meta.stateHistory: N's state root), its
   * first change set every account and slot of N's state at block N, as genesis's is at block 0.
   * That change set is as large as the state (~150 bytes a leaf with its latest row), so it is
   * written in parts (parted-batch.ts) with the meta rows that make it the history in the last:
   * a crash before then leaves the state pending and the next run writes it again. Then the trie
   * window's pruner starts (readers answer below the window from the history).
   */
  async completeAnchorState(): Promise<{ parts: number }> {
    if (this.anchorStateValue !== 'pending')
      throw new Error('completeAnchorState: no first-block state download pending');
    const head = this.head;
    if (head === undefined || head.number !== this.firstBlockNumber)
      throw new Error('completeAnchorState: the head is not the first block');
    const root = await this.stateRootOfHeader(head.hash);
    const latest = new LatestRows(this.alloc);
    const pending = new TextEncoder().encode('pending');
    const parts = new PartedBatch(
      this.db,
      this.options.anchorStatePartBytes ?? ANCHOR_STATE_PART_BYTES,
      (part) => latest.stageFirst(part),
      [tables.meta.key(MetaKey.AnchorState), pending],
    );
    const step: StateStep = { number: head.number, parentRoot: EMPTY_STATE_ROOT, root };
    await stageStateStep(parts, this.nodeSource, step, 'put', this.alloc, undefined, latest);
    await parts.finish((last) => {
      tables.meta.put(last, MetaKey.StateHistory, root);
      tables.meta.put(last, MetaKey.StateLatest, new Uint8Array(0));
      tables.meta.put(last, MetaKey.HistoryIndex, new Uint8Array(0));
      last.putLast(tables.meta.key(MetaKey.AnchorState), new TextEncoder().encode('whole'));
    });
    this.anchorStateValue = 'whole';
    this.history = { genesisRoot: root, lastRoot: root, steps: [], latest: true, pending: new Map() };
    await this.startPruner();
    return { parts: parts.parts };
  }

  /** The state root in the stored header of `hash`. */
  private async stateRootOfHeader(hash: Uint8Array): Promise<Uint8Array> {
    const rlp = await tables.headers.get(this.db, hash);
    if (rlp === undefined) throw new Error('header missing');
    return headerStateRoot(rlp);
  }

  /**
   * Stages a block whose data roots were verified and whose state this store does not hold (a
   * joined datadir's history): the same rows as addBlock, no trie nodes.
   */
  addHistoryBlock(b: BlockInput): void {
    this.requireNoHistory('addHistoryBlock');
    if (this.anchorStateValue !== undefined)
      throw new Error("addHistoryBlock: this datadir downloads its first block's state; add blocks with state");
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
    // whichever way the state was reached (executed, or replicated from a diff). Its new branch
    // nodes are kept as deltas against the parent's (node-delta.ts).
    this.trieDb.acceptBlock(reachableOnly ? header.stateRoot : undefined, this.history?.lastRoot);
    this.stageRows(b);
    this.stageLogsJson(b, header.timestamp);
  }

  /**
   * The ready-to-serve JSON of a block's logs (schema.ts, AddressLogsJson): one row per address
   * that emitted logs in the block.
   */
  private stageLogsJson(b: BlockInput, timestamp: bigint): void {
    const byAddress = new Map<string, { address: Uint8Array; logs: LogRecord[] }>();
    let logIndex = 0;
    b.logs.forEach((txLogs, transactionIndex) => {
      const transactionHash = b.txHashes[transactionIndex];
      if (transactionHash === undefined) throw new Error(`block ${b.number}: logs of unknown tx ${transactionIndex}`);
      for (const l of txLogs) {
        const record = logRecord(l, b.number, b.hash, timestamp, transactionHash, transactionIndex, logIndex++);
        const key = Buffer.from(l.address.buffer, l.address.byteOffset, l.address.byteLength).toString('latin1');
        let row = byAddress.get(key);
        if (row === undefined) byAddress.set(key, (row = { address: l.address, logs: [] }));
        row.logs.push(record);
      }
    });
    const writer = new LogJsonWriter();
    for (const row of byAddress.values()) {
      tables.addressLogsJson.stage(
        this.group,
        { address: row.address, number: b.number },
        encodeAddressLogsJson(row.logs, writer, this.alloc),
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
    stageBody(ops, b.hash, b.body, alloc);
    tables.receipts.stage(ops, b.hash, b.receipts, alloc);
    tables.totalDifficulty.stage(ops, b.hash, b.totalDifficulty, alloc);
    tables.senders.stage(ops, b.hash, b.senders, alloc);
    tables.blockTxHashes.stage(
      ops,
      b.number,
      { hashes: b.txHashes, extras: blockExtras(b.body, b.headerRlp, b.totalDifficulty) },
      alloc,
    );
    tables.blooms.stage(ops, b.number, b.logsBloom, alloc);
    if (b.frames !== undefined) {
      for (const [row, value] of b.frames.rows.entries())
        tables.txFrames.stage(ops, { number: b.number, row }, value, alloc);
      tables.frameBlooms.stage(ops, b.number, concatBytes(b.hash, b.frames.bloom), alloc);
      for (const [row, value] of (b.frames.changes ?? []).entries())
        tables.txStateDiffs.stage(ops, { number: b.number, row }, value, alloc);
    }
    for (let index = 0; index < b.txHashes.length; index++)
      tables.txLookupShort.stage(ops, b.txHashes[index] as Uint8Array, { number: b.number, index }, alloc);
    const appearing = { number: b.number, transactions: b.body.transactions, senders: b.senders, logs: b.logs };
    postAppearances(this.appearances, appearing);
    if (b.frames !== undefined)
      this.frameAppearances?.post(ops, { ...appearing, hash: b.hash }, b.frames.txAddresses, alloc);
    const firstLogId = this.nextLogId;
    // Log ids stay below 2^53 (one per log ever emitted), so they are counted as numbers here.
    let id = Number(firstLogId);
    let logIndex = 0;
    const logs: { txIndex: number; address: Uint8Array; topics: Uint8Array[]; data: Uint8Array }[] = [];
    b.logs.forEach((txLogs, txIndex) => {
      for (const l of txLogs) {
        logs.push({ txIndex, address: l.address, topics: l.topics, data: l.data });
        logIndex++;
        this.values.post(LogIndexKind.Address, l.address, id);
        for (let pos = 0; pos < l.topics.length && pos < 4; pos++)
          this.values.post(pos, l.topics[pos] as Uint8Array, id);
        id++;
      }
    });
    if (logs.length > 0) tables.logBlocks.stage(ops, firstLogId, encodeLogBlock(b.number, logs), alloc);
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
    const latest = h.latest ? new LatestRows(this.alloc) : undefined;
    for (const step of steps) await stageStateStep(ops, this.nodeSource, step, 'put', this.alloc, stats, latest);
    latest?.stage(ops, this.db, h.pending);
    h.pending.clear();
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
    await this.sealSettled(); // the rewind may unseal what a running seal writes
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
    const latest = this.history?.latest === true ? new LatestRows(this.alloc) : undefined;
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
        await stageStateStep(
          ops,
          this.nodeSource,
          { number: n, parentRoot, root },
          'del',
          this.alloc,
          undefined,
          latest,
        );
        parentRoot = root;
      }
      const logs: LogRecord[] = [];
      for (const row of await readBlockLogs(this.db, n, range)) {
        logs.push({
          address: row.address,
          topics: row.topics,
          data: row.data,
          blockNumber: n,
          blockHash: hash,
          blockTimestamp: timestamp,
          transactionHash: txHashes.hashes[row.txIndex] as Uint8Array,
          transactionIndex: row.txIndex,
          logIndex: row.logIndex,
        });
      }
      removed.push({ number: n, hash, logs });
      ops.del(tables.canonical.key(n));
      ops.del(tables.blockTxHashes.key(n));
      ops.del(tables.blooms.key(n));
      ops.del(tables.blockLogs.key(n));
      // The block's trace rows: one a block (an earlier release), else one per TRACE_ROW_TXS.
      for (const table of [tables.txFrames, tables.txStateDiffs]) {
        ops.del(table.key({ number: n }));
        for (let row = 0; row <= traceRowOf(Math.max(0, txHashes.hashes.length - 1)); row++)
          ops.del(table.key({ number: n, row }));
      }
      ops.del(tables.frameBlooms.key(n));
      for (const t of txHashes.hashes) {
        ops.del(tables.txLookupShort.key(t));
        ops.del(tables.txLookup.key(t)); // a row of an earlier release
      }
      if (range.count > 0) ops.del(tables.logBlocks.key(range.firstLogId));
      // A block an earlier release wrote (no LogBlocks row): its Logs rows.
      for (let id = range.firstLogId; id < range.firstLogId + BigInt(range.count); id++) ops.del(tables.logs.key(id));
      const rowsOf = new Map<string, Uint8Array>();
      for (const l of logs) rowsOf.set(Buffer.from(l.address).toString('hex'), l.address);
      for (const address of rowsOf.values()) ops.del(tables.addressLogsJson.key({ address, number: n }));
    }
    // The removed keys' latest rows: their changes at or below the ancestor.
    if (latest !== undefined && this.history !== undefined)
      await latest.restore(this.db, ops, ancestor, this.history.pending);
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
    for (const { kind, value } of touched.values())
      await this.values.cut(this.db, ops, kind, value, Number(cut), flush);
    // The appearances of the removed blocks' transactions, cut at the first removed block.
    const appearanceCut = appearanceId(ancestor + 1n, 0);
    for (const address of await removedAppearances(this.db, removed))
      await this.appearances.cut(this.db, ops, APPEARANCE_KIND, address, appearanceCut, flush);
    const numbers = removed.map((r) => r.number);
    await this.frameAppearances?.cut(this.db, ops, ancestor, numbers, flush);
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
    await this.sealSettled();
    await this.sealLogSegments();
    return stats;
  }

  /**
   * Starts sealing what the landed head allows, beside the group about to be written: the seal
   * reads rows SEAL_DEPTH below that head and writes its own batch (the segment's index, the
   * sealed rows' deletion), no key of which a new group writes. One at a time; a failure stops
   * the writer as a failed batch does.
   */
  private sealBehind(): void {
    if (this.sealing !== undefined) return;
    const p: Promise<void> = this.sealLogSegments().then(
      () => {
        if (this.sealing === p) this.sealing = undefined;
      },
      (err: unknown) => {
        if (this.sealing === p) this.sealing = undefined;
        this.failed ??= err instanceof Error ? err : new Error(String(err));
      },
    );
    this.sealing = p;
  }

  /** Waits for a seal started by sealBehind; rethrows a failure of the writer. */
  private async sealSettled(): Promise<void> {
    while (this.sealing !== undefined) await this.sealing;
    if (this.failed !== undefined) throw this.failed;
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
    this.sealBehind();
    const ops = this.group;
    const stats: FlushStats = { ...this.groupStats, trieNodes: 0, bytes: 0, historyBytes: 0 };
    const head = this.groupHead;
    if (head === undefined) return stats;
    const flush = ++this.flushes;
    await this.values.stage(this.db, ops, flush, this.alloc);
    await this.appearances.stage(this.db, ops, flush, this.alloc);
    await this.frameAppearances?.stage(this.db, ops, flush, this.alloc);
    stats.historyBytes = await this.stageStateHistory(ops);
    stats.trieNodes = this.trieDb.drainInto(ops);
    // A pruning delete filtered before this drain may name a node of this group: it lands first.
    if (this.pruneDelete !== undefined) await this.pruneDelete;
    const rowsFrom = this.logsJsonFrom;
    if (rowsFrom !== undefined && !rowsFrom.stored)
      tables.meta.put(ops, MetaKey.LogsJsonFrom, u64Codec.encode(rowsFrom.value));
    const appearancesFrom = this.appearancesFrom;
    if (appearancesFrom !== undefined && !appearancesFrom.stored)
      tables.meta.put(ops, MetaKey.AppearancesFrom, u64Codec.encode(appearancesFrom.value));
    ops.putLast(tables.meta.key(MetaKey.Head), headCodec.encode(head));
    stats.bytes = ops.bytes;
    this.group = new GroupBatch(this.db);
    this.groupHead = undefined;
    this.groupStats = { blocks: 0, txs: 0, logs: 0 };
    this.rewound = false; // the next seal comes after this batch has landed (settle())
    const landed = ops.write().then(
      () => {
        this.head = head;
        this.trieDb.landed();
        if (rowsFrom !== undefined && this.logsJsonFrom === rowsFrom) rowsFrom.stored = true;
        if (appearancesFrom !== undefined) appearancesFrom.stored = true;
        this.frameAppearances?.landed();
        // In this turn, before the next group drains: a cycle starting here watches every node after it.
        const from = this.pruner?.poke(head.number, this.pruneResumeBase ?? this.trieFrom);
        if (from !== undefined) this.pruneResumeBase = undefined;
        if (from !== undefined && from > this.trieFrom) this.trieFrom = from;
      },
      (err: unknown) => {
        // Nothing of the group landed, and what was staged after it assumed it would: stop.
        this.values.reset();
        this.appearances.reset();
        this.frameAppearances?.reset();
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
      while (this.sealing !== undefined) await this.sealing;
    } finally {
      await this.group.close(); // drops whatever was staged and not flushed
      await this.db.close();
    }
  }
}
