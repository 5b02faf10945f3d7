// geth's callTracer (eth/tracers/native/call.go): the tree of call frames, with `onlyTopCall`
// (the transaction's own frame only) and `withLog` (each frame's logs, with their position
// among its calls; a failed frame's logs and those of its callees are dropped).
import { revertReason, toData, toQuantity } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { FrameEnter, FrameExit, TraceBudget, TraceLog, Tracer, TxEnd, TxStart } from '../hooks.js';

export interface CallTracerConfig {
  onlyTopCall: boolean;
  withLog: boolean;
}

export interface JsonCallLog {
  address: string;
  topics: string[];
  data: string;
  index: string;
  position: string;
}

export interface JsonCallFrame {
  type: string;
  from: string;
  gas: string;
  gasUsed: string;
  to?: string;
  input: string;
  output?: string;
  error?: string;
  revertReason?: string;
  calls?: JsonCallFrame[];
  logs?: JsonCallLog[];
  value?: string;
}

interface Frame {
  type: string;
  from: Bytes;
  to: Bytes | undefined;
  input: Bytes;
  gas: bigint;
  gasUsed: bigint;
  value: bigint | undefined;
  output?: Bytes;
  error?: string;
  revertReason?: string;
  calls: Frame[];
  logs: TraceLog[];
  positions: number[];
}

/** Bytes of JSON per frame beyond its input and output (addresses, gas, type). */
const FRAME_BYTES = 200;

export class CallTracer implements Tracer {
  readonly wantsLogs: boolean;
  readonly wantsSelfdestructs: boolean;
  private readonly stack: Frame[] = [];
  private gasLimit = 0n;
  private depth = 0;

  constructor(
    private readonly cfg: CallTracerConfig,
    private readonly budget: TraceBudget,
  ) {
    this.wantsLogs = cfg.withLog;
    this.wantsSelfdestructs = !cfg.onlyTopCall;
  }

  onTxStart(tx: TxStart): void {
    this.gasLimit = tx.gasLimit;
  }

  onEnter(f: FrameEnter): void {
    this.depth = f.depth;
    if (this.cfg.onlyTopCall && f.depth > 0) return;
    this.budget.spend(FRAME_BYTES + 2 * f.input.length);
    this.stack.push({
      type: f.type,
      from: f.from,
      to: f.to,
      input: f.input,
      gas: f.depth === 0 ? this.gasLimit : f.gas,
      gasUsed: 0n,
      value: f.value,
      calls: [],
      logs: [],
      positions: [],
    });
  }

  onExit(f: FrameExit): void {
    if (f.depth === 0) {
      if (this.stack.length === 1) process(this.stack[0] as Frame, f);
      return;
    }
    this.depth = f.depth - 1;
    if (this.cfg.onlyTopCall || this.stack.length <= 1) return;
    const call = this.stack.pop() as Frame;
    call.gasUsed = f.gasUsed;
    process(call, f);
    this.budget.spend(2 * (call.output?.length ?? 0));
    (this.stack[this.stack.length - 1] as Frame).calls.push(call);
  }

  onLog(l: TraceLog): void {
    if (this.cfg.onlyTopCall && this.depth > 0) return;
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) return;
    this.budget.spend(120 + 67 * l.topics.length + 2 * l.data.length);
    top.logs.push(l);
    top.positions.push(top.calls.length);
  }

  onTxEnd(r: TxEnd): void {
    const top = this.stack[0];
    if (top === undefined) return;
    top.gasUsed = r.gasUsed;
    if (this.cfg.withLog) clearFailedLogs(top, false);
  }

  result(): JsonCallFrame {
    if (this.stack.length !== 1) throw new Error('incorrect number of top-level calls');
    return json(this.stack[0] as Frame);
  }
}

/** geth's processOutput: the output, or the error (and a creation's address dropped). */
function process(frame: Frame, f: FrameExit): void {
  if (f.error === undefined || !f.reverted) {
    frame.output = f.output;
    return;
  }
  frame.error = f.error;
  if (frame.type === 'CREATE' || frame.type === 'CREATE2') frame.to = undefined;
  if (f.error !== 'execution reverted' || f.output.length === 0) return;
  frame.output = f.output;
  if (f.output.length < 4) return;
  const reason = revertReason(f.output);
  if (reason !== undefined) frame.revertReason = reason;
}

function clearFailedLogs(f: Frame, parentFailed: boolean): void {
  const failed = f.error !== undefined || parentFailed;
  if (failed) {
    f.logs = [];
    f.positions = [];
  }
  for (const c of f.calls) clearFailedLogs(c, failed);
}

function json(f: Frame): JsonCallFrame {
  const out: JsonCallFrame = {
    type: f.type,
    from: toData(f.from),
    gas: toQuantity(f.gas),
    gasUsed: toQuantity(f.gasUsed),
    input: toData(f.input),
  };
  if (f.to !== undefined) out.to = toData(f.to);
  if (f.output !== undefined && f.output.length > 0) out.output = toData(f.output);
  if (f.error !== undefined) out.error = f.error;
  if (f.revertReason !== undefined) out.revertReason = f.revertReason;
  if (f.calls.length > 0) out.calls = f.calls.map(json);
  if (f.logs.length > 0)
    out.logs = f.logs.map((l, i) => ({
      address: toData(l.address),
      topics: l.topics.map(toData),
      data: toData(l.data),
      index: toQuantity(l.index),
      position: toQuantity(f.positions[i] as number),
    }));
  if (f.value !== undefined) out.value = toQuantity(f.value);
  return out;
}
