// Traces by re-execution: a block's transactions run again on its parent's state (the store
// keeps state at every block), in order, after the block's system writes (EIP-4788, EIP-2935),
// each traced transaction with its own tracer; a call (debug_traceCall) runs through the
// executor of eth_call with a tracer bound to its VM.
import { createBlockFromRLP } from '@ethereumjs/block';
import type { Block } from '@ethereumjs/block';
import type { TypedTransaction } from '@ethereumjs/tx';
import { Address } from '@ethereumjs/util';
import { runTx } from '@ethereumjs/vm';
import type { RunTxResult, VM } from '@ethereumjs/vm';
import { MissingTrieNodeError } from '@chainnode/core';
import type { Bytes, HeaderRecord, SyncStateReader } from '@chainnode/core';
import type { Executor } from '../executor.js';
import { preExecution } from '../pre-execution.js';
import { createStoreVM } from '../store-vm.js';
import { ExecutionTimeout, StoreStateManager } from '../state.js';
import type { BlockStateBase } from '../state.js';
import { bindTracer, txStart } from './evm-events.js';
import { stateView } from './state-view.js';
import { BlockFrameRecorder } from './record/recorder.js';
import { joinRows } from './record/codec.js';
import { TraceTooLargeError, TracerConfigError } from './hooks.js';
import type { Tracer } from './hooks.js';

/** A block's transaction could not be run again (the stored block does not decode, or fails). */
export class TraceReplayError extends Error {}

export interface BlockTraceOptions {
  /** Trace only the transaction at this index (the block runs up to it); all when undefined. */
  only?: number;
  /** The tracer of the transaction at `index`. */
  tracerFor(index: number): Tracer;
  /** Date.now() past which the replay stops (ExecutionTimeout): the whole call's limit. */
  deadline: number;
  /**
   * Each traced transaction's own limit, in ms from its start (geth's `timeout`, which a block
   * trace applies per transaction); within `deadline`. None when undefined.
   */
  txTimeoutMs?: number;
  /** The parent's state by block (below the state trie's window), instead of its trie. */
  base?: BlockStateBase;
  /** The transactions' senders as stored (else recovered from their signatures). */
  senders?: Bytes[];
}

export interface TxTrace {
  index: number;
  hash: Bytes;
  result: unknown;
}

/** Runs `run` with `tracer` fed by `vm` for one transaction (start, frames, steps, end). */
export async function traceTx<R extends { totalGasSpent: bigint }>(
  vm: VM,
  sm: StoreStateManager,
  tx: TypedTransaction,
  block: Block,
  tracer: Tracer,
  opts: { logsBefore: number; deadline: number; gasLimit?: bigint },
  run: () => Promise<R>,
): Promise<R> {
  const state = stateView(sm);
  await tracer.onTxStart?.(txStart(vm, tx, block, opts.gasLimit ?? tx.gasLimit), state);
  const binding = bindTracer(vm, tracer, state, { ...opts, eip150: vm.common.gteHardfork('tangerineWhistle') });
  let r: R;
  try {
    r = await run();
  } finally {
    binding.detach();
  }
  binding.check();
  await tracer.onTxEnd?.({ gasUsed: r.totalGasSpent }, state);
  return r;
}

/** Why an OP-stack chain's transactions are not traced. */
export const OP_STACK_REFUSAL =
  'transactions of an OP-stack chain cannot be traced here: its blocks are replicated, and deposit transactions (type 0x7e) and the fee vaults are not executed';

/** Re-executes stored blocks and calls for the tracers. */
export class TraceEngine {
  constructor(
    private readonly executor: Executor,
    private readonly reader: SyncStateReader,
    private readonly hashOf: (number: bigint) => Promise<Bytes | undefined>,
  ) {}

  /** The block `raw` (its RLP) decoded under its rules, and a VM on the state after `parent`, its start run. */
  private async prepare(
    raw: Bytes,
    parent: HeaderRecord,
    opts: { deadline: number; base?: BlockStateBase },
  ): Promise<{ vm: VM; sm: StoreStateManager; block: Block }> {
    // The import refuses to execute an OP-stack chain (it is replicated): its blocks cannot be run
    // again either, deposits (type 0x7e) and fee vaults being outside this EVM's rules.
    if (this.executor.family === 'optimism') throw new TraceReplayError(OP_STACK_REFUSAL);
    const common = (await this.executor.chainCommon()).copy();
    let block: Block;
    try {
      block = createBlockFromRLP(raw, { common, setHardfork: true, freeze: false });
    } catch (err) {
      throw new TraceReplayError(`the stored block does not decode: ${(err as Error).message}`);
    }
    // The VM runs under the block's rules (the block holds a copy of the Common set to them).
    common.setHardfork(block.common.hardfork());
    const sm = new StoreStateManager(this.reader, parent.stateRoot);
    sm.reset(parent.stateRoot, opts.deadline, opts.base);
    const vm = await createStoreVM(common, sm, this.hashOf);
    await preExecution(sm, common, block);
    return { vm, sm, block };
  }

  /** Runs transactions 0..last of `block` in order, `traced(i)` around each (else run untraced). */
  private async runTxs(
    vm: VM,
    sm: StoreStateManager,
    block: Block,
    last: number,
    senders: Bytes[] | undefined,
    traced?: (i: number, tx: TypedTransaction, run: () => Promise<RunTxResult>, logs: number) => Promise<RunTxResult>,
  ): Promise<void> {
    let gasUsed = 0n;
    let logs = 0;
    for (let i = 0; i <= last && i < block.transactions.length; i++) {
      const tx = block.transactions[i] as TypedTransaction;
      const sender = senders?.[i];
      if (sender !== undefined) {
        const from = new Address(sender);
        (tx as unknown as { getSenderAddress: () => Address }).getSenderAddress = () => from;
      }
      sm.beginTransaction();
      const run = () => runTx(vm, { tx, block, blockGasUsed: gasUsed, skipHardForkValidation: true });
      let r: RunTxResult;
      try {
        r = traced !== undefined ? await traced(i, tx, run, logs) : await run();
      } catch (err) {
        if (!(err instanceof Error) || isTraceError(err)) throw err;
        throw new TraceReplayError(`transaction ${i} of the block failed again: ${err.message}`);
      }
      gasUsed += r.totalGasSpent;
      logs += r.receipt.logs.length;
    }
  }

  /** Traces the transactions of the block `raw` (its RLP) on the state after `parent`. */
  async block(raw: Bytes, parent: HeaderRecord, opts: BlockTraceOptions): Promise<TxTrace[]> {
    const { vm, sm, block } = await this.prepare(raw, parent, opts);
    const out: TxTrace[] = [];
    const last = opts.only ?? block.transactions.length - 1;
    await this.runTxs(vm, sm, block, last, opts.senders, async (i, tx, run, logs) => {
      if (opts.only !== undefined && opts.only !== i) return run();
      const tracer = opts.tracerFor(i);
      const deadline = txDeadline(opts);
      sm.setDeadline(deadline);
      try {
        const r = await traceTx(vm, sm, tx, block, tracer, { logsBefore: logs, deadline }, run);
        out.push({ index: i, hash: tx.hash(), result: tracer.result() });
        return r;
      } finally {
        sm.setDeadline(opts.deadline);
      }
    });
    return out;
  }

  /**
   * Runs the whole block `raw` on the state after `parent` recording its call frames and state
   * changes, as an executing import records them (record/): the TxFrames and TxStateDiffs rows of
   * a block the store has none of. Undefined when a transaction could not be recorded.
   */
  async recordBlock(
    raw: Bytes,
    parent: HeaderRecord,
    opts: { deadline: number; txTimeoutMs?: number; base?: BlockStateBase; senders?: Bytes[] },
  ): Promise<{ frames: Bytes; changes: Bytes } | undefined> {
    const { vm, sm, block } = await this.prepare(raw, parent, opts);
    const recorder = new BlockFrameRecorder(vm, block);
    try {
      // Every transaction is recorded: each runs under its own limit, as each would be traced.
      await this.runTxs(vm, sm, block, block.transactions.length - 1, opts.senders, (_i, _tx, run) => {
        sm.setDeadline(txDeadline(opts));
        return run();
      });
    } finally {
      recorder.detach();
    }
    const rows = recorder.row(block.hash());
    return rows === undefined ? undefined : { frames: joinRows(rows.rows), changes: joinRows(rows.changes) };
  }
}

/** The limit of a transaction starting now: its own timeout, within the call's deadline. */
function txDeadline(opts: { deadline: number; txTimeoutMs?: number }): number {
  const t = opts.txTimeoutMs;
  return t !== undefined && t > 0 ? Math.min(opts.deadline, Date.now() + t) : opts.deadline;
}

/** Errors of the trace itself (size, timeout, a missing node) pass through unchanged. */
function isTraceError(err: Error): boolean {
  return (
    err instanceof TraceTooLargeError ||
    err instanceof TracerConfigError ||
    err instanceof ExecutionTimeout ||
    err instanceof MissingTrieNodeError ||
    err instanceof TraceReplayError
  );
}
