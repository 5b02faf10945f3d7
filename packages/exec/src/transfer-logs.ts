// eth_simulateV1's traceTransfers: every value transfer of a call frame (not DELEGATECALL or
// CALLCODE) as an ERC-7528 Transfer log from 0xEeee…EEeE, placed before the frame's own logs, as
// geth's simulate log tracer records them. The frames' logs travel up with their results (a
// reverted frame's are dropped by the EVM), so the log is put at the head of the frame's logs
// when the frame ends well.
import { type Address, bigIntToBytes, setLengthLeft } from '@ethereumjs/util';
import type { VM } from '@ethereumjs/vm';

type Log = [Uint8Array, Uint8Array[], Uint8Array];

const TRANSFER_ADDRESS = Uint8Array.from(Buffer.from('eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'hex'));
const TRANSFER_TOPIC = Uint8Array.from(
  Buffer.from('ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef', 'hex'),
);

interface Frame {
  caller: Address;
  to?: Address;
  value: bigint;
  delegatecall: boolean;
}

interface FrameResult {
  createdAddress?: Address;
  execResult: { exceptionError?: unknown; logs?: Log[] };
}

export class TransferLogs {
  private readonly frames: Frame[] = [];
  private last: Log[] | undefined;
  /** The transfer logs made, with the log index each took when its frame started. */
  private readonly made = new WeakMap<Log, number>();
  private pending: number[] = [];
  /** Per open frame, the transfer logs of its SELFDESTRUCT (the frame's last act). */
  private ends: Log[][] = [];

  /** `counter`: the block's next log index (geth counts a transfer when its frame starts, kept or not). */
  constructor(
    vm: VM,
    private readonly counter: { next: number },
  ) {
    const events = eventsOf(vm);
    events.on('beforeMessage', (m: unknown) => {
      const frame = m as Frame;
      this.frames.push(frame);
      const callcode = frame.to !== undefined && frame.caller.equals(frame.to);
      this.pending.push(frame.value > 0n && !frame.delegatecall && !callcode ? this.counter.next++ : -1);
      this.ends.push([]);
    });
    // A SELFDESTRUCT sends the balance to its beneficiary without a message: seen at its step.
    events.on('step', (st: unknown, resolve?: (r?: unknown) => void) => {
      const step = st as { opcode: { name: string }; stack: bigint[]; address: Address };
      if (step.opcode.name !== 'SELFDESTRUCT') {
        resolve?.();
        return;
      }
      void this.selfdestruct(vm, step).finally(() => resolve?.());
    });
    events.on('afterMessage', (r: unknown) => {
      const frame = this.frames.pop();
      const index = this.pending.pop() ?? -1;
      const ends = this.ends.pop() ?? [];
      const res = r as FrameResult;
      if (frame === undefined) return;
      if (res.execResult.exceptionError === undefined) {
        if (ends.length > 0) res.execResult.logs = [...(res.execResult.logs ?? []), ...ends];
        const to = frame.to ?? res.createdAddress;
        if (index >= 0 && to !== undefined) {
          const log = this.log(frame.caller.bytes, to.bytes, frame.value, index);
          res.execResult.logs = [log, ...(res.execResult.logs ?? [])];
        }
      }
      if (this.frames.length === 0)
        this.last = res.execResult.exceptionError === undefined ? (res.execResult.logs ?? []) : [];
    });
  }

  private async selfdestruct(vm: VM, step: { stack: bigint[]; address: Address }): Promise<void> {
    const to = step.stack[step.stack.length - 1];
    const balance = (await vm.stateManager.getAccount(step.address))?.balance ?? 0n;
    if (to === undefined || balance === 0n) return;
    const beneficiary = setLengthLeft(bigIntToBytes(to), 20).slice(-20);
    this.ends[this.ends.length - 1]?.push(this.log(step.address.bytes, beneficiary, balance, this.counter.next++));
  }

  private log(from: Uint8Array, to: Uint8Array, value: bigint, index: number): Log {
    const log: Log = [
      TRANSFER_ADDRESS,
      [TRANSFER_TOPIC, setLengthLeft(from, 32), setLengthLeft(to, 32)],
      setLengthLeft(bigIntToBytes(value), 32),
    ];
    this.made.set(log, index);
    return log;
  }

  /** Whether `log` is a transfer's (not the EVM's: no part of the receipt). */
  isTransfer(log: Log): boolean {
    return this.made.has(log);
  }

  /** The log index a transfer log took (undefined for the EVM's logs). */
  indexOf(log: Log): number | undefined {
    return this.made.get(log);
  }

  /** Forgets the previous call's logs. */
  reset(): void {
    this.frames.length = 0;
    this.pending = [];
    this.ends = [];
    this.last = undefined;
  }

  /** The logs of the last call's frames, transfers included (empty when it failed). */
  logs(): Log[] {
    return this.last ?? [];
  }
}

/** The EVM's message events (present on every EVM @ethereumjs/vm makes). */
export function eventsOf(vm: VM): NonNullable<VM['evm']['events']> {
  const events = vm.evm.events;
  if (events === undefined) throw new Error('the EVM has no events');
  return events;
}
