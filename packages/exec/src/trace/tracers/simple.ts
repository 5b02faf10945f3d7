// geth's 4byteTracer (the selectors and argument sizes of the calls made, precompiles aside),
// noopTracer (nothing: `{}`) and muxTracer (several tracers over one run, by name).
import { toData } from '@chainnode/core';
import type {
  FrameEnter,
  FrameExit,
  OpStep,
  StateView,
  TraceLog,
  Tracer,
  TxChanges,
  TxEnd,
  TxStart,
} from '../hooks.js';

export class FourByteTracer implements Tracer {
  private readonly ids = new Map<string, number>();
  private tx: TxStart | undefined;

  onTxStart(tx: TxStart): void {
    this.tx = tx;
  }

  onEnter(f: FrameEnter): void {
    if (f.input.length < 4) return;
    if (f.type !== 'CALL' && f.type !== 'CALLCODE' && f.type !== 'DELEGATECALL' && f.type !== 'STATICCALL') return;
    if (this.tx?.isPrecompile(f.to) === true) return;
    const key = `${toData(f.input.subarray(0, 4))}-${f.input.length - 4}`;
    this.ids.set(key, (this.ids.get(key) ?? 0) + 1);
  }

  result(): Record<string, number> {
    return Object.fromEntries(this.ids);
  }
}

export class NoopTracer implements Tracer {
  result(): Record<string, never> {
    return {};
  }
}

export class MuxTracer implements Tracer {
  readonly wantsOpcodes: boolean;
  readonly wantsLogs: boolean;
  readonly wantsSelfdestructs: boolean;
  readonly wantsStateOpcodes: boolean;
  /** Some tracer wants recorded changes, and every one that wants opcodes can be fed them. */
  readonly replaysChanges: boolean;

  constructor(private readonly tracers: [string, Tracer][]) {
    this.wantsOpcodes = tracers.some(([, t]) => t.wantsOpcodes === true);
    this.wantsLogs = tracers.some(([, t]) => t.wantsLogs === true);
    this.wantsSelfdestructs = tracers.some(([, t]) => t.wantsSelfdestructs === true);
    this.wantsStateOpcodes = tracers.some(([, t]) => t.wantsStateOpcodes === true);
    this.replaysChanges =
      tracers.some(([, t]) => t.replaysChanges === true) &&
      tracers.every(([, t]) => t.wantsOpcodes !== true || t.replaysChanges === true);
  }

  async onChanges(c: TxChanges): Promise<void> {
    for (const [, t] of this.tracers) await t.onChanges?.(c);
  }

  async onTxStart(tx: TxStart, state: StateView): Promise<void> {
    for (const [, t] of this.tracers) await t.onTxStart?.(tx, state);
  }

  onEnter(f: FrameEnter): void {
    for (const [, t] of this.tracers) t.onEnter?.(f);
  }

  onExit(f: FrameExit): void {
    for (const [, t] of this.tracers) t.onExit?.(f);
  }

  onOpcode(s: OpStep, state: StateView): Promise<void> | undefined {
    let pending: Promise<void> | undefined;
    for (const [, t] of this.tracers) {
      if (t.onOpcode === undefined) continue;
      // In order: a later tracer's step waits for an earlier one's state reads.
      pending =
        pending === undefined ? (t.onOpcode(s, state) ?? undefined) : pending.then(() => t.onOpcode?.(s, state));
    }
    return pending;
  }

  onOpcodeError(depth: number, error: string, cost?: bigint): void {
    for (const [, t] of this.tracers) t.onOpcodeError?.(depth, error, cost);
  }

  onLog(l: TraceLog): void {
    for (const [, t] of this.tracers) t.onLog?.(l);
  }

  async onTxEnd(r: TxEnd, state: StateView): Promise<void> {
    for (const [, t] of this.tracers) await t.onTxEnd?.(r, state);
  }

  result(): Record<string, unknown> {
    return Object.fromEntries(this.tracers.map(([name, t]) => [name, t.result()]));
  }
}
