// What eth_call, eth_estimateGas and eth_createAccessList share: geth's TransactionArgs,
// StateOverride and BlockOverrides decoders, the executor of a store (packages/exec), the block
// a call runs on, and geth's errors (revert: code 3 with the revert data; other failures -32000).
import {
  InvalidParamsError,
  MissingTrieNodeError,
  RpcError,
  ServerError,
  revertReason,
  toData,
  withProperty,
} from '@chainnode/core';
import type { Bytes, ChainStore, HeaderRecord } from '@chainnode/core';
import type { AccountOverride, BlockOverrides, BlockStateBase, CallArgs, CallOutcome, Executor } from '@chainnode/exec';
import type { HandlerContext } from './context.js';
import {
  decodeAddress,
  decodeFixedData,
  decodeHash,
  decodeQuantity,
  decodeStorageKey,
  jsonType,
  ParamError,
} from './params.js';
import type { BlockSelector } from './params.js';
import { accountIn, selectBlockHash, stateOfHeader, storageAt } from './reads.js';
import { belowTrieWindow } from './trie-window.js';

function obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new ParamError(`${what}: expected an object, got ${jsonType(v)}`);
  return v as Record<string, unknown>;
}

const present = (v: unknown): boolean => v !== undefined && v !== null;

function data(v: unknown, what: string): Bytes {
  if (typeof v !== 'string' || !/^0[xX]([0-9a-fA-F]{2})*$/.test(v)) throw new ParamError(`${what}: expected hex data`);
  return Uint8Array.from(Buffer.from(v.slice(2), 'hex'));
}

/** geth's TransactionArgs (the fields a call uses; `data` is accepted as the old name of `input`). */
export function decodeCallArgs(v: unknown): CallArgs {
  const o = obj(v, 'transaction');
  const a: CallArgs = {};
  if (present(o.from)) a.from = decodeAddress(o.from);
  if (present(o.to)) a.to = decodeAddress(o.to);
  if (present(o.gas)) a.gas = decodeQuantity(o.gas, 'gas', 64);
  if (present(o.gasPrice)) a.gasPrice = decodeQuantity(o.gasPrice, 'gasPrice');
  if (present(o.maxFeePerGas)) a.maxFeePerGas = decodeQuantity(o.maxFeePerGas, 'maxFeePerGas');
  if (present(o.maxPriorityFeePerGas))
    a.maxPriorityFeePerGas = decodeQuantity(o.maxPriorityFeePerGas, 'maxPriorityFeePerGas');
  if (present(o.maxFeePerBlobGas)) a.maxFeePerBlobGas = decodeQuantity(o.maxFeePerBlobGas, 'maxFeePerBlobGas');
  if (present(o.value)) a.value = decodeQuantity(o.value, 'value');
  if (present(o.nonce)) a.nonce = decodeQuantity(o.nonce, 'nonce', 64);
  const input = present(o.input) ? data(o.input, 'input') : undefined;
  const legacy = present(o.data) ? data(o.data, 'data') : undefined;
  if (input !== undefined && legacy !== undefined && Buffer.compare(input, legacy) !== 0)
    throw new InvalidParamsError(
      'both "data" and "input" are set and not equal. Please use "input" to pass transaction call data',
    );
  const payload = input ?? legacy;
  if (payload !== undefined) a.input = payload;
  if (a.gasPrice !== undefined && (a.maxFeePerGas !== undefined || a.maxPriorityFeePerGas !== undefined))
    throw new InvalidParamsError('both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified');
  if (present(o.accessList)) {
    if (!Array.isArray(o.accessList)) throw new ParamError('accessList: expected an array');
    a.accessList = o.accessList.map((e: unknown) => {
      const x = obj(e, 'accessList entry');
      const keys = present(x.storageKeys) ? x.storageKeys : [];
      if (!Array.isArray(keys)) throw new ParamError('accessList: storageKeys must be an array');
      return { address: decodeAddress(x.address), storageKeys: keys.map((k: unknown) => decodeHash(k)) };
    });
  }
  if (present(o.blobVersionedHashes)) {
    if (!Array.isArray(o.blobVersionedHashes)) throw new ParamError('blobVersionedHashes: expected an array');
    a.blobVersionedHashes = o.blobVersionedHashes.map((h: unknown) => decodeHash(h));
  }
  if (present(o.authorizationList)) {
    if (!Array.isArray(o.authorizationList)) throw new ParamError('authorizationList: expected an array');
    a.authorizationList = o.authorizationList.map((e: unknown) => {
      const x = obj(e, 'authorization');
      return {
        chainId: decodeQuantity(x.chainId, 'chainId'),
        address: decodeAddress(x.address),
        nonce: decodeQuantity(x.nonce, 'nonce', 64),
        yParity: decodeQuantity(x.yParity ?? x.v, 'yParity', 8),
        r: decodeQuantity(x.r, 'r'),
        s: decodeQuantity(x.s, 's'),
      };
    });
  }
  return a;
}

const key = (b: Bytes): string => Buffer.from(b).toString('latin1');

/** geth's StateOverride: address -> {balance, nonce, code, state | stateDiff}. */
export function decodeStateOverrides(v: unknown): Map<string, AccountOverride> | undefined {
  if (!present(v)) return undefined;
  const out = new Map<string, AccountOverride>();
  for (const [addr, raw] of Object.entries(obj(v, 'state overrides'))) {
    const o = obj(raw, addr);
    const ov: AccountOverride = {};
    if (present(o.balance)) ov.balance = decodeQuantity(o.balance, 'balance');
    if (present(o.nonce)) ov.nonce = decodeQuantity(o.nonce, 'nonce', 64);
    if (present(o.code)) ov.code = data(o.code, 'code');
    if (present(o.state) && present(o.stateDiff))
      throw new InvalidParamsError(`account ${addr} has both 'state' and 'stateDiff'`);
    const slots = (x: unknown): Map<string, Bytes> => {
      const m = new Map<string, Bytes>();
      for (const [k, val] of Object.entries(obj(x, 'storage')))
        m.set(key(decodeStorageKey(k).slot), decodeFixedData(val, 32, 'common.Hash'));
      return m;
    };
    if (present(o.state)) ov.state = slots(o.state);
    if (present(o.stateDiff)) ov.stateDiff = slots(o.stateDiff);
    out.set(key(decodeAddress(addr)), ov);
  }
  return out;
}

/** geth's BlockOverrides (number, time, gasLimit, feeRecipient, prevRandao, baseFeePerGas). */
export function decodeBlockOverrides(v: unknown): BlockOverrides | undefined {
  if (!present(v)) return undefined;
  const o = obj(v, 'block overrides');
  const b: BlockOverrides = {};
  if (present(o.number)) b.number = decodeQuantity(o.number, 'number', 64);
  if (present(o.time)) b.time = decodeQuantity(o.time, 'time', 64);
  if (present(o.gasLimit)) b.gasLimit = decodeQuantity(o.gasLimit, 'gasLimit', 64);
  if (present(o.feeRecipient)) b.feeRecipient = decodeAddress(o.feeRecipient);
  if (present(o.prevRandao)) b.prevRandao = decodeHash(o.prevRandao);
  if (present(o.baseFeePerGas)) b.baseFeePerGas = decodeQuantity(o.baseFeePerGas, 'baseFeePerGas');
  return b;
}

/**
 * The execution package, loaded on first use: it brings @ethereumjs/vm, which tripled the time to
 * import the method table (every offload worker imports it at start) for processes that never
 * execute a call.
 */
let execModule: Promise<typeof import('@chainnode/exec')> | undefined;
export function loadExec(): Promise<typeof import('@chainnode/exec')> {
  execModule ??= import('@chainnode/exec');
  return execModule;
}

const executors = new WeakMap<ChainStore, Executor>();

/** The store's executor (warm VMs and block contexts), made on first use. */
export async function executorOf(ctx: HandlerContext): Promise<Executor> {
  let e = executors.get(ctx.store);
  if (e === undefined) {
    const { Executor } = await loadExec();
    const store = ctx.store;
    e =
      executors.get(store) ??
      new Executor(store.info(), store.stateReader(), (n) => store.canonicalHash(n), {
        gasCap: BigInt(ctx.config.callGasCap),
        timeoutMs: ctx.config.callTimeoutMs,
      });
    executors.set(store, e);
  }
  return e;
}

/** The header a call runs on (geth's errors for unknown blocks). */
export async function callHeader(ctx: HandlerContext, sel: BlockSelector): Promise<HeaderRecord> {
  const header = await ctx.store.header(await callBlockHash(ctx, sel));
  if (header === undefined) throw unknownBlock(sel);
  return header;
}

/** The hash of the block a call runs on (callHeader's errors). */
export async function callBlockHash(ctx: HandlerContext, sel: BlockSelector): Promise<Bytes> {
  const hash = await selectBlockHash(ctx, sel);
  if (hash === undefined) throw unknownBlock(sel);
  return hash;
}

const unknownBlock = (sel: BlockSelector): ServerError =>
  new ServerError(sel.kind === 'hash' ? 'header for hash not found' : 'header not found');

export { revertReason };

/** geth's revertError: code 3, "execution reverted[: reason]", the revert data as `data`. */
export function revertError(d: Bytes): RpcError {
  const reason = revertReason(d);
  return new RpcError(3, reason === undefined ? 'execution reverted' : `execution reverted: ${reason}`, toData(d));
}

/** Runs a call, mapping what can go wrong to geth's errors; a revert or halt is returned. */
export async function runCall(
  ctx: HandlerContext,
  header: HeaderRecord,
  args: CallArgs,
  opts: Parameters<Executor['call']>[2] = {},
): Promise<CallOutcome> {
  const exec = await executorOf(ctx);
  const { CallPrecheckError, ExecutionTimeout, InlineBudgetExceeded } = await loadExec();
  if (ctx.inline !== undefined) opts = withProperty(opts, 'inline', ctx.inline);
  // Below the state trie's window the block's trie may be pruned: its state comes from the history.
  let runOpts = belowTrieWindow(ctx, header.number) ? withProperty(opts, 'base', blockStateBase(ctx, header)) : opts;
  // A joined node's state arrives proven on demand: what the call is known to read is fetched
  // together first; a run that reached other state the store does not hold failed on it; the
  // paths it missed are fetched and proven, and the call runs again (each run gets further), at
  // most MAX_STATE_RUNS times.
  if (ctx.store.prefetchState !== undefined && runOpts.base === undefined)
    await ctx.store.prefetchState(header.stateRoot, knownPaths(args), args.to ?? undefined);
  for (let run = 1; ; run++) {
    try {
      return await exec.call(header, args, runOpts);
    } catch (err) {
      if (err instanceof InlineBudgetExceeded) throw new InlineTimeUp();
      // The window moved past the block since the store last looked (a pruner deleted a node the
      // run needed): once more, from the history.
      if (
        err instanceof MissingTrieNodeError &&
        runOpts.base === undefined &&
        belowTrieWindow(ctx, header.number, true)
      ) {
        runOpts = withProperty(opts, 'base', blockStateBase(ctx, header));
        continue;
      }
      if (
        !(err instanceof MissingTrieNodeError) ||
        ctx.store.fetchMissedState === undefined ||
        run >= MAX_STATE_RUNS ||
        !(await ctx.store.fetchMissedState())
      )
        throw mapCallError(err, exec.options.timeoutMs, ExecutionTimeout, CallPrecheckError);
    }
  }
}

/** The state after the block `header` names, read by block from the store's state history. */
export function blockStateBase(ctx: HandlerContext, header: HeaderRecord): BlockStateBase {
  const state = stateOfHeader(header);
  return {
    account: (address) => accountIn(ctx, state, address),
    storage: (address, slot) => storageAt(ctx, state, address, slot),
  };
}

/** The accounts and slots a call reads whatever it runs: its sender, its target, its access list. */
function knownPaths(args: CallArgs): { address: Bytes; slots: Bytes[] }[] {
  const paths: { address: Bytes; slots: Bytes[] }[] = [];
  if (args.from !== undefined) paths.push({ address: args.from, slots: [] });
  if (args.to !== undefined && args.to !== null) paths.push({ address: args.to, slots: [] });
  for (const e of args.accessList ?? []) paths.push({ address: e.address, slots: e.storageKeys });
  return paths;
}

/**
 * An interruptible call (MethodDef.interruptible) run inline went past HandlerContext.inline
 * and stopped, answering nothing: the caller runs it again on the offload executor.
 */
export class InlineTimeUp extends Error {
  constructor() {
    super('the call ran past its time on the serving thread');
    this.name = 'InlineTimeUp';
  }
}

/** Runs of one call that may each fetch the state the previous one missed (a joined node). */
const MAX_STATE_RUNS = 64;

function mapCallError(
  err: unknown,
  timeoutMs: number,
  ExecutionTimeout: new (...a: never[]) => Error,
  CallPrecheckError: new (...a: never[]) => Error,
): unknown {
  if (err instanceof ExecutionTimeout) return new ServerError(`execution aborted (timeout = ${timeoutMs / 1000}s)`);
  if (err instanceof CallPrecheckError) return new ServerError(err.message);
  return err;
}

/** eth_call's answer: the return data, or geth's error for a revert (code 3) or a halt (-32000). */
export function callResult(out: CallOutcome): Bytes {
  if (out.kind === 'revert') throw revertError(out.returnValue);
  if (out.kind === 'halt') throw new ServerError(out.error ?? 'execution failed');
  return out.returnValue;
}
