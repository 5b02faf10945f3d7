// An @ethereumjs StateManager over the store's synchronous state reads (core's SyncStateReader:
// the trie walk of eth_getStorageAt and eth_getProof, with the store's account, slot, node and
// code caches) or, below the state trie's window, over the flat state history (BlockStateBase), with an in-memory overlay for what one call writes and a journal for the EVM's
// checkpoints. Nothing is ever written to the store; the overlay is dropped with the call.
//
// Values follow MerkleStateManager's conventions, which the EVM's gas rules compare byte for byte:
// storage words are returned without leading zeros (zero is the empty array).
import type { StateManagerInterface } from '@ethereumjs/common';
import { Account, Address, bytesToHex, equalsBytes, KECCAK256_NULL, KECCAK256_RLP } from '@ethereumjs/util';
import type { AccountFields } from '@ethereumjs/common';
import { Lru, keccak256 } from '@chainnode/core';
import type { AccountRecord, Bytes, SyncStateReader } from '@chainnode/core';
import type { OverlayWrites } from './state-root.js';

/** Strips leading zero bytes (MerkleStateManager's unpadded storage values). */
export function unpad(v: Uint8Array): Uint8Array {
  let i = 0;
  while (i < v.length && v[i] === 0) i++;
  return i === 0 ? v : v.subarray(i);
}

function word(v: Uint8Array): Uint8Array {
  const out = new Uint8Array(32);
  out.set(v.subarray(Math.max(0, v.length - 32)), 32 - Math.min(32, v.length));
  return out;
}

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');

/** One account's overrides as geth's StateOverride takes them (eth_call, eth_estimateGas). */
export interface AccountOverride {
  balance?: bigint;
  nonce?: bigint;
  code?: Bytes;
  /** Replaces the whole storage: every other slot reads zero. */
  state?: Map<string, Bytes>;
  /** Sets these slots, the others keep their value. */
  stateDiff?: Map<string, Bytes>;
}

type Undo = () => void;

/**
 * Contract code by code hash, one object per code for every call of the process (the store hands
 * out a copy per read): the EVM never writes to code, and the interpreter's jump-destination
 * analysis is kept per code object (jump-cache.ts), so the same code must be the same bytes.
 */
const KEPT_CODES = 1024;
const keptCodes = new Lru<string, Uint8Array>(KEPT_CODES);

/**
 * The base state of a call read asynchronously, by block rather than by root: below the state
 * trie's window (`--state-trie window=<N>`) the block's trie is pruned and the store's flat state
 * history answers instead.
 */
export interface BlockStateBase {
  /** The account after the block; null when absent. */
  account(address: Bytes): Promise<AccountRecord | null>;
  /** The storage word (32 bytes) of `address` at `slot` after the block. */
  storage(address: Bytes, slot: Bytes): Promise<Bytes>;
}

export class StoreStateManager implements StateManagerInterface {
  /** Accounts as written by the call (null: deleted), by address bytes. */
  private accounts = new Map<string, Account | null>();
  /** Slots written by the call, by address then slot (32-byte word keys). */
  private storage = new Map<string, Map<string, Uint8Array>>();
  /** Addresses whose stored slots no longer count (cleared, or replaced by a `state` override). */
  private cleared = new Set<string>();
  private codes = new Map<string, Uint8Array>();
  /** Slots as the transaction found them (EIP-2200 "original" values): the base state with overrides. */
  private original = new Map<string, Map<string, Uint8Array>>();
  private journal: Undo[][] = [];
  private deadline = Number.POSITIVE_INFINITY;
  private inline: InlineBudget | undefined;

  constructor(
    private readonly reader: SyncStateReader,
    private stateRoot: Uint8Array,
    /** Given: the base state comes from it (by block), not from the trie walk at stateRoot. */
    private base?: BlockStateBase,
  ) {}

  /**
   * Starts a new call at `stateRoot` (read from `base` when given): forgets every write of the
   * previous one. Past `deadline` the call is a timeout; past `inline`'s work, InlineBudgetExceeded.
   */
  reset(stateRoot: Uint8Array, deadline: number, base?: BlockStateBase, inline?: InlineBudget): void {
    this.stateRoot = stateRoot;
    this.base = base;
    this.inline = inline;
    this.accounts.clear();
    this.storage.clear();
    this.cleared.clear();
    this.codes.clear();
    this.original.clear();
    this.journal = [];
    this.deadline = deadline;
    this.liveOriginals = false;
  }

  /** Moves the current call's deadline (a block trace gives each transaction its own). */
  setDeadline(deadline: number): void {
    this.deadline = deadline;
  }

  /** geth's state overrides, applied below the journal (they are the call's starting state). */
  async applyOverrides(overrides: Map<string, AccountOverride>): Promise<void> {
    for (const [addrKey, o] of overrides) {
      const address = new Address(Uint8Array.from(Buffer.from(addrKey, 'latin1')));
      // An override that sets nothing (a precompile's move alone) leaves the account as it is.
      const { balance, nonce, code, state, stateDiff } = o;
      if ([balance, nonce, code, state, stateDiff].every((x) => x === undefined)) continue;
      const acct = (await this.getAccount(address)) ?? new Account();
      if (o.balance !== undefined) acct.balance = o.balance;
      if (o.nonce !== undefined) acct.nonce = o.nonce;
      this.accounts.set(addrKey, acct);
      if (o.code !== undefined) await this.putCode(address, o.code);
      if (o.state !== undefined) {
        this.cleared.add(addrKey);
        this.storage.set(addrKey, new Map());
        for (const [k, v] of o.state) await this.putStorage(address, Uint8Array.from(Buffer.from(k, 'latin1')), v);
      }
      if (o.stateDiff !== undefined)
        for (const [k, v] of o.stateDiff) await this.putStorage(address, Uint8Array.from(Buffer.from(k, 'latin1')), v);
    }
    this.journal = [];
  }

  /** Before every state read: the deadline, and a read's work spent from the inline budget. */
  private check(): void {
    this.pass(READ_WORK);
  }

  /**
   * Asked by the interpreter's loop (frame-tuning.ts) every INTERRUPT_OPCODES opcodes: the
   * deadline, so a call that computes without reading state stops on time as well, and those
   * opcodes spent from the inline budget.
   */
  interrupt(): void {
    this.pass(INTERRUPT_OPCODES);
  }

  /** Past the deadline: ExecutionTimeout; `work` past the inline budget: InlineBudgetExceeded. */
  private pass(work: number): void {
    if (Date.now() > this.deadline) throw new ExecutionTimeout();
    const b = this.inline;
    if (b !== undefined && (b.spent += work) > b.work) throw new InlineBudgetExceeded();
  }

  private record(undo: Undo): void {
    this.journal[this.journal.length - 1]?.push(undo);
  }

  private baseAccount(address: Address): Account | undefined {
    this.check();
    const a = this.reader.account(this.stateRoot, address.bytes);
    return a === null ? undefined : new Account(a.nonce, a.balance, a.storageRoot, a.codeHash);
  }

  /** The account in the base state when it is read by block (BlockStateBase). */
  private async baseAccountByBlock(base: BlockStateBase, address: Address): Promise<Account | undefined> {
    this.check();
    const a = await base.account(address.bytes);
    return a === null ? undefined : new Account(a.nonce, a.balance, a.storageRoot, a.codeHash);
  }

  async getAccount(address: Address): Promise<Account | undefined> {
    const key = hex(address.bytes);
    const mine = this.accounts.get(key);
    const a =
      mine !== undefined
        ? mine === null
          ? undefined
          : copyAccount(mine)
        : this.base === undefined
          ? this.baseAccount(address)
          : await this.baseAccountByBlock(this.base, address);
    if (a !== undefined && this.masked?.key === key) a.codeHash = KECCAK256_NULL;
    return a;
  }

  /** An account whose code reads as none until unmaskCode (writes keep its code hash). */
  private masked: { key: string; codeHash: Uint8Array } | undefined;

  /**
   * Lets a simulated call come from an account with code: geth skips the EIP-3607 check there,
   * @ethereumjs/vm does not. The sender reads as code-less for the transaction's checks and its
   * code is back (unmaskCode) when its call starts.
   */
  maskCode(address: Address, codeHash: Uint8Array): void {
    this.masked = { key: hex(address.bytes), codeHash };
  }

  unmaskCode(): void {
    this.masked = undefined;
  }

  async putAccount(address: Address, account?: Account): Promise<void> {
    const key = hex(address.bytes);
    if (account !== undefined && this.masked?.key === key) {
      account = copyAccount(account);
      account.codeHash = this.masked.codeHash;
    }
    const prev = this.accounts.get(key);
    this.record(() => (prev === undefined ? this.accounts.delete(key) : this.accounts.set(key, prev)));
    this.accounts.set(key, account === undefined ? null : copyAccount(account));
  }

  async deleteAccount(address: Address): Promise<void> {
    await this.putAccount(address, undefined);
    await this.clearStorage(address);
  }

  async modifyAccountFields(address: Address, fields: AccountFields): Promise<void> {
    const a = (await this.getAccount(address)) ?? new Account();
    if (fields.nonce !== undefined) a.nonce = fields.nonce;
    if (fields.balance !== undefined) a.balance = fields.balance;
    if (fields.codeHash !== undefined) a.codeHash = fields.codeHash;
    if (fields.storageRoot !== undefined) a.storageRoot = fields.storageRoot;
    await this.putAccount(address, a);
  }

  async putCode(address: Address, value: Uint8Array): Promise<void> {
    const key = hex(address.bytes);
    const prev = this.codes.get(key);
    this.record(() => (prev === undefined ? this.codes.delete(key) : this.codes.set(key, prev)));
    this.codes.set(key, value);
    await this.modifyAccountFields(address, { codeHash: value.length === 0 ? KECCAK256_NULL : keccak256(value) });
  }

  async getCode(address: Address): Promise<Uint8Array> {
    const key = hex(address.bytes);
    const mine = this.codes.get(key);
    if (mine !== undefined) return mine;
    const a = await this.getAccount(address);
    if (a === undefined || a.codeHash.every((b, i) => b === KECCAK256_NULL[i])) return new Uint8Array();
    const hashKey = hex(a.codeHash);
    const kept = keptCodes.get(hashKey);
    if (kept !== undefined) return kept;
    this.check();
    const code = this.reader.code(a.codeHash);
    if (code === undefined) throw new Error(`code ${bytesToHex(a.codeHash)} missing from the store`);
    keptCodes.set(hashKey, code);
    return code;
  }

  async getCodeSize(address: Address): Promise<number> {
    return (await this.getCode(address)).length;
  }

  /** The slot in the base state (with the overrides' cleared storages), unpadded. */
  private baseSlot(address: Address, slot: Uint8Array): Uint8Array {
    const key = hex(address.bytes);
    if (this.cleared.has(key)) return new Uint8Array();
    this.check();
    const a = this.reader.account(this.stateRoot, address.bytes);
    if (a === null || a.storageRoot.every((b, i) => b === KECCAK256_RLP[i])) return new Uint8Array();
    return unpad(this.reader.storage(a.storageRoot, slot));
  }

  /** baseSlot when the base state is read by block (BlockStateBase). */
  private async baseSlotByBlock(base: BlockStateBase, address: Address, slot: Uint8Array): Promise<Uint8Array> {
    if (this.cleared.has(hex(address.bytes))) return new Uint8Array();
    this.check();
    return unpad(await base.storage(address.bytes, slot));
  }

  async getStorage(address: Address, slot: Uint8Array): Promise<Uint8Array> {
    if (slot.length !== 32) throw new Error('Storage key must be 32 bytes long');
    const mine = this.storage.get(hex(address.bytes))?.get(hex(slot));
    if (mine !== undefined) return mine;
    return this.base === undefined ? this.baseSlot(address, slot) : this.baseSlotByBlock(this.base, address, slot);
  }

  async putStorage(address: Address, slot: Uint8Array, value: Uint8Array): Promise<void> {
    if (slot.length !== 32) throw new Error('Storage key must be 32 bytes long');
    const skey = hex(slot);
    const slots = innerMap(this.storage, hex(address.bytes));
    const prev = slots.get(skey);
    this.record(() => (prev === undefined ? slots.delete(skey) : slots.set(skey, prev)));
    slots.set(skey, unpad(word(value)).slice());
  }

  async clearStorage(address: Address): Promise<void> {
    const key = hex(address.bytes);
    const hadCleared = this.cleared.has(key);
    const prev = this.storage.get(key);
    this.record(() => {
      if (!hadCleared) this.cleared.delete(key);
      if (prev === undefined) this.storage.delete(key);
      else this.storage.set(key, prev);
    });
    this.cleared.add(key);
    this.storage.set(key, new Map());
  }

  async checkpoint(): Promise<void> {
    this.journal.push([]);
  }

  async commit(): Promise<void> {
    const top = this.journal.pop();
    const below = this.journal[this.journal.length - 1];
    if (top !== undefined && below !== undefined) for (const u of top) below.push(u);
  }

  async revert(): Promise<void> {
    const top = this.journal.pop();
    if (top !== undefined) for (let i = top.length - 1; i >= 0; i--) (top[i] as Undo)();
  }

  async getStateRoot(): Promise<Uint8Array> {
    // A call's writes are never committed to a trie: the root it started from is the answer.
    return this.stateRoot;
  }

  async setStateRoot(stateRoot: Uint8Array): Promise<void> {
    // The same root keeps its base (the block's state); another is read from its trie.
    this.reset(stateRoot, this.deadline, equalsBytes(stateRoot, this.stateRoot) ? this.base : undefined, this.inline);
  }

  async hasStateRoot(): Promise<boolean> {
    return true;
  }

  originalStorageCache = {
    get: async (address: Address, slot: Uint8Array): Promise<Uint8Array> => {
      const akey = hex(address.bytes);
      const skey = hex(slot);
      const m = innerMap(this.original, akey);
      let v = m.get(skey);
      if (v === undefined) {
        // The value before the transaction: the journal's bottom layer is the overrides, the
        // transaction's writes all sit in its frames; undo-free read of the base is enough when
        // nothing overrode the slot.
        const found = this.liveOriginals ? this.storage.get(akey)?.get(skey) : this.overrideSlot(akey, skey);
        v =
          found ??
          (this.base === undefined
            ? this.baseSlot(address, slot)
            : await this.baseSlotByBlock(this.base, address, slot));
        m.set(skey, v);
      }
      return v;
    },
    clear: (): void => this.original.clear(),
  };

  /** Slots set by state overrides (recorded before the first checkpoint). */
  private overrideSlots = new Map<string, Map<string, Uint8Array>>();

  private overrideSlot(akey: string, skey: string): Uint8Array | undefined {
    return this.overrideSlots.get(akey)?.get(skey);
  }

  /** Freezes the overlay as the call's starting state (after applyOverrides). */
  sealOverrides(): void {
    this.overrideSlots = new Map([...this.storage].map(([k, m]) => [k, new Map(m)]));
  }

  /**
   * Starts the next transaction of a simulated block on top of every write so far (its EIP-2200
   * original values are the overlay's): the overlay is kept, not reset, from one to the next.
   */
  beginTransaction(): void {
    // A slot's original value is read on the transaction's first look at it, which comes before
    // any write of the transaction (SSTORE asks for it first): the overlay's value then is it.
    this.liveOriginals = true;
    this.original.clear();
    this.journal = [];
  }

  /** Originals are the overlay's values at first look (beginTransaction), not the sealed ones. */
  private liveOriginals = false;

  /** The overlay's writes, for the state root of a simulated block (state-root.ts). */
  writes(): OverlayWrites {
    return { accounts: this.accounts, storage: this.storage, cleared: this.cleared };
  }

  /** The state root the overlay is on. */
  baseRoot(): Uint8Array {
    return this.stateRoot;
  }

  clearCaches(): void {}

  shallowCopy(): StateManagerInterface {
    return new StoreStateManager(this.reader, this.stateRoot, this.base);
  }
}

function copyAccount(a: Account): Account {
  return new Account(a.nonce, a.balance, a.storageRoot, a.codeHash);
}

/** A call ran past its time budget (thrown from a state read, the EVM's only way out). */
export class ExecutionTimeout extends Error {
  constructor() {
    super('execution timeout');
    this.name = 'ExecutionTimeout';
  }
}

/**
 * A call's work on the serving thread, counted in opcodes (INTERRUPT_OPCODES at a time) and
 * state reads (READ_WORK each): past `work`, the run stops with InlineBudgetExceeded. Counted in
 * work, not time, so calls interleaved on one event loop do not use up each other's budget; one
 * object for every run of a call (eth_estimateGas's), which share it.
 */
export interface InlineBudget {
  work: number;
  spent: number;
}

/** How often the interpreter's loop asks the state view to interrupt it, in opcodes. */
export const INTERRUPT_OPCODES = 512;

/** A state read's share of an inline budget: about what 100 opcodes cost, a cold read more. */
export const READ_WORK = 100;

/**
 * A call run on the serving thread did more work than it was given there (`InlineBudget`): the
 * caller drops this run and runs the call again where it may take long (an offload worker). An
 * ExecutionTimeout, so every path that lets a timeout through lets it through.
 */
export class InlineBudgetExceeded extends ExecutionTimeout {
  constructor() {
    super();
    this.name = 'InlineBudgetExceeded';
  }
}

/** The inner map of `outer` under `key`, created empty on first use. */
function innerMap<V>(outer: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let m = outer.get(key);
  if (m === undefined) {
    m = new Map();
    outer.set(key, m);
  }
  return m;
}
