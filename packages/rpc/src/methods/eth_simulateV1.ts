// eth_simulateV1 (geth 1.14.9+): simulated blocks of calls on top of a held block, each with its
// state and block overrides; the blocks as geth returns them (its block JSON plus `calls`).
import { InvalidParamsError, RpcError, ServerError, toData, toQuantity } from '@chainnode/core';
import type { Hex, WithdrawalRecord } from '@chainnode/core';
import type { SimAccountOverride, SimBlockInput, SimBlockOverrides, SimCallResult, SimRules } from '@chainnode/exec';
import { fakeExponential, forksOf } from '../chain/forks.js';
import type { ForkSchedule } from '../chain/forks.js';
import {
  callHeader,
  decodeBlockOverrides,
  decodeCallArgs,
  decodeStateOverrides,
  executorOf,
  loadExec,
  revertError,
} from '../call.js';
import type { JsonBlock } from '../formatters/block.js';
import { formatBlock } from '../formatters/block.js';
import type { JsonLog } from '../formatters/log.js';
import { formatLog } from '../formatters/log.js';
import type { RpcConfig } from '../config.js';
import type { MethodDef } from '../method.js';
import {
  ParamError,
  decodeAddress,
  decodeArgs,
  decodeHash,
  decodeOptionalBlockSelector,
  decodeQuantity,
  jsonType,
} from '../params.js';
import type { BlockSelector } from '../params.js';
import { callCost } from './eth_call.js';
import { prunedOr, requireTrie } from '../trie-window.js';

export interface SimulateParams {
  blocks: SimBlockInput[];
  traceTransfers: boolean;
  validation: boolean;
  fullTransactions: boolean;
  block: BlockSelector;
}

export interface JsonSimCall {
  returnData: Hex;
  logs: JsonLog[];
  gasUsed: Hex;
  maxUsedGas: Hex;
  status: Hex;
  error?: { code: number; message: string; data?: Hex };
}

export type JsonSimBlock = Omit<JsonBlock, 'totalDifficulty'> & { calls: JsonSimCall[] };

/** geth's calls per simulated block (the request's blocks and calls are settings: RpcConfig). */
const MAX_CALLS_PER_BLOCK = 5_000;

function obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new ParamError(`${what}: expected an object, got ${jsonType(v)}`);
  return v as Record<string, unknown>;
}

const present = (v: unknown): boolean => v !== undefined && v !== null;

function decodeWithdrawals(v: unknown): WithdrawalRecord[] {
  if (!Array.isArray(v)) throw new ParamError('withdrawals: expected an array');
  return v.map((w: unknown) => {
    const o = obj(w, 'withdrawal');
    return {
      index: decodeQuantity(o.index, 'index', 64),
      validatorIndex: decodeQuantity(o.validatorIndex, 'validatorIndex', 64),
      address: decodeAddress(o.address),
      amount: decodeQuantity(o.amount, 'amount', 64),
    };
  });
}

function decodeSimBlockOverrides(v: unknown): SimBlockOverrides | undefined {
  const b: SimBlockOverrides | undefined = decodeBlockOverrides(v);
  if (b === undefined) return undefined;
  const o = obj(v, 'block overrides');
  if (present(o.blobBaseFee)) b.blobBaseFee = decodeQuantity(o.blobBaseFee, 'blobBaseFee');
  if (present(o.beaconRoot)) b.beaconRoot = decodeHash(o.beaconRoot);
  if (present(o.withdrawals)) b.withdrawals = decodeWithdrawals(o.withdrawals);
  return b;
}

function decodeSimState(v: unknown): Map<string, SimAccountOverride> | undefined {
  const state: Map<string, SimAccountOverride> | undefined = decodeStateOverrides(v);
  if (state === undefined) return undefined;
  for (const [addr, raw] of Object.entries(obj(v, 'state overrides'))) {
    const to = (raw as Record<string, unknown>).movePrecompileToAddress;
    if (!present(to)) continue;
    const key = Buffer.from(decodeAddress(addr)).toString('latin1');
    const o = state.get(key);
    if (o !== undefined) o.movePrecompileTo = decodeAddress(to);
  }
  return state;
}

function decodeSimBlock(v: unknown): SimBlockInput {
  const o = obj(v, 'block state call');
  const calls = present(o.calls) ? o.calls : [];
  if (!Array.isArray(calls)) throw new ParamError('calls: expected an array');
  const b: SimBlockInput = { calls: calls.map((c: unknown) => decodeCallArgs(c)) };
  const overrides = decodeSimBlockOverrides(o.blockOverrides);
  if (overrides !== undefined) b.overrides = overrides;
  const state = decodeSimState(o.stateOverrides);
  if (state !== undefined) b.state = state;
  return b;
}

export function decodeSimulateParams(params: unknown[]): SimulateParams {
  return decodeArgs(
    params,
    2,
    (arg) => {
      const o = obj(arg(0), 'simulation');
      const list = present(o.blockStateCalls) ? o.blockStateCalls : [];
      if (!Array.isArray(list)) throw new ParamError('blockStateCalls: expected an array');
      const flag = (k: string): boolean => {
        const x = o[k];
        if (!present(x)) return false;
        if (typeof x !== 'boolean') throw new ParamError(`${k}: expected a boolean`);
        return x;
      };
      return {
        blocks: list.map(decodeSimBlock),
        traceTransfers: flag('traceTransfers'),
        validation: flag('validation'),
        fullTransactions: flag('returnFullTransactions'),
        block: decodeOptionalBlockSelector(arg(1)),
      };
    },
    1,
  );
}

/** geth's checks before anything runs: some blocks, not too many, not too many calls. */
function checkLimits(p: SimulateParams, config: RpcConfig): void {
  if (p.blocks.length === 0) throw new InvalidParamsError('empty input');
  if (p.blocks.length > config.simulateMaxBlocks) throw new RpcError(-38026, 'too many blocks');
  let total = 0;
  for (const b of p.blocks) {
    if (b.calls.length > MAX_CALLS_PER_BLOCK)
      throw new RpcError(-38026, `too many calls in block: ${b.calls.length} > ${MAX_CALLS_PER_BLOCK}`);
    total += b.calls.length;
    if (total > config.simulateMaxCalls)
      throw new RpcError(-38026, `too many calls: ${total} > ${config.simulateMaxCalls}`);
  }
}

function formatCall(c: SimCallResult): JsonSimCall {
  const out: JsonSimCall = {
    // geth's ExecutionResult.Return(): nothing when the call failed (the revert data is in `error`).
    returnData: c.kind === 'success' ? toData(c.returnValue) : '0x',
    logs: c.logs.map(formatLog),
    gasUsed: toQuantity(c.gasUsed),
    maxUsedGas: toQuantity(c.maxUsedGas),
    status: c.kind === 'success' ? '0x1' : '0x0',
  };
  if (c.kind === 'revert') {
    const e = revertError(c.returnValue);
    out.error = { code: e.code, message: e.message, data: e.data as Hex };
  } else if (c.kind === 'halt') {
    const suffix = c.gasCapped ? " (gas limit was capped by the RPC server's global gas cap)" : '';
    out.error = { code: -32015, message: `${c.error ?? 'execution failed'}${suffix}` };
  }
  return out;
}

/** The fork schedule's fee rules, as the simulated blocks need them. */
function simRules(forks: ForkSchedule): SimRules {
  return {
    nextBaseFee: (parent) => forks.nextBaseFee(parent),
    nextExcessBlobGas: (parent, time) => forks.nextExcessBlobGas(parent, time),
    blobGasPrice: (excess, time) => {
      const p = forks.blobParams(time);
      return p === undefined ? 1n : fakeExponential(1n, excess, BigInt(p.baseFeeUpdateFraction));
    },
  };
}

export const eth_simulateV1: MethodDef<SimulateParams, JsonSimBlock[]> = {
  cost: 300,
  params:
    'simulation ({blockStateCalls: [{blockOverrides, stateOverrides, calls}], traceTransfers, validation, returnFullTransactions}), block (default latest)',
  errors:
    '-38010/-38011 nonce too low/high, -38012 fee cap below base fee, -38013 intrinsic gas too low, -38014 insufficient funds, -38015 block gas limit reached, -38020 block numbers out of order, -38021 timestamps out of order, -38026 too many blocks or calls, -32000 `header not found`, state override errors and a base block below the state trie window (`--state-trie window=<N>`: the roots of simulated blocks need its trie); a call that reverts or halts is reported in its `calls` entry (3 with the revert data, -32015)',
  decode: decodeSimulateParams,
  offload: true,
  estimateCost: async (ctx) => callCost(undefined, ctx.config.callGasCap),
  async handle(ctx, p) {
    checkLimits(p, ctx.config);
    const header = await callHeader(ctx, p.block);
    // Simulated blocks' state roots are computed over the base block's trie.
    requireTrie(ctx, header.number);
    const exec = await executorOf(ctx);
    const { SimulationError, ExecutionTimeout } = await loadExec();
    let results: Awaited<ReturnType<typeof exec.simulate>>;
    try {
      results = await exec.simulate(header, p.blocks, {
        validation: p.validation,
        traceTransfers: p.traceTransfers,
        maxBlocks: ctx.config.simulateMaxBlocks,
        rules: simRules(forksOf(ctx.store.info())),
      });
    } catch (err) {
      if (err instanceof SimulationError) throw new RpcError(err.code, err.message);
      if (err instanceof ExecutionTimeout)
        throw new ServerError(`execution aborted (timeout = ${exec.options.timeoutMs / 1000}s)`);
      throw prunedOr(ctx, header.number, err);
    }
    return results.map((r) => {
      const { totalDifficulty: _, ...block } = formatBlock(r.block, p.fullTransactions);
      return { ...block, calls: r.calls.map(formatCall) };
    });
  },
};
