// What a tracer sees of a transaction's execution, in geth's terms (core/tracing.Hooks): the
// transaction's start and end, each call frame entered and left, each opcode before it runs,
// each log. The tracers (tracers/*.ts) build geth's answers from these events alone, so the
// events may come from a re-execution (evm-events.ts binds them to @ethereumjs/evm) or, later,
// from a recorded form of the transaction.
import type { Bytes } from '@chainnode/core';

/** The state as the execution has it at the moment of the event (geth's StateDB reads). */
export interface StateView {
  balance(address: Bytes): Promise<bigint>;
  nonce(address: Bytes): Promise<bigint>;
  code(address: Bytes): Promise<Bytes>;
  /** The account's code hash; undefined for an account that does not exist. */
  codeHash(address: Bytes): Promise<Bytes | undefined>;
  /** The 32-byte word at `slot`. */
  storage(address: Bytes, slot: Bytes): Promise<Bytes>;
}

/** The transaction and its block, at OnTxStart. */
export interface TxStart {
  from: Bytes;
  /** null: a contract creation. */
  to: Bytes | null;
  gasLimit: bigint;
  coinbase: Bytes;
  blockNumber: bigint;
  /** The block's rules: SELFDESTRUCT under EIP-6780 (Cancun), delegations (Prague). */
  cancun: boolean;
  prague: boolean;
  /** EIP-7702 authorities of a set-code transaction (recovered signers). */
  authorities: Bytes[];
  /** Whether `address` is a precompile of the block's rules. */
  isPrecompile(address: Bytes): boolean;
}

/** The frame kinds geth names by their opcode. */
export type FrameType = 'CALL' | 'CALLCODE' | 'DELEGATECALL' | 'STATICCALL' | 'CREATE' | 'CREATE2' | 'SELFDESTRUCT';

export interface FrameEnter {
  /** 0 for the transaction's own frame. */
  depth: number;
  type: FrameType;
  from: Bytes;
  /** The callee (the code's address for DELEGATECALL and CALLCODE); for a creation, the new address. */
  to: Bytes;
  input: Bytes;
  gas: bigint;
  /** undefined where geth passes none (STATICCALL). */
  value: bigint | undefined;
}

export interface FrameExit {
  depth: number;
  output: Bytes;
  gasUsed: bigint;
  /** geth's error text (`execution reverted`, `out of gas`…); undefined on success. */
  error: string | undefined;
  reverted: boolean;
}

/** One opcode about to run (geth's OnOpcode). */
export interface OpStep {
  pc: number;
  op: number;
  /** geth's name of the opcode (PUSH1, KECCAK256…). */
  opName: string;
  gas: bigint;
  cost: bigint;
  /** 1 for the transaction's own frame (geth's depth in struct logs). */
  depth: number;
  /** Bottom first. */
  stack: bigint[];
  memory: Uint8Array;
  /** The return data of the frame's last call. */
  returnData: Uint8Array;
  refund: bigint;
  /** The executing contract (the storage owner). */
  address: Bytes;
}

export interface TraceLog {
  address: Bytes;
  topics: Bytes[];
  data: Bytes;
  /** The log's index in the block. */
  index: number;
}

export interface TxEnd {
  gasUsed: bigint;
}

/** The fields of an account a state diff compares (codeHash undefined: no code). */
export interface AccountFields {
  balance: bigint;
  nonce: bigint;
  codeHash: Bytes | undefined;
}

/**
 * One account a transaction changed, or whose SELFDESTRUCT ran, or that its frames created or
 * destroyed, as its executing import recorded it (record/changes.ts).
 */
export interface ChangedAccount {
  address: Bytes;
  pre: AccountFields;
  post: AccountFields;
  /**
   * [slot, before, after] words in the order the transaction first touched them: the changed
   * slots, or every touched one of a `deleted` account.
   */
  slots: [Bytes, Bytes, Bytes][];
  /** geth's prestate tracer's `deleted`: its SELFDESTRUCT ran (before Cancun, or it was created by the transaction). */
  deleted: boolean;
  /** Created by frames that did not fail (Parity's stateDiff). */
  created: boolean;
  /** Destroyed by a SELFDESTRUCT whose frames did not fail, under the block's rules (Parity's stateDiff). */
  destroyed: boolean;
}

/** A transaction's recorded state changes, in the order the transaction first touched the accounts. */
export interface TxChanges {
  accounts: ChangedAccount[];
  /** Code by its hash. */
  code(codeHash: Bytes): Promise<Bytes>;
}

/**
 * A tracer of one transaction. Hooks that return a promise are awaited before execution goes on
 * (they may read the state as it is then).
 */
export interface Tracer {
  /** Wants onOpcode (the EVM then reports every step, which costs). */
  readonly wantsOpcodes?: boolean;
  /** Wants onLog (found from the LOG opcodes). */
  readonly wantsLogs?: boolean;
  /**
   * Wants the frames geth reports that the EVM here does not enter, found from the opcodes: a
   * SELFDESTRUCT, a call that fails before entering its callee.
   */
  readonly wantsSelfdestructs?: boolean;
  /**
   * Wants onOpcode only for the opcodes that touch accounts and slots (BALANCE, EXTCODE*, SLOAD,
   * SSTORE, CREATE*, the CALL family, SELFDESTRUCT), given their op, top stack items, memory and
   * address only, through their handlers (opcode-hooks.ts) instead of a `step` event each.
   */
  readonly wantsStateOpcodes?: boolean;
  /**
   * Wants opcodes only to find what the transaction changed: can be fed its recorded changes
   * instead (onChanges, before onTxStart; it then reads no state).
   */
  readonly replaysChanges?: boolean;
  onChanges?(c: TxChanges): Promise<void>;
  onTxStart?(tx: TxStart, state: StateView): void | Promise<void>;
  onEnter?(f: FrameEnter): void;
  onExit?(f: FrameExit): void;
  onOpcode?(s: OpStep, state: StateView): void | Promise<void>;
  /**
   * The opcode last reported failed (geth: OnOpcode with the error, for ops that never ran);
   * `cost`: geth's cost of it where it is not the one reported (a CALL out of gas: its constant gas).
   */
  onOpcodeError?(depth: number, error: string, cost?: bigint): void;
  onLog?(l: TraceLog): void;
  onTxEnd?(r: TxEnd, state: StateView): void | Promise<void>;
  /** The answer, in geth's JSON shape. */
  result(): unknown;
}

/** A trace grew past the node's size limit for one answer (traceMaxBytes). */
export class TraceTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`response too large: trace exceeds ${limit} bytes`);
  }
}

/** Counts the bytes of JSON an answer is growing to; throws past the limit. */
export class TraceBudget {
  private used = 0;
  constructor(readonly limit: number) {}
  spend(bytes: number): void {
    this.used += bytes;
    if (this.used > this.limit) throw new TraceTooLargeError(this.limit);
  }
}

/** A tracer's name or configuration geth refuses (-32000 with geth's message). */
export class TracerConfigError extends Error {}
