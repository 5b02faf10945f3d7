// Parity's flat traces (trace_transaction, trace_block, trace_replay*'s `trace`) from the call
// frames a tracer is fed (hooks.ts): each frame an entry with its traceAddress (its position
// under each of its ancestors) and subtraces (its own calls), depth first, as reth's
// revm-inspectors ParityTraceBuilder lays them out: calls to precompiles below the top frame
// without value are left out (and not counted), a SELFDESTRUCT is a `suicide` entry after its
// frame's calls, errors in Parity's words, no result for a frame that failed other than by
// reverting.
import { toData, toQuantity } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import type { FrameEnter, FrameExit, TraceBudget, Tracer, TxStart } from '../hooks.js';

export interface JsonCallAction {
  from: string;
  callType: string;
  gas: string;
  input: string;
  to: string;
  value: string;
}

export interface JsonCreateAction {
  from: string;
  gas: string;
  init: string;
  value: string;
  creationMethod: string;
}

export interface JsonSuicideAction {
  address: string;
  balance: string;
  refundAddress: string;
}

export interface JsonRewardAction {
  author: string;
  rewardType: 'block' | 'uncle';
  value: string;
}

export type JsonTraceResult =
  | { gasUsed: string; output: string }
  | { address: string; code: string; gasUsed: string }
  | null;

/** One entry of a transaction's flat trace (alloy's TransactionTrace), before its block and position. */
export interface JsonFlatTrace {
  action: JsonCallAction | JsonCreateAction | JsonSuicideAction | JsonRewardAction;
  error?: string;
  result: JsonTraceResult;
  subtraces: number;
  traceAddress: number[];
  type: 'call' | 'create' | 'suicide' | 'reward';
}

interface Node {
  enter: FrameEnter;
  exit?: FrameExit;
  children: Node[];
  /** A call to a precompile, left out of the trace. */
  hidden: boolean;
}

/** Bytes of JSON per entry beyond its input and output (addresses, gas, type). */
const ENTRY_BYTES = 260;

/** geth's error text of a frame in Parity's (revm-inspectors' TraceStyle::Parity) words. */
export function parityError(error: string): string {
  if (error === 'execution reverted') return 'Reverted';
  if (error.startsWith('out of gas') || error === 'contract creation code storage out of gas') return 'Out of gas';
  if (error === 'value overflow' || error === 'out of range') return 'Out of gas';
  if (error.startsWith('invalid opcode')) return 'Bad instruction';
  if (error.startsWith('stack limit reached')) return 'Out of stack';
  if (error.startsWith('stack underflow')) return 'StackUnderflow';
  if (error === 'invalid jump destination') return 'Bad jump destination';
  if (error === 'insufficient balance for transfer') return 'Insufficient balance for transfer';
  if (error === 'write protection') return 'StateChangeDuringStaticCall';
  if (error === 'contract address collision') return 'CreateCollision';
  if (error === 'max code size exceeded') return 'CreateContractSizeLimit';
  if (error === 'invalid code: must not begin with 0xef') return 'CreateContractStartingWithEF';
  if (error === 'max call depth exceeded') return 'CallTooDeep';
  if (error === 'return data out of bounds') return 'OutOfOffset';
  return error;
}

/** Records a transaction's frames and lays them out as Parity's flat trace. */
export class FlatTracer implements Tracer {
  readonly wantsSelfdestructs = true;
  private readonly stack: Node[] = [];
  private root: Node | undefined;
  private isPrecompile: (a: Bytes) => boolean = () => false;

  constructor(private readonly budget: TraceBudget) {}

  onTxStart(tx: TxStart): void {
    this.isPrecompile = (a) => tx.isPrecompile(a);
  }

  onEnter(f: FrameEnter): void {
    const hidden =
      f.depth > 0 && f.type !== 'SELFDESTRUCT' && this.isPrecompile(f.to) && (f.value === undefined || f.value === 0n);
    const node: Node = { enter: f, children: [], hidden };
    if (!hidden) this.budget.spend(ENTRY_BYTES + 2 * f.input.length);
    const parent = this.stack[this.stack.length - 1];
    if (parent === undefined) this.root = node;
    else if (!hidden) parent.children.push(node);
    this.stack.push(node);
  }

  onExit(f: FrameExit): void {
    const node = this.stack.pop();
    if (node === undefined) return;
    node.exit = f;
    if (!node.hidden) this.budget.spend(2 * f.output.length);
  }

  /** The transaction's output as reth gives it: the top frame's return or revert data, else empty. */
  output(): Bytes {
    const exit = this.root?.exit;
    if (exit === undefined) return new Uint8Array();
    return exit.error === undefined || exit.error === 'execution reverted' ? exit.output : new Uint8Array();
  }

  result(): JsonFlatTrace[] {
    const out: JsonFlatTrace[] = [];
    if (this.root !== undefined) flatten(this.root, [], out);
    return out;
  }
}

function flatten(node: Node, address: number[], out: JsonFlatTrace[]): void {
  out.push(entry(node, address));
  for (const [i, c] of node.children.entries()) flatten(c, [...address, i], out);
}

function entry(node: Node, traceAddress: number[]): JsonFlatTrace {
  const f = node.enter;
  const subtraces = node.children.length;
  if (f.type === 'SELFDESTRUCT')
    return {
      action: { address: toData(f.from), balance: toQuantity(f.value ?? 0n), refundAddress: toData(f.to) },
      result: null,
      subtraces,
      traceAddress,
      type: 'suicide',
    };
  const exit = node.exit;
  const error = exit?.error === undefined ? undefined : parityError(exit.error);
  const failed = error !== undefined && error !== 'Reverted';
  const gasUsed = toQuantity(exit?.gasUsed ?? 0n);
  const output = toData(exit?.output ?? new Uint8Array());
  const value = toQuantity(f.value ?? 0n);
  const create = f.type === 'CREATE' || f.type === 'CREATE2';
  const head: Pick<JsonFlatTrace, 'action' | 'type'> = create
    ? {
        action: {
          from: toData(f.from),
          gas: toQuantity(f.gas),
          init: toData(f.input),
          value,
          creationMethod: f.type.toLowerCase(),
        },
        type: 'create',
      }
    : {
        action: {
          from: toData(f.from),
          callType: f.type.toLowerCase(),
          gas: toQuantity(f.gas),
          input: toData(f.input),
          to: toData(f.to),
          value,
        },
        type: 'call',
      };
  const result: JsonTraceResult = failed
    ? null
    : create
      ? { address: toData(f.to), code: output, gasUsed }
      : { gasUsed, output };
  // Written out in one key order (no spreads: V8 builds those through its slow path, per entry).
  const { action, type } = head;
  return error === undefined
    ? { action, type, result, subtraces, traceAddress }
    : { action, type, error, result, subtraces, traceAddress };
}
