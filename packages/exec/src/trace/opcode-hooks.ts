// The few opcodes a frame tracer must see, without @ethereumjs/evm's `step` event. A `step`
// listener makes the interpreter build an event (a copy of the stack and of memory) before every
// opcode; the call tracers need only the LOGs, the SELFDESTRUCTs and the calls that fail before
// entering their callee. Those opcodes' handlers in the EVM's opcode table get a dispatcher once
// (the table is the EVM's own: @ethereumjs/evm builds one per EVM and hardfork), which calls the
// hooks bound to that table, if any, with the operands the handler is about to pop; with none
// bound it only calls the handler. The opcodes that read or write the state (the accounts and
// slots geth's prestate tracer looks up) get one too when a binding asks for them.
import type { VM } from '@ethereumjs/vm';

/** What a handler sees (@ethereumjs/evm's RunState, the parts read here). */
export interface HookState {
  stack: { peek(n: number): bigint[]; length: number };
  memory: { read(offset: number, size: number): Uint8Array; _store: Uint8Array };
  interpreter: { getAddress(): { bytes: Uint8Array } };
  /** The gas the CALL family's dynamic gas handler leaves for the callee (before any stipend). */
  messageGasLimit?: bigint;
  opCode: number;
}

export interface OpcodeHooks {
  /** LOG0..LOG4 about to run (operands on the stack). */
  log(rs: HookState): void;
  /** SELFDESTRUCT about to run; awaited before it does. */
  selfdestruct(rs: HookState): Promise<void>;
  /** A CALL-family opcode about to run (`before`) and done (`after`: its callee entered or not). */
  callBefore(rs: HookState): void;
  callAfter(): void;
  /**
   * An opcode of STATE_OPS, the CALL family or SELFDESTRUCT about to run (its gas paid), for a
   * binding that looks up what it touches; awaited before it runs.
   */
  state?(rs: HookState): Promise<void> | undefined;
}

type Handler = (rs: HookState, common: unknown) => unknown;
interface Entry {
  opHandler: Handler;
  opcodeInfo: { code: number };
}

const LOGS = [0xa0, 0xa1, 0xa2, 0xa3, 0xa4];
const CALLS = [0xf1, 0xf2, 0xf4, 0xfa];
const SELFDESTRUCT = 0xff;
/** BALANCE, EXTCODESIZE, EXTCODECOPY, EXTCODEHASH, SLOAD, SSTORE, CREATE, CREATE2. */
const STATE_OPS = [0x31, 0x3b, 0x3c, 0x3f, 0x54, 0x55, 0xf0, 0xf5];

/** The hooks bound to each opcode table (a WeakMap: the table goes with its EVM). */
const bound = new WeakMap<object, OpcodeHooks>();
const DISPATCHING = Symbol('opcode hooks dispatcher');

function dispatcher(table: object, code: number, original: Handler): Handler {
  let d: Handler;
  if (STATE_OPS.includes(code))
    d = (rs, common) => {
      const looking = bound.get(table)?.state?.(rs);
      return looking === undefined ? original(rs, common) : looking.then(() => original(rs, common));
    };
  else if (LOGS.includes(code))
    d = (rs, common) => {
      bound.get(table)?.log(rs);
      return original(rs, common);
    };
  else if (code === SELFDESTRUCT)
    d = async (rs, common) => {
      const h = bound.get(table);
      if (h !== undefined) {
        await h.state?.(rs);
        await h.selfdestruct(rs);
      }
      return original(rs, common);
    };
  else
    d = async (rs, common) => {
      const h = bound.get(table);
      if (h === undefined) return original(rs, common);
      await h.state?.(rs);
      h.callBefore(rs);
      const out = await original(rs, common);
      h.callAfter();
      return out;
    };
  (d as unknown as Record<symbol, true>)[DISPATCHING] = true;
  return d;
}

/** Binds `hooks` to `vm`'s current opcode table until the returned function is called. */
export function hookOpcodes(vm: VM, hooks: OpcodeHooks): () => void {
  const table = (vm.evm as unknown as { _opcodeMap: (Entry | undefined)[] })._opcodeMap;
  for (const code of [...LOGS, ...CALLS, SELFDESTRUCT, ...(hooks.state === undefined ? [] : STATE_OPS)]) {
    const entry = table[code];
    // An opcode the hardfork lacks is the table's shared INVALID entry: nothing to hook.
    if (entry === undefined || entry.opcodeInfo.code !== code) continue;
    if ((entry.opHandler as unknown as Record<symbol, unknown>)[DISPATCHING] === true) continue;
    entry.opHandler = dispatcher(table, code, entry.opHandler);
  }
  if (bound.has(table)) throw new Error('opcode hooks: the EVM is already traced');
  bound.set(table, hooks);
  return () => {
    if (bound.get(table) === hooks) bound.delete(table);
  };
}
