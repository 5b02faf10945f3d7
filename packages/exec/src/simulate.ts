// eth_simulateV1's engine, as geth's internal/ethapi/simulate.go runs it: a chain of simulated
// blocks on top of a stored block, each with its state and block overrides and its calls, in one
// StoreStateManager overlay (block k+1 sees every write of block k). Each block is assembled as
// geth assembles it: the system calls before (EIP-4788, EIP-2935) and after (EIP-7002, EIP-7251)
// its calls, the withdrawals, then its roots (transactions, receipts, withdrawals, and the state
// root of the overlay over the base state), its hash and size.
import { createBlock, genTransactionsTrieRoot, genWithdrawalsTrieRoot } from '@ethereumjs/block';
import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { createTx } from '@ethereumjs/tx';
import type { TypedTransaction, TypedTxData } from '@ethereumjs/tx';
import {
  Account,
  Address,
  KECCAK256_NULL,
  KECCAK256_RLP,
  KECCAK256_RLP_ARRAY,
  bigIntMax,
  bigIntMin,
  bigIntToUnpaddedBytes,
} from '@ethereumjs/util';
import { Bloom, createVM, encodeReceipt, runTx } from '@ethereumjs/vm';
import { tuneVm } from './evm-tuning.js';
import { loadKzgOnPointEvaluation } from './kzg.js';
import type { RunTxResult, VM } from '@ethereumjs/vm';
import { decodeHeader, keccak256 } from '@chainnode/core';
import type {
  BlockRecord,
  Bytes,
  HeaderRecord,
  LogRecord,
  SyncStateReader,
  TxRecord,
  WithdrawalRecord,
} from '@chainnode/core';
import { createHash } from 'node:crypto';
import { authorizationTuples } from './call-args.js';
import type { BlockOverrides, CallArgs } from './call-args.js';
import { ExecutionTimeout, StoreStateManager } from './state.js';
import type { AccountOverride } from './state.js';
import { OverlayRoots } from './state-root.js';
import { preExecution } from './pre-execution.js';
import { TransferLogs, eventsOf } from './transfer-logs.js';

/** geth's BlockOverrides as eth_simulateV1 takes them. */
export interface SimBlockOverrides extends BlockOverrides {
  blobBaseFee?: bigint;
  beaconRoot?: Bytes;
  withdrawals?: WithdrawalRecord[];
}

/** geth's OverrideAccount with movePrecompileToAddress. */
export interface SimAccountOverride extends AccountOverride {
  movePrecompileTo?: Bytes;
}

export interface SimBlockInput {
  overrides?: SimBlockOverrides;
  state?: Map<string, SimAccountOverride>;
  calls: CallArgs[];
}

export interface SimOptions {
  validation: boolean;
  traceTransfers: boolean;
  /** Gas all calls of the request may use together (geth's RPCGasCap); 0: unlimited. */
  gasCap: bigint;
  /** Date.now() past which the simulation stops. */
  deadline: number;
  /** Most blocks one request may simulate, gaps included (geth: 256). */
  maxBlocks: number;
  rules: SimRules;
}

export interface SimCallResult {
  kind: 'success' | 'revert' | 'halt';
  returnValue: Bytes;
  gasUsed: bigint;
  maxUsedGas: bigint;
  logs: LogRecord[];
  /** The halt's error in geth's words (kind 'halt'). */
  error?: string;
  /** The call's gas was lowered to what the request's gas cap had left. */
  gasCapped: boolean;
}

export interface SimBlockResult {
  block: BlockRecord;
  calls: SimCallResult[];
}

/** A simulation refused or stopped, with geth's code (-38xxx, -32602, -32603, -32000). */
export class SimulationError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'SimulationError';
  }
}

interface SimBlock {
  number: bigint;
  time: bigint;
  overrides: SimBlockOverrides;
  state: Map<string, SimAccountOverride> | undefined;
  calls: CallArgs[];
}

const TIMESTAMP_INCREMENT = 12n;

/** geth's sanitizeChain: numbers and timestamps strictly increasing, gaps filled with empty blocks. */
export function sanitizeChain(base: HeaderRecord, input: SimBlockInput[], maxBlocks: number): SimBlock[] {
  const out: SimBlock[] = [];
  let prevNumber = base.number;
  let prevTime = base.timestamp;
  for (const b of input) {
    const overrides = b.overrides ?? {};
    const number = overrides.number ?? prevNumber + 1n;
    if (number <= prevNumber)
      throw new SimulationError(-38020, `block numbers must be in order: ${number} <= ${prevNumber}`);
    if (number - base.number > BigInt(maxBlocks)) throw new SimulationError(-38026, 'too many blocks');
    for (let n = prevNumber + 1n; n < number; n++) {
      prevTime += TIMESTAMP_INCREMENT;
      out.push({ number: n, time: prevTime, overrides: {}, state: undefined, calls: [] });
    }
    prevNumber = number;
    let time = prevTime + TIMESTAMP_INCREMENT;
    if (overrides.time !== undefined) {
      time = overrides.time;
      if (time <= prevTime)
        throw new SimulationError(-38021, `block timestamps must be in order: ${time} <= ${prevTime}`);
    }
    prevTime = time;
    out.push({ number, time, overrides, state: b.state, calls: b.calls });
  }
  return out;
}

const ZERO32 = new Uint8Array(32);
const SYSTEM_ADDRESS = new Address(Uint8Array.from(Buffer.from('fffffffffffffffffffffffffffffffffffffffe', 'hex')));
const WITHDRAWAL_REQUESTS = new Address(
  Uint8Array.from(Buffer.from('00000961ef480eb55e80d19ad83579a64c007002', 'hex')),
);
const CONSOLIDATION_REQUESTS = new Address(
  Uint8Array.from(Buffer.from('0000bbddc7ce488642fb579f8b00f3a590007251', 'hex')),
);
const BLOB_GAS = 131_072n;

const hexKey = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

/** What a simulation runs with: the chain's rules, the store's state and its block hashes. */
export interface SimEnv {
  common: Common;
  reader: SyncStateReader;
  hashOf: (number: bigint) => Promise<Bytes | undefined>;
}

/** The chain's fee rules as geth computes them (the caller's fork schedule). */
export interface SimRules {
  /** eip1559.CalcBaseFee for the child of `parent`; undefined before London. */
  nextBaseFee(parent: HeaderRecord): bigint | undefined;
  /** eip4844.CalcExcessBlobGas for the child of `parent` at `childTime`; undefined before Cancun. */
  nextExcessBlobGas(parent: HeaderRecord, childTime: bigint): bigint | undefined;
  /** The blob base fee of a block with `excessBlobGas` at `time`. */
  blobGasPrice(excessBlobGas: bigint, time: bigint): bigint;
}

/** Runs `input` on the state after `base` (eth_simulateV1). */
export async function simulate(
  env: SimEnv,
  base: HeaderRecord,
  input: SimBlockInput[],
  opts: SimOptions,
): Promise<SimBlockResult[]> {
  const blocks = sanitizeChain(base, input, opts.maxBlocks);
  return new Simulation(env, base, opts).run(blocks);
}

class Simulation {
  private readonly common: Common;
  private readonly state: StoreStateManager;
  private vm!: VM;
  private readonly hashes = new Map<bigint, Uint8Array>();
  private readonly pristine = new Map<string, Map<string, unknown>>();
  /**
   * The block's precompiles: `active` (moved and overridden as its state overrides say) run,
   * `warm` (the fork's own) are warm at each call's start, as geth warms them.
   */
  private precompiles: { warm: Map<string, unknown>; active: Map<string, unknown> } | undefined;
  private budget: bigint;
  private transfers: TransferLogs | undefined;
  private readonly rules: SimRules;
  /** The block's next log index. */
  private readonly logIndex = { next: 0 };
  private readonly roots: OverlayRoots;
  /** Transactions' Common per hardfork (prague rules for the checks geth skips, see txFor). */
  private readonly txCommons = new Map<string, Common>();

  constructor(
    private readonly env: SimEnv,
    private readonly base: HeaderRecord,
    private readonly opts: SimOptions,
  ) {
    this.common = env.common.copy();
    this.state = new StoreStateManager(env.reader, base.stateRoot);
    this.state.reset(base.stateRoot, opts.deadline);
    this.budget = opts.gasCap > 0n ? opts.gasCap : 2n ** 64n - 1n;
    this.rules = opts.rules;
    if (env.reader.node === undefined)
      throw new SimulationError(-32000, 'simulated blocks need the state trie nodes, which this store does not keep');
    this.roots = new OverlayRoots(env.reader, base.stateRoot);
  }

  async run(blocks: SimBlock[]): Promise<SimBlockResult[]> {
    const hashes = this.hashes;
    const hashOf = this.env.hashOf;
    const baseNumber = this.base.number;
    this.vm = await createVM({
      common: this.common,
      stateManager: this.state,
      blockchain: {
        getBlock: async (n: number | bigint) => {
          const num = BigInt(n);
          const hash = (num > baseNumber ? hashes.get(num) : await hashOf(num)) ?? new Uint8Array(32);
          return { hash: () => hash };
        },
        putBlock: async () => {},
        shallowCopy() {
          return this;
        },
      } as never,
    });
    await tuneVm(this.vm);
    loadKzgOnPointEvaluation(this.vm);
    if (this.opts.traceTransfers) this.transfers = new TransferLogs(this.vm, this.logIndex);
    const out: SimBlockResult[] = [];
    let parent = this.base;
    let prelim: Prelim = {
      coinbase: this.base.coinbase,
      gasLimit: this.base.gasLimit,
      difficulty: this.base.difficulty,
    };
    for (const b of blocks) {
      const r = await this.block(b, parent, prelim);
      out.push(r.result);
      this.hashes.set(b.number, r.result.block.header.hash);
      parent = r.result.block.header;
      prelim = r.prelim;
    }
    return out;
  }

  /** Applies a block's state overrides (geth's StateOverride.Apply, precompile moves included). */
  private async applyState(state: Map<string, SimAccountOverride> | undefined): Promise<void> {
    const hf = this.common.hardfork();
    let pristine = this.pristine.get(hf);
    if (pristine === undefined) {
      pristine = new Map(this.vm.evm.precompiles as Map<string, unknown>);
      this.pristine.set(hf, pristine);
    }
    const precompiles = new Map(pristine);
    this.precompiles = { warm: pristine, active: precompiles };
    setPrecompiles(this.vm, precompiles);
    if (state === undefined) return;
    const hex = (k: string): string => Buffer.from(k, 'latin1').toString('hex');
    const dirty = new Set<string>();
    for (const k of [...state.keys()].sort()) {
      const o = state.get(k) as SimAccountOverride;
      if (dirty.has(k))
        throw new SimulationError(-32000, `account 0x${hex(k)} has already been overridden by a precompile`);
      const p = precompiles.get(hex(k));
      if (o.movePrecompileTo !== undefined) {
        if (p === undefined) throw new SimulationError(-32000, `account 0x${hex(k)} is not a precompile`);
        const to = hexKey(o.movePrecompileTo);
        if (state.has(to)) throw new SimulationError(-32000, `account 0x${hex(to)} is already overridden`);
        precompiles.set(hex(to), p);
        dirty.add(to);
      }
      if (p !== undefined) precompiles.delete(hex(k));
    }
    await this.state.applyOverrides(state);
  }

  private async block(b: SimBlock, parent: HeaderRecord, prev: Prelim): Promise<Built> {
    const common = this.common;
    common.setHardfork(common.getHardforkBy({ blockNumber: b.number, timestamp: b.time }));
    const o = b.overrides;
    const prelim: Prelim = {
      coinbase: o.feeRecipient ?? prev.coinbase,
      gasLimit: o.gasLimit ?? prev.gasLimit,
      difficulty: common.gteHardfork('paris') ? 0n : prev.difficulty,
    };
    const header: Record<string, unknown> = {
      parentHash: parent.hash,
      coinbase: prelim.coinbase,
      difficulty: prelim.difficulty,
      number: b.number,
      gasLimit: prelim.gasLimit,
      timestamp: b.time,
      mixHash: o.prevRandao ?? ZERO32,
      extraData: new Uint8Array(),
      nonce: new Uint8Array(8),
    };
    if (common.isActivatedEIP(1559))
      header.baseFeePerGas = o.baseFeePerGas ?? (this.opts.validation ? (this.rules.nextBaseFee(parent) ?? 0n) : 0n);
    if (common.isActivatedEIP(4844)) {
      header.excessBlobGas = this.rules.nextExcessBlobGas(parent, b.time) ?? 0n;
      header.parentBeaconBlockRoot = o.beaconRoot ?? ZERO32;
    }
    const withdrawals = common.isActivatedEIP(4895) ? (o.withdrawals ?? []) : undefined;
    if (withdrawals !== undefined) header.withdrawalsRoot = KECCAK256_RLP;
    await this.applyState(b.state);
    const running = createBlock({ header }, { common, skipConsensusFormatValidation: true, freeze: false });
    if (common.isActivatedEIP(4844)) {
      const fee = o.blobBaseFee ?? this.rules.blobGasPrice(running.header.excessBlobGas ?? 0n, b.time);
      (running.header as unknown as { getBlobGasPrice: () => bigint }).getBlobGasPrice = () => fee;
    }
    await preExecution(this.state, common, running);
    const body = await this.calls(b, running);
    const requestsHash = common.isActivatedEIP(7685) ? await this.requests(running) : undefined;
    for (const w of withdrawals ?? []) await this.credit(w.address, w.amount * 1_000_000_000n);
    // geth's ethash Finalize for a block before the merge: the miner's reward (no uncles).
    if (prelim.difficulty > 0n) await this.credit(prelim.coinbase, common.param('minerReward'));
    const stateRoot = await this.roots.root(this.state.writes());
    return this.assemble(header, body, withdrawals, stateRoot, requestsHash, prelim);
  }

  /** EIP-7002's and EIP-7251's system calls after the block's calls: the block's requests hash. */
  private async requests(block: Block): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    for (const [type, address] of [
      [1, WITHDRAWAL_REQUESTS],
      [2, CONSOLIDATION_REQUESTS],
    ] as const) {
      if ((await this.state.getCode(address)).length === 0) continue;
      this.state.beginTransaction();
      const systemAccount = await this.state.getAccount(SYSTEM_ADDRESS);
      const r = await this.vm.evm.runCall({
        caller: SYSTEM_ADDRESS,
        to: address,
        gasLimit: 30_000_000n,
        data: new Uint8Array(),
        block,
        skipBalance: true,
      });
      if (systemAccount === undefined) await this.state.deleteAccount(SYSTEM_ADDRESS);
      else await this.state.putAccount(SYSTEM_ADDRESS, systemAccount);
      const data = r.execResult.returnValue;
      if (data.length > 0) parts.push(sha256(Uint8Array.from([type, ...data])));
    }
    return sha256(Buffer.concat(parts));
  }

  private async credit(address: Bytes, amount: bigint): Promise<void> {
    if (amount === 0n) return;
    const a = new Address(address);
    const acct = (await this.state.getAccount(a)) ?? new Account();
    acct.balance += amount;
    await this.state.putAccount(a, acct);
  }

  /** The block's calls, one after another on the overlay. */
  private async calls(b: SimBlock, block: Block): Promise<Body> {
    const body: Body = { txs: [], results: [], receipts: [], senders: [], gasUsed: 0n, blobGasUsed: 0n };
    this.logIndex.next = 0;
    for (const [i, call] of b.calls.entries()) {
      if (Date.now() > this.opts.deadline) throw new ExecutionTimeout();
      await this.call(call, i, block, body);
    }
    return body;
  }

  private async call(call: CallArgs, index: number, block: Block, body: Body): Promise<void> {
    const from = new Address(call.from ?? new Uint8Array(20));
    const remaining = block.header.gasLimit - body.gasUsed;
    const wanted = call.gas ?? remaining;
    if (remaining < wanted)
      throw new SimulationError(-38015, `block gas limit reached: remaining: ${remaining}, required: ${wanted}`);
    const gas = bigIntMin(wanted, this.budget);
    const nonce = call.nonce ?? (await this.state.getAccount(from))?.nonce ?? 0n;
    const tx = this.txFor(call, gas, nonce, block);
    const txHash = keccak256(tx.serialize());
    this.state.beginTransaction();
    this.transfers?.reset();
    const baseFee = block.header.baseFeePerGas;
    const free =
      !this.opts.validation &&
      baseFee !== undefined &&
      baseFee > 0n &&
      (call.gasPrice ?? call.maxFeePerGas ?? 0n) === 0n &&
      (call.maxPriorityFeePerGas ?? 0n) === 0n;
    let r: RunTxResult;
    try {
      r = await this.runMessage(tx, block, free);
    } catch (err) {
      if (err instanceof ExecutionTimeout || err instanceof SimulationError) throw err;
      throw txError((err as Error).message, from, tx, gas);
    }
    const after = await this.state.getAccount(from);
    if (after !== undefined && after.nonce >= 2n ** 64n) {
      // geth's nonce is a uint64: one past 2^64-1 wraps to 0.
      after.nonce %= 2n ** 64n;
      await this.state.putAccount(from, after);
    }
    if (r.totalGasSpent > this.budget)
      throw new SimulationError(-32000, `RPC gas cap exhausted: need ${r.totalGasSpent}, remaining ${this.budget}`);
    this.budget -= r.totalGasSpent;
    body.gasUsed += r.totalGasSpent;
    body.blobGasUsed += BigInt(call.blobVersionedHashes?.length ?? 0) * BLOB_GAS;
    const err = r.execResult.exceptionError;
    const kind = err === undefined ? 'success' : err.error === 'revert' ? 'revert' : 'halt';
    const logs = this.transfers?.logs() ?? (kind === 'success' ? (r.execResult.logs ?? []) : []);
    const intrinsic = tx.getIntrinsicGas();
    const before = r.execResult.executionGasUsed + intrinsic;
    const result: SimCallResult = {
      kind,
      returnValue: r.execResult.returnValue,
      gasUsed: r.totalGasSpent,
      maxUsedGas: bigIntMax(before, r.totalGasSpent),
      logs: logs.map((log) => {
        const at = this.transfers?.indexOf(log) ?? this.logIndex.next;
        this.logIndex.next = Math.max(this.logIndex.next, at + 1);
        const [address, topics, data] = log;
        return {
          address,
          topics,
          data,
          blockNumber: block.header.number,
          blockHash: ZERO32,
          blockTimestamp: block.header.timestamp,
          transactionHash: txHash,
          transactionIndex: index,
          logIndex: at,
        };
      }),
      gasCapped: gas < wanted,
    };
    if (err !== undefined && kind === 'halt') result.error = err.error;
    body.txs.push(tx);
    body.senders.push(from.bytes);
    body.results.push(result);
    const realLogs =
      kind === 'success' ? (r.execResult.logs ?? []).filter((l) => this.transfers?.isTransfer(l) !== true) : [];
    const bloom = new Bloom(undefined, this.common);
    for (const [address, topics] of realLogs) {
      bloom.add(address);
      for (const t of topics) bloom.add(t);
    }
    body.receipts.push(
      encodeReceipt(
        {
          status: kind === 'success' ? 1 : 0,
          cumulativeBlockGasUsed: body.gasUsed,
          bitvector: bloom.bitvector,
          logs: realLogs,
        },
        tx.type,
      ),
    );
    if (body.bloom === undefined) body.bloom = bloom;
    else body.bloom.or(bloom);
  }

  /**
   * runTx as geth applies a simulated message: a `free` call (no validation, no fees, a base fee
   * above zero) is checked and charged as if the base fee were zero while the EVM reads the
   * block's (geth's NoBaseFee); a sender with code passes the EOA check (geth skips it).
   */
  private async runMessage(tx: TypedTransaction, block: Block, free: boolean): Promise<RunTxResult> {
    const opts = {
      tx,
      block,
      skipNonce: !this.opts.validation,
      skipBlockGasLimitValidation: true,
      skipHardForkValidation: true,
    };
    const sender = tx.getSenderAddress();
    const account = await this.state.getAccount(sender);
    if (account !== undefined && !account.codeHash.every((b, i) => b === KECCAK256_NULL[i]))
      this.state.maskCode(sender, account.codeHash);
    const h = block.header as unknown as { baseFeePerGas: bigint };
    const real = h.baseFeePerGas;
    const precompiles = this.precompiles;
    if (precompiles !== undefined) setPrecompiles(this.vm, precompiles.warm);
    const onStart = (): void => {
      h.baseFeePerGas = real;
      this.state.unmaskCode();
      if (precompiles !== undefined) setPrecompiles(this.vm, precompiles.active);
    };
    if (free) h.baseFeePerGas = 0n;
    const events = eventsOf(this.vm);
    events.on('beforeMessage', onStart);
    try {
      return await runTx(this.vm, opts);
    } finally {
      events.off('beforeMessage', onStart);
      onStart();
    }
  }

  /** geth's ToTransaction(DynamicFeeTxType) after CallDefaults: the call as an unsigned transaction. */
  private txFor(a: CallArgs, gas: bigint, nonce: bigint, block: Block): TypedTransaction {
    const hf = this.common.hardfork();
    let common = this.txCommons.get(hf);
    if (common === undefined) {
      common = this.common.copy();
      // geth's simulated messages skip the transaction checks (SkipTransactionChecks): no EIP-7825 cap.
      if (common.isActivatedEIP(7825)) common.setHardfork('prague');
      this.txCommons.set(hf, common);
    }
    const data: Record<string, unknown> = {
      nonce,
      gasLimit: gas,
      to: a.to ?? undefined,
      value: a.value ?? 0n,
      data: a.input ?? new Uint8Array(),
    };
    const london = block.header.baseFeePerGas !== undefined;
    let type = 2;
    if (a.authorizationList !== undefined) type = 4;
    else if (a.blobVersionedHashes !== undefined) type = 3;
    if (a.gasPrice !== undefined || !london) type = 0;
    if (type === 0) data.gasPrice = a.gasPrice ?? 0n;
    else {
      data.maxFeePerGas = a.maxFeePerGas ?? 0n;
      data.maxPriorityFeePerGas = a.maxPriorityFeePerGas ?? 0n;
      data.accessList = (a.accessList ?? []).map((e) => [e.address, e.storageKeys]);
      data.chainId = common.chainId();
    }
    if (type === 3) {
      data.blobVersionedHashes = a.blobVersionedHashes;
      data.maxFeePerBlobGas = a.maxFeePerBlobGas ?? 0n;
    }
    if (type === 4) data.authorizationList = authorizationTuples(a.authorizationList ?? []);
    data.type = type;
    // @ethereumjs/tx refuses the nonce 2^64-1, which geth takes when it checks no nonce.
    const maxNonce = nonce === 2n ** 64n - 1n && !this.opts.validation;
    if (maxNonce) data.nonce = 0n;
    let tx: TypedTransaction;
    try {
      tx = createTx(data as TypedTxData, { common, freeze: false, allowUnlimitedInitCodeSize: false });
    } catch (err) {
      throw txError((err as Error).message, new Address(a.from ?? new Uint8Array(20)), undefined, gas);
    }
    if (maxNonce) (tx as unknown as { nonce: bigint }).nonce = nonce;
    const from = new Address(a.from ?? new Uint8Array(20));
    (tx as unknown as { getSenderAddress: () => Address }).getSenderAddress = () => from;
    return tx;
  }

  private async assemble(
    header: Record<string, unknown>,
    body: Body,
    withdrawals: WithdrawalRecord[] | undefined,
    stateRoot: Uint8Array,
    requestsHash: Uint8Array | undefined,
    prelim: Prelim,
  ): Promise<Built> {
    const common = this.common;
    const full: Record<string, unknown> = {
      ...header,
      stateRoot,
      transactionsTrie:
        body.txs.length === 0
          ? KECCAK256_RLP
          : await genTransactionsTrieRoot(body.txs, new MerklePatriciaTrie({ common })),
      receiptTrie: await receiptsRoot(body.receipts, common),
      logsBloom: body.bloom?.bitvector ?? new Uint8Array(256),
      gasUsed: body.gasUsed,
    };
    if (common.isActivatedEIP(4844)) full.blobGasUsed = body.blobGasUsed;
    const ws = withdrawals?.map((w) => ({
      index: w.index,
      validatorIndex: w.validatorIndex,
      address: w.address,
      amount: w.amount,
    }));
    if (ws !== undefined && ws.length === 0) full.withdrawalsRoot = KECCAK256_RLP;
    else if (ws !== undefined)
      full.withdrawalsRoot = await genWithdrawalsTrieRoot(
        ws.map((w) => ({ ...w, address: new Address(w.address), raw: () => [] }) as never),
        new MerklePatriciaTrie({ common }),
      );
    if (requestsHash !== undefined) full.requestsHash = requestsHash;
    const raw = headerFields(full);
    const h = decodeHeader(RLP.encode(raw as never));
    const hash = h.hash;
    for (const r of body.results) for (const l of r.logs) l.blockHash = hash;
    const record: BlockRecord = {
      header: h,
      size: blockSize(raw, body.txs, ws),
      totalDifficulty: 0n,
      transactions: body.txs.map((tx, i) => txRecord(tx, body.senders[i] as Bytes)),
      uncleHashes: [],
    };
    if (withdrawals !== undefined) record.withdrawals = withdrawals;
    return { prelim, result: { block: record, calls: body.results } };
  }
}

interface Prelim {
  coinbase: Bytes;
  gasLimit: bigint;
  difficulty: bigint;
}

interface Body {
  txs: TypedTransaction[];
  results: SimCallResult[];
  receipts: Uint8Array[];
  senders: Bytes[];
  gasUsed: bigint;
  blobGasUsed: bigint;
  bloom?: Bloom;
}

interface Built {
  prelim: Prelim;
  result: SimBlockResult;
}

/** Sets the precompiles the EVM runs (and runTx warms at a transaction's start). */
function setPrecompiles(vm: VM, map: Map<string, unknown>): void {
  (vm.evm as unknown as { _precompiles: Map<string, unknown> })._precompiles = map;
}

/** The RLP length of [header, transactions, uncles(, withdrawals)] (geth's Block.Size). */
function blockSize(header: unknown[], txs: TypedTransaction[], ws: WithdrawalRecord[] | undefined): number {
  const u = bigIntToUnpaddedBytes;
  const parts: unknown[] = [header, txs.map((tx) => (tx.type === 0 ? tx.raw() : tx.serialize())), []];
  if (ws !== undefined) parts.push(ws.map((w) => [u(w.index), u(w.validatorIndex), w.address, u(w.amount)]));
  return RLP.encode(parts as never).length;
}

function sha256(b: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(b).digest());
}

async function receiptsRoot(receipts: Uint8Array[], common: Common): Promise<Uint8Array> {
  if (receipts.length === 0) return KECCAK256_RLP;
  const trie = new MerklePatriciaTrie({ common });
  for (const [i, r] of receipts.entries()) await trie.put(RLP.encode(i), r);
  return trie.root();
}

/** The header's RLP fields in consensus order (the fork fields it has). */
function headerFields(f: Record<string, unknown>): unknown[] {
  const u = (v: unknown): Uint8Array => bigIntToUnpaddedBytes(v as bigint);
  const out: unknown[] = [
    f.parentHash,
    KECCAK256_RLP_ARRAY,
    f.coinbase,
    f.stateRoot,
    f.transactionsTrie,
    f.receiptTrie,
    f.logsBloom,
    u(f.difficulty),
    u(f.number),
    u(f.gasLimit),
    u(f.gasUsed),
    u(f.timestamp),
    new Uint8Array(),
    f.mixHash,
    new Uint8Array(8),
  ];
  const forks: [string, boolean][] = [
    ['baseFeePerGas', true],
    ['withdrawalsRoot', false],
    ['blobGasUsed', true],
    ['excessBlobGas', true],
    ['parentBeaconBlockRoot', false],
    ['requestsHash', false],
  ];
  for (const [k, quantity] of forks) if (f[k] !== undefined) out.push(quantity ? u(f[k]) : f[k]);
  return out;
}

function txRecord(tx: TypedTransaction, from: Bytes): TxRecord {
  const t = tx as unknown as {
    gasPrice?: bigint;
    maxFeePerGas?: bigint;
    maxPriorityFeePerGas?: bigint;
    accessList?: [Uint8Array, Uint8Array[]][];
    maxFeePerBlobGas?: bigint;
    blobVersionedHashes?: Uint8Array[];
    chainId?: bigint;
  };
  const r: TxRecord = {
    type: tx.type,
    hash: keccak256(tx.serialize()),
    from,
    nonce: tx.nonce,
    gas: tx.gasLimit,
    to: tx.to?.bytes ?? null,
    value: tx.value,
    input: tx.data,
    v: 0n,
    r: 0n,
    s: 0n,
  };
  if (tx.type === 0) r.gasPrice = t.gasPrice as bigint;
  else {
    r.chainId = t.chainId as bigint;
    r.accessList = (t.accessList ?? []).map(([address, storageKeys]) => ({ address, storageKeys }));
  }
  if (tx.type >= 2) {
    r.maxFeePerGas = t.maxFeePerGas as bigint;
    r.maxPriorityFeePerGas = t.maxPriorityFeePerGas as bigint;
  }
  if (tx.type === 3) {
    r.maxFeePerBlobGas = t.maxFeePerBlobGas as bigint;
    // @ethereumjs/tx keeps them as hex strings.
    r.blobVersionedHashes = (t.blobVersionedHashes ?? []).map((h) =>
      typeof h === 'string' ? Uint8Array.from(Buffer.from((h as string).slice(2), 'hex')) : h,
    );
  }
  return r;
}

/** A call the block could not include, with geth's code (txValidationError). */
function txError(m: string, from: Address, tx: TypedTransaction | undefined, gas: bigint): SimulationError {
  const who = `address ${from.toString()}`;
  const tail = ` (supplied gas ${gas})`;
  const nonce = /account has nonce of: (\d+) tx has nonce of: (\d+)/.exec(m);
  if (nonce !== null) {
    const [have, got] = [BigInt(nonce[1] as string), BigInt(nonce[2] as string)];
    return got < have
      ? new SimulationError(-38010, `err: nonce too low: ${who}, tx: ${got} state: ${have}${tail}`)
      : new SimulationError(-38011, `err: nonce too high: ${who}, tx: ${got} state: ${have}${tail}`);
  }
  if (m.includes('is less than the block') || m.includes('less than block base fee'))
    return new SimulationError(-38012, `err: max fee per gas less than block base fee: ${who}${tail}`);
  if (m.includes("doesn't have enough funds")) {
    const f = /only has: (\d+)/.exec(m);
    const want =
      tx === undefined
        ? 0n
        : tx.value +
          gas *
            ((tx as unknown as { maxFeePerGas?: bigint; gasPrice?: bigint }).maxFeePerGas ??
              (tx as unknown as { gasPrice?: bigint }).gasPrice ??
              0n);
    return new SimulationError(
      -38014,
      `err: insufficient funds for gas * price + value: ${who} have ${f?.[1] ?? 0} want ${want}${tail}`,
    );
  }
  if (m.includes('INTRINSIC_GAS_TOO_LOW') || m.includes('gasLimit is too low') || m.includes('intrinsic gas'))
    return new SimulationError(-38013, `err: intrinsic gas too low${tail}`);
  if (m.includes('initcode') || m.includes('initCode'))
    return new SimulationError(-38025, `err: max initcode size exceeded${tail}`);
  if (m.includes('maxFeePerGas cannot be less than maxPriorityFeePerGas'))
    return new SimulationError(-32602, `err: max priority fee per gas higher than max fee per gas: ${who}${tail}`);
  if (m.includes('nonce')) return new SimulationError(-32603, `err: nonce has max value: ${who}${tail}`);
  return new SimulationError(
    -32603,
    `err: ${m
      .replace(/ -> .*$/s, '')
      .replace(/\(block: .*$/s, '')
      .trim()}${tail}`,
  );
}
