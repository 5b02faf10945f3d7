// eth_call, eth_estimateGas and eth_createAccessList on @ethereumjs/vm over the store's state.
//
// No VM per call: a small pool of warm VMs (one Common each, its hardfork set per call), a cache
// of per-block contexts (the block header the call runs under and its hardfork), and one
// StoreStateManager per VM that is reset to the block's state root for each call. State is read
// through the store's synchronous trie walk and caches (SyncStateReader). Gas is capped (geth's
// RPCGasCap, 50M) and so is time (RPCEVMTimeout, 5 s): the deadline is checked at every state
// read, and compute without state reads is bounded by the gas cap.
import { createBlock } from '@ethereumjs/block';
import type { Block } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { createTx } from '@ethereumjs/tx';
import type { TypedTransaction, TypedTxData } from '@ethereumjs/tx';
import { Address, bytesToHex } from '@ethereumjs/util';
import type { PrefixedHexString } from '@ethereumjs/util';
import { runTx } from '@ethereumjs/vm';
import type { RunTxResult, VM } from '@ethereumjs/vm';
import { Lru, MissingTrieNodeError, chainFamilyOf } from '@chainnode/core';
import type { Bytes, ChainFamily, ChainInfo, HeaderRecord, SyncStateReader } from '@chainnode/core';
import { ExecutionTimeout, InlineBudgetExceeded, StoreStateManager } from './state.js';
import type { InlineBudget } from './state.js';
import type { BlockStateBase } from './state.js';
import type { AccountOverride } from './state.js';
import { authorizationTuples } from './call-args.js';
import { TraceTooLargeError } from './trace/hooks.js';
import { haltMessage, haltPoint } from './halt.js';
import { keepJumpAnalysis } from './jump-cache.js';
import { chainCrypto, rememberParams } from './evm-tuning.js';
import { callRules, leanCall, leanEligible } from './lean-call.js';
import type { CallRules, LeanOutcome } from './lean-call.js';
import type { BlockOverrides, CallArgs } from './call-args.js';
import { simulate } from './simulate.js';
import { lazyKzg } from './kzg.js';
import { createStoreVM } from './store-vm.js';
import type { SimBlockInput, SimBlockResult, SimOptions } from './simulate.js';

export interface ExecOptions {
  /** Most gas one call may use (geth's RPCGasCap); a larger or missing `gas` is capped to it. */
  gasCap: bigint;
  /** Most wall time one call may take, in ms (geth's RPCEVMTimeout); 0 for none. */
  timeoutMs: number;
}

export const DEFAULT_EXEC_OPTIONS: ExecOptions = { gasCap: 50_000_000n, timeoutMs: 5_000 };

/** A call as eth_call's transaction object gives it (geth's TransactionArgs), decoded. */
/** Gas of one blob (EIP-4844's GAS_PER_BLOB). */
const BLOB_GAS = 131_072n;

export interface CallOutcome {
  /** success, revert (REVERT opcode: returnValue is the revert data) or halt (out of gas, invalid opcode…). */
  kind: 'success' | 'revert' | 'halt';
  returnValue: Bytes;
  /** Gas the transaction used (after refunds), as a receipt would show. */
  gasUsed: bigint;
  /** The EVM's error for a halt (geth's wording where it differs: see haltMessage). */
  error?: string;
  accessList?: { address: Bytes; storageKeys: Bytes[] }[];
}

/** Runs a call's transaction (`run`) with whatever it binds to the VM around it. */
export type CallObserver = (
  on: { vm: VM; state: StoreStateManager; tx: TypedTransaction; block: Block },
  run: () => Promise<RunTxResult>,
) => Promise<RunTxResult>;

/** The call could not start (geth's pre-check errors: funds, fee caps, intrinsic gas…): -32000. */
export class CallPrecheckError extends Error {}
export { ExecutionTimeout, InlineBudgetExceeded };
export type { InlineBudget };

/**
 * Empty transient storage (EIP-1153) for the call about to run on `vm`: the EVM clears it when a
 * transaction ends, so a call stopped on the way (a timeout, the inline try) left its values and
 * checkpoints for the next call on the same VM. The EVM reads it through its own field.
 */
function freshTransientStorage(vm: VM): void {
  const evm = vm.evm as unknown as { transientStorage?: object };
  const t = evm.transientStorage;
  if (t !== undefined) evm.transientStorage = new (t.constructor as new () => object)();
}

export { authorizationTuples };
export type { BlockOverrides, CallArgs };

interface Warm {
  vm: VM;
  common: Common;
  state: StoreStateManager;
}

interface BlockContext {
  hardfork: string;
  header: HeaderRecord;
  /** The block environment of calls without block overrides, built on first use: unpriced, priced. */
  env: [Block | undefined, Block | undefined];
}

const ZERO_ADDRESS = new Uint8Array(20);
/** EIP-7825: the most gas one transaction may carry from Osaka on. */
const MAX_TX_GAS = 1n << 24n;

export class Executor {
  private common!: Common;
  private ready: Promise<void> | undefined;
  /** Idle VMs by the hardfork they are set to. */
  private readonly idle = new Map<string, Warm[]>();
  private readonly contexts = new Lru<string, BlockContext>(1024);
  private readonly rules = new Map<string, CallRules>();
  /** VMs in existence (idle or running); more than POOL wait for one to come back. */
  private live = 0;
  private readonly waiters: ((w: Warm) => void)[] = [];

  constructor(
    info: ChainInfo,
    private readonly reader: SyncStateReader,
    private readonly hashOf: (number: bigint) => Promise<Bytes | undefined>,
    readonly options: ExecOptions = DEFAULT_EXEC_OPTIONS,
  ) {
    this.info = info;
  }

  private readonly info: ChainInfo;

  /** The chain's rule family: an OP-stack chain's blocks are replicated, never run here. */
  get family(): ChainFamily {
    return chainFamilyOf(this.info.genesis);
  }

  /** The chain's Common (its KZG loaded when a call first needs it: kzg.ts). */
  private init(): Promise<void> {
    this.ready ??= (async () => {
      this.common = createCommonFromGethGenesis(this.info.genesis as GethGenesis, {
        chain: 'custom',
        customCrypto: chainCrypto({ kzg: lazyKzg }),
      });
      rememberParams(this.common);
      await keepJumpAnalysis(this.common);
    })();
    return this.ready;
  }

  /** How many VMs run at once (calls are CPU work on one thread: more only interleave them). */
  static readonly POOL = 4;

  /**
   * A VM set to `hardfork`: an idle one already at it, else a new one (up to POOL), else any idle
   * one switched to it. Setting another hardfork rebuilds the Common's parameter cache, the
   * EVM's opcode table and its precompiles, so each VM keeps the hardfork it was last set to and
   * a call takes one that has it.
   */
  private async acquire(hardfork: string): Promise<Warm> {
    let w = this.idle.get(hardfork)?.pop();
    if (w === undefined && this.live < Executor.POOL) {
      this.live++;
      const common = this.common.copy();
      const state = new StoreStateManager(this.reader, new Uint8Array(32));
      const vm = await createStoreVM(common, state, this.hashOf);
      w = { vm, common, state };
    }
    if (w === undefined)
      for (const ws of this.idle.values()) {
        w = ws.pop();
        if (w !== undefined) break;
      }
    w ??= await new Promise<Warm>((resolve) => this.waiters.push(resolve));
    w.common.setHardfork(hardfork);
    return w;
  }

  private release(w: Warm): void {
    const next = this.waiters.shift();
    if (next !== undefined) {
      next(w);
      return;
    }
    const hardfork = w.common.hardfork();
    let ws = this.idle.get(hardfork);
    if (ws === undefined) {
      ws = [];
      this.idle.set(hardfork, ws);
    }
    ws.push(w);
  }

  /** The hardfork of a block, cached per block hash (a warm per-block context). */
  private contextOf(header: HeaderRecord): BlockContext {
    const key = Buffer.from(header.hash).toString('latin1');
    let c = this.contexts.get(key);
    if (c === undefined) {
      const hardfork = this.common.getHardforkBy({ blockNumber: header.number, timestamp: header.timestamp });
      c = { hardfork, header, env: [undefined, undefined] };
      this.contexts.set(key, c);
    }
    return c;
  }

  /**
   * Runs `args` on the state after block `header`, under that block's context (geth: the call
   * sees the block's number, time, base fee…), with optional state and block overrides.
   */
  async call(
    header: HeaderRecord,
    args: CallArgs,
    opts: {
      state?: Map<string, AccountOverride>;
      block?: BlockOverrides;
      gas?: bigint;
      accessList?: boolean;
      deadline?: number;
      /** Work on the serving thread: past it the run stops with InlineBudgetExceeded, to be run again elsewhere. */
      inline?: InlineBudget;
      /** The block's state by block (below the state trie's window), instead of its trie. */
      base?: BlockStateBase;
      /** Runs the transaction in place of runTx (a tracer bound around it: trace/replay.ts). */
      observe?: CallObserver;
    } = {},
  ): Promise<CallOutcome> {
    await this.init();
    const ctx = this.contextOf(header);
    const w = await this.acquire(ctx.hardfork);
    try {
      const deadline =
        opts.deadline ?? (this.options.timeoutMs > 0 ? Date.now() + this.options.timeoutMs : Number.POSITIVE_INFINITY);
      w.state.reset(header.stateRoot, deadline, opts.base, opts.inline);
      freshTransientStorage(w.vm);
      if (opts.state !== undefined) await w.state.applyOverrides(opts.state);
      w.state.sealOverrides();
      const priced =
        args.gasPrice !== undefined || args.maxFeePerGas !== undefined || args.maxPriorityFeePerGas !== undefined;
      const block = this.envOf(ctx, w.common, opts.block, priced);
      const gas = opts.gas ?? this.gasFor(args, w.common);
      try {
        const rules = this.rulesOf(w, ctx.hardfork);
        if (opts.block === undefined && opts.observe === undefined && !priced && leanEligible(args, rules, gas)) {
          const coinbase = (block.header as { coinbase: Address }).coinbase;
          const r = await leanCall(w.vm, rules, block, coinbase, args, gas, opts.accessList === true);
          if (r !== undefined) return outcomeOf(r);
        }
        const tx = this.txFor(w.common, args, gas, block);
        const run = () =>
          runTx(w.vm, {
            tx,
            block,
            skipNonce: true,
            skipBlockGasLimitValidation: true,
            skipHardForkValidation: true,
            reportAccessList: opts.accessList === true,
          });
        const r =
          opts.observe === undefined ? await run() : await opts.observe({ vm: w.vm, state: w.state, tx, block }, run);
        return outcomeOf({
          exceptionError: r.execResult.exceptionError,
          halt: haltPoint(r.execResult.runState),
          returnValue: r.execResult.returnValue,
          gasUsed: r.totalGasSpent,
          accessList: r.accessList,
        });
      } catch (err) {
        // A missing trie node is not the call's fault: a store that proves its state on demand
        // (a joined node) fetches the path and runs the call again.
        if (err instanceof ExecutionTimeout || err instanceof MissingTrieNodeError || err instanceof TraceTooLargeError)
          throw err;
        // geth's "want": gas * fee cap + value (+ blob gas * blob fee cap), not runTx's upfront cost.
        const want =
          gas * (args.maxFeePerGas ?? args.gasPrice ?? 0n) +
          (args.value ?? 0n) +
          (args.maxFeePerBlobGas ?? 0n) * BLOB_GAS * BigInt(args.blobVersionedHashes?.length ?? 0);
        throw new CallPrecheckError(precheckMessage((err as Error).message, want));
      }
    } finally {
      this.release(w);
    }
  }

  /** The chain's Common (its hardfork is whatever was set last: copy it before setting one). */
  async chainCommon(): Promise<Common> {
    await this.init();
    return this.common;
  }

  /** The call rules of `hardfork` (its parameters and precompiles), read once. */
  private rulesOf(w: Warm, hardfork: string): CallRules {
    let r = this.rules.get(hardfork);
    if (r === undefined) {
      r = callRules(w.vm);
      this.rules.set(hardfork, r);
    }
    return r;
  }

  /** eth_simulateV1: `blocks` on the state after `base` (simulate.ts). */
  async simulate(
    base: HeaderRecord,
    blocks: SimBlockInput[],
    opts: Omit<SimOptions, 'gasCap' | 'deadline'> & { deadline?: number },
  ): Promise<SimBlockResult[]> {
    await this.init();
    const deadline =
      opts.deadline ?? (this.options.timeoutMs > 0 ? Date.now() + this.options.timeoutMs : Number.POSITIVE_INFINITY);
    return simulate({ common: this.common, reader: this.reader, hashOf: this.hashOf }, base, blocks, {
      ...opts,
      gasCap: this.options.gasCap,
      deadline,
    });
  }

  /**
   * geth's callDefaults: the requested gas, else the cap; never above the cap. Under EIP-7825
   * (Osaka) a transaction carries at most 2^24 gas: a call without `gas` gets that much.
   */
  gasFor(args: CallArgs, common: Common): bigint {
    const cap = this.options.gasCap;
    let gas = args.gas ?? (cap > 0n ? cap : 2n ** 63n - 1n);
    if (cap > 0n && gas > cap) gas = cap;
    if (args.gas === undefined && common.isActivatedEIP(7825) && gas > MAX_TX_GAS) gas = MAX_TX_GAS;
    return gas;
  }

  /** The most gas a call on `header` can be given (eth_estimateGas's ceiling). */
  async maxGas(header: HeaderRecord): Promise<bigint> {
    await this.init();
    const hf = this.contextOf(header).hardfork;
    const c = this.common.copy();
    c.setHardfork(hf);
    let gas = header.gasLimit;
    if (this.options.gasCap > 0n && gas > this.options.gasCap) gas = this.options.gasCap;
    if (c.isActivatedEIP(7825) && gas > MAX_TX_GAS) gas = MAX_TX_GAS;
    return gas;
  }

  /** The block a call runs under: built once per block context unless the call overrides it. */
  private envOf(ctx: BlockContext, common: Common, o: BlockOverrides | undefined, priced: boolean): Block {
    if (o !== undefined) return this.blockFor(common, ctx.header, o, priced);
    const i = priced ? 1 : 0;
    let env = ctx.env[i];
    if (env === undefined) {
      env = this.blockFor(common, ctx.header, undefined, priced);
      ctx.env[i] = env;
    }
    return env;
  }

  private blockFor(common: Common, h: HeaderRecord, o: BlockOverrides | undefined, priced: boolean): Block {
    // geth (NoBaseFee): an unpriced call runs with a zero base fee, so it pays nothing and BASEFEE reads 0.
    const baseFee = o?.baseFeePerGas ?? (priced ? h.baseFeePerGas : h.baseFeePerGas === undefined ? undefined : 0n);
    const header: Record<string, unknown> = {
      parentHash: h.parentHash,
      uncleHash: h.uncleHash,
      coinbase: o?.feeRecipient ?? h.coinbase,
      stateRoot: h.stateRoot,
      transactionsTrie: h.transactionsRoot,
      receiptTrie: h.receiptsRoot,
      logsBloom: h.logsBloom,
      difficulty: h.difficulty,
      number: o?.number ?? h.number,
      gasLimit: o?.gasLimit ?? h.gasLimit,
      gasUsed: h.gasUsed,
      timestamp: o?.time ?? h.timestamp,
      extraData: h.extraData,
      mixHash: o?.prevRandao ?? h.mixHash,
      nonce: h.nonce,
    };
    if (baseFee !== undefined) header.baseFeePerGas = baseFee;
    if (h.withdrawalsRoot !== undefined) header.withdrawalsRoot = h.withdrawalsRoot;
    if (h.blobGasUsed !== undefined) header.blobGasUsed = h.blobGasUsed;
    if (h.excessBlobGas !== undefined) header.excessBlobGas = h.excessBlobGas;
    if (h.parentBeaconBlockRoot !== undefined) header.parentBeaconBlockRoot = h.parentBeaconBlockRoot;
    if (h.requestsHash !== undefined) header.requestsHash = h.requestsHash;
    // @ethereumjs/block insists that London's first block carries the initial base fee; a call
    // there (unpriced: base fee 0, or a base fee override) builds the block with it and then
    // sets the base fee the call runs with.
    const london = common.hardforkBlock('london');
    const first =
      baseFee !== undefined && london !== null && london !== 0n && BigInt(header.number as bigint) === london;
    if (first) header.baseFeePerGas = common.param('initialBaseFee');
    const block = createBlock({ header }, { common, skipConsensusFormatValidation: true, freeze: false });
    if (first) (block.header as { baseFeePerGas?: bigint }).baseFeePerGas = baseFee;
    return block;
  }

  private txFor(common: Common, a: CallArgs, gas: bigint, block: Block): TypedTransaction {
    const data: Record<string, unknown> = {
      nonce: a.nonce ?? 0n,
      gasLimit: gas,
      to: a.to ?? undefined,
      value: a.value ?? 0n,
      data: a.input ?? new Uint8Array(),
    };
    let type = 0;
    if (a.accessList !== undefined) {
      type = 1;
      data.accessList = a.accessList.map((e) => [e.address, e.storageKeys]);
    }
    const baseFee = block.header.baseFeePerGas;
    if (a.maxFeePerGas !== undefined || a.maxPriorityFeePerGas !== undefined) {
      type = 2;
      data.maxFeePerGas = a.maxFeePerGas ?? (baseFee ?? 0n) + (a.maxPriorityFeePerGas ?? 0n);
      data.maxPriorityFeePerGas = a.maxPriorityFeePerGas ?? 0n;
    } else if (
      common.isActivatedEIP(1559) &&
      a.gasPrice === undefined &&
      type === 0 &&
      a.blobVersionedHashes === undefined &&
      a.authorizationList === undefined
    ) {
      data.gasPrice = 0n;
    } else if (a.blobVersionedHashes !== undefined || a.authorizationList !== undefined) {
      data.maxFeePerGas = a.gasPrice ?? 0n;
      data.maxPriorityFeePerGas = a.gasPrice ?? 0n;
    } else data.gasPrice = a.gasPrice ?? 0n;
    if (a.blobVersionedHashes !== undefined) {
      type = 3;
      data.blobVersionedHashes = a.blobVersionedHashes;
      data.maxFeePerBlobGas = a.maxFeePerBlobGas ?? block.header.getBlobGasPrice();
    }
    if (a.authorizationList !== undefined) {
      type = 4;
      data.authorizationList = authorizationTuples(a.authorizationList);
    }
    if (type >= 1) data.accessList ??= [];
    data.type = type;
    if (type >= 1) data.chainId = common.chainId();
    const tx = createTx(data as TypedTxData, { common, freeze: false, allowUnlimitedInitCodeSize: false });
    const from = new Address(a.from ?? ZERO_ADDRESS);
    // The caller is whoever the call says (no signature): what runTx asks of a transaction.
    (tx as unknown as { getSenderAddress: () => Address }).getSenderAddress = () => from;
    return tx;
  }
}

/** The call's outcome from what the EVM answered (runTx's or leanCall's). */
function outcomeOf(r: LeanOutcome): CallOutcome {
  const err = r.exceptionError;
  const out: CallOutcome = {
    kind: err === undefined ? 'success' : err.error === 'revert' ? 'revert' : 'halt',
    returnValue: r.returnValue,
    gasUsed: r.gasUsed,
  };
  if (err !== undefined && err.error !== 'revert') out.error = haltMessage(err.error, r.halt);
  if (r.accessList !== undefined)
    out.accessList = r.accessList.map((e) => ({
      address: hexBytes(e.address),
      storageKeys: e.storageKeys.map(hexBytes),
    }));
  return out;
}

function hexBytes(h: string): Uint8Array {
  return Uint8Array.from(Buffer.from(h.startsWith('0x') ? h.slice(2) : h, 'hex'));
}

/** runTx's pre-execution refusals in geth's words (the leading "insufficient funds" etc.). */
function precheckMessage(m: string, want: bigint): string {
  if (m.includes("doesn't have enough funds")) {
    // geth's words: "address A have B want C" (runTx words the balance its own way).
    const f = /sender's account \((0x[0-9a-fA-F]{40})\) only has: (\d+)/.exec(m);
    if (f !== null)
      return `insufficient funds for gas * price + value: address ${(f[1] as string).toLowerCase()} have ${f[2]} want ${want}`;
    return 'insufficient funds for gas * price + value';
  }
  if (m.includes('is less than the block') || m.includes('less than block base fee'))
    return 'max fee per gas less than block base fee';
  if (m.includes('gasLimit is too low') || m.includes('intrinsic gas')) return 'intrinsic gas too low';
  return m
    .replace(/ -> .*$/s, '')
    .replace(/\(block: .*$/s, '')
    .trim();
}

export const hex = (b: Uint8Array): PrefixedHexString => bytesToHex(b);
