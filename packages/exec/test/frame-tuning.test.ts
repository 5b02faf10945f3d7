// The tuned call frame and interpreter loop (frame-tuning.ts) against the package they tune: the
// same messages run on a tuned VM and on an untuned one, on the same state, give the same result
// (return data, gas used, refund, error, logs), the same state after, and, with a step listener,
// the same steps. The contracts cover what the tuned paths touch: opcodes of fixed and of dynamic
// gas, storage, logs, nested CALL/DELEGATECALL/STATICCALL with and without value, a precompile, a
// CREATE, reverts, an invalid opcode, running out of gas, a stack underflow, code that runs off its
// end, a call to an account without code, a value the caller cannot pay, a new transaction's
// transient storage; random programs; and a frame run alone (runCode) that logs, then fails.
import { Common, Hardfork, Mainnet } from '@ethereumjs/common';
import { createVM } from '@ethereumjs/vm';
import type { VM } from '@ethereumjs/vm';
import { Account, Address, bytesToHex, hexToBytes } from '@ethereumjs/util';
import { seededRandom } from '@chainnode/testkit';
import { tuneVm } from '../src/evm-tuning.js';

/** A tiny assembler: op names, and numbers pushed with the shortest PUSH. */
const OPS: Record<string, number> = {
  STOP: 0x00,
  ADD: 0x01,
  MUL: 0x02,
  SUB: 0x03,
  DIV: 0x04,
  EXP: 0x0a,
  LT: 0x10,
  EQ: 0x14,
  ISZERO: 0x15,
  AND: 0x16,
  NOT: 0x19,
  SHL: 0x1b,
  SHA3: 0x20,
  ADDRESS: 0x30,
  BALANCE: 0x31,
  CALLER: 0x33,
  CALLVALUE: 0x34,
  CALLDATALOAD: 0x35,
  CALLDATASIZE: 0x36,
  CALLDATACOPY: 0x37,
  CODESIZE: 0x38,
  CODECOPY: 0x39,
  RETURNDATASIZE: 0x3d,
  RETURNDATACOPY: 0x3e,
  EXTCODEHASH: 0x3f,
  NUMBER: 0x43,
  GAS: 0x5a,
  POP: 0x50,
  MLOAD: 0x51,
  MSTORE: 0x52,
  MSTORE8: 0x53,
  SLOAD: 0x54,
  SSTORE: 0x55,
  JUMP: 0x56,
  JUMPI: 0x57,
  PC: 0x58,
  MSIZE: 0x59,
  JUMPDEST: 0x5b,
  TLOAD: 0x5c,
  TSTORE: 0x5d,
  MCOPY: 0x5e,
  DUP1: 0x80,
  DUP2: 0x81,
  DUP3: 0x82,
  SWAP1: 0x90,
  SWAP2: 0x91,
  LOG1: 0xa1,
  LOG2: 0xa2,
  CREATE: 0xf0,
  CALL: 0xf1,
  RETURN: 0xf3,
  DELEGATECALL: 0xf4,
  STATICCALL: 0xfa,
  REVERT: 0xfd,
  INVALID: 0xfe,
};

function asm(...parts: (string | number | bigint)[]): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    if (typeof p === 'string') {
      const op = OPS[p];
      if (op === undefined) throw new Error(`unknown op ${p}`);
      out.push(op);
      continue;
    }
    let hex = BigInt(p).toString(16);
    if (hex.length % 2 === 1) hex = `0${hex}`;
    const bytes = hexToBytes(`0x${hex}`);
    out.push(0x5f + bytes.length, ...bytes);
  }
  return Uint8Array.from(out);
}

const addr = (n: number): Address => new Address(hexToBytes(`0x${n.toString(16).padStart(40, '0')}`));
const CALLER = addr(0xca11e7);
const [STORE, CALLEE, LOOP, BAD, PRECOMPILE_USER, DELEGATOR, STRAIGHT, CREATOR, NO_CODE, UNDERFLOW] = [
  0x1001, 0x1002, 0x1003, 0x1004, 0x1005, 0x1006, 0x1007, 0x1008, 0x1009, 0x100a,
].map(addr) as Address[] as [Address, Address, Address, Address, Address, Address, Address, Address, Address, Address];

/** CALL(gas, to, value, in 0..32, out 0..32) of `to`, the word at 0 as its input. */
const call = (op: 'CALL' | 'DELEGATECALL' | 'STATICCALL', to: Address, value = 0n): (string | bigint)[] => [
  32n,
  0n,
  32n,
  0n,
  ...(op === 'CALL' ? [value] : []),
  BigInt(to.toString()),
  'GAS',
  op,
];

/** CALLEE: a JUMPI to its odd branch, at the offset the even branch ends. */
function calleeCode(): Uint8Array {
  const head = (dest: number): Uint8Array => asm(0n, 'CALLDATALOAD', 1n, 'AND', BigInt(dest), 'JUMPI');
  const even = asm(0n, 'CALLDATALOAD', 0n, 'MSTORE', 32n, 0n, 'SHA3', 'DUP1', 2n, 'SLOAD', 'ADD', 2n, 'SSTORE');
  const rest = asm(9n, 'TLOAD', 'ADD', 'DUP1', 9n, 'TSTORE', 0n, 'MSTORE', 32n, 0n, 'RETURN');
  const odd = asm('JUMPDEST', 5n, 32n, 0n, 'LOG1', 4n, 28n, 'REVERT');
  const dest = head(0).length + even.length + rest.length;
  return Uint8Array.from([...head(dest), ...even, ...rest, ...odd]);
}

const CODES = new Map<Address, Uint8Array>([
  // Stores its first calldata word at slot 1, logs it, calls CALLEE with 1 wei and the word, returns CALLEE's answer.
  [
    STORE,
    asm(
      0n,
      'CALLDATALOAD',
      'DUP1',
      1n,
      'SSTORE',
      'DUP1',
      0n,
      'MSTORE',
      7n,
      32n,
      0n,
      'LOG1',
      ...call('CALL', CALLEE, 1n),
      'POP',
      32n,
      0n,
      'RETURN',
    ),
  ],
  // Logs and reverts when its word is odd; else returns its hash plus a transient slot (zero in a new
  // transaction) it then sets to that sum, after adding the sum to a storage slot.
  [CALLEE, calleeCode()],
  // Loops forever: runs out of gas.
  [LOOP, asm('JUMPDEST', 1n, 'POP', 0n, 'JUMP')],
  // An invalid opcode after some work.
  [BAD, asm(1n, 2n, 'ADD', 'POP', 'INVALID')],
  // SHA-256 (precompile 2) of its word, then identity (4), MCOPY, returns both.
  [
    PRECOMPILE_USER,
    asm(
      0n,
      'CALLDATALOAD',
      0n,
      'MSTORE',
      32n,
      32n,
      32n,
      0n,
      2n,
      'GAS',
      'STATICCALL',
      'POP',
      32n,
      64n,
      32n,
      32n,
      4n,
      'GAS',
      'STATICCALL',
      'POP',
      32n,
      64n,
      96n,
      'MCOPY',
      96n,
      0n,
      'RETURN',
    ),
  ],
  // DELEGATECALL and STATICCALL to CALLEE (the static one fails on its SSTORE), returns both successes.
  [
    DELEGATOR,
    asm(
      0n,
      'CALLDATALOAD',
      0n,
      'MSTORE',
      ...call('DELEGATECALL', CALLEE),
      ...call('STATICCALL', CALLEE),
      32n,
      'MSTORE',
      0n,
      'MSTORE',
      64n,
      0n,
      'RETURN',
    ),
  ],
  // No jump, no STOP: runs off its end after writing memory and a log.
  [
    STRAIGHT,
    asm('CALLER', 0n, 'MSTORE', 'CALLVALUE', 'NUMBER', 32n, 0n, 'LOG2', 'MSIZE', 'CODESIZE', 'ADD', 1n, 'SSTORE'),
  ],
  // CREATE of a child whose init code returns 1 byte, then calls the child.
  [
    CREATOR,
    asm(
      0x600160005360016000f3n,
      0n,
      'MSTORE',
      10n,
      22n,
      0n,
      'CREATE',
      'DUP1',
      0n,
      'MSTORE',
      0n,
      0n,
      0n,
      0n,
      0n,
      'DUP3',
      'GAS',
      'CALL',
      32n,
      0n,
      'RETURN',
    ),
  ],
  // Pops more than it pushed.
  [UNDERFLOW, asm(1n, 'ADD')],
]);

async function vmAt(hardfork: Hardfork, tuned: boolean): Promise<VM> {
  const vm = await createVM({ common: new Common({ chain: Mainnet, hardfork }) });
  if (tuned) await tuneVm(vm);
  await vm.stateManager.putAccount(CALLER, new Account(0n, 10n ** 18n));
  for (const [a, code] of CODES) {
    await vm.stateManager.putAccount(a, new Account(0n, 5n));
    await vm.stateManager.putCode(a, code);
  }
  return vm;
}

interface Outcome {
  returnValue: string;
  gasUsed: string;
  refund: string | undefined;
  error: string | undefined;
  logs: string;
  state: string;
  steps: string[];
}

/** One message on `vm` (checkpointed and reverted after, so every message starts on the same state). */
async function run(
  vm: VM,
  to: Address,
  data: Uint8Array,
  value: bigint,
  gasLimit: bigint,
  watch: boolean,
): Promise<Outcome> {
  const steps: string[] = [];
  const onStep = (s: {
    opcode: { name: string };
    pc: number;
    gasLeft: bigint;
    depth: number;
    stack: bigint[];
  }): void => {
    steps.push(`${s.depth} ${s.pc} ${s.opcode.name} ${s.gasLeft} ${s.stack.length}`);
  };
  if (watch) vm.evm.events?.on('step', onStep as never);
  await vm.stateManager.checkpoint();
  try {
    const r = await vm.evm.runCall({ caller: CALLER, to, data, value, gasLimit });
    const e = r.execResult;
    const state: string[] = [];
    for (const a of [CALLER, ...CODES.keys(), NO_CODE]) {
      const acct = await vm.stateManager.getAccount(a);
      const slots = await Promise.all(
        [1n, 2n].map((k) => vm.stateManager.getStorage(a, hexToBytes(`0x${k.toString(16).padStart(64, '0')}`))),
      );
      state.push(`${a} ${acct?.balance} ${acct?.nonce} ${slots.map(bytesToHex).join(',')}`);
    }
    return {
      returnValue: bytesToHex(e.returnValue),
      gasUsed: String(e.executionGasUsed),
      refund: e.gasRefund === undefined ? undefined : String(e.gasRefund),
      error: e.exceptionError?.error,
      logs: JSON.stringify(
        (e.logs ?? []).map((l) => l.map((x) => (Array.isArray(x) ? x.map(bytesToHex) : bytesToHex(x)))),
      ),
      state: state.join('\n'),
      steps,
    };
  } finally {
    await vm.stateManager.revert();
    if (watch) vm.evm.events?.off('step', onStep as never);
  }
}

const word = (n: bigint): Uint8Array => hexToBytes(`0x${n.toString(16).padStart(64, '0')}`);

test('tuned frames give the package’s results, state and steps on every kind of frame', async () => {
  for (const hf of [Hardfork.Shanghai, Hardfork.Cancun, Hardfork.Prague]) {
    const plain = await vmAt(hf, false);
    const tuned = await vmAt(hf, true);
    const cases: [Address, bigint, bigint, bigint][] = [
      [STORE, 42n, 0n, 200_000n],
      [STORE, 43n, 3n, 200_000n], // CALLEE reverts
      [STORE, 42n, 0n, 30_000n], // out of gas in the nested call
      [CALLEE, 10n, 0n, 100_000n],
      [CALLEE, 10n, 0n, 100_000n], // a new transaction: its transient slot is zero again
      [CALLEE, 11n, 0n, 100_000n],
      [LOOP, 0n, 0n, 50_000n],
      [BAD, 0n, 0n, 50_000n],
      [PRECOMPILE_USER, 99n, 0n, 200_000n],
      [DELEGATOR, 8n, 0n, 300_000n],
      [STRAIGHT, 0n, 1n, 100_000n],
      [STRAIGHT, 0n, 1n, 5_000n], // logs, then out of gas at its SSTORE: the logs are dropped
      [CREATOR, 0n, 0n, 300_000n],
      [UNDERFLOW, 0n, 0n, 50_000n],
      [NO_CODE, 0n, 7n, 50_000n],
      [STORE, 42n, 10n ** 19n, 200_000n], // more value than the caller holds
    ];
    let ran = 0;
    for (const watch of [false, true])
      for (const [to, w, value, gas] of cases) {
        const want = await run(plain, to, word(w), value, gas, watch);
        const got = await run(tuned, to, word(w), value, gas, watch);
        expect({ hf, to: to.toString(), ...got }).toEqual({ hf, to: to.toString(), ...want });
        ran++;
      }
    expect(ran).toBe(32);
    // The tuned VM's EVM took the tuned frame (the package's is on the prototype).
    expect(Object.hasOwn(tuned.evm, 'runInterpreter')).toBe(true);
    expect(Object.hasOwn(plain.evm, 'runInterpreter')).toBe(false);
  }
});

test('tuned frames give the package’s results on random programs', async () => {
  const random = seededRandom(11);
  const plain = await vmAt(Hardfork.Cancun, false);
  const tuned = await vmAt(Hardfork.Cancun, true);
  const names = Object.keys(OPS).filter((n) => !['CREATE', 'CALL', 'DELEGATECALL', 'STATICCALL'].includes(n));
  const kinds = new Set<string>();
  for (let k = 0; k < 300; k++) {
    const parts: (string | bigint)[] = [];
    for (let i = 0; i < 4 + Math.floor(random() * 40); i++) {
      if (random() < 0.45) parts.push(BigInt(Math.floor(random() * 70)));
      else parts.push(names[Math.floor(random() * names.length)] as string);
    }
    const target = addr(0x2000 + k);
    const code = asm(...parts);
    for (const vm of [plain, tuned]) {
      await vm.stateManager.putAccount(target, new Account());
      await vm.stateManager.putCode(target, code);
    }
    const want = await run(plain, target, word(BigInt(k)), 0n, 100_000n, false);
    const got = await run(tuned, target, word(BigInt(k)), 0n, 100_000n, false);
    expect({ code: bytesToHex(code), ...got }).toEqual({ code: bytesToHex(code), ...want });
    kinds.add(want.error ?? 'success');
  }
  // The programs end in more than one way (success, underflow, bad jump, out of gas...).
  expect(kinds.size).toBeGreaterThan(2);
});

test('a frame run alone (runCode) that logs and then fails keeps no logs, as the package’s', async () => {
  const plain = await vmAt(Hardfork.Cancun, false);
  const tuned = await vmAt(Hardfork.Cancun, true);
  const code = CODES.get(STRAIGHT) as Uint8Array;
  const outcome = async (vm: VM, gasLimit: bigint) => {
    const r = await vm.evm.runCode?.({ code, gasLimit, caller: CALLER, to: STRAIGHT });
    return { error: r?.exceptionError?.error, logs: r?.logs?.length, gas: String(r?.executionGasUsed) };
  };
  for (const gas of [1_450n, 100_000n]) expect(await outcome(tuned, gas)).toEqual(await outcome(plain, gas));
  // 1,400 gas to its LOG2, then its SSTORE finds no more than EIP-2200's 2,300 left.
  expect(await outcome(tuned, 1_450n)).toEqual({ error: 'out of gas', logs: 0, gas: '1450' });
  expect((await outcome(tuned, 100_000n)).logs).toBe(1);
});
