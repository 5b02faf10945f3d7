// A Solidity workload for the tracers, sent to anvil in five blocks: nested calls with value
// between two contracts, STATICCALL and DELEGATECALL, the precompiles (ecrecover, sha256,
// identity), CREATE and CREATE2 from a contract, a revert caught by try/catch (a call and a failed
// CREATE2), top-level reverts with a reason and with a custom error, logs in nested frames,
// SELFDESTRUCT in the creating transaction, transient storage, and a failed contract creation at
// the top. The source is trace-workload.sol beside this file; its code, trace-workload.json. A
// fifth block holds halts other than reverts, from contracts of raw bytecode (FAILING): out of
// gas, the invalid opcode 0xfe, a stack underflow and a bad jump, each in a frame below a call
// that goes on, and each at the top of a transaction.
//
// anvil keeps some empty accounts geth deletes (../shared/research/anvil-deviations.md: the
// precompiles a call touches, a failed creation's address, a child created and self-destructed in
// one transaction), so a block with one has a state root the follower cannot reproduce. Each such
// address is sent 1 wei by a later transaction of the same block: the account then holds a
// balance under both rules. anvil runs with `--order fifo` so those come after. anvil also keeps a
// zero leaf for a storage slot read while empty (seen for a STATICCALL's SLOAD): the hubs' one
// slot is set in their constructor.
import { Interface, getCreate2Address, getCreateAddress, keccak256 } from 'ethers';
import { DEV, result } from './anvil-upstream.js';
import { workloadCode } from './trace-workload-code.js';
import type { WorkloadContract } from './trace-workload-code.js';

type Json = Record<string, unknown>;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;

const HUB = new Interface([
  'function nested(address other, uint256 depth) payable returns (uint256)',
  'function mixed(address other, address lib, uint256 x) returns (bytes32)',
  'function make(uint256 x, bytes32 salt) payable returns (uint256)',
  'function tryCatch(address other, bytes32 salt) returns (uint256)',
  'function boom(uint256 x)',
  'function refuse(uint256 code)',
  'function doom(bytes32 salt, address heir) payable returns (address)',
  'function transient(uint256 x) returns (uint256)',
]);
const CHILD = new Interface(['function ping(uint256 x) payable returns (uint256)']);

export interface TraceWorkload {
  /** Every transaction sent, in order, with what it exercises. */
  readonly txs: readonly { hash: string; what: string }[];
  /** The address of each failed creation, by transaction (geth's callTracer leaves it out). */
  readonly failedAt: ReadonlyMap<string, readonly string[]>;
  /** The contracts the test searches for: the hubs, the library, the children made by a contract. */
  readonly contracts: { hubA: string; hubB: string; lib: string; childA: string; childB: string };
  /** The contracts of raw bytecode that halt (FAILING), and the one that calls each of them. */
  readonly halting: Record<keyof typeof FAILING, string> & { prober: string };
  /** Blocks 1..n hold the workload. */
  readonly blocks: number;
}

/** Runtimes that halt other than by reverting. */
export const FAILING = {
  /** JUMPDEST, PUSH1 0, JUMP: loops until its gas runs out. */
  loop: '5b600056',
  /** The designated invalid opcode. */
  invalid: 'fe',
  /** ADD on an empty stack. */
  underflow: '01',
  /** PUSH1 0, JUMP: to a PUSH1, not a JUMPDEST. */
  badJump: '600056',
} as const;

/** Init code that deploys `runtime` (hex, under 256 bytes) as it is. */
export function deployRuntime(runtime: string): string {
  const len = (runtime.length / 2).toString(16).padStart(2, '0');
  return `0x60${len}600c60003960${len}6000f3${runtime}`;
}

/** A runtime that CALLs each of `targets` with 4,000 gas, no value and no input, then stops. */
function proberRuntime(targets: readonly string[]): string {
  const call = (t: string) => `6000600060006000600073${t.slice(2).toLowerCase()}610fa0f150`;
  return `${targets.map(call).join('')}00`;
}

/**
 * Sends the workload to anvil (started with --no-mining and --order fifo) and mines it in five
 * blocks; each transaction must have the status its purpose says.
 */
export async function sendTraceWorkload(anvil: string): Promise<TraceWorkload> {
  const compiled = workloadCode();
  const code = (name: WorkloadContract) => compiled[name] as string;
  const [d0, d1, d2, d3] = DEV as [string, string, string, string];
  const txs: { hash: string; what: string; ok: boolean }[] = [];
  const failedAt = new Map<string, string[]>();
  const send = async (what: string, ok: boolean, from: string, tx: Json, failed?: string) => {
    const hash = await result<string>(anvil, 'eth_sendTransaction', [{ from, gas: hexN(3_000_000), ...tx }]);
    txs.push({ hash, what, ok });
    if (failed !== undefined) failedAt.set(hash, [failed.toLowerCase()]);
  };
  const nonce = async (a: string) => Number(await result<string>(anvil, 'eth_getTransactionCount', [a, 'pending']));
  const fund = (what: string, to: string) => send(`fund ${what}`, true, d0, { to, value: '0x1' });
  const mine = () => result(anvil, 'evm_mine', []);

  // Block 1: the library and two hubs.
  const n0 = await nonce(d0);
  const lib = getCreateAddress({ from: d0, nonce: n0 });
  const hubA = getCreateAddress({ from: d0, nonce: n0 + 1 });
  const hubB = getCreateAddress({ from: d0, nonce: n0 + 2 });
  await send('deploy Lib', true, d0, { data: code('Lib') });
  await send('deploy Hub A', true, d0, { data: code('Hub') });
  await send('deploy Hub B', true, d0, { data: code('Hub') });
  await mine();

  // Block 2: calls.
  const call = (what: string, ok: boolean, from: string, fn: string, args: unknown[], value = 0, failed?: string) =>
    send(what, ok, from, { to: hubA, data: HUB.encodeFunctionData(fn, args), value: hexN(value) }, failed);
  const salt = (k: number) => `0x${k.toString(16).padStart(64, '0')}`;
  const childA = getCreateAddress({ from: hubA, nonce: 1 });
  const childB = getCreate2Address(hubA, salt(1), keccak256(`${code('Child')}${(10).toString(16).padStart(64, '0')}`));
  await call('nested calls with value, logs in every frame', true, d1, 'nested', [hubB, 3], 1000);
  await call('STATICCALL, DELEGATECALL, precompiles', true, d1, 'mixed', [hubB, lib, 5]);
  for (const p of [1, 2, 4]) await fund(`precompile ${p}`, `0x${p.toString(16).padStart(40, '0')}`);
  await call('CREATE and CREATE2 from a contract', true, d2, 'make', [9, salt(1)], 100);
  const failedChild = getCreate2Address(hubA, salt(2), keccak256(code('Failing')));
  await call('reverts caught by try/catch, a failed CREATE2', true, d2, 'tryCatch', [hubB, salt(2)], 0, failedChild);
  await fund('the failed CREATE2', failedChild);
  await call('transient storage', true, d3, 'transient', [4]);
  await mine();

  // Block 3: top-level failures and a self-destruct in the creating transaction.
  await call('top-level revert with a reason', false, d1, 'boom', [5]);
  await call('top-level revert with a custom error', false, d2, 'refuse', [9]);
  const doomInit = `${code('Doomed')}${d3.slice(2).toLowerCase().padStart(64, '0')}`;
  await call('SELFDESTRUCT in the creating transaction', true, d3, 'doom', [salt(3), d3], 77);
  await fund('the self-destructed child', getCreate2Address(hubA, salt(3), keccak256(doomInit)));
  const failedTop = getCreateAddress({ from: d3, nonce: await nonce(d3) });
  await send('a failed contract creation', false, d3, { data: code('Failing') }, failedTop);
  await fund('the failed creation', failedTop);
  await mine();

  // Block 4: a plain transfer, a call to a child, the nested calls again.
  await send('a plain transfer', true, d1, { to: d2, value: hexN(12345) });
  await send('a call to a child made by a contract', true, d2, {
    to: childA,
    data: CHILD.encodeFunctionData('ping', [3]),
  });
  await call('nested calls once more', true, d3, 'nested', [hubB, 1], 10);
  await mine();

  // Block 5: halts other than reverts, below a call that goes on and at the top. The looping
  // transaction's gas is small: its struct log has an entry per step.
  const n5 = await nonce(d0);
  const names = Object.keys(FAILING) as (keyof typeof FAILING)[];
  const halting = Object.fromEntries(names.map((k, i) => [k, getCreateAddress({ from: d0, nonce: n5 + i })])) as Record<
    keyof typeof FAILING,
    string
  >;
  for (const k of names) await send(`deploy the ${k} runtime`, true, d0, { data: deployRuntime(FAILING[k]) });
  const prober = getCreateAddress({ from: d0, nonce: n5 + names.length });
  await send('deploy the prober', true, d0, { data: deployRuntime(proberRuntime(names.map((k) => halting[k]))) });
  await send('a call whose callees halt: out of gas, 0xfe, stack underflow, bad jump', true, d1, { to: prober });
  for (const k of names) await send(`the ${k} runtime at the top`, false, d2, { to: halting[k], gas: hexN(30_000) });
  await mine();

  for (const t of txs) {
    const r = await result<Json>(anvil, 'eth_getTransactionReceipt', [t.hash]);
    if ((r.status === '0x1') !== t.ok) throw new Error(`${t.what}: status ${r.status}`);
  }
  return { txs, failedAt, contracts: { hubA, hubB, lib, childA, childB }, halting: { ...halting, prober }, blocks: 5 };
}
