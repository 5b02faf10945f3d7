// geth's default tracer, the struct logger (eth/tracers/logger/logger.go, its legacy JSON): one
// entry per opcode before it runs, with the stack, memory, return data and the storage the
// contract has touched so far (SLOAD and SSTORE) as the options ask.
import { toData } from '@chainnode/core';
import type { Bytes } from '@chainnode/core';
import { word } from '../evm-events.js';
import type { FrameExit, OpStep, StateView, TraceBudget, Tracer, TxEnd } from '../hooks.js';

export interface StructLoggerConfig {
  enableMemory: boolean;
  disableStack: boolean;
  disableStorage: boolean;
  enableReturnData: boolean;
  /** Bytes of entries past which no more are kept (geth's `limit`); 0: no limit. */
  limit: number;
}

export interface StructLog {
  pc: number;
  op: string;
  gas: number;
  gasCost: number;
  depth: number;
  error?: string;
  stack?: string[];
  returnData?: string;
  memory?: string[];
  storage?: Record<string, string>;
  refund?: number;
}

export interface StructLoggerResult {
  gas: number;
  failed: boolean;
  returnValue: string;
  structLogs: StructLog[];
}

const SLOAD = 0x54;
const SSTORE = 0x55;
const hex = (b: Bytes): string => Buffer.from(b).toString('hex');
const quantity = (v: bigint): string => `0x${v.toString(16)}`;

export class StructLogger implements Tracer {
  readonly wantsOpcodes = true;
  private readonly logs: StructLog[] = [];
  /** Per contract, the slots seen so far: slot word hex -> value word hex (0x-prefixed). */
  private readonly storage = new Map<string, Map<string, string>>();
  private size = 0;
  private output: Bytes = new Uint8Array();
  private error: string | undefined;
  private usedGas = 0n;

  constructor(
    private readonly cfg: StructLoggerConfig,
    private readonly budget: TraceBudget,
  ) {}

  onOpcode(s: OpStep, state: StateView): void | Promise<void> {
    if (this.cfg.limit !== 0 && this.size > this.cfg.limit) return;
    const log: StructLog = { pc: s.pc, op: s.opName, gas: Number(s.gas), gasCost: Number(s.cost), depth: s.depth };
    if (!this.cfg.disableStack) log.stack = s.stack.map(quantity);
    if (this.cfg.enableReturnData && s.returnData.length > 0) log.returnData = toData(s.returnData);
    if (this.cfg.enableMemory && s.memory.length > 0) log.memory = memoryWords(s.memory);
    if (s.refund > 0n) log.refund = Number(s.refund);
    const n = s.stack.length;
    if (!this.cfg.disableStorage && s.op === SLOAD && n >= 1) {
      const slot = word(s.stack[n - 1] as bigint);
      return state.storage(s.address, slot).then((value) => {
        log.storage = this.touch(s.address, slot, value);
        this.push(log);
      });
    }
    if (!this.cfg.disableStorage && s.op === SSTORE && n >= 2)
      log.storage = this.touch(s.address, word(s.stack[n - 1] as bigint), word(s.stack[n - 2] as bigint));
    this.push(log);
  }

  /** Records a slot of `address` and gives the contract's slots so far. */
  private touch(address: Bytes, slot: Bytes, value: Bytes): Record<string, string> {
    const key = hex(address);
    let m = this.storage.get(key);
    if (m === undefined) {
      m = new Map();
      this.storage.set(key, m);
    }
    m.set(toData(slot), toData(value));
    return Object.fromEntries(m);
  }

  private push(log: StructLog): void {
    // JSON's size without writing it: the fixed members, then each word of the lists.
    const bytes =
      60 +
      log.op.length +
      (log.stack?.reduce((a, x) => a + x.length + 3, 0) ?? 0) +
      (log.memory?.length ?? 0) * 69 +
      (log.storage === undefined ? 0 : Object.keys(log.storage).length * 138) +
      (log.returnData?.length ?? 0);
    this.size += bytes;
    this.budget.spend(bytes);
    this.logs.push(log);
  }

  onOpcodeError(depth: number, error: string, cost?: bigint): void {
    const last = this.logs[this.logs.length - 1];
    if (last === undefined || last.depth !== depth || last.error !== undefined) return;
    last.error = error;
    if (cost !== undefined) last.gasCost = Number(cost);
  }

  onExit(f: FrameExit): void {
    if (f.depth !== 0) return;
    this.output = f.output;
    this.error = f.error;
  }

  onTxEnd(r: TxEnd): void {
    this.usedGas = r.gasUsed;
  }

  result(): StructLoggerResult {
    const failed = this.error !== undefined;
    // The return data when it succeeded, the revert data when it reverted, else nothing.
    const returnValue = failed && this.error !== 'execution reverted' ? '0x' : toData(this.output);
    return { gas: Number(this.usedGas), failed, returnValue, structLogs: this.logs };
  }
}

/** Memory as geth's legacy JSON prints it: 32-byte words, the last padded with zeros. */
function memoryWords(m: Uint8Array): string[] {
  const out: string[] = [];
  for (let i = 0; i < m.length; i += 32) {
    const chunk = m.subarray(i, i + 32);
    out.push(`0x${hex(chunk)}${'00'.repeat(32 - chunk.length)}`);
  }
  return out;
}
