// Parity's `stateDiff` of a transaction (trace_replay*, trace_call…) from the same events as
// geth's prestateTracer: the accounts and slots the transaction touches as it found them (the
// prestate tracer's lookups), against the state when it ends; laid out as reth's
// revm-inspectors populate_state_diff does: an account created by the transaction with no
// balance before is added (`+` balance, nonce, code, storage), any other changed account has its
// balance and nonce as `=` or `*` and its changed slots as `*`, code only for a creation over a
// funded address; an account created and destroyed by the transaction is left out. What it
// finds is also what the executing import records of a transaction (changes()), and it can be
// fed that record instead (onChanges).
import { toData, toQuantity } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import { KECCAK256_NULL, equalsBytes, hexToBytes } from '@ethereumjs/util';
import type {
  ChangedAccount,
  FrameEnter,
  FrameExit,
  OpStep,
  StateView,
  TraceBudget,
  Tracer,
  TxChanges,
  TxStart,
} from '../hooks.js';
import { changedState } from '../state-view.js';
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
  readonly wantsOpcodes: boolean = true;
  readonly wantsSelfdestructs = true;
  readonly replaysChanges = true;
  private readonly prestate: PrestateTracer;
  private readonly frames: OpenFrame[] = [];
  /** Accounts created, and destroyed, by frames that did not fail. */
  private created = new Set<string>();
  private destroyed = new Set<string>();
  private cancun = false;
  private diff: Record<string, JsonAccountDiff> = {};
  /** The state after the transaction, when fed its recorded changes. */
  private recorded: StateView | undefined;

  constructor(private readonly budget: TraceBudget) {
    this.prestate = new PrestateTracer(
      { diffMode: false, disableCode: false, disableStorage: false, includeEmpty: true },
      budget,
    );
  }

  /** The recorded changes as the lookups and frames would have found them (`destroyed` holds the block's rules). */
  async onChanges(c: TxChanges): Promise<void> {
    await this.prestate.onChanges(c);
    this.created = new Set(c.accounts.filter((a) => a.created).map((a) => toData(a.address)));
    this.destroyed = new Set(c.accounts.filter((a) => a.destroyed).map((a) => toData(a.address)));
    this.recorded = changedState(c);
  }

  onTxStart(tx: TxStart, state: StateView): Promise<void> {
    this.cancun = tx.cancun && this.recorded === undefined;
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
    if (frame === undefined || f.error !== undefined || this.recorded !== undefined) return;
    const parent = this.frames[this.frames.length - 1];
    if (parent !== undefined) {
      parent.created.push(...frame.created);
      parent.destroyed.push(...frame.destroyed);
      return;
    }
    this.created = new Set(frame.created);
    this.destroyed = new Set(frame.destroyed);
  }

  /** Whether the transaction created, and destroyed, the account `key`. */
  private fate(key: string): { created: boolean; destroyed: boolean } {
    const created = this.created.has(key);
    // Under EIP-6780 only an account created by the transaction is destroyed by SELFDESTRUCT.
    return { created, destroyed: this.destroyed.has(key) && (created || !this.cancun) };
  }

  async onTxEnd(_r: unknown, state: StateView): Promise<void> {
    const out: Record<string, JsonAccountDiff> = {};
    for (const [key, pre] of [...this.prestate.touched()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const { created, destroyed } = this.fate(key);
      if (destroyed && created) continue;
      const d = await this.account(hexToBytes(key as `0x${string}`), pre, created, destroyed, this.recorded ?? state);
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

  /**
   * What the transaction changed (`state`: after it), as the import records it: each touched
   * account whose fields or slots changed, whose SELFDESTRUCT ran, or that it created or
   * destroyed, in the order it was first touched; what prestateTracer's diffMode and this tracer
   * answer from.
   */
  async changes(state: StateView): Promise<ChangedAccount[]> {
    const deleted = this.prestate.deletedAccounts();
    const out: ChangedAccount[] = [];
    for (const [key, pre] of this.prestate.touched()) {
      const address = hexToBytes(key as `0x${string}`);
      const hash = (await state.codeHash(address)) ?? KECCAK256_NULL;
      const post = {
        balance: await state.balance(address),
        nonce: await state.nonce(address),
        codeHash: equalsBytes(hash, KECCAK256_NULL) ? undefined : hash,
      };
      const whole = deleted.has(key);
      const slots: [Bytes, Bytes, Bytes][] = [];
      for (const [slot, was] of pre.storage ?? []) {
        const at = hexToBytes(slot as `0x${string}`);
        const now = await state.storage(address, at);
        if (whole || !equalsBytes(was, now)) slots.push([at, was, now]);
      }
      const { created, destroyed } = this.fate(key);
      const balance = pre.balance ?? 0n;
      const changed =
        post.balance !== balance ||
        post.nonce !== pre.nonce ||
        !equalsBytes(post.codeHash ?? KECCAK256_NULL, pre.codeHash ?? KECCAK256_NULL) ||
        slots.some(([, was, now]) => !equalsBytes(was, now));
      if (!changed && !whole && !created && !destroyed) continue;
      const fields = { balance, nonce: pre.nonce, codeHash: pre.codeHash };
      out.push({ address, pre: fields, post, slots, deleted: whole, created, destroyed });
    }
    return out;
  }
}
