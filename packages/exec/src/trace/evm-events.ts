// Binds @ethereumjs/evm's events (beforeMessage, step, afterMessage) to a tracer's geth-shaped
// hooks (hooks.ts) for one transaction: frame kinds, addresses and values as geth's EVM reports
// them, depths counted from 1 in steps, the return data of a frame's last call, the block-wide
// index of each log (the logs of a failed frame given back), and the trace's deadline.
import type { Block } from '@ethereumjs/block';
import type { Message } from '@ethereumjs/evm';
import type { TypedTransaction } from '@ethereumjs/tx';
import { eoaCode7702RecoverAuthority } from '@ethereumjs/util';
import type { Address, EOACode7702AuthorizationListBytesItem } from '@ethereumjs/util';
import type { VM } from '@ethereumjs/vm';
import type { Bytes } from '@chainnode/core';
import { haltMessage, haltPoint } from '../halt.js';
import type { HaltPoint } from '../halt.js';
import { ExecutionTimeout } from '../state.js';
import { eventsOf } from '../transfer-logs.js';
import type { FrameEnter, FrameType, StateView, Tracer, TxStart } from './hooks.js';
import { hookOpcodes } from './opcode-hooks.js';
import type { HookState, OpcodeHooks } from './opcode-hooks.js';

interface StepEvent {
  pc: number;
  gasLeft: bigint;
  gasRefund: bigint;
  opcode: { name: string; code: number; fee: number; dynamicFee: bigint };
  stack: bigint[];
  depth: number;
  address: Address;
  memory: Uint8Array;
}

interface MessageResult {
  execResult: {
    exceptionError?: { error: string };
    executionGasUsed: bigint;
    returnValue: Uint8Array;
    runState?: {
      programCounter: number;
      gasLeft: bigint;
      gasRefund: bigint;
      stack: { getStack(): bigint[] };
      memory: { _store: Uint8Array };
      memoryWordCount: bigint;
      address: Address;
    };
  };
}

interface OpenFrame {
  type: FrameType;
  isStatic: boolean;
  /** The return data of the frame's last call (geth's interpreter.returnData). */
  returnData: Uint8Array;
  /** The block's live log count when the frame started (a failed frame gives its logs back). */
  logsAtStart: number;
  /** The last opcode the frame ran (undefined: none yet), and its constant gas. */
  lastOp: number | undefined;
  lastFee: bigint;
  /** The frame's SELFDESTRUCT as it ran: the beneficiary and the balance it sends. */
  selfdestruct?: { from: Bytes; to: Bytes; value: bigint };
  /** The frame's own value (what a DELEGATECALL from it passes on). */
  value: bigint;
  /** A call the frame's last step made, until its callee is entered (or, failing fast, is not). */
  calling?: { enter: Omit<FrameEnter, 'gas'>; gas: bigint } | undefined;
}

const CALLS: Record<number, FrameType> = { 241: 'CALL', 242: 'CALLCODE', 244: 'DELEGATECALL', 250: 'STATICCALL' };
const MAX_DEPTH = 1024;
const CALL_STIPEND = 2300n;

/** Opcodes that end a frame; a frame that ends after any other ran off its code's end. */
const ENDS = new Set([0x00, 0xf3, 0xfd, 0xfe, 0xff]);

/**
 * Errors the opcode reported last raised before it ran, which geth's struct logger puts on that
 * opcode's entry (its interpreter checks the stack and charges the gas before OnOpcode). An error
 * the opcode raises as it runs (invalid opcode, invalid jump, write protection, return data out of
 * bounds) reaches only OnFault, which geth's struct logger does not implement.
 */
const OPCODE_ERRORS = new Set(['out of gas', 'stack underflow', 'stack overflow', 'value overflow', 'out of range']);

const EMPTY = new Uint8Array();
const SELFDESTRUCT = 0xff;
const DEADLINE_STEPS = 1024;

/** geth's frame kind of a message. */
function frameType(m: Message, parentStatic: boolean): FrameType {
  if (m.depth === 0) return m.to === undefined ? 'CREATE' : 'CALL';
  if (m.delegatecall) return 'DELEGATECALL';
  if (m.to === undefined) return m.salt !== undefined ? 'CREATE2' : 'CREATE';
  if (m.isStatic && !parentStatic) return 'STATICCALL';
  if (m._codeAddress !== undefined && !m._codeAddress.equals(m.to)) return 'CALLCODE';
  return 'CALL';
}

/** geth's error text for an EVM error; `at`: where the EVM halted, for the texts that name it. */
export function frameError(error: string, at?: HaltPoint): string {
  if (error === 'revert') return 'execution reverted';
  if (error === 'create collision') return 'contract address collision';
  if (error === 'code size to deposit exceeds maximum code size') return 'max code size exceeded';
  if (error === 'invalid bytecode deployed') return 'invalid code: must not begin with 0xef';
  return haltMessage(error, at);
}

export interface Binding {
  /** Throws what a hook threw while the EVM could not be told (an awaited hook's failure). */
  check(): void;
  detach(): void;
}

/**
 * Feeds `tracer` from `vm`'s EVM until detach. `logsBefore`: the block's logs before the
 * transaction; `deadline`: Date.now() past which execution stops (ExecutionTimeout).
 */
export function bindTracer(
  vm: VM,
  tracer: Tracer,
  state: StateView,
  opts: { logsBefore: number; deadline: number; eip150: boolean },
): Binding {
  const events = eventsOf(vm);
  // A CALL's constant gas in geth: EIP-2929's warm access cost, which the EVM here charges as
  // dynamic gas (its constant fee is 0 from Berlin on); before, the constant fee both charge.
  const warmCall = vm.common.isActivatedEIP(2929) ? 100n : undefined;
  const frames: OpenFrame[] = [];
  let liveLogs = 0;
  let steps = 0;
  let failure: unknown;
  const fail = (err: unknown): void => {
    failure ??= err;
  };
  const check = (): void => {
    if (failure !== undefined) throw failure;
  };
  const evm = vm.evm as unknown as { _generateAddress(m: Message): Promise<Address> };

  const beforeMessage = (m: Message, resolve: () => void): void => {
    check();
    if (Date.now() > opts.deadline) throw new ExecutionTimeout();
    const parent = frames[frames.length - 1];
    const type = frameType(m, parent?.isStatic ?? false);
    if (parent !== undefined) parent.calling = undefined;
    frames.push({
      type,
      isStatic: m.isStatic,
      returnData: EMPTY,
      logsAtStart: liveLogs,
      lastOp: undefined,
      lastFee: 0n,
      value: m.value,
    });
    const enter = (to: Address): void => {
      tracer.onEnter?.({
        depth: m.depth,
        type,
        from: (m.delegatecall ? (m.to as Address) : m.caller).bytes,
        to: to.bytes,
        // A call's or creation's data is a view of the caller's memory (the EVM passes it without
        // a copy), which the caller goes on writing: a tracer keeping it needs its own copy.
        input: m.data.slice(),
        gas: m.gasLimit,
        value: type === 'STATICCALL' ? undefined : m.value,
      });
    };
    if (m.to !== undefined) {
      enter(type === 'DELEGATECALL' || type === 'CALLCODE' ? m.codeAddress : m.to);
      resolve();
    }
    // A creation's code is its data; the EVM sets `code` only after this event, and CREATE2's
    // address hashes it.
    else
      evm
        ._generateAddress(m.code === undefined ? ({ caller: m.caller, salt: m.salt, code: m.data } as Message) : m)
        .then(
          (a) => {
            enter(a);
            resolve();
          },
          (err: unknown) => {
            fail(err);
            resolve();
          },
        );
  };

  /** geth reports the STOP of a frame that runs off its code's end (the EVM here just stops). */
  const implicitStop = (f: OpenFrame, r: MessageResult, depth: number): void => {
    const rs = r.execResult.runState;
    if (f.lastOp === undefined || ENDS.has(f.lastOp) || rs === undefined || tracer.onOpcode === undefined) return;
    const out = tracer.onOpcode(
      {
        pc: rs.programCounter,
        op: 0x00,
        opName: 'STOP',
        gas: rs.gasLeft,
        cost: 0n,
        depth: depth + 1,
        stack: rs.stack.getStack(),
        memory: rs.memory._store.slice(0, Number(rs.memoryWordCount) * 32),
        returnData: f.returnData,
        refund: rs.gasRefund,
        address: rs.address.bytes,
      },
      state,
    );
    // A STOP reads no storage: nothing to wait for.
    out?.catch(fail);
  };

  /** geth reports a SELFDESTRUCT as a frame of its own: no input, no gas, the balance as its value. */
  const selfdestructFrame = (d: NonNullable<OpenFrame['selfdestruct']>, depth: number): void => {
    tracer.onEnter?.({ depth, type: 'SELFDESTRUCT', from: d.from, to: d.to, input: EMPTY, gas: 0n, value: d.value });
    tracer.onExit?.({ depth, output: EMPTY, gasUsed: 0n, error: undefined, reverted: false });
  };

  const afterMessage = (r: MessageResult): void => {
    const f = frames.pop();
    const depth = frames.length;
    const err = r.execResult.exceptionError?.error;
    if (err === undefined && f !== undefined) {
      failedFast(f);
      implicitStop(f, r, depth);
      if (f.lastOp === SELFDESTRUCT && f.selfdestruct !== undefined) selfdestructFrame(f.selfdestruct, depth + 1);
    }
    const reverted = err !== undefined;
    if (reverted && f !== undefined) liveLogs = f.logsAtStart;
    const error = err === undefined ? undefined : frameError(err, haltPoint(r.execResult.runState));
    if (err !== undefined && error !== undefined && OPCODE_ERRORS.has(err)) {
      // A CALL runs out of gas only before its callee's share is set (the 63/64 rule caps that
      // share by the gas left): geth's cost for it is then the opcode's constant gas.
      const callOutOfGas = err === 'out of gas' && f?.lastOp !== undefined && CALLS[f.lastOp] !== undefined;
      tracer.onOpcodeError?.(depth + 1, error, callOutOfGas ? (warmCall ?? f?.lastFee) : undefined);
    }
    const output = r.execResult.returnValue;
    const parent = frames[frames.length - 1];
    if (parent !== undefined && f !== undefined) {
      const create = f.type === 'CREATE' || f.type === 'CREATE2';
      parent.returnData = err === undefined ? (create ? EMPTY : output) : err === 'revert' ? output : EMPTY;
    }
    tracer.onExit?.({
      depth,
      output,
      gasUsed: r.execResult.executionGasUsed,
      error,
      reverted,
    });
  };

  /**
   * A call that failed before entering its callee (too little balance for its value, or the depth
   * limit): geth reports it as a frame that used no gas; the EVM here enters nothing. Its gas is
   * the callee's share and, for a call with value, the stipend.
   */
  const failedFast = (f: OpenFrame): void => {
    const c = f.calling;
    f.calling = undefined;
    if (c === undefined) return;
    const error = c.enter.depth > MAX_DEPTH ? 'max call depth exceeded' : 'insufficient balance for transfer';
    tracer.onEnter?.({ ...c.enter, gas: c.gas });
    tracer.onExit?.({ depth: c.enter.depth, output: EMPTY, gasUsed: 0n, error, reverted: true });
  };

  /**
   * The gas a CALL-family step hands its callee (EIP-150: at most all but a 64th of what is left
   * after the step's own cost). geth counts it in the step's cost; the EVM here charges it apart.
   */
  const calleeGas = (e: StepEvent): bigint => {
    const requested = e.stack[e.stack.length - 1] ?? 0n;
    const avail = e.gasLeft - e.opcode.dynamicFee;
    if (avail <= 0n) return 0n;
    if (!opts.eip150) return requested;
    const cap = avail - avail / 64n;
    return requested < cap ? requested : cap;
  };

  /**
   * Notes the call a CALL-family opcode makes (geth's OnEnter arguments), until its callee is
   * entered. `args`: its operands, top first; `calleeGas`: the callee's share before any stipend.
   */
  const noteCall = (
    f: OpenFrame,
    type: FrameType,
    depth: number,
    from: Bytes,
    args: bigint[],
    memory: (offset: number, size: number) => Uint8Array,
    calleeGas: bigint,
  ): void => {
    const withValue = type === 'CALL' || type === 'CALLCODE';
    if (args.length < (withValue ? 7 : 6)) return;
    const at = (i: number): bigint => args[i] as bigint;
    const inAt = withValue ? 3 : 2;
    const input = memory(Number(at(inAt)), Number(at(inAt + 1)));
    const value = type === 'STATICCALL' ? undefined : type === 'DELEGATECALL' ? f.value : at(2);
    const stipend = withValue && value !== undefined && value > 0n ? CALL_STIPEND : 0n;
    f.calling = {
      enter: { depth: depth + 1, type, from, to: word(at(1)).subarray(12), input, value },
      gas: calleeGas + stipend,
    };
  };

  /** A step's memory as noteCall reads it (zero past its end). */
  const stepMemory =
    (e: StepEvent) =>
    (offset: number, size: number): Uint8Array => {
      const input = new Uint8Array(size);
      if (offset < e.memory.length) input.set(e.memory.subarray(offset, Math.min(e.memory.length, offset + size)));
      return input;
    };

  const step = (e: StepEvent, resolve: () => void): void => {
    check();
    if (++steps % DEADLINE_STEPS === 0 && Date.now() > opts.deadline) throw new ExecutionTimeout();
    const code = e.opcode.code;
    const frame = frames[frames.length - 1];
    if (frame !== undefined) {
      if (frame.calling !== undefined) failedFast(frame);
      frame.lastOp = code;
      frame.lastFee = BigInt(e.opcode.fee);
      const call = CALLS[code];
      if (call !== undefined && tracer.wantsSelfdestructs === true)
        noteCall(frame, call, e.depth, e.address.bytes, [...e.stack].reverse(), stepMemory(e), calleeGas(e));
    }
    if (tracer.wantsLogs === true && code >= 0xa0 && code <= 0xa4) emitLog(e);
    const pending: Promise<void>[] = [];
    if (code === SELFDESTRUCT && tracer.wantsSelfdestructs === true && frame !== undefined && e.stack.length > 0) {
      const from = e.address.bytes;
      const to = word(e.stack[e.stack.length - 1] as bigint).subarray(12);
      pending.push(
        state.balance(from).then((value) => {
          frame.selfdestruct = { from, to, value };
        }),
      );
    }
    const out = tracer.onOpcode?.(
      {
        pc: e.pc,
        op: code,
        opName: e.opcode.name,
        gas: e.gasLeft,
        cost: CALLS[code] === undefined ? e.opcode.dynamicFee : e.opcode.dynamicFee + calleeGas(e),
        depth: e.depth + 1,
        stack: e.stack,
        memory: e.memory,
        returnData: frame?.returnData ?? EMPTY,
        refund: e.gasRefund,
        address: e.address.bytes,
      },
      state,
    );
    if (out !== undefined) pending.push(out);
    if (pending.length === 0) {
      resolve();
      return;
    }
    Promise.all(pending).then(
      () => resolve(),
      (err: unknown) => {
        fail(err);
        resolve();
      },
    );
  };

  const emitLog = (e: StepEvent): void => {
    const s = e.stack;
    const n = s.length;
    const count = e.opcode.code - 0xa0;
    if (n < 2 + count) return;
    const topics: Bytes[] = [];
    for (let i = 0; i < count; i++) topics.push(word(s[n - 3 - i] as bigint));
    const data = stepMemory(e)(Number(s[n - 1]), Number(s[n - 2]));
    log(e.address.bytes, topics, data);
  };

  const log = (address: Bytes, topics: Bytes[], data: Bytes): void => {
    tracer.onLog?.({ address, topics, data, index: opts.logsBefore + liveLogs });
    liveLogs++;
  };

  /** A state opcode from its handler, for a tracer that wants only those (wantsStateOpcodes). */
  const stateOp = (rs: HookState): Promise<void> | undefined => {
    const n = Math.min(rs.stack.length, 7);
    const out = tracer.onOpcode?.(
      {
        pc: 0,
        op: rs.opCode,
        opName: '',
        gas: 0n,
        cost: 0n,
        depth: frames.length,
        stack: n === 0 ? [] : rs.stack.peek(n).reverse(),
        memory: rs.memory._store,
        returnData: EMPTY,
        refund: 0n,
        address: rs.interpreter.getAddress().bytes,
      },
      state,
    );
    // A failed read leaves the block unrecorded (check()), never fails the opcode.
    return out?.catch(fail);
  };

  /** The same, from the opcodes' handlers: for tracers that want no opcode of their own. */
  const hooks: OpcodeHooks = {
    log(rs) {
      if (tracer.wantsLogs !== true) return;
      const count = rs.opCode - 0xa0;
      const args = rs.stack.peek(2 + count);
      const data = rs.memory.read(Number(args[0]), Number(args[1]));
      log(rs.interpreter.getAddress().bytes, args.slice(2).map(word), data);
    },
    async selfdestruct(rs) {
      const frame = frames[frames.length - 1];
      if (tracer.wantsSelfdestructs !== true || frame === undefined) return;
      const from = rs.interpreter.getAddress().bytes;
      const to = word(rs.stack.peek(1)[0] as bigint).subarray(12);
      frame.lastOp = SELFDESTRUCT;
      frame.selfdestruct = { from, to, value: await state.balance(from) };
    },
    callBefore(rs) {
      const frame = frames[frames.length - 1];
      const type = CALLS[rs.opCode];
      if (tracer.wantsSelfdestructs !== true || frame === undefined || type === undefined) return;
      const args = rs.stack.peek(Math.min(rs.stack.length, type === 'CALL' || type === 'CALLCODE' ? 7 : 6));
      const memory = (offset: number, size: number) => (size === 0 ? EMPTY : rs.memory.read(offset, size));
      noteCall(
        frame,
        type,
        frames.length - 1,
        rs.interpreter.getAddress().bytes,
        args,
        memory,
        rs.messageGasLimit ?? 0n,
      );
    },
    callAfter() {
      const frame = frames[frames.length - 1];
      if (frame?.calling !== undefined) failedFast(frame);
    },
  };

  events.on('beforeMessage', beforeMessage as never);
  events.on('afterMessage', afterMessage as never);
  // Opcodes through `step` for the tracers that want every one; the few the frame tracers need
  // through their handlers (opcode-hooks.ts), which costs nothing on the other opcodes.
  const stepping = tracer.wantsOpcodes === true;
  const stateOps = !stepping && tracer.wantsStateOpcodes === true;
  const hooked = stateOps || (!stepping && (tracer.wantsLogs === true || tracer.wantsSelfdestructs === true));
  if (stateOps) hooks.state = stateOp;
  if (stepping) events.on('step', step as never);
  const unhook = hooked ? hookOpcodes(vm, hooks) : undefined;
  return {
    check,
    detach() {
      events.off('beforeMessage', beforeMessage as never);
      events.off('afterMessage', afterMessage as never);
      if (stepping) events.off('step', step as never);
      unhook?.();
    },
  };
}

/** OnTxStart's view of `tx` in `block`. */
export function txStart(vm: VM, tx: TypedTransaction, block: Block, gasLimit: bigint): TxStart {
  const common = vm.common;
  const precompiles = (vm.evm as unknown as { precompiles: Map<string, unknown> }).precompiles;
  const authorities: Bytes[] = [];
  const list = (tx as { authorizationList?: EOACode7702AuthorizationListBytesItem[] }).authorizationList;
  for (const auth of list ?? []) {
    try {
      authorities.push(eoaCode7702RecoverAuthority(auth).bytes);
    } catch {
      // geth skips an authorization whose signer does not recover
    }
  }
  return {
    from: tx.getSenderAddress().bytes,
    to: tx.to?.bytes ?? null,
    gasLimit,
    coinbase: block.header.coinbase.bytes,
    blockNumber: block.header.number,
    cancun: common.isActivatedEIP(6780),
    prague: common.isActivatedEIP(7702),
    authorities,
    isPrecompile: (a: Bytes) => precompiles.has(Buffer.from(a).toString('hex')),
  };
}

/** A stack item as a 32-byte word. */
export function word(v: bigint): Bytes {
  const out = new Uint8Array(32);
  let x = v;
  for (let i = 31; i >= 0 && x > 0n; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}
