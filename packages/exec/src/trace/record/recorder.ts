// Recording a block's call frames while it executes at import: each transaction's frame events
// (the same binding the re-executing tracers use, evm-events.ts, through the opcode hooks: no
// `step` event) kept as they come, then encoded (codec.ts) into the block's TxFrames row. A log
// that survives into the receipt is kept as its position there; only the logs of failed frames
// are kept whole. Beside them, what each transaction changed of the state (the state-diff
// tracer's lookups, through the hooks of the opcodes that touch accounts and slots), encoded
// (changes.ts) into the block's TxStateDiffs row.
import type { Block } from '@ethereumjs/block';
import type { TypedTransaction } from '@ethereumjs/tx';
import type { VM } from '@ethereumjs/vm';
import type { Bytes } from '@chainnode/core';
import { bindTracer, txStart } from '../evm-events.js';
import { stateView } from '../state-view.js';
import type { Binding } from '../evm-events.js';
import { TraceBudget } from '../hooks.js';
import type { FrameEnter, FrameExit, StateView, TraceLog, Tracer, TxStart } from '../hooks.js';
import { StateDiffTracer } from '../parity/state-diff.js';
import { MuxTracer } from '../tracers/simple.js';
import { encodeChanges } from './changes.js';
import { ByteWriter, encodeBlockFrames, encodeTx, frameBloom } from './codec.js';
import type { ReceiptLogs, RecordedEvent, RecordedTx } from './codec.js';

/** Keeps a transaction's frame events as they come. */
export class FrameRecorder implements Tracer {
  readonly wantsLogs = true;
  readonly wantsSelfdestructs = true;
  private readonly events: RecordedEvent[] = [];
  private start: TxStart | undefined;
  private gasUsed = 0n;

  constructor(private readonly logsBefore: number) {}

  onTxStart(tx: TxStart): void {
    this.start = tx;
  }

  onEnter(f: FrameEnter): void {
    const precompile = f.type !== 'SELFDESTRUCT' && this.start?.isPrecompile(f.to) === true;
    this.events.push({ kind: 'enter', f, precompile });
  }

  onExit(f: FrameExit): void {
    this.events.push({ kind: 'exit', f });
  }

  onLog(l: TraceLog): void {
    this.events.push({ kind: 'log', l, receiptLog: undefined });
  }

  onTxEnd(r: { gasUsed: bigint }): void {
    this.gasUsed = r.gasUsed;
  }

  result(): RecordedTx {
    return {
      creation: this.start?.to === null,
      gasLimit: this.start?.gasLimit ?? 0n,
      gasUsed: this.gasUsed,
      logsBefore: this.logsBefore,
      events: this.events,
    };
  }

  /**
   * The transaction's events with each log that reached the receipt (its frame and every frame
   * above it ended well) as its position among `receipt`'s logs; all whole when they do not pair.
   */
  finish(receipt: ReceiptLogs): RecordedTx {
    const tx = this.result();
    const failed: boolean[] = [];
    const frameOf: number[] = [];
    const parents: number[] = [];
    const open: number[] = [];
    for (const e of tx.events) {
      if (e.kind === 'enter') {
        parents.push(open[open.length - 1] ?? -1);
        failed.push(false);
        open.push(failed.length - 1);
      } else if (e.kind === 'exit') {
        const id = open.pop();
        if (id !== undefined && e.f.error !== undefined) failed[id] = true;
      } else frameOf.push(open[open.length - 1] ?? -1);
    }
    const survives = (frame: number): boolean => {
      for (let f = frame; f >= 0; f = parents[f] as number) if (failed[f] === true) return false;
      return frame >= 0;
    };
    const kept: (number | undefined)[] = [];
    let next = 0;
    let logAt = 0;
    for (const e of tx.events) {
      if (e.kind !== 'log') continue;
      if (!survives(frameOf[logAt++] as number)) {
        kept.push(undefined);
        continue;
      }
      const r = receipt[next];
      if (r === undefined || !sameLog(r, e.l)) return tx;
      kept.push(next++);
    }
    if (next !== receipt.length) return tx;
    let i = 0;
    for (const e of tx.events) if (e.kind === 'log') e.receiptLog = kept[i++];
    return tx;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

function sameLog(r: ReceiptLogs[number], l: TraceLog): boolean {
  return (
    sameBytes(r.address, l.address) &&
    sameBytes(r.data, l.data) &&
    r.topics.length === l.topics.length &&
    r.topics.every((t, i) => sameBytes(t, l.topics[i] as Uint8Array))
  );
}

/** The state-diff tracer's lookups through the state opcodes' handlers: no `step` event. */
class ChangeRecorder extends StateDiffTracer {
  override readonly wantsOpcodes = false;
  readonly wantsStateOpcodes = true;

  constructor() {
    super(new TraceBudget(Number.POSITIVE_INFINITY));
  }
}

interface AfterTx {
  totalGasSpent: bigint;
  receipt: { logs: [Uint8Array, Uint8Array[], Uint8Array][] };
}

/**
 * A block's recorded rows: TxFrames, FrameBlooms (less the hash), each transaction's named
 * addresses (FrameAppearances), TxStateDiffs.
 */
export interface RecordedBlock {
  /** The TxFrames rows, TRACE_ROW_TXS transactions each (codec.ts). */
  rows: Uint8Array[];
  bloom: Uint8Array;
  txAddresses: Bytes[][];
  /** The TxStateDiffs rows, cut as `rows`. */
  changes: Uint8Array[];
}

/**
 * Records the frames and state changes of every transaction of `block` as `vm` runs it (runBlock), from attach to
 * detach. A failure to record never fails the block: the block is then left unrecorded (its
 * traces re-execute).
 */
export class BlockFrameRecorder {
  private readonly txs: Uint8Array[] = [];
  /** Per transaction, the distinct addresses its frames name (the sender first). */
  private readonly txAddresses: Bytes[][] = [];
  private readonly changes: Uint8Array[] = [];
  private current:
    | { recorder: FrameRecorder; changes: ChangeRecorder; binding: Binding; tx: TypedTransaction }
    | undefined;
  private logs = 0;
  private broken = false;
  /** Every address the block's frames name, and the senders (frameBloom). */
  private readonly addresses = new Map<string, Bytes>();

  private readonly state: StateView;
  private readonly eip150: boolean;

  constructor(
    private readonly vm: VM,
    private readonly block: Block,
  ) {
    this.state = stateView(vm.stateManager);
    this.eip150 = vm.common.gteHardfork('tangerineWhistle');
    vm.events.on('beforeTx', this.beforeTx);
    vm.events.on('afterTx', this.afterTx as never);
  }

  private readonly beforeTx = (tx: TypedTransaction, resolve?: () => void): void => {
    if (this.broken) {
      resolve?.();
      return;
    }
    this.startTx(tx).then(resolve, () => {
      this.broken = true;
      resolve?.();
    });
  };

  private async startTx(tx: TypedTransaction): Promise<void> {
    const recorder = new FrameRecorder(this.logs);
    const changes = new ChangeRecorder();
    const both = new MuxTracer([
      ['frames', recorder],
      ['changes', changes],
    ]);
    await both.onTxStart(txStart(this.vm, tx, this.block, tx.gasLimit), this.state);
    const binding = bindTracer(this.vm, both, this.state, {
      logsBefore: this.logs,
      deadline: Number.POSITIVE_INFINITY,
      eip150: this.eip150,
    });
    this.current = { recorder, changes, binding, tx };
  }

  private readonly afterTx = (r: AfterTx, resolve?: () => void): void => {
    const c = this.current;
    this.current = undefined;
    const logs = r.receipt.logs.map(([address, topics, data]) => ({ address, topics, data }));
    this.logs += logs.length;
    if (c === undefined || this.broken) {
      resolve?.();
      return;
    }
    c.binding.detach();
    this.endTx(c, r, logs).then(resolve, () => {
      this.broken = true;
      resolve?.();
    });
  };

  private async endTx(c: NonNullable<BlockFrameRecorder['current']>, r: AfterTx, logs: ReceiptLogs): Promise<void> {
    c.binding.check();
    c.recorder.onTxEnd({ gasUsed: r.totalGasSpent });
    const changed = encodeChanges(await c.changes.changes(this.state));
    const w = new ByteWriter();
    const sender = c.tx.getSenderAddress().bytes;
    const recorded = c.recorder.finish(logs);
    encodeTx(w, recorded, c.tx.data, sender);
    const named = new Map<string, Bytes>();
    const name = (a: Bytes): void => {
      named.set(Buffer.from(a.buffer, a.byteOffset, a.length).toString('latin1'), a);
      this.note(a);
    };
    name(sender);
    for (const e of recorded.events)
      if (e.kind === 'enter') {
        name(e.f.from);
        name(e.f.to);
      }
    this.txs.push(w.done());
    this.txAddresses.push([...named.values()]);
    this.changes.push(changed);
  }

  /** Stops recording (after runBlock, whether it ran or failed). */
  detach(): void {
    this.current?.binding.detach();
    this.current = undefined;
    this.vm.events.off('beforeTx', this.beforeTx);
    this.vm.events.off('afterTx', this.afterTx as never);
  }

  private note(address: Bytes): void {
    this.addresses.set(Buffer.from(address.buffer, address.byteOffset, address.length).toString('latin1'), address);
  }

  /**
   * The block's TxFrames rows, its frame bloom, each transaction's named addresses and its
   * TxStateDiffs rows; undefined when a transaction could not be recorded.
   */
  row(blockHash: Bytes): RecordedBlock | undefined {
    if (this.broken || this.txs.length !== this.block.transactions.length) return undefined;
    // The authors of the block's rewards (proof of work), which trace_filter matches too.
    this.note(this.block.header.coinbase.bytes);
    for (const u of this.block.uncleHeaders) this.note(u.coinbase.bytes);
    return {
      rows: encodeBlockFrames(blockHash, this.txs),
      bloom: frameBloom(this.addresses.values()),
      txAddresses: this.txAddresses,
      changes: encodeBlockFrames(blockHash, this.changes),
    };
  }
}
