// Traces from the recorded frames (codec.ts): the tracers that want no opcode and read no state
// (callTracer, 4byteTracer, noopTracer, the Parity and Otterscan frame tracers, a muxTracer of
// them) are fed the recorded events in order, as a re-execution would feed them; the tracers
// that want opcodes only to find the state changes (prestateTracer's diffMode, Parity's
// stateDiff) are fed the recorded changes (changes.ts) first.
import type { Bytes } from '@chainnode/core';
import type { Tracer } from '../hooks.js';
import { decodeChanges } from './changes.js';
import { decodeTx, txFramesAt } from './codec.js';
import type { ReceiptLogs } from './codec.js';

/** What a recorded transaction's events do not carry. */
export interface RecordedTxContext {
  blockHash: Bytes;
  blockNumber: bigint;
  coinbase: Bytes;
  /** The transaction's position in its block. */
  index: number;
  sender: Bytes;
  /** The transaction's input (its data). */
  input: Bytes;
  /** Its receipt's logs, for a tracer that wants logs (undefined: read only when asked for). */
  receiptLogs?: () => Promise<ReceiptLogs>;
  /** The block's TxStateDiffs row, and code by hash: for a tracer fed recorded changes. */
  changes?: { row: Uint8Array; code(codeHash: Bytes): Promise<Bytes> };
}

/** Whether `tracer` can be fed from recorded frames (and, if it wants them, changes). */
export function replayable(tracer: Tracer): boolean {
  return tracer.wantsOpcodes !== true || tracer.replaysChanges === true;
}

/**
 * Feeds `tracer` transaction `ctx.index`'s recorded events from the block's TxFrames `row`;
 * false when the row does not hold it (another block's row, or none of this transaction) or holds
 * it as an earlier release recorded it in fewer words (RecordedTx.stale): it is then re-executed.
 */
export async function replayRecorded(row: Uint8Array, ctx: RecordedTxContext, tracer: Tracer): Promise<boolean> {
  if (!replayable(tracer)) throw new Error('replayRecorded: the tracer wants opcodes');
  const reader = txFramesAt(row, ctx.blockHash, ctx.index);
  if (reader === undefined) return false;
  const logs = tracer.wantsLogs === true && ctx.receiptLogs !== undefined ? await ctx.receiptLogs() : undefined;
  const tx = decodeTx(reader, ctx.sender, ctx.input, logs);
  if (tx.stale) return false;
  if (tracer.replaysChanges === true) {
    const changes = ctx.changes === undefined ? undefined : txFramesAt(ctx.changes.row, ctx.blockHash, ctx.index);
    if (changes === undefined || ctx.changes === undefined) return false;
    await tracer.onChanges?.({ accounts: decodeChanges(changes), code: ctx.changes.code });
  }
  const precompiles = new Set<string>();
  for (const e of tx.events)
    if (e.kind === 'enter' && e.precompile) precompiles.add(Buffer.from(e.f.to).toString('hex'));
  const top = tx.events[0];
  const state = noState;
  await tracer.onTxStart?.(
    {
      from: ctx.sender,
      to: tx.creation || top?.kind !== 'enter' ? null : top.f.to,
      gasLimit: tx.gasLimit,
      coinbase: ctx.coinbase,
      blockNumber: ctx.blockNumber,
      cancun: false,
      prague: false,
      authorities: [],
      isPrecompile: (a) => precompiles.has(Buffer.from(a).toString('hex')),
    },
    state,
  );
  for (const e of tx.events) {
    if (e.kind === 'enter') tracer.onEnter?.(e.f);
    else if (e.kind === 'exit') tracer.onExit?.(e.f);
    else if (tracer.wantsLogs === true) tracer.onLog?.(e.l);
  }
  await tracer.onTxEnd?.({ gasUsed: tx.gasUsed }, state);
  return true;
}

/** The state a replayed tracer is handed: it reads none (it wants no opcode). */
const noState = {
  balance: refuse,
  nonce: refuse,
  code: refuse,
  codeHash: refuse,
  storage: refuse,
};

function refuse(): never {
  throw new Error('a tracer fed from recorded frames read the state');
}
