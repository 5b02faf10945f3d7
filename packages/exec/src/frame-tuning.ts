// Two costs @ethereumjs/evm 10.1.3 pays on every call frame and every opcode that need not be
// paid, taken out for the VMs given to tuneFrames (the others keep the package's code), through
// the VM's own objects: no fork, no patch of the package's files. Measured with bench/call-cpu.ts
// (docs/decisions/execution.md).
//
// - `EVM.runInterpreter` returns the frame's run state merged with its result and environment
//   (`{ ...runState, ...result, ...env }`): three object spreads of some twenty fields each, which
//   V8 runs on its slow path, a quarter of a never-repeated `balanceOf`'s CPU. Nothing in the
//   EVM or the VM reads that merged copy; this node reads the halting opcode and stack depth
//   (halt.ts), which the run state itself holds. The tuned frame returns the run state itself
//   (the merged copy when an afterMessage listener, a tracer, will read it); everything else as
//   the package builds it.
// - `EVM._executeCall` hands runInterpreter a copy of the message made by spreading it (`{
//   ...{ codeAddress }, ...message, gasLimit }`, the same slow path). When none of the EIPs whose
//   code runs there is active (stateless witnesses 6800/7864, EIP-2780's and 8037's top-frame
//   charges, EIP-7708's transfer logs, EIP-7928's access lists), what is left is its plain call:
//   the tuned one does that and gives runInterpreter an object literal of the fields it reads.
// - The interpreter runs every opcode through `await this.runStep()`, a promise and a microtask
//   per opcode. Most opcodes (PUSH, DUP, SWAP, JUMP, the arithmetic) charge a fixed gas and run
//   synchronously: the tuned loop runs those inline, in runStep's order (the invalid-opcode
//   check, the gas, the program counter, the handler), and gives runStep every other opcode.
//   A frame that a step listener, the debug log, the profiler, EOF code or a stateless access
//   witness (EIP-6800, 7864) would observe runs the package's loop unchanged. Every 512 opcodes
//   the loop asks the state view to interrupt it (StoreStateManager: past the call's deadline or
//   its work on the serving thread), so a call that computes without reading state stops too.
import type { Common } from '@ethereumjs/common';
import { EVMError } from '@ethereumjs/evm';
import type { VM } from '@ethereumjs/vm';
import { Account, BIGINT_0, createZeroAddress } from '@ethereumjs/util';
import { interpreterClass } from './interpreter-class.js';
import { INTERRUPT_OPCODES } from './state.js';
import type { InterpreterClass } from './interpreter-class.js';

/** Marks an EVM whose frames take the tuned paths. */
const TUNED = Symbol('frames tuned');

interface OpInfo {
  code: number;
  feeBigInt: bigint;
  dynamicGas: boolean;
  isAsync: boolean;
  isInvalid: boolean;
}

interface OpEntry {
  opcodeInfo: OpInfo;
  opHandler: (runState: RunState, common: Common) => unknown;
}

interface RunState {
  programCounter: number;
  opCode: number;
  code: Uint8Array;
  validJumps: Uint8Array;
  cachedPushes: Record<number, bigint>;
  shouldDoJumpAnalysis: boolean;
  gasLeft: bigint;
  env: { accessWitness?: { commit(): void; revert(): void }; chargeCodeAccesses?: boolean };
  eip7928PostTargetCallOog?: unknown;
  eip8037BurnLeftoverAfterCreateHaltOntoAlive?: boolean;
}

interface EvmInternals {
  [TUNED]?: true;
  DEBUG: boolean;
  events: { listenerCount(event: string): number };
  _opcodeMap: OpEntry[];
  _optsCached: { profiler?: { enabled?: boolean } };
  _tx?: { gasPrice: bigint; origin?: unknown };
  _block?: unknown;
  stateManager: { getAccount(address: unknown): Promise<Account | undefined> };
  blockchain: unknown;
  journal: unknown;
  performanceLogger: unknown;
  runInterpreter(message: Message, opts?: { initialLogs?: unknown[] | undefined }): Promise<unknown>;
}

interface Message {
  to?: unknown;
  caller?: unknown;
  data?: Uint8Array;
  value?: bigint;
  code: Uint8Array;
  isStatic?: boolean;
  isCreate?: boolean;
  depth?: number;
  codeAddress?: unknown;
  gasRefund?: bigint;
  chargeCodeAccesses?: boolean;
  blobVersionedHashes?: unknown[];
  accessWitness?: { commit(): void };
  createdAddresses?: Set<unknown>;
  selfdestruct?: Map<unknown, unknown>;
  gasLimit: bigint;
}

interface Interpreter {
  _evm: EvmInternals;
  _stateManager: unknown;
  _env: { chargeCodeAccesses?: boolean };
  _runState: RunState;
  _result: { logs: unknown[]; returnValue?: Uint8Array; selfdestruct: unknown; createdAddresses?: unknown };
  common: Common;
  profilerOpts?: { enabled?: boolean };
  run(code: Uint8Array, opts?: { pc?: number }): Promise<{ runState: RunState; exceptionError: EVMError | undefined }>;
  runStep(entry?: OpEntry): Promise<void>;
  useGas(amount: bigint, context: OpInfo): void;
  _getValidJumpDestinations(code: Uint8Array): {
    jumps: Uint8Array;
    pushes: Record<number, bigint>;
    opcodesCached: OpEntry[];
  };
}

type Run = Interpreter['run'];

/** A state view that may stop a run (its deadline, its inline budget): asked every INTERRUPT_OPCODES opcodes. */
interface Interruptible {
  interrupt?(): void;
}

const INTERRUPT_MASK = INTERRUPT_OPCODES - 1;

const EOF_FORMAT = 0xef;
const JUMP = 0x56;
const JUMPI = 0x57;
const JUMPSUB = 0x5e;

/** Whether the package's loop must run this frame: something observes each step, or the code is EOF. */
function observed(self: Interpreter, code: Uint8Array): boolean {
  const evm = self._evm;
  return (
    evm[TUNED] !== true ||
    evm.DEBUG ||
    self.profilerOpts?.enabled === true ||
    evm.events.listenerCount('step') > 0 ||
    (code[0] === EOF_FORMAT && self.common.isActivatedEIP(3540)) ||
    self.common.isActivatedEIP(6800) ||
    self.common.isActivatedEIP(7864)
  );
}

/** The interpreter's loop for legacy code, with fixed-gas synchronous opcodes run inline. */
function tunedRun(original: Run): Run {
  return async function (this: Interpreter, code, opts = {}) {
    if (observed(this, code)) return original.call(this, code, opts);
    const rs = this._runState;
    rs.code = code;
    rs.programCounter = opts.pc ?? rs.programCounter;
    const start = rs.programCounter;
    if (start !== 0 && (start < 0 || start >= code.length))
      throw new Error('Internal error: program counter not in range');
    const opcodeMap = this._evm._opcodeMap;
    const common = this.common;
    const state = this._stateManager as Interruptible;
    let err: EVMError | undefined;
    let cached: OpEntry[] | undefined;
    let steps = 0;
    while (rs.programCounter < code.length) {
      // The state view's deadlines (state.ts interrupt), between reads too.
      if ((++steps & INTERRUPT_MASK) === 0) state.interrupt?.();
      const pc = rs.programCounter;
      let entry: OpEntry;
      let opCode: number;
      if (cached === undefined) {
        opCode = code[pc] as number;
        // The package's analysis (kept per code by jump-cache.ts), at the first jump as it runs it.
        if (opCode === JUMP || opCode === JUMPI || opCode === JUMPSUB) {
          const { jumps, pushes, opcodesCached } = this._getValidJumpDestinations(code);
          rs.validJumps = jumps;
          rs.cachedPushes = pushes;
          rs.shouldDoJumpAnalysis = false;
          cached = opcodesCached;
        }
        entry = opcodeMap[opCode] as OpEntry;
      } else {
        entry = cached[pc] as OpEntry;
        opCode = entry.opcodeInfo.code;
      }
      rs.opCode = opCode;
      try {
        const info = entry.opcodeInfo;
        if (!info.dynamicGas && !info.isAsync && rs.eip7928PostTargetCallOog === undefined) {
          // runStep's order for an opcode of fixed gas and a synchronous handler.
          if (info.isInvalid) throw new EVMError(EVMError.errorMessages.INVALID_OPCODE);
          this.useGas(info.feeBigInt, info);
          rs.programCounter++;
          const handler = entry.opHandler;
          handler(rs, common);
          rs.env.accessWitness?.commit();
        } else await this.runStep(entry);
      } catch (e) {
        rs.env.accessWitness?.revert();
        if (!(e instanceof Object && 'errorType' in e && e.errorType === 'EVMError')) throw e;
        if ((e as EVMError).error !== EVMError.errorMessages.STOP) err = e as EVMError;
        break;
      }
    }
    if (err === undefined && rs.eip8037BurnLeftoverAfterCreateHaltOntoAlive === true && rs.gasLeft > BIGINT_0) {
      rs.gasLeft = BIGINT_0;
      err = new EVMError(EVMError.errorMessages.OUT_OF_GAS);
    }
    return { runState: rs, exceptionError: err };
  };
}

type RunInterpreter = EvmInternals['runInterpreter'];

/** EVM.runInterpreter as the package builds it, except that the result's runState is the frame's own. */
function tunedRunInterpreter(Interp: InterpreterClass, original: RunInterpreter): RunInterpreter {
  const Ctor = Interp as unknown as new (...args: unknown[]) => Interpreter;
  return async function (this: EvmInternals, message, opts = {}) {
    const tx = this._tx;
    // Without a block or a transaction the package's defaults apply: its own code.
    if (this._block === undefined || tx === undefined) return original.call(this, message, opts);
    const contract = (await this.stateManager.getAccount(message.to ?? createZeroAddress())) ?? new Account();
    const env = {
      address: message.to ?? createZeroAddress(),
      caller: message.caller ?? createZeroAddress(),
      callData: message.data ?? Uint8Array.from([0]),
      callValue: message.value ?? BIGINT_0,
      code: message.code,
      isStatic: message.isStatic ?? false,
      isCreate: message.isCreate ?? false,
      depth: message.depth ?? 0,
      gasPrice: tx.gasPrice,
      origin: tx.origin ?? message.caller ?? createZeroAddress(),
      block: this._block,
      contract,
      codeAddress: message.codeAddress,
      gasRefund: message.gasRefund,
      chargeCodeAccesses: message.chargeCodeAccesses,
      blobVersionedHashes: message.blobVersionedHashes ?? [],
      accessWitness: message.accessWitness,
      createdAddresses: message.createdAddresses,
      initialLogs: opts.initialLogs,
    };
    const interpreter = new Ctor(
      this,
      this.stateManager,
      this.blockchain,
      env,
      message.gasLimit,
      this.journal,
      this.performanceLogger,
      this._optsCached.profiler,
    );
    if (message.selfdestruct) interpreter._result.selfdestruct = message.selfdestruct;
    if (message.createdAddresses) interpreter._result.createdAddresses = message.createdAddresses;
    const res = await interpreter.run(message.code, opts as { pc?: number });
    let result: Interpreter['_result'] = interpreter._result;
    let gasUsed = message.gasLimit - res.runState.gasLeft;
    if (res.exceptionError) {
      const e = res.exceptionError.error;
      if (e !== EVMError.errorMessages.REVERT && e !== EVMError.errorMessages.INVALID_EOF_FORMAT)
        gasUsed = message.gasLimit;
      const returnValue = result.returnValue;
      result = { logs: [], selfdestruct: new Map(), createdAddresses: new Set() };
      if (returnValue !== undefined) result.returnValue = returnValue;
    }
    message.accessWitness?.commit();
    const rs = res.runState as RunState & { gasRefund?: bigint; stateGasSpilled?: bigint };
    // Field by field (RunResult's four, then the frame's): a spread of `result` with properties
    // added after it is V8's slow path, ~8 µs a frame.
    return {
      logs: result.logs,
      selfdestruct: result.selfdestruct,
      createdAddresses: result.createdAddresses,
      // An afterMessage listener (a tracer) is handed the package's merged copy.
      runState: this.events.listenerCount('afterMessage') > 0 ? { ...rs, ...result, ...interpreter._env } : rs,
      exceptionError: res.exceptionError,
      gas: rs.gasLeft,
      executionGasUsed: gasUsed,
      gasRefund: rs.gasRefund,
      stateGasSpilled: rs.stateGasSpilled,
      returnValue: result.returnValue ?? new Uint8Array(0),
    };
  };
}

interface CallMessage extends Message {
  to: { bytes: Uint8Array };
  caller: { bytes: Uint8Array };
  delegatecall?: boolean;
  isCompiled?: boolean;
  data: Uint8Array;
  value: bigint;
}

interface CallInternals extends EvmInternals {
  common: Common;
  stateManager: EvmInternals['stateManager'];
  _executeCall(message: CallMessage): Promise<{ execResult: ExecResult }>;
  _reduceSenderBalance(account: Account, message: CallMessage): Promise<void>;
  _addToBalance(account: Account, message: CallMessage): Promise<void>;
  _loadCode(message: CallMessage): Promise<void>;
  runPrecompile(code: unknown, data: Uint8Array, gasLimit: bigint): Promise<ExecResult>;
  postMessageCleanup(): void;
}

interface ExecResult {
  executionGasUsed: bigint;
  gasRefund?: bigint | undefined;
}

/** The EIPs whose code runs in _executeCall besides the plain call. */
const CALL_EIPS = [6800, 7864, 2780, 7708, 7928, 8037];

/** EVM._executeCall as the package runs it when none of CALL_EIPS is active; else the package's. */
function tunedExecuteCall(original: CallInternals['_executeCall']): CallInternals['_executeCall'] {
  return async function (this: CallInternals, message) {
    const common = this.common;
    if (this.DEBUG || this._optsCached.profiler?.enabled === true || CALL_EIPS.some((e) => common.isActivatedEIP(e)))
      return original.call(this, message);
    // The package's gasLimit starts as the message's and changes only under CALL_EIPS: here it is
    // the message's throughout, and the frame's gas used is the interpreter's alone.
    const account = (await this.stateManager.getAccount(message.caller)) ?? new Account();
    let errorMessage: unknown;
    if (!message.delegatecall) {
      try {
        await this._reduceSenderBalance(account, message);
      } catch (e) {
        errorMessage = e;
      }
    }
    const toAccount = (await this.stateManager.getAccount(message.to)) ?? new Account();
    if (!message.delegatecall) {
      try {
        await this._addToBalance(toAccount, message);
      } catch (e) {
        errorMessage = e;
      }
    }
    await this._loadCode(message);
    const code = message.code as Uint8Array | ((...args: never[]) => unknown) | undefined;
    if (!code || (typeof code !== 'function' && code.length === 0) || errorMessage !== undefined) {
      const early = {
        gasRefund: message.gasRefund,
        executionGasUsed: BIGINT_0,
        exceptionError: errorMessage,
        returnValue: new Uint8Array(0),
        logs: undefined,
      };
      return { execResult: early as unknown as ExecResult };
    }
    let result: ExecResult;
    if (message.isCompiled) {
      result = await this.runPrecompile(message.code, message.data, message.gasLimit);
      result.gasRefund = message.gasRefund;
    } else {
      // The fields runInterpreter reads, as the package's spread of the message would hold them.
      const m = message as CallMessage & { _codeAddress?: unknown };
      const frame: Message = {
        to: m.to,
        caller: m.caller,
        data: m.data,
        value: m.value,
        code: m.code,
        isStatic: m.isStatic,
        isCreate: m.isCreate,
        depth: m.depth,
        codeAddress: m.codeAddress,
        gasRefund: m.gasRefund,
        chargeCodeAccesses: m.chargeCodeAccesses,
        blobVersionedHashes: m.blobVersionedHashes,
        accessWitness: m.accessWitness,
        createdAddresses: m.createdAddresses,
        selfdestruct: m.selfdestruct,
        gasLimit: m.gasLimit,
      } as Message;
      result = (await this.runInterpreter(frame, { initialLogs: undefined })) as ExecResult;
    }
    if (message.depth === 0) this.postMessageCleanup();
    return { execResult: result };
  };
}

const RUN_TUNED = Symbol('interpreter loop tuned');

let loopInstalled: Promise<InterpreterClass | undefined> | undefined;

/** The tuned loop on the interpreter's prototype (once per process); it runs for tuned EVMs only. */
function installLoop(common: Common): Promise<InterpreterClass | undefined> {
  loopInstalled ??= interpreterClass(common).then((Interp) => {
    const proto = Interp?.prototype as (Interpreter & { [RUN_TUNED]?: true }) | undefined;
    if (proto === undefined || typeof proto.run !== 'function' || typeof proto.runStep !== 'function') return undefined;
    if (proto[RUN_TUNED] !== true) {
      proto.run = tunedRun(proto.run);
      proto[RUN_TUNED] = true;
    }
    return Interp;
  });
  return loopInstalled;
}

/**
 * Gives `vm`'s EVM the tuned frame and loop. The interpreter class is found asynchronously once
 * per process: until then (the first calls of a process, at most) the package's code runs.
 */
export function tuneFrames(vm: VM): Promise<void> {
  const evm = vm.evm as unknown as EvmInternals;
  if (evm[TUNED] === true) return Promise.resolve();
  const original = evm.runInterpreter;
  return installLoop(vm.common)
    .then((Interp) => {
      if (Interp === undefined || evm[TUNED] === true) return;
      evm.runInterpreter = tunedRunInterpreter(Interp, original);
      const calls = evm as unknown as CallInternals;
      calls._executeCall = tunedExecuteCall(calls._executeCall);
      evm[TUNED] = true;
    })
    .catch(() => undefined);
}
