// The EVM tunings (evm-tuning.ts) against the package they tune: a tuned Common answers every
// EIP check at every hardfork as an untuned one, across hardfork changes and copies; transactions
// and headers built on a Common with remembered parameter merges read every parameter as those
// built on the package's own, at every hardfork and back; a tuned VM's
// MSTORE leaves memory as the package's own MSTORE does, for words of every length and at
// offsets that grow memory, before and after a hardfork change rebuilds the opcode table.
import { createBlockHeader, paramsBlock } from '@ethereumjs/block';
import { Common, Hardfork, Mainnet } from '@ethereumjs/common';
import { createFeeMarket1559Tx, createLegacyTx, paramsTx } from '@ethereumjs/tx';
import { createVM } from '@ethereumjs/vm';
import type { VM } from '@ethereumjs/vm';
import { seededRandom } from '@chainnode/testkit';
import { rememberEips, rememberParams, tuneVm } from '../src/evm-tuning.js';

const HARDFORKS = [Hardfork.Berlin, Hardfork.London, Hardfork.Shanghai, Hardfork.Cancun, Hardfork.Prague];

/** EIP numbers 1..8000 (every EIP a hardfork of the package activates has a number below it). */
const EIPS = Array.from({ length: 8000 }, (_, i) => i + 1);

test('a Common with remembered EIP checks answers as the package at every hardfork, and so do its copies', () => {
  const plain = new Common({ chain: Mainnet, hardfork: Hardfork.Berlin });
  const tuned = new Common({ chain: Mainnet, hardfork: Hardfork.Berlin });
  rememberEips(tuned);
  const wrong: string[] = [];
  const same = (c: Common, at: string) => {
    for (const eip of EIPS) if (c.isActivatedEIP(eip) !== plain.isActivatedEIP(eip)) wrong.push(`${at} ${eip}`);
  };
  let active = 0;
  for (const round of [0, 1])
    for (const hf of round === 0 ? HARDFORKS : [...HARDFORKS].reverse()) {
      plain.setHardfork(hf);
      tuned.setHardfork(hf);
      const copy = tuned.copy();
      same(tuned, hf);
      same(copy, `copy ${hf}`);
      // A copy is not tuned until it is given the tuning itself, and then answers the same.
      if (Object.hasOwn(copy, 'isActivatedEIP')) wrong.push(`copy ${hf} came tuned`);
      rememberEips(copy);
      if (!Object.hasOwn(copy, 'isActivatedEIP')) wrong.push(`copy ${hf} not tuned`);
      same(copy, `tuned copy ${hf}`);
      active += EIPS.filter((eip) => tuned.isActivatedEIP(eip)).length;
      // A copy moved to another hardfork answers for that one, and the original for its own.
      copy.setHardfork(Hardfork.Berlin);
      plain.setHardfork(Hardfork.Berlin);
      same(copy, `copy moved to berlin from ${hf}`);
      plain.setHardfork(hf);
      same(tuned, `${hf} after its copy moved`);
    }
  expect(wrong).toEqual([]);
  // The hardforks differ: later ones activate more.
  expect(active).toBeGreaterThan(40);
});

/** Every parameter name of a parameter set (by EIP), each once. */
const names = (params: Record<string, Record<string, unknown> | undefined>): string[] => [
  ...new Set(Object.values(params).flatMap((p) => Object.keys(p ?? {}))),
];

/** `name`'s value on `c` as text, or the package's error when it has none there. */
function param(c: Common, name: string): string {
  try {
    return String(c.param(name));
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

test('transactions and headers built on a Common with remembered parameter merges read every parameter as the package’s', () => {
  const plain = new Common({ chain: Mainnet, hardfork: Hardfork.Berlin });
  const tuned = new Common({ chain: Mainnet, hardfork: Hardfork.Berlin });
  rememberParams(tuned);
  const txNames = names(paramsTx);
  const blockNames = names(paramsBlock);
  const wrong: string[] = [];
  let known = 0;
  const built = (c: Common, n: number) => {
    const fee = c.gteHardfork(Hardfork.London);
    const data = {
      nonce: n,
      gasLimit: 100_000,
      to: `0x${'11'.repeat(20)}` as const,
      value: n,
      data: '0x00ff' as const,
    };
    const tx = fee
      ? createFeeMarket1559Tx({ ...data, maxFeePerGas: 10, maxPriorityFeePerGas: 1 }, { common: c })
      : createLegacyTx({ ...data, gasPrice: 10 }, { common: c });
    const header = createBlockHeader(
      { number: 1, gasLimit: 30_000_000, ...(fee ? { baseFeePerGas: 7 } : {}) },
      { common: c },
    );
    return { tx, header };
  };
  for (const round of [0, 1])
    for (const hf of round === 0 ? HARDFORKS : [...HARDFORKS].reverse()) {
      plain.setHardfork(hf);
      tuned.setHardfork(hf);
      const want = built(plain, 1);
      // Three of each on the tuned Common: the first merges, the next ones start where it ended.
      for (let n = 1; n <= 3; n++) {
        const got = built(tuned, n);
        for (const name of txNames) {
          const [a, b] = [param(got.tx.common, name), param(want.tx.common, name)];
          if (a !== b) wrong.push(`${hf} tx ${n} ${name}: ${a}, the package's ${b}`);
          else if (!a.startsWith('error')) known++;
        }
        for (const name of blockNames) {
          const [a, b] = [param(got.header.common, name), param(want.header.common, name)];
          if (a !== b) wrong.push(`${hf} header ${n} ${name}: ${a}, the package's ${b}`);
        }
        if (got.tx.getIntrinsicGas() !== want.tx.getIntrinsicGas()) wrong.push(`${hf} tx ${n} intrinsic gas`);
      }
      // The Common itself keeps answering for its hardfork.
      for (const name of [...txNames, ...blockNames])
        if (param(tuned, name) !== param(plain, name)) wrong.push(`${hf} common ${name}`);
    }
  expect(wrong).toEqual([]);
  expect(known).toBeGreaterThan(100);
});

const push = (bytes: Uint8Array): number[] => (bytes.length === 0 ? [0x5f] : [0x5f + bytes.length, ...bytes]);

/** Code that MSTOREs each word at its offset, then returns memory 0..size. */
function mstores(writes: { offset: number; word: Uint8Array }[], size: number): Uint8Array {
  const code: number[] = [];
  for (const w of writes) code.push(...push(w.word), ...push(Uint8Array.of(w.offset >> 8, w.offset & 0xff)), 0x52);
  code.push(...push(Uint8Array.of(size >> 8, size & 0xff)), 0x5f, 0xf3);
  return Uint8Array.from(code);
}

async function run(vm: VM, code: Uint8Array) {
  const r = await vm.evm.runCode?.({ code, gasLimit: 10_000_000n });
  return { memory: Buffer.from(r?.returnValue ?? []).toString('hex'), gas: r?.executionGasUsed };
}

test('a tuned VM’s MSTORE leaves memory and gas as the package’s, before and after a hardfork change', async () => {
  const random = seededRandom(7);
  const plain = await createVM({ common: new Common({ chain: Mainnet, hardfork: Hardfork.Shanghai }) });
  const tuned = await createVM({ common: new Common({ chain: Mainnet, hardfork: Hardfork.Shanghai }) });
  tuneVm(tuned);
  for (const hf of [Hardfork.Shanghai, Hardfork.Cancun]) {
    plain.common.setHardfork(hf);
    tuned.common.setHardfork(hf);
    for (let k = 0; k < 40; k++) {
      const writes = Array.from({ length: 1 + Math.floor(random() * 6) }, () => {
        const word = Uint8Array.from({ length: Math.floor(random() * 33) }, () => Math.floor(random() * 256));
        if (word.length > 0 && random() < 0.3) word[0] = 0; // a word with leading zero bytes
        return { offset: Math.floor(random() * 700), word };
      });
      const code = mstores(writes, 800);
      expect(await run(tuned, code)).toEqual(await run(plain, code));
    }
    // Every byte of the word where it belongs: 0x01..0x20 at offset 3.
    const word = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
    const { memory } = await run(tuned, mstores([{ offset: 3, word }], 40));
    expect(memory).toBe(`000000${Buffer.from(word).toString('hex')}0000000000`);
  }
});
