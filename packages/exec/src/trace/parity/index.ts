// Parity-style traces (the trace_* methods) from the events geth's tracers are fed: a
// transaction's flat trace (flat.ts), its state diff (state-diff.ts) and a block's rewards
// (rewards.ts). ParityTracer is one transaction's TraceResults (trace_replay*, trace_call…).
import type { Bytes } from '@chainnode/core';
import { toData } from '@chainnode/core';
import type { TraceBudget, Tracer } from '../hooks.js';
import { MuxTracer } from '../tracers/simple.js';
import { FlatTracer } from './flat.js';
import type { JsonFlatTrace } from './flat.js';
import { StateDiffTracer } from './state-diff.js';
import type { JsonAccountDiff } from './state-diff.js';

export { FlatTracer, parityError } from './flat.js';
export type {
  JsonCallAction,
  JsonCreateAction,
  JsonFlatTrace,
  JsonRewardAction,
  JsonSuicideAction,
  JsonTraceResult,
} from './flat.js';
export { StateDiffTracer } from './state-diff.js';
export type { JsonAccountDiff, JsonDelta } from './state-diff.js';
export { blockRewardTraces, rewardTraces } from './rewards.js';
export type { RewardBlock } from './rewards.js';
export { rawTxCallArgs } from './raw-tx.js';

/** The trace types of trace_replay* and trace_call this node serves. */
export interface ParityTraceTypes {
  trace: boolean;
  stateDiff: boolean;
}

/** reth's TraceResults of one transaction. */
export type JsonTraceResults = {
  output: string;
  stateDiff: Record<string, JsonAccountDiff> | null;
  trace: JsonFlatTrace[];
  vmTrace: null;
};

/** One transaction's TraceResults: its output, and its flat trace and state diff when asked for. */
export class ParityTracer extends MuxTracer {
  private readonly flat: FlatTracer;
  private readonly diff: StateDiffTracer | undefined;

  constructor(
    private readonly types: ParityTraceTypes,
    budget: TraceBudget,
  ) {
    const flat = new FlatTracer(budget);
    const diff = types.stateDiff ? new StateDiffTracer(budget) : undefined;
    const tracers: [string, Tracer][] = [['trace', flat]];
    if (diff !== undefined) tracers.push(['stateDiff', diff]);
    super(tracers);
    this.flat = flat;
    this.diff = diff;
  }

  /** The transaction's output (the top frame's return or revert data). */
  output(): Bytes {
    return this.flat.output();
  }

  override result(): JsonTraceResults {
    return {
      output: toData(this.flat.output()),
      stateDiff: this.diff?.result() ?? null,
      trace: this.types.trace ? this.flat.result() : [],
      vmTrace: null,
    };
  }
}
