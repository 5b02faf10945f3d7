// eth_call without a transaction object: the EVM's runCall given the message directly, with what
// runTx of @ethereumjs/vm 10.1.3 does around it for a call that pays nothing (no gas price, no fee
// caps, no blobs, no authorizations, a recipient): the warm sets of EIP-2929/2930/3651, the
// intrinsic gas and EIP-7623's floor, the sender's nonce bump, the refund cap. Nothing of a
// transaction or a block is built per call (a `LegacyTx` copies its Common and rebuilds the
// parameter cache, the most of a cheap call's CPU). Whatever runTx would refuse (funds short of
// the value, gas under the intrinsic cost, a sender with code, a gas limit over EIP-7825's cap)
// is left to runTx, which words the refusal as geth does: `leanCall` answers undefined then,
// before it has touched the EVM.
//
// Forks past Osaka change what runTx does around the call (EIP-2780's intrinsic gas, EIP-8037's
// state gas, EIP-7928's access lists, EIP-7708's logs, EIP-7864's witness…): under any of them
// every call takes runTx.
import type { Common } from '@ethereumjs/common';
import { paramsTx } from '@ethereumjs/tx';
import { Account, Address, bytesToUnprefixedHex, KECCAK256_NULL } from '@ethereumjs/util';
import type { VM } from '@ethereumjs/vm';
import type { Bytes } from '@chainnode/core';
import type { CallArgs } from './call-args.js';
import { haltPoint } from './halt.js';
import type { HaltPoint } from './halt.js';

/** EIPs under which runTx does more around a call than this path replicates. */
const UNSUPPORTED_EIPS = [2780, 7708, 7843, 7864, 7928, 7976, 7981, 8037, 8246];

const MAX_UINT64 = (1n << 64n) - 1n;
const MAX_UINT256 = (1n << 256n) - 1n;

/** A hardfork's parameters of a call, read from its Common once. */
export interface CallRules {
  /** False: the hardfork changes runTx in ways this path does not replicate. */
  lean: boolean;
  txGas: bigint;
  dataZero: bigint;
  dataNonZero: bigint;
  accessListAddress: bigint;
  accessListKey: bigint;
  /** EIP-7623's floor per calldata token; undefined before Prague. */
  floorPerToken: bigint | undefined;
  maxRefundQuotient: bigint;
  /** EIP-7825's cap on a transaction's gas; undefined before Osaka. */
  maxTxGas: bigint | undefined;
  eip2929: boolean;
  eip2930: boolean;
  eip3651: boolean;
  /** The active precompiles' addresses (unprefixed hex), warm from the start under EIP-2929. */
  precompiles: string[];
  /** The journal's always-warm entries of the precompiles (address → no slots). */
  warmPrecompiles: Map<string, Set<string>>;
}

/** The rules of the hardfork `vm`'s Common is set to. */
export function callRules(vm: VM): CallRules {
  // The transaction's parameters as a transaction's own Common has them (runTx reads them there).
  const c: Common = vm.common.copy();
  c.updateParams(paramsTx);
  const on = (eip: number): boolean => c.isActivatedEIP(eip);
  const p = (name: string): bigint => BigInt(c.param(name) ?? 0);
  const precompiles = [...vm.evm.precompiles.keys()].map((a) => (a.startsWith('0x') ? a.slice(2) : a));
  return {
    lean: !UNSUPPORTED_EIPS.some(on),
    txGas: p('txGas'),
    dataZero: p('txDataZeroGas'),
    dataNonZero: p('txDataNonZeroGas'),
    accessListAddress: on(2930) ? p('accessListAddressGas') : 0n,
    accessListKey: on(2930) ? p('accessListStorageKeyGas') : 0n,
    floorPerToken: on(7623) ? p('totalCostFloorPerToken') : undefined,
    maxRefundQuotient: BigInt(vm.common.param('maxRefundQuotient')),
    maxTxGas: on(7825) ? p('maxTransactionGasLimit') : undefined,
    eip2929: on(2929),
    eip2930: on(2930),
    eip3651: on(3651),
    precompiles,
    warmPrecompiles: new Map(precompiles.map((a) => [a, new Set<string>()])),
  };
}

/** Whether a call of `args` can take this path at all (before any state is read). */
export function leanEligible(args: CallArgs, rules: CallRules, gas: bigint): boolean {
  return (
    rules.lean &&
    args.to !== undefined &&
    args.to !== null &&
    args.gasPrice === undefined &&
    args.maxFeePerGas === undefined &&
    args.maxPriorityFeePerGas === undefined &&
    args.maxFeePerBlobGas === undefined &&
    args.blobVersionedHashes === undefined &&
    args.authorizationList === undefined &&
    (args.accessList === undefined || rules.eip2930) &&
    (args.value === undefined || args.value <= MAX_UINT256) &&
    (args.nonce === undefined || args.nonce < MAX_UINT64) &&
    gas <= MAX_UINT64 &&
    (rules.maxTxGas === undefined || gas <= rules.maxTxGas)
  );
}

/** The intrinsic gas (21,000, calldata, access list) and EIP-7623's floor of a call. */
function intrinsic(args: CallArgs, rules: CallRules): { gas: bigint; floor: bigint } {
  const data = args.input;
  let zeros = 0;
  const len = data?.length ?? 0;
  for (let i = 0; i < len; i++) if ((data as Bytes)[i] === 0) zeros++;
  let gas = rules.txGas + BigInt(zeros) * rules.dataZero + BigInt(len - zeros) * rules.dataNonZero;
  for (const e of args.accessList ?? [])
    gas += rules.accessListAddress + BigInt(e.storageKeys.length) * rules.accessListKey;
  const floor =
    rules.floorPerToken === undefined ? 0n : rules.txGas + rules.floorPerToken * BigInt(zeros + 4 * (len - zeros));
  return { gas, floor };
}

/** The EVM's journal as this path uses it. */
interface Journal {
  cleanup(): Promise<void>;
  cleanJournal(): void;
  checkpoint(): Promise<void>;
  commit(): Promise<void>;
  revert(): Promise<void>;
  putAccount(address: Address, account: Account): Promise<void>;
  addAlwaysWarmAddress(address: string, addToAccessList?: boolean): void;
  addAlwaysWarmSlot(address: string, slot: string, addToAccessList?: boolean): void;
  startReportingAccessList(): void;
  accessList?: Map<string, Set<string>>;
  alwaysWarmJournal: Map<string, Set<string>>;
}

export interface LeanOutcome {
  exceptionError: { error: string } | undefined;
  /** Where the EVM halted (geth's halt texts name it). */
  halt?: HaltPoint | undefined;
  returnValue: Bytes;
  gasUsed: bigint;
  accessList?: { address: string; storageKeys: string[] }[] | undefined;
}

/**
 * The call as runTx would run it with a zero gas price, under the block environment `block` (its
 * header as the EVM reads it). Undefined when runTx would refuse it (see the module's comment):
 * the caller then runs it through runTx.
 */
export async function leanCall(
  vm: VM,
  rules: CallRules,
  block: unknown,
  coinbase: Address,
  args: CallArgs,
  gas: bigint,
  reportAccessList: boolean,
): Promise<LeanOutcome | undefined> {
  const { gas: intrinsicGas, floor } = intrinsic(args, rules);
  if (gas < intrinsicGas || gas < floor) return undefined;
  const caller = new Address(args.from ?? new Uint8Array(20));
  const to = new Address(args.to as Bytes);
  const value = args.value ?? 0n;
  const state = vm.stateManager;
  const sender = (await state.getAccount(caller)) ?? new Account();
  if (sender.balance < value) return undefined;
  if (!sameBytes(sender.codeHash, KECCAK256_NULL)) return undefined;
  const evm = vm.evm as unknown as { journal: Journal };
  const journal = evm.journal;
  await journal.cleanup();
  if (reportAccessList) journal.startReportingAccessList();
  await journal.checkpoint();
  try {
    for (const e of args.accessList ?? []) {
      const a = bytesToUnprefixedHex(e.address);
      journal.addAlwaysWarmAddress(a, true);
      for (const k of e.storageKeys) journal.addAlwaysWarmSlot(a, bytesToUnprefixedHex(k), true);
    }
    if (rules.eip2929) {
      // The precompiles' entries, made once per hardfork: their slot sets stay empty unless an
      // access list names a precompile (then each gets its own, as runTx gives it).
      if (args.accessList === undefined) journal.alwaysWarmJournal = new Map(rules.warmPrecompiles);
      else for (const a of rules.precompiles) journal.addAlwaysWarmAddress(a);
      journal.addAlwaysWarmAddress(bytesToUnprefixedHex(caller.bytes));
      journal.addAlwaysWarmAddress(bytesToUnprefixedHex(to.bytes));
      if (rules.eip3651) journal.addAlwaysWarmAddress(bytesToUnprefixedHex(coinbase.bytes));
    }
    sender.nonce += 1n;
    await journal.putAccount(caller, sender);
    await journal.checkpoint();
    const r = await vm.evm.runCall({
      block: block as never,
      gasPrice: 0n,
      caller,
      gasLimit: gas - intrinsicGas,
      to,
      value,
      data: args.input ?? new Uint8Array(),
      skipNonceIncrement: true,
    });
    await journal.commit();
    let used = r.execResult.executionGasUsed + intrinsicGas;
    const refund = r.execResult.gasRefund ?? 0n;
    if (refund !== 0n) {
      const most = used / rules.maxRefundQuotient;
      used -= refund < most ? refund : most;
    }
    if (used < floor) used = floor;
    const out: LeanOutcome = {
      exceptionError: r.execResult.exceptionError,
      halt: haltPoint(r.execResult.runState),
      returnValue: r.execResult.returnValue,
      gasUsed: used,
    };
    if (reportAccessList && rules.eip2930) out.accessList = accessListOf(journal);
    await journal.commit();
    return out;
  } catch (err) {
    await journal.revert();
    throw err;
  } finally {
    // The call's writes go with the overlay: the touched accounts need no EIP-161 cleanup.
    journal.cleanJournal();
    state.originalStorageCache.clear();
  }
}

/** runTx's access list of the call: every address and slot the journal saw. */
function accessListOf(journal: Journal): { address: string; storageKeys: string[] }[] {
  const out: { address: string; storageKeys: string[] }[] = [];
  for (const [address, slots] of journal.accessList ?? new Map<string, Set<string>>())
    out.push({ address: `0x${address}`, storageKeys: [...slots].map((s) => `0x${s}`) });
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
