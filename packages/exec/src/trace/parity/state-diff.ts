// Parity's `stateDiff` of a transaction (trace_replay*, trace_call…) from the same events as
// geth's prestateTracer: the accounts and slots the transaction touches as it found them (the
// prestate tracer's lookups), against the state when it ends; laid out as reth's
// revm-inspectors populate_state_diff does: an account created by the transaction with no
// balance before is added (`+` balance, nonce, code, storage), any other changed account has its
// balance and nonce as `=` or `*` and its changed slots as `*`, code only for a creation over a
// funded address; an account created and destroyed by the transaction is left out.
import { toData, toQuantity } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import { KECCAK256_NULL, equalsBytes, hexToBytes } from '@ethereumjs/util';
import type { FrameEnter, FrameExit, OpStep, StateView, TraceBudget, Tracer, TxStart } from '../hooks.js';
import { PrestateTracer } from '../tracers/prestate.js';
import type { PrestateAccount } from '../tracers/prestate.js';

export type JsonDelta<T> = '=' | { '+': T } | { '-': T } | { '*': { from: T; to: T } };

export interface JsonAccountDiff {
  balance: JsonDelta<string>;
  code: JsonDelta<string>;
  nonce: JsonDelta<string>;
  storage: Record<string, JsonDelta<string>>;
}

interface OpenFrame {
  created: string[];
  destroyed: string[];
}

const changed = <T>(from: T, to: T): JsonDelta<T> => ({ '*': { from, to } });

export class StateDiffTracer implements Tracer {
  readonly wantsOpcodes = true;
  readonly wantsSelfdestructs = true;
  private readonly prestate: PrestateTracer;
  private readonly frames: OpenFrame[] = [];
  /** Accounts created, and destroyed, by frames that did not fail. */
  private created = new Set<string>();
  private destroyed = new Set<string>();
  private cancun = false;
  private diff: Record<string, JsonAccountDiff> = {};

  constructor(private readonly budget: TraceBudget) {
    this.prestate = new PrestateTracer(
      { diffMode: false, disableCode: false, disableStorage: false, includeEmpty: true },
      budget,
    );
  }

  onTxStart(tx: TxStart, state: StateView): Promise<void> {
    this.cancun = tx.cancun;
    return this.prestate.onTxStart(tx, state);
  }

  onOpcode(s: OpStep, state: StateView): Promise<void> | undefined {
    return this.prestate.onOpcode(s, state);
  }

  onEnter(f: FrameEnter): void {
    const frame: OpenFrame = { created: [], destroyed: [] };
    if (f.type === 'CREATE' || f.type === 'CREATE2') frame.created.push(toData(f.to));
    if (f.type === 'SELFDESTRUCT') frame.destroyed.push(toData(f.from));
    this.frames.push(frame);
  }

  onExit(f: FrameExit): void {
    const frame = this.frames.pop();
    if (frame === undefined || f.error !== undefined) return;
    const parent = this.frames[this.frames.length - 1];
    if (parent !== undefined) {
      parent.created.push(...frame.created);
      parent.destroyed.push(...frame.destroyed);
      return;
    }
    this.created = new Set(frame.created);
    this.destroyed = new Set(frame.destroyed);
  }

  async onTxEnd(_r: unknown, state: StateView): Promise<void> {
    const out: Record<string, JsonAccountDiff> = {};
    for (const [key, pre] of [...this.prestate.touched()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const created = this.created.has(key);
      // Under EIP-6780 only an account created by the transaction is destroyed by SELFDESTRUCT.
      const destroyed = this.destroyed.has(key) && (created || !this.cancun);
      if (destroyed && created) continue;
      const d = await this.account(hexToBytes(key as `0x${string}`), pre, created, destroyed, state);
      if (d === undefined) continue;
      this.budget.spend(200 + 140 * Object.keys(d.storage).length);
      out[key] = d;
    }
    this.diff = out;
  }

  private async account(
    a: Bytes,
    pre: Readonly<PrestateAccount>,
    created: boolean,
    destroyed: boolean,
    state: StateView,
  ): Promise<JsonAccountDiff | undefined> {
    const preBalance = pre.balance ?? 0n;
    // A destroyed account keeps its nonce and code until the transaction's changes are applied.
    const balance = destroyed ? 0n : await state.balance(a);
    const nonce = destroyed ? pre.nonce : await state.nonce(a);
    const slots: [string, Bytes, Bytes][] = [];
    for (const [slot, was] of pre.storage ?? []) {
      const now = await state.storage(a, hexToBytes(slot as `0x${string}`));
      if (!equalsBytes(was, now)) slots.push([slot, was, now]);
    }
    const storage: Record<string, JsonDelta<string>> = {};
    if (created && preBalance === 0n) {
      for (const [slot, , now] of slots) storage[slot] = { '+': toData(now) };
      return {
        balance: { '+': toQuantity(balance) },
        code: { '+': toData(await state.code(a)) },
        nonce: { '+': toQuantity(nonce) },
        storage,
      };
    }
    for (const [slot, was, now] of slots) storage[slot] = changed(toData(was), toData(now));
    const codeHash = destroyed ? pre.codeHash : await state.codeHash(a);
    const sameCode = equalsBytes(codeHash ?? KECCAK256_NULL, pre.codeHash ?? KECCAK256_NULL);
    if (slots.length === 0 && balance === preBalance && nonce === pre.nonce && sameCode && !destroyed) return undefined;
    return {
      balance: balance === preBalance ? '=' : changed(toQuantity(preBalance), toQuantity(balance)),
      code: created ? changed(toData(pre.code ?? new Uint8Array()), toData(await state.code(a))) : '=',
      nonce: nonce === pre.nonce ? '=' : changed(toQuantity(pre.nonce), toQuantity(nonce)),
      storage,
    };
  }

  result(): Record<string, JsonAccountDiff> {
    return this.diff;
  }
}
