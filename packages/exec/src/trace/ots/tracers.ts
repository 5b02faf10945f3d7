// Otterscan's tracers, as Erigon's ots API level 8 runs them (rpc/jsonrpc/otterscan_trace_*.go):
// the internal operations of a transaction (value transfers, creations and self-destructs inside
// it), its call tree as a flat list of entries with their depth, and its top frame's revert data.
// Each builds its answer from the frame events alone (hooks.ts), like geth's tracers.
import { toData, toQuantity } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { FrameEnter, FrameExit, TraceBudget, Tracer, TxStart } from '../hooks.js';

/** Erigon's OperationType: what an internal operation is. */
export const OtsOperation = { Transfer: 0, SelfDestruct: 1, Create: 2, Create2: 3 } as const;

export interface JsonInternalOperation {
  type: number;
  from: string;
  to: string;
  value: string;
}

/**
 * Erigon's OperationsTracer: every frame below the transaction's own, in the order entered, that
 * is a CALL moving value (type 0), a CREATE (2) or CREATE2 (3) (any value), or a SELFDESTRUCT (1).
 */
export class OtsOperationsTracer implements Tracer {
  readonly wantsSelfdestructs = true;
  private readonly ops: JsonInternalOperation[] = [];

  constructor(private readonly budget: TraceBudget) {}

  onEnter(f: FrameEnter): void {
    if (f.depth === 0) return;
    const type = operationType(f);
    if (type === undefined) return;
    this.budget.spend(140);
    this.ops.push({ type, from: toData(f.from), to: toData(f.to), value: toQuantity(f.value ?? 0n) });
  }

  result(): JsonInternalOperation[] {
    return this.ops;
  }
}

function operationType(f: FrameEnter): number | undefined {
  switch (f.type) {
    case 'CALL':
      return (f.value ?? 0n) > 0n ? OtsOperation.Transfer : undefined;
    case 'CREATE':
      return OtsOperation.Create;
    case 'CREATE2':
      return OtsOperation.Create2;
    case 'SELFDESTRUCT':
      return OtsOperation.SelfDestruct;
    default:
      return undefined;
  }
}

export interface JsonTraceEntry {
  type: string;
  depth: number;
  from: string;
  to: string;
  value: string | null;
  input: string;
  output: string;
}

/** The frames whose entries carry no value (Erigon passes none for them). */
const NO_VALUE = new Set(['STATICCALL', 'DELEGATECALL']);

/**
 * Erigon's TransactionTracer (ots_traceTransaction): one entry per frame in the order entered,
 * the transaction's own included, calls to precompiles left out; a frame's output (its return or
 * revert data) is set when it exits. A SELFDESTRUCT's depth is one more than the entry before it.
 */
export class OtsTransactionTracer implements Tracer {
  readonly wantsSelfdestructs = true;
  private readonly entries: JsonTraceEntry[] = [];
  /** Every frame entered and not yet left (precompiles too), its entry or undefined. */
  private readonly stack: (JsonTraceEntry | undefined)[] = [];
  private tx: TxStart | undefined;

  constructor(private readonly budget: TraceBudget) {}

  onTxStart(tx: TxStart): void {
    this.tx = tx;
  }

  onEnter(f: FrameEnter): void {
    const last = this.entries[this.entries.length - 1];
    const entry: JsonTraceEntry = {
      type: f.type,
      depth: f.type === 'SELFDESTRUCT' ? (last?.depth ?? -1) + 1 : f.depth,
      from: toData(f.from),
      to: toData(f.to),
      value: NO_VALUE.has(f.type) ? null : toQuantity(f.value ?? 0n),
      input: f.type === 'SELFDESTRUCT' ? '0x' : toData(f.input),
      output: '0x',
    };
    const precompile = f.type !== 'SELFDESTRUCT' && this.tx?.isPrecompile(f.to) === true;
    this.stack.push(precompile ? undefined : entry);
    if (precompile) return;
    this.budget.spend(200 + 2 * f.input.length);
    this.entries.push(entry);
  }

  onExit(f: FrameExit): void {
    const entry = this.stack.pop();
    if (entry === undefined) return;
    // geth passes no output for a frame that failed other than by reverting.
    if (f.error !== undefined && f.error !== 'execution reverted') return;
    this.budget.spend(2 * f.output.length);
    entry.output = toData(f.output);
  }

  result(): JsonTraceEntry[] {
    return this.entries;
  }
}

/** The transaction's own frame's revert data (Erigon: the execution result's Revert()), else empty. */
export class OtsRevertTracer implements Tracer {
  private revert: Bytes = new Uint8Array(0);

  onExit(f: FrameExit): void {
    if (f.depth === 0 && f.reverted && f.error === 'execution reverted') this.revert = f.output;
  }

  result(): string {
    return toData(this.revert);
  }
}

/**
 * Finds the frame that created `address` (a CREATE or CREATE2 to it that did not fail): its
 * creator (the frame's caller, the transaction's sender for a creation transaction).
 */
export class OtsCreatorTracer implements Tracer {
  private readonly stack: boolean[] = [];
  private found: Bytes | undefined;
  private candidate: Bytes | undefined;

  constructor(private readonly address: Bytes) {}

  onEnter(f: FrameEnter): void {
    const hit = (f.type === 'CREATE' || f.type === 'CREATE2') && sameBytes(f.to, this.address);
    if (hit) this.candidate = f.from;
    this.stack.push(hit);
  }

  onExit(f: FrameExit): void {
    if (this.stack.pop() === true && f.error === undefined) this.found = this.candidate;
  }

  /** The creator's address, or null when the transaction did not create `address`. */
  result(): string | null {
    return this.found === undefined ? null : toData(this.found);
  }
}

function sameBytes(a: Bytes, b: Bytes): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
