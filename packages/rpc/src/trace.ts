// What the debug_trace* methods share: geth's TraceConfig decoder (the struct logger's options,
// `tracer`, `tracerConfig`, `timeout`), the trace engine of a store (packages/exec's TraceEngine
// on the executor of eth_call), the re-execution of a stored block on its parent's state, and
// geth's errors.
import { RpcError, ServerError, bytesEqual, transactionInput, toData } from '@chainnode/core';
import type { BlockRecord, Bytes, ChainStore, HeaderRecord, ReceiptRecord, TxRecord } from '@chainnode/core';
import type {
  AccountOverride,
  BlockOverrides,
  BlockStateBase,
  CallArgs,
  CallObserver,
  TraceBudget,
  TraceEngine,
  Tracer,
  TracerChoice,
} from '@chainnode/exec';
import { blockStateBase, executorOf, loadExec, runCall } from './call.js';
import type { HandlerContext } from './context.js';
import { INLINE_COST_LIMIT } from './config.js';
import { jsonType, ParamError } from './params.js';
import { belowTrieWindow } from './trie-window.js';

/** geth's TraceConfig, decoded. */
export interface TraceConfig extends TracerChoice {
  /** Most wall time of the trace, in ms (geth's `timeout`, a Go duration; default 5 s). */
  timeoutMs: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;

/** Tracing always leaves the event loop when offload workers exist: it re-executes a block. */
export const TRACE_COST = INLINE_COST_LIMIT * 10;

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };

/** Go's time.ParseDuration, in ms ("5s", "1m30s", "500ms"). */
export function parseDuration(s: string): number {
  const fail = (): never => {
    throw new ServerError(`time: invalid duration ${JSON.stringify(s)}`);
  };
  let rest = s;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') fail();
  let total = 0;
  while (rest !== '') {
    const m = /^(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)/.exec(rest);
    if (m === null || m[1] === '' || m[1] === '.') return fail();
    total += Number(m[1]) * (UNITS[m[2] as string] as number);
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}

function bool(o: Record<string, unknown>, name: string): boolean {
  const v = o[name];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new ParamError(`${name}: expected a boolean, got ${jsonType(v)}`);
  return v;
}

/** geth's TraceConfig (absent or null: the struct logger with its defaults). */
export function decodeTraceConfig(v: unknown): TraceConfig {
  const o = v === undefined || v === null ? {} : v;
  if (typeof o !== 'object' || Array.isArray(o))
    throw new ParamError(`trace config: expected an object, got ${jsonType(o)}`);
  const c = o as Record<string, unknown>;
  const limit = c.limit ?? 0;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit)) throw new ParamError('limit: expected an integer');
  if (c.tracer !== undefined && c.tracer !== null && typeof c.tracer !== 'string')
    throw new ParamError(`tracer: expected a string, got ${jsonType(c.tracer)}`);
  if (c.timeout !== undefined && c.timeout !== null && typeof c.timeout !== 'string')
    throw new ParamError(`timeout: expected a duration string, got ${jsonType(c.timeout)}`);
  const out: TraceConfig = {
    logger: {
      enableMemory: bool(c, 'enableMemory'),
      disableStack: bool(c, 'disableStack'),
      disableStorage: bool(c, 'disableStorage'),
      enableReturnData: bool(c, 'enableReturnData'),
      limit: Math.max(0, limit),
    },
    timeoutMs: typeof c.timeout === 'string' ? parseDuration(c.timeout) : DEFAULT_TIMEOUT_MS,
  };
  // geth: an empty tracer name is the struct logger.
  if (typeof c.tracer === 'string' && c.tracer !== '') out.tracer = c.tracer;
  if (c.tracerConfig !== undefined && c.tracerConfig !== null) out.tracerConfig = c.tracerConfig;
  return out;
}

const engines = new WeakMap<ChainStore, TraceEngine>();

/** The store's trace engine (on the executor eth_call uses), made on first use. */
export async function traceEngineOf(ctx: HandlerContext): Promise<TraceEngine> {
  let e = engines.get(ctx.store);
  if (e === undefined) {
    const { TraceEngine } = await loadExec();
    const store = ctx.store;
    e = new TraceEngine(await executorOf(ctx), store.stateReader(), (n) => store.canonicalHash(n));
    engines.set(store, e);
  }
  return e;
}

/** The state after block `header` for a re-execution: by block below the state trie's window. */
export function stateBaseOf(ctx: HandlerContext, header: HeaderRecord): BlockStateBase | undefined {
  return belowTrieWindow(ctx, header.number) ? blockStateBase(ctx, header) : undefined;
}

/** The deadline of a one-call trace: its timeout, and the call's own deadline (an offloaded call's). */
export function traceDeadline(ctx: HandlerContext, cfg: TraceConfig): number {
  const own = cfg.timeoutMs > 0 ? Date.now() + cfg.timeoutMs : Number.POSITIVE_INFINITY;
  return Math.min(own, ctx.deadline ?? Number.POSITIVE_INFINITY);
}

/**
 * The time a block's trace may take: `deadline` the whole call's (an offloaded call's own, a
 * Parity trace's budget), `txTimeoutMs` each traced transaction's from its start (geth's
 * `timeout`, which its block traces apply per transaction: a busy block is not refused for its
 * length, a transaction that runs past its timeout is).
 */
export interface TraceTime {
  deadline: number;
  txTimeoutMs?: number;
}

/** A block trace's time under `cfg`: each transaction its timeout, within the call's own deadline. */
export function traceTime(ctx: HandlerContext, cfg: TraceConfig): TraceTime {
  return { deadline: ctx.deadline ?? Number.POSITIVE_INFINITY, txTimeoutMs: cfg.timeoutMs };
}

export interface JsonTxTrace {
  txHash: string;
  result?: unknown;
  error?: string;
}

/**
 * Re-executes the stored block `hash` on its parent's state and traces its transactions (only
 * the one at `only` when given), with geth's errors.
 */
export async function traceStoredBlock(
  ctx: HandlerContext,
  header: HeaderRecord,
  cfg: TraceConfig,
  only?: number,
): Promise<{ hash: Bytes; result: unknown }[]> {
  const exec = await loadExec();
  const make = (budget: TraceBudget) => exec.makeTracer(cfg, budget);
  return replayStoredBlock(ctx, header, make, traceTime(ctx, cfg), only);
}

/** A stored block's RLP, its parent and its transactions' senders, with geth's errors. */
async function storedBlock(
  ctx: HandlerContext,
  header: HeaderRecord,
): Promise<{ raw: Bytes; parent: HeaderRecord; senders: Bytes[] }> {
  if (header.number === 0n) throw new ServerError('genesis is not traceable');
  const stored = await ctx.store.header(header.parentHash);
  if (stored === undefined) throw new ServerError(`parent ${toData(header.parentHash)} not found`);
  // The state the block ran on: the store's root of its parent (block 0's may be the alloc's, not the header's).
  const root = (await ctx.store.stateRoot?.(stored.hash)) ?? stored.stateRoot;
  const parent = root === stored.stateRoot ? stored : { ...stored, stateRoot: root };
  const raw = await ctx.store.rawBlock(header.hash);
  const block = await ctx.store.block(header.hash);
  if (raw === undefined || block === undefined) throw new ServerError(`block ${toData(header.hash)} not found`);
  return { raw, parent, senders: block.transactions.map((t) => t.from) };
}

/**
 * Traces a stored block with the tracers `make` gives (one per traced transaction): from the
 * frames its import recorded when it has them and the tracer needs nothing else, else by
 * re-executing it.
 */
export async function replayStoredBlock(
  ctx: HandlerContext,
  header: HeaderRecord,
  make: (budget: TraceBudget) => Tracer,
  time: TraceTime,
  only?: number,
  budget?: TraceBudget,
  pick?: TxPick,
): Promise<TracedTx[]> {
  const recorded = await recordedBlock(ctx, header, make, time, only, budget, pick);
  if (recorded !== undefined) return recorded;
  const { raw, parent, senders } = await storedBlock(ctx, header);
  return replayBlock(ctx, raw, parent, make, time, { senders, ...(only === undefined ? {} : { only }) }, budget);
}

/** One traced transaction of a block: its hash, its position, the tracer's answer. */
export interface TracedTx {
  hash: Bytes;
  index: number;
  result: unknown;
}

/**
 * Which transactions of a recorded block to trace, the others left out: those at `indexes` (each
 * read alone, from the row holding it), or those `mayHold` keeps (index, sender, the block's
 * TxFrames rows). A re-executed block traces all of them.
 */
export type TxPick =
  | { indexes: ReadonlySet<number> }
  | { mayHold: (index: number, sender: Bytes, rows: Bytes) => boolean };

/**
 * The traces of a stored block from its recorded frames (TxFrames) and, for a tracer fed them,
 * state changes (TxStateDiffs); undefined when the tracer wants what they do not hold (opcodes,
 * state beyond the changes). One transaction (`only`) or a few picked by position read the rows
 * holding theirs; the rest, the block's rows.
 */
async function recordedBlock(
  ctx: HandlerContext,
  header: HeaderRecord,
  make: (budget: TraceBudget) => Tracer,
  time: TraceTime,
  only: number | undefined,
  shared: TraceBudget | undefined,
  pick: TxPick | undefined,
): Promise<TracedTx[] | undefined> {
  if (ctx.store.txFrames === undefined || header.number === 0n) return undefined;
  const exec = await loadExec();
  const budget = shared ?? new exec.TraceBudget(ctx.config.traceMaxBytes);
  try {
    const first = make(budget);
    if (!exec.replayable(first)) return undefined;
    const withChanges = first.replaysChanges === true;
    const byIndex = pick !== undefined && 'indexes' in pick ? pick.indexes : undefined;
    const alone = only !== undefined || byIndex !== undefined;
    let whole: RecordedRows | undefined;
    const rowsOf = async (index: number): Promise<RecordedRows | undefined> => {
      if (whole !== undefined) return whole;
      if (alone) {
        const part = await recordedPart(ctx, header, withChanges, index);
        if (part !== undefined) return part;
      }
      whole = await recordedRows(ctx, header, time, withChanges, only);
      return whole;
    };
    const picked = alone ? await pickedAlone(ctx, header, only ?? [...(byIndex ?? [])]) : undefined;
    let txs: Iterable<TxToTrace>;
    if (picked !== undefined) txs = picked;
    else {
      const block = await ctx.store.block(header.hash);
      if (block === undefined) return undefined;
      txs = blockTxs(block, only, pick);
    }
    let receipts: Promise<ReceiptRecord[] | undefined> | undefined;
    const out: TracedTx[] = [];
    for (const tx of txs) {
      const i = tx.index;
      const rows = await rowsOf(i);
      if (rows === undefined) return undefined;
      if (pick !== undefined && 'mayHold' in pick && !pick.mayHold(i, tx.from, rows.frames)) continue;
      const tracer = make(budget);
      const fed = await exec.replayRecorded(
        rows.frames,
        {
          blockHash: header.hash,
          blockNumber: header.number,
          coinbase: header.coinbase,
          index: i,
          sender: tx.from,
          input: tx.input,
          receiptLogs: async () => {
            receipts ??= ctx.store.receipts(header.hash);
            return (await receipts)?.[i]?.logs ?? [];
          },
          ...(rows.changes === undefined
            ? {}
            : { changes: { row: rows.changes, code: (h: Bytes) => storedCode(ctx, h) } }),
        },
        tracer,
      );
      if (!fed) return undefined;
      out.push({ hash: tx.hash, index: i, result: tracer.result() });
    }
    return out;
  } catch (err) {
    throw mapTraceError(err, exec);
  }
}

/**
 * Transactions `indexes` (ascending) of block `header`, each read alone (transactionAt: its row of
 * the block's hashes, its encoding, its sender), without loading the block; undefined when the
 * store cannot, or one of them is not there (then the block is read).
 */
async function pickedAlone(
  ctx: HandlerContext,
  header: HeaderRecord,
  indexes: number | number[],
): Promise<TxToTrace[] | undefined> {
  if (ctx.store.transactionAt === undefined) return undefined;
  const out: TxToTrace[] = [];
  for (const index of typeof indexes === 'number' ? [indexes] : indexes.sort((a, b) => a - b)) {
    const found = await ctx.store.transactionAt(header.number, index);
    if (found === undefined || !bytesEqual(found.blockHash, header.hash)) return undefined;
    out.push({ index, from: found.tx.from, input: found.tx.input, hash: found.tx.hash });
  }
  return out;
}

/** What a trace from recorded rows needs of a transaction: its position, sender, data and hash. */
interface TxToTrace {
  index: number;
  from: Bytes;
  input: Bytes;
  hash: Bytes;
}

/**
 * The transactions of `block` to trace: the one at `only`, those `pick` names by position, or all;
 * each one's data read from its encoding alone (its other fields are not decoded).
 */
function* blockTxs(block: BlockRecord, only: number | undefined, pick: TxPick | undefined): Generator<TxToTrace> {
  const enc = block.transactionEncodings;
  const count = enc?.raw.length ?? block.transactions.length;
  const byIndex = pick !== undefined && 'indexes' in pick ? pick.indexes : undefined;
  for (let i = only ?? 0; i < (only === undefined ? count : Math.min(only + 1, count)); i++) {
    if (byIndex !== undefined && !byIndex.has(i)) continue;
    const raw = enc?.raw[i];
    const from = enc?.senders[i];
    const hash = block.transactionHashes?.[i];
    // The data read when the transaction is traced (a pick by its frames may leave it out first).
    if (raw !== undefined && from !== undefined && hash !== undefined)
      yield {
        index: i,
        from,
        hash,
        get input() {
          return transactionInput(raw);
        },
      };
    else {
      const tx = block.transactions[i] as TxRecord;
      yield { index: i, from: tx.from, input: tx.input, hash: tx.hash };
    }
  }
}

/**
 * The stored rows holding transaction `index`'s frames (and state changes when asked for);
 * undefined when the store has none of the block's.
 */
async function recordedPart(
  ctx: HandlerContext,
  header: HeaderRecord,
  withChanges: boolean,
  index: number,
): Promise<RecordedRows | undefined> {
  const frames = await ctx.store.txFrames?.(header.hash, index);
  if (frames === undefined) return undefined;
  if (!withChanges) return { frames };
  const changes = await ctx.store.txStateDiffs?.(header.hash, index);
  return changes === undefined ? undefined : { frames, changes };
}

/** A block's recorded rows: its frames, and its state changes when asked for. */
interface RecordedRows {
  frames: Bytes;
  changes?: Bytes | undefined;
}

/**
 * The stored rows of a block, or the rows computed by re-executing it when the store lacks one.
 * For one transaction (`only`) of a block without rows, only rows computed already: else the
 * caller re-executes the block up to that transaction, as geth does (computing a mainnet-sized
 * block's rows takes seconds, past the default trace timeout, where its first transactions take
 * milliseconds); a trace of the whole block computes them and keeps them.
 */
async function recordedRows(
  ctx: HandlerContext,
  header: HeaderRecord,
  time: TraceTime,
  withChanges: boolean,
  only: number | undefined,
): Promise<RecordedRows | undefined> {
  const frames = await ctx.store.txFrames?.(header.hash);
  const changes = withChanges ? await ctx.store.txStateDiffs?.(header.hash) : undefined;
  if (frames !== undefined && (!withChanges || changes !== undefined)) return { frames, changes };
  if (only !== undefined) return computed.get(ctx.store)?.peek(header.hash);
  return computedFrames(ctx, header, time);
}

/** Code by its hash from the store's code table. */
async function storedCode(ctx: HandlerContext, hash: Bytes): Promise<Bytes> {
  const code = await ctx.store.code(hash);
  if (code === undefined) throw new ServerError(`code ${toData(hash)} not found`);
  return code;
}

/**
 * Frames and state changes of blocks the store has none of (replicated or joined datadirs,
 * blocks imported with recording off or before state changes were recorded), recorded by
 * re-executing the whole block once, as the import records them, and kept in memory by block hash
 * (least recently used first out past COMPUTED_FRAMES_BYTES), so the block's later traces are
 * reads.
 */
const COMPUTED_FRAMES_BYTES = 64 * 2 ** 20;

type Computed = { frames: Bytes; changes: Bytes };

class ComputedFrames {
  private readonly rows = new Map<string, Computed>();
  private readonly running = new Map<string, Promise<Computed | undefined>>();
  private bytes = 0;

  /** The rows computed for block `hash`, if they are kept. */
  peek(hash: Bytes): Computed | undefined {
    return this.rows.get(toData(hash));
  }

  async get(hash: Bytes, compute: () => Promise<Computed | undefined>): Promise<Computed | undefined> {
    const key = toData(hash);
    const hit = this.rows.get(key);
    if (hit !== undefined) {
      this.rows.delete(key);
      this.rows.set(key, hit);
      return hit;
    }
    let run = this.running.get(key);
    if (run === undefined) {
      run = compute().finally(() => this.running.delete(key));
      this.running.set(key, run);
      const row = await run;
      if (row !== undefined) this.keep(key, row);
      return row;
    }
    return run;
  }

  private keep(key: string, row: Computed): void {
    this.rows.set(key, row);
    this.bytes += row.frames.length + row.changes.length;
    for (const [k, v] of this.rows) {
      if (this.bytes <= COMPUTED_FRAMES_BYTES) break;
      this.rows.delete(k);
      this.bytes -= v.frames.length + v.changes.length;
    }
  }
}

const computed = new WeakMap<ChainStore, ComputedFrames>();

async function computedFrames(
  ctx: HandlerContext,
  header: HeaderRecord,
  time: TraceTime,
): Promise<Computed | undefined> {
  let cache = computed.get(ctx.store);
  if (cache === undefined) computed.set(ctx.store, (cache = new ComputedFrames()));
  return cache.get(header.hash, async () => {
    const { raw, parent, senders } = await storedBlock(ctx, header);
    const engine = await traceEngineOf(ctx);
    const base = stateBaseOf(ctx, parent);
    return engine.recordBlock(raw, parent, { ...time, senders, ...(base === undefined ? {} : { base }) });
  });
}

/** Traces the block `raw` (its RLP) on the state after `parent`. */
export async function traceRawBlock(
  ctx: HandlerContext,
  raw: Bytes,
  parent: HeaderRecord,
  cfg: TraceConfig,
  opts: { senders?: Bytes[]; only?: number },
): Promise<{ hash: Bytes; result: unknown }[]> {
  const exec = await loadExec();
  return replayBlock(ctx, raw, parent, (budget) => exec.makeTracer(cfg, budget), traceTime(ctx, cfg), opts);
}

async function replayBlock(
  ctx: HandlerContext,
  raw: Bytes,
  parent: HeaderRecord,
  make: (budget: TraceBudget) => Tracer,
  time: TraceTime,
  opts: { senders?: Bytes[]; only?: number },
  shared?: TraceBudget,
): Promise<TracedTx[]> {
  const exec = await loadExec();
  const engine = await traceEngineOf(ctx);
  const budget = shared ?? new exec.TraceBudget(ctx.config.traceMaxBytes);
  const base = stateBaseOf(ctx, parent);
  try {
    // A tracer geth would refuse is refused before anything runs.
    make(budget);
    const traces = await engine.block(raw, parent, {
      tracerFor: () => make(budget),
      ...time,
      ...(base === undefined ? {} : { base }),
      ...(opts.senders === undefined ? {} : { senders: opts.senders }),
      ...(opts.only === undefined ? {} : { only: opts.only }),
    });
    return traces.map((t) => ({ hash: t.hash, index: t.index, result: t.result }));
  } catch (err) {
    throw mapTraceError(err, exec);
  }
}

/** Runs `call` as eth_call runs it on the state after `header` (with overrides), `tracer` bound to it. */
export async function runTracedCall(
  ctx: HandlerContext,
  header: HeaderRecord,
  call: CallArgs,
  tracer: Tracer,
  deadline: number,
  overrides: { state?: Map<string, AccountOverride> | undefined; block?: BlockOverrides | undefined },
): Promise<void> {
  const exec = await loadExec();
  const observe: CallObserver = (on, run) =>
    exec.traceTx(on.vm, on.state, on.tx, on.block, tracer, { logsBefore: 0, deadline }, run);
  const opts: Parameters<typeof runCall>[3] = { observe, deadline };
  if (overrides.state !== undefined) opts.state = overrides.state;
  if (overrides.block !== undefined) opts.block = overrides.block;
  await runCall(ctx, header, call, opts);
}

/** geth's errors for what a trace can hit. */
export function mapTraceError(err: unknown, exec: typeof import('@chainnode/exec')): unknown {
  if (err instanceof exec.ExecutionTimeout) return new ServerError('execution timeout');
  if (err instanceof exec.TraceTooLargeError) return new RpcError(-32003, err.message);
  if (err instanceof exec.TracerConfigError || err instanceof exec.TraceReplayError)
    return new ServerError(err.message);
  return err;
}

/** A block's traces as geth answers them: [{txHash, result}]. */
export function blockTraces(traces: { hash: Bytes; result: unknown }[]): JsonTxTrace[] {
  return traces.map((t) => ({ txHash: toData(t.hash), result: t.result }));
}

export const TRACE_CONFIG_PARAMS =
  "trace config (tracer, tracerConfig, timeout; the struct logger's enableMemory, disableStack, disableStorage, enableReturnData, limit)";

export const TRACE_ERRORS =
  "-32000 `genesis is not traceable`, `execution timeout`, geth's error for an unknown tracer (JavaScript tracers are refused); -32003 `response too large` past traceMaxBytes";
