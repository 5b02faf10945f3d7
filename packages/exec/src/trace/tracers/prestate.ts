// geth's prestateTracer (eth/tracers/native/prestate.go): every account and slot the transaction
// touches, as it was before it ran; with `diffMode`, the touched accounts' changes as `pre` and
// `post`. `disableCode` and `disableStorage` leave those out; `includeEmpty` keeps accounts that
// do not exist.
import { toData, toQuantity } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import {
  KECCAK256_NULL,
  bigIntToUnpaddedBytes,
  equalsBytes,
  generateAddress,
  generateAddress2,
} from '@ethereumjs/util';
import { word } from '../evm-events.js';
import { TracerConfigError } from '../hooks.js';
import type { OpStep, StateView, TraceBudget, Tracer, TxChanges, TxStart } from '../hooks.js';
import { changedState } from '../state-view.js';

export interface PrestateConfig {
  diffMode: boolean;
  disableCode: boolean;
  disableStorage: boolean;
  includeEmpty: boolean;
}

export interface JsonPrestateAccount {
  balance?: string;
  code?: string;
  codeHash?: string;
  nonce?: number;
  storage?: Record<string, string>;
}

/** An account as the transaction first found it. */
export interface PrestateAccount {
  balance: bigint | undefined;
  code: Bytes | undefined;
  codeHash: Bytes | undefined;
  nonce: bigint;
  /** slot word hex (0x…) -> value word */
  storage: Map<string, Bytes> | undefined;
  empty: boolean;
}

const op = {
  SLOAD: 0x54,
  SSTORE: 0x55,
  BALANCE: 0x31,
  EXTCODESIZE: 0x3b,
  EXTCODECOPY: 0x3c,
  EXTCODEHASH: 0x3f,
  SELFDESTRUCT: 0xff,
  CALL: 0xf1,
  CALLCODE: 0xf2,
  DELEGATECALL: 0xf4,
  STATICCALL: 0xfa,
  CREATE: 0xf0,
  CREATE2: 0xf5,
};
const ZERO = new Uint8Array(32);
const hex = (b: Bytes): string => toData(b);
const address = (v: bigint): Bytes => word(v).subarray(12);

/** The target of an EIP-7702 delegation (0xef0100 ++ address), if `code` is one. */
function delegation(code: Bytes): Bytes | undefined {
  return code.length === 23 && code[0] === 0xef && code[1] === 0x01 && code[2] === 0x00 ? code.subarray(3) : undefined;
}

export class PrestateTracer implements Tracer {
  readonly wantsOpcodes: boolean = true;
  readonly replaysChanges: boolean;
  private readonly pre = new Map<string, PrestateAccount>();
  private readonly post = new Map<string, JsonPrestateAccount>();
  private readonly created = new Set<string>();
  private readonly deleted = new Set<string>();
  private tx: TxStart | undefined;
  /** The state after the transaction, when fed its recorded changes. */
  private recorded: StateView | undefined;

  constructor(
    private readonly cfg: PrestateConfig,
    private readonly budget: TraceBudget,
  ) {
    if (cfg.diffMode && cfg.includeEmpty) throw new TracerConfigError('cannot use diffMode with includeEmpty');
    // Without diffMode it keeps every account touched: more than the recorded changes hold.
    this.replaysChanges = cfg.diffMode;
  }

  /** The recorded changes as the lookups would have found them (the unchanged accounts and slots aside). */
  async onChanges(c: TxChanges): Promise<void> {
    for (const a of c.accounts) {
      const key = hex(a.address);
      const hash = a.pre.codeHash;
      const code = hash === undefined || this.cfg.disableCode ? undefined : await c.code(hash);
      const acc = this.keep(key, a.pre.balance, a.pre.nonce, hash, code);
      for (const [slot, before] of a.slots) {
        if (acc.storage === undefined) break;
        this.budget.spend(140);
        acc.storage.set(hex(slot), before);
      }
      if (a.deleted) this.deleted.add(key);
    }
    this.recorded = changedState(c);
  }

  async onTxStart(tx: TxStart, state: StateView): Promise<void> {
    this.tx = tx;
    if (this.recorded !== undefined) return;
    let to: Bytes;
    if (tx.to === null) {
      to = generateAddress(tx.from, bigIntToUnpaddedBytes(await state.nonce(tx.from)));
      this.created.add(hex(to));
    } else {
      to = tx.to;
      if (tx.prague) {
        const target = delegation(await state.code(to));
        if (target !== undefined) await this.lookupAccount(target, state);
      }
    }
    await this.lookupAccount(tx.from, state);
    await this.lookupAccount(to, state);
    await this.lookupAccount(tx.coinbase, state);
    for (const a of tx.authorities) await this.lookupAccount(a, state);
  }

  onOpcode(s: OpStep, state: StateView): Promise<void> | undefined {
    const st = s.stack;
    const n = st.length;
    const at = (i: number): bigint => st[n - 1 - i] as bigint;
    const caller = s.address;
    switch (s.op) {
      case op.SLOAD:
      case op.SSTORE:
        return n >= 1 ? this.lookupStorage(caller, word(at(0)), state) : undefined;
      case op.EXTCODECOPY:
      case op.EXTCODEHASH:
      case op.EXTCODESIZE:
      case op.BALANCE:
      case op.SELFDESTRUCT:
        if (n < 1) return undefined;
        if (s.op === op.SELFDESTRUCT && (!this.tx?.cancun || this.created.has(hex(caller))))
          this.deleted.add(hex(caller));
        return this.lookupAccount(address(at(0)), state);
      case op.CALL:
      case op.CALLCODE:
      case op.DELEGATECALL:
      case op.STATICCALL:
        return n >= 5 ? this.lookupCallee(address(at(1)), state) : undefined;
      case op.CREATE:
        return this.lookupCreated(caller, state);
      case op.CREATE2: {
        if (n < 4) return undefined;
        const init = padded(s.memory, Number(at(1)), Number(at(2)));
        const a = generateAddress2(caller, word(at(3)), init);
        this.created.add(hex(a));
        return this.lookupAccount(a, state);
      }
      default:
        return undefined;
    }
  }

  private async lookupCallee(a: Bytes, state: StateView): Promise<void> {
    await this.lookupAccount(a, state);
    if (this.tx?.prague !== true) return;
    const target = delegation(await state.code(a));
    if (target !== undefined) await this.lookupAccount(target, state);
  }

  private async lookupCreated(caller: Bytes, state: StateView): Promise<void> {
    const a = generateAddress(caller, bigIntToUnpaddedBytes(await state.nonce(caller)));
    this.created.add(hex(a));
    await this.lookupAccount(a, state);
  }

  private async lookupAccount(a: Bytes, state: StateView): Promise<void> {
    const key = hex(a);
    if (this.pre.has(key)) return;
    const code = await state.code(a);
    const codeHash = await state.codeHash(a);
    const hash = codeHash !== undefined && !equalsBytes(codeHash, KECCAK256_NULL) ? codeHash : undefined;
    this.keep(key, await state.balance(a), await state.nonce(a), hash, code.length > 0 ? code : undefined);
  }

  /** Keeps an account as first found (`codeHash` undefined: it has no code; `code` when wanted). */
  private keep(
    key: string,
    balance: bigint,
    nonce: bigint,
    codeHash: Bytes | undefined,
    code: Bytes | undefined,
  ): PrestateAccount {
    const acc: PrestateAccount = {
      balance,
      nonce,
      code: code !== undefined && !this.cfg.disableCode ? code : undefined,
      codeHash,
      storage: this.cfg.disableStorage ? undefined : new Map(),
      empty: !(nonce > 0n || codeHash !== undefined || balance !== 0n),
    };
    this.budget.spend(200 + 2 * (acc.code?.length ?? 0));
    this.pre.set(key, acc);
    return acc;
  }

  private async lookupStorage(a: Bytes, slot: Bytes, state: StateView): Promise<void> {
    if (this.cfg.disableStorage) return;
    const acc = this.pre.get(hex(a));
    const key = hex(slot);
    if (acc?.storage === undefined || acc.storage.has(key)) return;
    this.budget.spend(140);
    acc.storage.set(key, await state.storage(a, slot));
  }

  async onTxEnd(_r: unknown, state: StateView): Promise<void> {
    if (this.cfg.diffMode) await this.diff(this.recorded ?? state);
    if (this.cfg.includeEmpty) return;
    for (const [k, a] of this.pre) if (a.empty) this.pre.delete(k);
  }

  /** geth's processDiffState: what changed of each touched account, as `post`, and its `pre` trimmed to it. */
  private async diff(state: StateView): Promise<void> {
    for (const [key, pre] of this.pre) {
      if (this.deleted.has(key)) continue;
      const a = Uint8Array.from(Buffer.from(key.slice(2), 'hex'));
      const post: JsonPrestateAccount = {};
      let modified = false;
      const balance = await state.balance(a);
      if (balance !== pre.balance) {
        modified = true;
        post.balance = toQuantity(balance);
      }
      const nonce = await state.nonce(a);
      if (nonce !== pre.nonce) {
        modified = true;
        if (nonce !== 0n) post.nonce = Number(nonce);
      }
      const codeHash = (await state.codeHash(a)) ?? KECCAK256_NULL;
      if (!equalsBytes(codeHash, pre.codeHash ?? KECCAK256_NULL)) {
        modified = true;
        post.codeHash = hex(codeHash);
      }
      if (!this.cfg.disableCode) {
        const code = await state.code(a);
        if (!equalsBytes(code, pre.code ?? new Uint8Array())) {
          modified = true;
          post.code = hex(code);
        }
      }
      if (pre.storage !== undefined) modified = (await this.diffStorage(a, pre.storage, post, state)) || modified;
      if (modified) this.post.set(key, post);
      else this.pre.delete(key);
    }
  }

  private async diffStorage(
    a: Bytes,
    slots: Map<string, Bytes>,
    post: JsonPrestateAccount,
    state: StateView,
  ): Promise<boolean> {
    let modified = false;
    const changed: Record<string, string> = {};
    for (const [k, v] of [...slots]) {
      if (equalsBytes(v, ZERO)) slots.delete(k);
      const now = await state.storage(a, Uint8Array.from(Buffer.from(k.slice(2), 'hex')));
      if (equalsBytes(v, now)) slots.delete(k);
      else {
        modified = true;
        if (!equalsBytes(now, ZERO)) changed[k] = hex(now);
      }
    }
    if (Object.keys(changed).length > 0) post.storage = changed;
    return modified;
  }

  /** Each touched account as it was before the transaction (hex address -> account), slots read or written included. */
  touched(): ReadonlyMap<string, Readonly<PrestateAccount>> {
    return this.pre;
  }

  /** The accounts geth's diffMode leaves whole in `pre` and out of `post`: their SELFDESTRUCT ran. */
  deletedAccounts(): ReadonlySet<string> {
    return this.deleted;
  }

  result(): unknown {
    const pre = jsonState(this.pre);
    if (!this.cfg.diffMode) return pre;
    return { post: Object.fromEntries(this.post), pre };
  }
}

function jsonState(m: Map<string, PrestateAccount>): Record<string, JsonPrestateAccount> {
  const out: Record<string, JsonPrestateAccount> = {};
  for (const [k, a] of m) {
    const j: JsonPrestateAccount = {};
    if (a.balance !== undefined) j.balance = toQuantity(a.balance);
    if (a.code !== undefined) j.code = hex(a.code);
    if (a.codeHash !== undefined) j.codeHash = hex(a.codeHash);
    if (a.nonce !== 0n) j.nonce = Number(a.nonce);
    if (a.storage !== undefined && a.storage.size > 0)
      j.storage = Object.fromEntries([...a.storage].map(([s, v]) => [s, hex(v)]));
    out[k] = j;
  }
  return out;
}

/** `size` bytes of memory from `offset`, zeros past its end (geth's GetMemoryCopyPadded). */
function padded(memory: Uint8Array, offset: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  if (offset < memory.length) out.set(memory.subarray(offset, Math.min(memory.length, offset + size)));
  return out;
}
