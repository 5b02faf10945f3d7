// The trie window's pruner (trie-window.ts): mark-and-sweep in the background, as geth's offline
// pruner and Nethermind's full pruning do. Trie nodes are keyed by their hash and shared across
// blocks and across identical subtrees (two contracts with the same storage share one trie), so a
// node replaced at one block may still be referenced elsewhere; counting references on disk would
// cost the import a read-modify-write per node. Instead, a cycle at head h with a window of N:
//  1. a = h - N + 1, only when a is at least CADENCE blocks above Meta.trieFrom;
//  2. Meta.trieFrom = a is written before anything is deleted (and the writer refuses rewinds
//     below it at once), so no reader and no import ever trusts a root below it;
//  3. mark: every node reachable from the state roots of canonical blocks [a, h] (the account trie
//     and every account's storage trie), a shared subtree visited once;
//  4. sweep: the TrieNodes rows as of one iterator's snapshot, the unmarked ones deleted in chunks.
// Rows kept as deltas (node-delta.ts) are rebuilt by the mark for their children, and their
// chains of bases are kept too (`bases`). A delta the writer drains while a cycle runs (a new
// one, or a stored row re-put when a block reaches its node again) comes with its chain of bases
// into `written` (trie-db.ts drainInto): nothing a kept row needs is swept.
// Code rows ('c' ++ codeHash, in the same table) are kept forever: the flat state history reads
// code by hash at any block, and code is small beside the trie.
//
// The race: a block imported while a cycle runs may write (again) a node the mark found dead (a
// storage trie returning to an earlier shape). Every node the writer drains into a group while a
// cycle runs joins a second set (`written`), and each chunk's delete is filtered against it and
// issued through the writer (StoreWriter.deleteTrieNodes), which orders it with its group batches:
// a group drained after a chunk was filtered waits for that chunk's delete to land, so its puts
// come after. The marked and the written sets are kept apart: a node written during the mark must
// not stop the mark from walking the old subtree below the same hash.
//
// Why nothing else is at risk: a block imported during the cycle references only nodes it wrote
// (in `written`) or nodes of its parent's trie; by induction back to the head h (or to a fork
// point >= a, rewinds below trieFrom being refused), those are marked. The import's caches (the
// MPT's node cache, trie-db.ts's overlay) only give the bytes of a hash such a trie references;
// the overlay keeps a node unwritten only when the block did not write it, i.e. when it is a
// node of the parent's trie (TrieNodeDb.keepReachable), never because it was stored once.
//
// A crash anywhere leaves Meta.trieFrom and every node of the window: the next cycle marks again
// and sweeps what is left.
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP } from '@ethereumjs/util';
import type { Db } from '../db.js';
import { Prefix, tables } from '../schema/index.js';
import { deltaBase, isDelta, nodeBytes } from './node-delta.js';
import type { RawNodeGet } from './node-delta.js';
import { headerStateRoot } from './trie-read.js';
import type { Nested } from './trie-update.js';

/**
 * A set of 32-byte hashes, each kept as its first 16 bytes in an open-addressed table of
 * Uint32s (linear probing, grown at 70% load). Keccak hashes are uniform, so two distinct nodes
 * share 16 bytes with a chance of ~n^2 / 2^129: never, at any chain's size. Memory: 16 bytes a
 * slot at 35-70% load, so 23-46 bytes per hash: at most 46 MB per million live nodes (and the
 * old table while it doubles).
 */
export class HashSet {
  private words: Uint32Array;
  private mask: number;
  size = 0;

  constructor(expected = 1 << 16) {
    let slots = 1024;
    while (slots * 0.7 < expected) slots *= 2;
    this.words = new Uint32Array(slots * 4);
    this.mask = slots - 1;
  }

  /** Adds `hash` (32 bytes, or a view of them); true when it was not in the set. */
  add(hash: Uint8Array): boolean {
    if ((this.size + 1) / (this.mask + 1) > 0.7) this.grow();
    return this.insert(hash);
  }

  has(hash: Uint8Array): boolean {
    const w0 = word(hash, 0);
    const w1 = word(hash, 4);
    const w2 = word(hash, 8);
    const w3 = word(hash, 12) || 1;
    const words = this.words;
    for (let slot = w0 & this.mask; ; slot = (slot + 1) & this.mask) {
      const at = slot * 4;
      const s3 = words[at + 3] as number;
      if (s3 === 0) return false;
      if (s3 === w3 && words[at] === w0 && words[at + 1] === w1 && words[at + 2] === w2) return true;
    }
  }

  /** Bytes the table holds. */
  bytes(): number {
    return this.words.byteLength;
  }

  private insert(hash: Uint8Array): boolean {
    return this.insertWords(word(hash, 0), word(hash, 4), word(hash, 8), word(hash, 12) || 1);
  }

  /** w3 is never 0 (0 marks an empty slot; a hash whose word is 0 is kept as 1: same set). */
  private insertWords(w0: number, w1: number, w2: number, w3: number): boolean {
    const words = this.words;
    for (let slot = w0 & this.mask; ; slot = (slot + 1) & this.mask) {
      const at = slot * 4;
      const s3 = words[at + 3] as number;
      if (s3 === 0) {
        words[at] = w0;
        words[at + 1] = w1;
        words[at + 2] = w2;
        words[at + 3] = w3;
        this.size++;
        return true;
      }
      if (s3 === w3 && words[at] === w0 && words[at + 1] === w1 && words[at + 2] === w2) return false;
    }
  }

  private grow(): void {
    const old = this.words;
    this.words = new Uint32Array(old.length * 2);
    this.mask = this.mask * 2 + 1;
    this.size = 0;
    for (let at = 0; at < old.length; at += 4)
      if (old[at + 3] !== 0)
        this.insertWords(old[at] as number, old[at + 1] as number, old[at + 2] as number, old[at + 3] as number);
  }
}

function word(b: Uint8Array, i: number): number {
  return (
    ((b[i] as number) | ((b[i + 1] as number) << 8) | ((b[i + 2] as number) << 16) | ((b[i + 3] as number) << 24)) >>> 0
  );
}

/** A node reachable from the window's roots is missing: the cycle stops before deleting anything. */
export class PruneMissingNodeError extends Error {}

/** The cycle was stopped (the writer closes). */
class Stopped extends Error {}

/** A hash to visit, and whether it is a node of the account trie (its leaves name storage tries). */
interface Visit {
  hash: Uint8Array;
  accounts: boolean;
}

/**
 * Pushes the hashes a node references (its children stored by hash; embedded children are
 * walked in place; an account leaf's storage root) onto `out`.
 */
export function pushChildren(node: Nested, accounts: boolean, out: Visit[]): void {
  const stack: Nested[] = [node];
  while (stack.length > 0) {
    const n = stack.pop() as Nested;
    if (!Array.isArray(n)) continue;
    if (n.length === 17) {
      for (let i = 0; i < 16; i++) pushRef(n[i] as Nested, accounts, out, stack);
    } else if (n.length === 2) {
      const path = n[0] as Uint8Array;
      const isLeaf = (path[0] as number) >> 4 >= 2;
      if (!isLeaf) pushRef(n[1] as Nested, accounts, out, stack);
      else if (accounts) {
        // An account leaf: [nonce, balance, storageRoot, codeHash]; its storage trie follows.
        const account = RLP.decode(n[1] as Uint8Array) as Nested;
        if (Array.isArray(account) && account.length === 4) {
          const root = account[2] as Uint8Array;
          if (root.length === 32 && !Buffer.from(root).equals(EMPTY_ROOT)) out.push({ hash: root, accounts: false });
        }
      }
    }
  }
}

function pushRef(ref: Nested, accounts: boolean, out: Visit[], embedded: Nested[]): void {
  if (Array.isArray(ref)) embedded.push(ref);
  else if (ref.length === 32) out.push({ hash: ref, accounts });
}

const EMPTY_ROOT = Buffer.from(KECCAK256_RLP);
/** Nodes fetched per LevelDB getMany in the mark (then the import gets a turn). */
const MARK_BATCH = 512;
/** TrieNodes keys read per sweep chunk (one delete batch each, through the writer). */
const SWEEP_CHUNK = 4096;
const TRIE_KEY_LENGTH = 33; // prefix ++ node hash; code rows are prefix ++ 'c' ++ hash (34)

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** What the pruner needs of the writer (StoreWriter implements it). */
export interface PruneHost {
  readonly db: Db;
  /** Every node the writer drains into a group from now on is passed to `watch` (undefined: stop). */
  watchTrieNodes(watch: ((hash: Uint8Array) => void) | undefined): void;
  /** Persists Meta.trieFrom (the writer already refuses rewinds below it: setTrieFrom). */
  persistTrieFrom(from: bigint): Promise<void>;
  /** Persists Meta.triePruned: the cycle that started at `from` has swept every node it had to. */
  persistPruned(from: bigint): Promise<void>;
  /** Deletes the TrieNodes rows of `keys` whose hash `keep` does not claim, ordered with the group batches. */
  deleteTrieNodes(keys: Uint8Array[], keep: (hash: Uint8Array) => boolean): Promise<number>;
}

/** Figures of one cycle, also reported while it runs (phase 'mark', 'sweep'). */
export interface PruneReport {
  phase: 'mark' | 'sweep' | 'done' | 'failed' | 'stopped';
  /** The window: blocks [from, head]. */
  from: bigint;
  head: bigint;
  /** Nodes reached from the window's roots. */
  marked: number;
  /** Nodes written by the import while the cycle ran (kept). */
  written: number;
  /** TrieNodes rows looked at, and deleted. */
  scanned: number;
  deleted: number;
  seconds: number;
  /** Bytes of the two hash sets. */
  setBytes: number;
  error?: string;
}

/** max(16, N/8) blocks: a window of 90,000 prunes every 11,250 blocks, one of 128 every 16. */
export function pruneCadence(window: number): bigint {
  return BigInt(Math.max(16, Math.floor(window / 8)));
}

export interface TriePrunerOptions {
  /** Progress and the figures of each cycle. */
  onReport?: ((r: PruneReport) => void) | undefined;
  /** Blocks the window start must advance before a cycle (default pruneCadence(window)). */
  cadence?: bigint | undefined;
  /** Nodes fetched per read of the mark (default 512) and keys per delete of the sweep (default 4096). */
  markBatch?: number | undefined;
  sweepChunk?: number | undefined;
  /**
   * The datadir's first block (a joined one's N): while the window reaches below it, every node
   * held is the window's and no cycle runs (default 0).
   */
  firstBlock?: bigint | undefined;
}

/**
 * Runs pruning cycles for a writer in the background. `poke(head, trieFrom)` after each landed
 * group starts a cycle when the window's start has moved a cadence past trieFrom, and at least
 * as many blocks as the import added while the last cycle ran: a mark walks the whole state of
 * the window, so on a large state with a small window cycles would otherwise follow each other
 * without a pause and take a core from the import for good; paced so, pruning runs at most about
 * half of the time. `runNow` runs one at once (tests, upkeep); `close` stops a running cycle
 * between two steps.
 */
export class TriePruner {
  private running: Promise<PruneReport> | undefined;
  private stopped = false;
  private readonly cadence: bigint;
  /** The head when the running (or last) cycle started, the last head poked, the last cycle's span. */
  private cycleHead = 0n;
  private lastHead = 0n;
  private lastSpan = 0n;

  constructor(
    private readonly host: PruneHost,
    readonly window: number,
    private readonly opts: TriePrunerOptions = {},
  ) {
    this.cadence = opts.cadence ?? pruneCadence(window);
  }

  /** The window's start at head `head` (0 while the chain held, from its first block, is shorter than the window). */
  windowStart(head: bigint): bigint {
    const a = head - BigInt(this.window) + 1n;
    return a > (this.opts.firstBlock ?? 0n) ? a : 0n;
  }

  /**
   * Called by the writer with the durable head, synchronously after a group landed: returns the
   * new trieFrom when a cycle starts (the writer refuses rewinds below it from then on).
   */
  poke(head: bigint, trieFrom: bigint): bigint | undefined {
    this.lastHead = head;
    if (this.running !== undefined || this.stopped) return undefined;
    const a = this.windowStart(head);
    let span = this.cadence; // bigints: Math.max does not take them
    if (this.lastSpan > span) span = this.lastSpan;
    if (a < trieFrom + span) return undefined;
    this.start(head, a);
    return a;
  }

  /** Waits for a running cycle, then runs one at `head` whatever the cadence (if the window moved at all). */
  async runNow(head: bigint, trieFrom: bigint): Promise<PruneReport | undefined> {
    await this.idle();
    const a = this.windowStart(head);
    if (this.stopped || a === 0n || a < trieFrom) return undefined;
    return this.start(head, a);
  }

  /** Resolves when no cycle runs. */
  async idle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  /** Stops a running cycle (between two steps) and starts no other. */
  async close(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  private start(head: bigint, from: bigint): Promise<PruneReport> {
    this.cycleHead = head;
    this.lastHead = head;
    const p = this.cycle(head, from).finally(() => {
      this.running = undefined;
      this.lastSpan = this.lastHead - this.cycleHead;
    });
    this.running = p;
    return p;
  }

  private async cycle(head: bigint, from: bigint): Promise<PruneReport> {
    const t0 = performance.now();
    const marked = new HashSet();
    const written = new HashSet(1024);
    const r: PruneReport = {
      phase: 'mark',
      from,
      head,
      marked: 0,
      written: 0,
      scanned: 0,
      deleted: 0,
      seconds: 0,
      setBytes: 0,
    };
    const report = (phase: PruneReport['phase']) => {
      r.phase = phase;
      r.marked = marked.size;
      r.written = written.size;
      r.seconds = (performance.now() - t0) / 1000;
      r.setBytes = marked.bytes() + written.bytes();
      this.opts.onReport?.({ ...r });
    };
    // Watching starts in the same turn the group with `head` landed: no node drained after it is missed.
    this.host.watchTrieNodes((h) => written.add(h));
    try {
      await this.host.persistTrieFrom(from);
      // The rows the marked deltas are built on (node-delta.ts): kept, though no window root reaches them.
      const bases = new HashSet(1024);
      await this.mark(await windowRoots(this.host.db, from, head), marked, bases, () => report('mark'));
      r.marked = marked.size;
      await this.sweep(marked, bases, written, r, () => report('sweep'));
      await this.host.persistPruned(from);
      report('done');
    } catch (err) {
      r.error = err instanceof Error ? err.message : String(err);
      report(err instanceof Stopped ? 'stopped' : 'failed');
    } finally {
      this.host.watchTrieNodes(undefined);
    }
    return r;
  }

  private check(): void {
    if (this.stopped) throw new Stopped('pruning stopped');
  }

  /**
   * Marks every node reachable from `roots`, fetching MARK_BATCH nodes at a time; a marked row
   * that is a delta is rebuilt for its children, and its chain of bases goes into `bases`.
   */
  private async mark(roots: Uint8Array[], marked: HashSet, bases: HashSet, progress: () => void): Promise<void> {
    const raw: RawNodeGet = (hash) => tables.trieNodes.getSync(this.host.db, hash);
    const todo: Visit[] = roots.map((hash) => ({ hash, accounts: true }));
    const size = this.opts.markBatch ?? MARK_BATCH;
    while (todo.length > 0) {
      this.check();
      const batch: Visit[] = [];
      while (batch.length < size && todo.length > 0) {
        const v = todo.pop() as Visit;
        if (!Buffer.from(v.hash).equals(EMPTY_ROOT) && marked.add(v.hash)) batch.push(v);
      }
      if (batch.length === 0) continue;
      const nodes = await tables.trieNodes.getMany(
        this.host.db,
        batch.map((v) => v.hash),
      );
      for (let i = 0; i < batch.length; i++) {
        const v = batch[i] as Visit;
        const bytes = nodes[i];
        if (bytes === undefined)
          throw new PruneMissingNodeError(
            `pruning: trie node ${Buffer.from(v.hash).toString('hex')} of the window is missing; nothing deleted`,
          );
        if (isDelta(bytes)) {
          for (let row: Uint8Array | undefined = bytes; row !== undefined && isDelta(row); ) {
            const base = deltaBase(row);
            bases.add(base);
            row = raw(base);
          }
          pushChildren(RLP.decode(nodeBytes(bytes, raw)) as Nested, v.accounts, todo);
        } else pushChildren(RLP.decode(bytes) as Nested, v.accounts, todo);
      }
      progress();
      await turn();
    }
  }

  /** Deletes the TrieNodes rows neither marked, a marked delta's base nor written, SWEEP_CHUNK keys at a time. */
  private async sweep(
    marked: HashSet,
    bases: HashSet,
    written: HashSet,
    r: PruneReport,
    progress: () => void,
  ): Promise<void> {
    const it = this.host.db.keys({ gt: Uint8Array.of(Prefix.TrieNodes), lt: Uint8Array.of(Prefix.TrieNodes + 1) });
    const keep = (h: Uint8Array) => written.has(h);
    try {
      for (;;) {
        this.check();
        const keys = await it.nextv(this.opts.sweepChunk ?? SWEEP_CHUNK);
        if (keys.length === 0) break;
        r.scanned += keys.length;
        const dead = keys.filter(
          (k) => k.length === TRIE_KEY_LENGTH && !marked.has(k.subarray(1)) && !bases.has(k.subarray(1)),
        );
        if (dead.length > 0) r.deleted += await this.host.deleteTrieNodes(dead, keep);
        progress();
        await turn();
      }
    } finally {
      await it.close();
    }
  }
}

/** The state roots of the canonical blocks [from, head]. */
async function windowRoots(db: Db, from: bigint, head: bigint): Promise<Uint8Array[]> {
  const roots: Uint8Array[] = [];
  for (let n = from; n <= head; n++) {
    const hash = await tables.canonical.get(db, n);
    const header = hash === undefined ? undefined : await tables.headers.get(db, hash);
    if (header === undefined) throw new Error(`pruning: block ${n} of the window is missing`);
    roots.push(headerStateRoot(header));
  }
  return roots;
}
