// Builds the fixture chain: every block is executed with @ethereumjs/vm (runBlock with
// generate: true) and then finalized with the resulting state root, receipts root, bloom and
// gas used. Uncles are real siblings of canonical blocks (difficulty valid for their parent)
// and their rewards are paid by the VM. The seal (mixHash/nonce) is not a valid ethash proof,
// like geth's chain maker with a fake ethash engine.
import { RLP } from '@ethereumjs/rlp';
import {
  Block,
  type BlockHeader,
  createBlockHeader,
  genTransactionsTrieRoot,
  type HeaderData,
} from '@ethereumjs/block';
import { type Common, createCommonFromGethGenesis, type GethGenesis, Hardfork } from '@ethereumjs/common';
import {
  type AccessList,
  createAccessList2930Tx,
  createFeeMarket1559Tx,
  createLegacyTx,
  createLegacyTxFromBytesArray,
  type TypedTransaction,
} from '@ethereumjs/tx';
import {
  type Address,
  bytesToHex,
  concatBytes,
  createAccount,
  createContractAddress,
  KECCAK256_RLP_ARRAY,
  MapDB,
  ValueEncoding,
} from '@ethereumjs/util';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { Caches, MerkleStateManager } from '@ethereumjs/statemanager';
import { createVM, type RunBlockResult, runBlock, type VM } from '@ethereumjs/vm';
import { keccak256 } from 'ethereum-cryptography/keccak.js';

import { rememberParams, tuneVm } from '@chainnode/exec';
import { preMergeGenesis } from '@chainnode/testkit';
import { labelAddress, makeSenders, type Sender } from './accounts.js';
import { type CompiledContracts, compileContracts, creationCode, encodeCall } from './contracts.js';
import { NATIVE_CRYPTO } from './native-crypto.js';
import { Prng } from './prng.js';

export const CHAIN_ID = 1337;
export const LONDON_BLOCK = 600;
export const BLOCK_COUNT = 1600;
/** The fork leaves the main chain after this block (10 blocks before its head)... */
export const FORK_AT = 1590;
/** ...with this many blocks of its own (so it is longer than the main chain). */
export const FORK_BLOCKS = 15;
export const GENESIS_TIMESTAMP = 1_700_000_000;
export const GENESIS_GAS_LIMIT = 15_000_000n;
export const GENESIS_DIFFICULTY = 0x400000n;
export const SENDER_BALANCE = 1_000n * 10n ** 18n;
const GWEI = 1_000_000_000n;
const INITIAL_BASE_FEE = 1_000_000_000n; // EIP-1559 INITIAL_BASE_FEE
const EXTRA_DATA = new TextEncoder().encode('chainnode fixture');
const GENESIS_EXTRA_DATA = new TextEncoder().encode('chainnode fixture genesis');
const TOKEN_MINT = 1_000_000n * 10n ** 18n;
export const BEACONS_IN_BLOCK_1 = 5;
const EMPTY_RUN = [1000, 1001, 1002, 1003];

export type TxKind = 'legacy-unprotected' | 'legacy-eip155' | 'eip2930' | 'eip1559';

export interface ChainStats {
  blocks: number;
  txs: number;
  txsByKind: Record<TxKind, number>;
  contractCreations: number;
  plainTransfers: number;
  reverted: number;
  uncles: number;
  blocksByUncleCount: [number, number, number];
  uncleDepths: Record<number, number>;
  emptyBlocks: number;
  logs: number;
  logsByAddress: Map<string, number>;
  logsByTopicCount: [number, number, number, number, number];
  logsWithEmptyData: number;
  logsWithDataAtLeast200: number;
  maxLogDataLength: number;
  senders: Set<string>;
  totalDifficulty: bigint;
  finalStateRoot: string;
  headHash: string;
  minBaseFee: bigint;
  maxBaseFee: bigint;
}

export interface FixtureOutput {
  genesisJson: string;
  /** fixtures/fork/chain.rlp: blocks 1..forkAt of the main chain, then `blocks` blocks of its own. */
  fork: { chainRlp: Uint8Array; forkAt: number; blocks: number; txs: number; logs: number; headHash: string };
  chainRlp: Uint8Array;
  genesisHash: string;
  genesisStateRoot: string;
  stats: ChainStats;
  addresses: {
    token: string;
    emitter: string;
    registry: string;
    beacons: string[];
    miners: string[];
    uncleMiners: string[];
  };
  senders: Sender[];
  solcVersion: string;
  /** A token holder and its balance after the last block, for the README's worked example. */
  tokenExample: { holder: string; balance: bigint };
  registryExample: { caller: string; key: bigint; value: bigint };
}

type Progress = (msg: string) => void;

interface PlannedTx {
  tx: TypedTransaction;
  kind: TxKind;
  expectSuccess: boolean;
  creation: boolean;
  plainTransfer: boolean;
  from: string;
}

export function genesisConfig(alloc: GethGenesis['alloc']): GethGenesis {
  return preMergeGenesis({
    chainId: CHAIN_ID,
    londonBlock: LONDON_BLOCK,
    timestamp: GENESIS_TIMESTAMP,
    extraData: bytesToHex(GENESIS_EXTRA_DATA),
    gasLimit: GENESIS_GAS_LIMIT,
    difficulty: GENESIS_DIFFICULTY,
    alloc,
  }) as GethGenesis;
}

/** The fork rules every block is built under, and the executing VM with the genesis state. */
interface ChainSetup {
  genesis: GethGenesis;
  common: Common;
  txCommons: TxCommons;
  vm: VM;
  genesisStateRoot: Uint8Array;
  genesisHeader: BlockHeader;
}

interface TxCommons {
  berlin: Common;
  london: Common;
  /** Signing under a pre-EIP-155 rule set yields v = 27/28 (no replay protection). */
  unprotected: Common;
}

/**
 * The generator's local model of the world, used to plan transactions that succeed or revert on
 * purpose; every receipt's status is checked against the plan after execution.
 */
interface World {
  rng: Prng;
  senders: Sender[];
  contracts: CompiledContracts;
  miners: Address[];
  uncleMiners: Address[];
  recipients: Address[];
  deployer: Sender;
  tokenAddr: Address;
  emitterAddr: Address;
  registryAddr: Address;
  beacons: Address[];
  nonces: Map<string, bigint>;
  tokenBalance: Map<string, bigint>;
  /** `${owner}:${spender}` -> amount */
  allowances: Map<string, bigint>;
  registryEntries: { caller: string; key: bigint; value: bigint }[];
  /** Blocks left in the current run of congested blocks. */
  congestionLeft: number;
}

type BlockFields = Omit<HeaderData, 'number'> & { number: bigint };

export async function buildFixtureChain(progress: Progress = () => {}): Promise<FixtureOutput> {
  const senders = makeSenders();
  const contracts = compileContracts();
  progress(`compiled contracts with solc ${contracts.solcVersion}`);
  const setup = await setUpChain(senders);
  const world = newWorld(senders, contracts);
  const stats = newStats();

  const canonical: BlockHeader[] = [setup.genesisHeader];
  const encodedBlocks: Uint8Array[] = [];
  const started = Date.now();
  for (let number = 1; number <= BLOCK_COUNT; number++) {
    const block = await buildMainBlock(setup, world, stats, canonical, number);
    canonical.push(block.header);
    encodedBlocks.push(block.serialize());
    if (number % 100 === 0 || number === BLOCK_COUNT) {
      progress(
        `block ${number}/${BLOCK_COUNT}: ${stats.txs} txs, ${stats.logs} logs, ${stats.uncles} uncles (${((Date.now() - started) / 1000).toFixed(1)}s)`,
      );
    }
  }

  const head = canonical[canonical.length - 1]!;
  stats.finalStateRoot = bytesToHex(head.stateRoot);
  stats.headHash = bytesToHex(head.hash());
  const { tokenExample, registryExample } = await readExamples(setup.vm, world);
  const fork = await buildFork(setup, world, canonical, encodedBlocks, progress);

  return {
    fork,
    genesisJson: `${JSON.stringify(setup.genesis, null, 2)}\n`,
    chainRlp: concatBytes(...encodedBlocks),
    genesisHash: bytesToHex(setup.genesisHeader.hash()),
    genesisStateRoot: bytesToHex(setup.genesisStateRoot),
    stats,
    addresses: {
      token: world.tokenAddr.toString(),
      emitter: world.emitterAddr.toString(),
      registry: world.registryAddr.toString(),
      beacons: world.beacons.map((b) => b.toString()),
      miners: world.miners.map((m) => m.toString()),
      uncleMiners: world.uncleMiners.map((m) => m.toString()),
    },
    senders,
    solcVersion: contracts.solcVersion,
    tokenExample,
    registryExample,
  };
}

/** The genesis, its fork rules and a VM holding the genesis state (every sender funded). */
async function setUpChain(senders: Sender[]): Promise<ChainSetup> {
  const alloc: GethGenesis['alloc'] = {};
  for (const s of senders) alloc[s.hex] = { balance: `0x${SENDER_BALANCE.toString(16)}` };
  const genesis = genesisConfig(alloc);

  const common = createCommonFromGethGenesis(genesis, { chain: 'chainnode-fixture', customCrypto: NATIVE_CRYPTO });
  // Every transaction and header is built on a copy of it (or of the hardfork copies below).
  rememberParams(common);
  const atFork = (hardfork: Hardfork): Common => {
    const c = common.copy();
    c.setHardfork(hardfork);
    return c;
  };
  const txCommons = {
    berlin: atFork(Hardfork.Berlin),
    london: atFork(Hardfork.London),
    unprotected: atFork(Hardfork.TangerineWhistle),
  };

  // Account, code and storage caches in front of the trie: the same state, read with fewer trie
  // walks (a quarter of the generator's time without them).
  const vmCommon = common.copy();
  // The trie's values kept as bytes: a trie given no db does so itself, but its storage tries
  // (copies handed its db) fall back to hex strings, parsed again at every read.
  const trie = new MerklePatriciaTrie({
    useKeyHashing: true,
    common: vmCommon,
    db: new MapDB(),
    valueEncoding: ValueEncoding.Bytes,
  });
  const stateManager = new MerkleStateManager({ common: vmCommon, caches: new Caches(), trie });
  const vm = await createVM({ common: vmCommon, setHardfork: true, stateManager });
  await tuneVm(vm);
  for (const s of senders) {
    await vm.stateManager.putAccount(s.address, createAccount({ balance: SENDER_BALANCE }));
  }
  const genesisStateRoot = await vm.stateManager.getStateRoot();
  const genesisHeader = createBlockHeader(
    {
      number: 0n,
      gasLimit: GENESIS_GAS_LIMIT,
      difficulty: GENESIS_DIFFICULTY,
      timestamp: BigInt(GENESIS_TIMESTAMP),
      extraData: GENESIS_EXTRA_DATA,
      nonce: hexToBytes(genesis.nonce),
      stateRoot: genesisStateRoot,
    },
    { common, setHardfork: true },
  );
  return { genesis, common, txCommons, vm, genesisStateRoot, genesisHeader };
}

function newWorld(senders: Sender[], contracts: CompiledContracts): World {
  const deployer = senders[0]!;
  return {
    rng: new Prng('chainnode fixture chain v1'),
    senders,
    contracts,
    miners: [0, 1, 2].map((i) => labelAddress(`chainnode-fixture-miner-${i}`)),
    uncleMiners: [0, 1, 2, 3].map((i) => labelAddress(`chainnode-fixture-uncle-miner-${i}`)),
    recipients: Array.from({ length: 200 }, (_, i) => labelAddress(`chainnode-fixture-recipient-${i}`)),
    deployer,
    tokenAddr: createContractAddress(deployer.address, 0n),
    emitterAddr: createContractAddress(deployer.address, 1n),
    registryAddr: createContractAddress(deployer.address, 2n),
    beacons: [],
    nonces: new Map(),
    tokenBalance: new Map(),
    allowances: new Map(),
    registryEntries: [],
    congestionLeft: 0,
  };
}

function newStats(): ChainStats {
  return {
    blocks: 0,
    txs: 0,
    txsByKind: { 'legacy-unprotected': 0, 'legacy-eip155': 0, eip2930: 0, eip1559: 0 },
    contractCreations: 0,
    plainTransfers: 0,
    reverted: 0,
    uncles: 0,
    blocksByUncleCount: [0, 0, 0],
    uncleDepths: {},
    emptyBlocks: 0,
    logs: 0,
    logsByAddress: new Map(),
    logsByTopicCount: [0, 0, 0, 0, 0],
    logsWithEmptyData: 0,
    logsWithDataAtLeast200: 0,
    maxLogDataLength: 0,
    senders: new Set(),
    totalDifficulty: GENESIS_DIFFICULTY,
    finalStateRoot: '',
    headHash: '',
    minBaseFee: -1n,
    maxBaseFee: 0n,
  };
}

/** Plans, executes and checks block `number` of the main chain, and counts it in `stats`. */
async function buildMainBlock(
  setup: ChainSetup,
  world: World,
  stats: ChainStats,
  canonical: BlockHeader[],
  number: number,
): Promise<Block> {
  const { rng } = world;
  const parent = canonical[number - 1]!;
  const london = number >= LONDON_BLOCK;
  const timestamp = parent.timestamp + BigInt(rng.int(3, 25));
  const gasLimit = nextGasLimit(rng, parent, number);
  let baseFeePerGas: bigint | undefined;
  if (number === LONDON_BLOCK) baseFeePerGas = INITIAL_BASE_FEE;
  else if (london) baseFeePerGas = parent.calcNextBaseFee();

  const uncles = pickUncles(setup.common, world, stats, canonical, number);
  const txCommon = london ? setup.txCommons.london : setup.txCommons.berlin;
  const plan = new BlockPlan(world, setup.txCommons.unprotected, txCommon, london, baseFeePerGas ?? 0n);
  planTransactions(plan, number, gasLimit);

  // Both the draft and the final block hold the same signed transaction objects, so each
  // sender is recovered only once (in runBlock).
  const txs = plan.planned.map((p) => p.tx);
  const uncleHash = uncles.length === 0 ? KECCAK256_RLP_ARRAY : keccak256(RLP.encode(uncles.map((u) => u.raw())));
  const fields = {
    parentHash: parent.hash(),
    uncleHash,
    coinbase: rng.pick(world.miners),
    number: BigInt(number),
    gasLimit,
    timestamp,
    extraData: EXTRA_DATA,
    mixHash: rng.bytes(32),
    nonce: rng.bytes(8),
    ...(baseFeePerGas !== undefined ? { baseFeePerGas } : {}),
  };
  const { block, result } = await executeBlock(setup, parent, fields, txs, uncles);
  countBlock(stats, plan.planned, result, block, number);
  return block;
}

function nextGasLimit(rng: Prng, parent: BlockHeader, number: number): bigint {
  if (number === LONDON_BLOCK) return parent.gasLimit * 2n; // EIP-1559: the fork block's limit is measured against 2x the parent's
  const bound = parent.gasLimit / 1024n - 1n;
  const step = bound / 4n;
  return parent.gasLimit + BigInt(rng.int(-Number(step), Number(step)));
}

/** Uncles: siblings of canonical blocks 1..6 generations back. */
function pickUncles(
  common: Common,
  world: World,
  stats: ChainStats,
  canonical: BlockHeader[],
  number: number,
): BlockHeader[] {
  const { rng } = world;
  const uncles: BlockHeader[] = [];
  if (number < 2) return uncles;
  const r = rng.next();
  const want = r < 0.08 ? 1 : r < 0.13 ? 2 : 0;
  for (let i = 0; i < want; i++) {
    const depth = rng.int(1, Math.min(6, number - 1));
    const u = number - depth;
    const sibling = canonical[u]!;
    const uncleParent = canonical[u - 1]!;
    const uncle = createBlockHeader(
      {
        parentHash: uncleParent.hash(),
        coinbase: rng.pick(world.uncleMiners),
        stateRoot: uncleParent.stateRoot,
        number: BigInt(u),
        gasLimit: sibling.gasLimit,
        gasUsed: 0n,
        timestamp: sibling.timestamp + BigInt(rng.int(1, 4)),
        extraData: new TextEncoder().encode(`uncle ${number}/${i}`),
        mixHash: rng.bytes(32),
        nonce: rng.bytes(8),
        ...(sibling.baseFeePerGas !== undefined ? { baseFeePerGas: sibling.baseFeePerGas } : {}),
      },
      { common, setHardfork: true, calcDifficultyFromHeader: uncleParent },
    );
    uncles.push(uncle);
    stats.uncleDepths[depth] = (stats.uncleDepths[depth] ?? 0) + 1;
  }
  return uncles;
}

/** The transactions of one block, signed as they are planned, with the gas they reserve. */
class BlockPlan {
  readonly planned: PlannedTx[] = [];
  gas = 0n;

  constructor(
    readonly world: World,
    private readonly unprotectedCommon: Common,
    private readonly txCommon: Common,
    readonly london: boolean,
    private readonly fee: bigint,
  ) {}

  add(
    from: Sender,
    to: Address | undefined,
    data: Uint8Array,
    gasLimit: bigint,
    opts: { value?: bigint; expectSuccess?: boolean; kind?: TxKind; accessList?: AccessList | undefined } = {},
  ): void {
    const { rng } = this.world;
    const { fee, txCommon } = this;
    const kind = opts.kind ?? this.pickKind();
    const nonce = this.nextNonce(from);
    const value = opts.value ?? 0n;
    const tip = BigInt(rng.int(1, 20)) * (GWEI / 10n);
    const gasPrice = this.london ? fee + tip : BigInt(rng.int(1, 30)) * (GWEI / 10n);
    const base = { nonce, gasLimit, value, data, ...(to !== undefined ? { to } : {}) };
    let tx: TypedTransaction;
    if (kind === 'legacy-unprotected') {
      const signed = createLegacyTx({ ...base, gasPrice }, { common: this.unprotectedCommon }).sign(from.privateKey);
      tx = createLegacyTxFromBytesArray(signed.raw(), { common: txCommon });
    } else if (kind === 'legacy-eip155') {
      tx = createLegacyTx({ ...base, gasPrice }, { common: txCommon }).sign(from.privateKey);
    } else if (kind === 'eip2930') {
      tx = createAccessList2930Tx(
        { ...base, gasPrice, chainId: BigInt(CHAIN_ID), accessList: opts.accessList ?? [] },
        { common: txCommon },
      ).sign(from.privateKey);
    } else {
      tx = createFeeMarket1559Tx(
        {
          ...base,
          chainId: BigInt(CHAIN_ID),
          maxPriorityFeePerGas: tip,
          maxFeePerGas: fee * 2n + tip,
          accessList: opts.accessList ?? [],
        },
        { common: txCommon },
      ).sign(from.privateKey);
    }
    signedBy(tx, from);
    this.planned.push({
      tx,
      kind,
      expectSuccess: opts.expectSuccess ?? true,
      creation: to === undefined,
      plainTransfer: to !== undefined && data.length === 0,
      from: from.hex,
    });
    this.gas += gasLimit;
  }

  accessListFor(addr: Address): AccessList | undefined {
    return this.world.rng.chance(0.5)
      ? [{ address: addr.toString(), storageKeys: [bytesToHex(new Uint8Array(32))] }]
      : undefined;
  }

  otherSender(s: Sender): Sender {
    const { rng, senders } = this.world;
    const o = rng.pick(senders);
    return o.index === s.index ? senders[(s.index + 1) % senders.length]! : o;
  }

  deployBeacon(from: Sender, kind?: TxKind): void {
    const { beacons, nonces, contracts } = this.world;
    const id = BigInt(beacons.length + 1);
    beacons.push(createContractAddress(from.address, nonces.get(from.hex) ?? 0n));
    this.add(from, undefined, creationCode(contracts.beacon, [id]), 400_000n, kind ? { kind } : {});
  }

  private nextNonce(s: Sender): bigint {
    const n = this.world.nonces.get(s.hex) ?? 0n;
    this.world.nonces.set(s.hex, n + 1n);
    return n;
  }

  private pickKind(): TxKind {
    const r = this.world.rng.next();
    if (!this.london) return r < 0.12 ? 'legacy-unprotected' : r < 0.62 ? 'legacy-eip155' : 'eip2930';
    return r < 0.06 ? 'legacy-unprotected' : r < 0.26 ? 'legacy-eip155' : r < 0.4 ? 'eip2930' : 'eip1559';
  }
}

/** Block 1 deploys the contracts, blocks 2-3 mint tokens, then random traffic (and empty blocks). */
function planTransactions(plan: BlockPlan, number: number, gasLimit: bigint): void {
  const w = plan.world;
  const { rng, contracts, senders, deployer } = w;
  if (number === 1) {
    plan.add(deployer, undefined, contracts.token.bytecode, 1_500_000n, { kind: 'legacy-eip155' });
    plan.add(deployer, undefined, contracts.emitter.bytecode, 1_500_000n, { kind: 'legacy-unprotected' });
    plan.add(deployer, undefined, contracts.registry.bytecode, 1_500_000n, { kind: 'eip2930' });
    for (let i = 0; i < BEACONS_IN_BLOCK_1; i++) plan.deployBeacon(deployer);
  } else if (number === 2 || number === 3) {
    const half = senders.length / 2;
    for (const s of senders.slice(number === 2 ? 0 : half, number === 2 ? half : senders.length)) {
      plan.add(s, w.tokenAddr, encodeCall(contracts.token, 'mint', [s.hex, TOKEN_MINT]), 120_000n);
      w.tokenBalance.set(s.hex, (w.tokenBalance.get(s.hex) ?? 0n) + TOKEN_MINT);
    }
  } else if (EMPTY_RUN.includes(number) || rng.chance(0.05)) {
    // empty block
  } else {
    if (number % 40 === 0 || (plan.london && number % 40 === 20)) plan.deployBeacon(rng.pick(senders));
    const count = rng.int(1, 12);
    for (let t = 0; t < count; t++) planRandomTx(plan, rng.pick(senders));
    planCongestion(plan, gasLimit);
  }
}

function planRandomTx(plan: BlockPlan, from: Sender): void {
  const r = plan.world.rng.next();
  if (r < 0.18) planEmitterTx(plan, from, r);
  else if (r < 0.61) planTokenTx(plan, from, r);
  else planOtherTx(plan, from, r);
}

/** Bursts of logs on the hot contract, every event at once, or a burst that reverts. */
function planEmitterTx(plan: BlockPlan, from: Sender, r: number): void {
  const { rng, contracts, emitterAddr } = plan.world;
  if (r < 0.13) {
    const n = rng.int(4, 30);
    const data = rng.bytes(rng.int(0, 240));
    plan.add(
      from,
      emitterAddr,
      encodeCall(contracts.emitter, 'burst', [n, rng.bigint(64), data]),
      80_000n + BigInt(n) * 9_000n,
      { accessList: plan.accessListFor(emitterAddr) },
    );
  } else if (r < 0.16) {
    const data = rng.bytes(rng.int(200, 240));
    plan.add(from, emitterAddr, encodeCall(contracts.emitter, 'emitAll', [rng.bigint(64), data]), 200_000n);
  } else {
    const n = rng.int(1, 10);
    plan.add(
      from,
      emitterAddr,
      encodeCall(contracts.emitter, 'burstThenRevert', [n, rng.bigint(64), rng.bytes(32)]),
      80_000n + BigInt(n) * 9_000n,
      { expectSuccess: false },
    );
  }
}

/** Token transfers, batch transfers, overdrafts that revert, approvals and transferFrom. */
function planTokenTx(plan: BlockPlan, from: Sender, r: number): void {
  const { rng, contracts, senders, recipients, tokenAddr, tokenBalance, allowances } = plan.world;
  if (r < 0.4) {
    const to = rng.chance(0.7) ? plan.otherSender(from).address : rng.pick(recipients);
    const have = tokenBalance.get(from.hex) ?? 0n;
    const amount = have === 0n ? 0n : rng.bigint(64) % (have / 100n + 1n);
    plan.add(from, tokenAddr, encodeCall(contracts.token, 'transfer', [to.toString(), amount]), 90_000n, {
      accessList: plan.accessListFor(tokenAddr),
    });
    tokenBalance.set(from.hex, have - amount);
    tokenBalance.set(to.toString(), (tokenBalance.get(to.toString()) ?? 0n) + amount);
  } else if (r < 0.5) {
    const k = rng.int(2, 20);
    const tos = Array.from({ length: k }, () =>
      (rng.chance(0.5) ? rng.pick(senders).address : rng.pick(recipients)).toString(),
    );
    const have = tokenBalance.get(from.hex) ?? 0n;
    const amount = rng.bigint(48);
    if (amount * BigInt(k) > have) return;
    plan.add(
      from,
      tokenAddr,
      encodeCall(contracts.token, 'batchTransfer', [tos, amount]),
      70_000n + BigInt(k) * 32_000n,
    );
    tokenBalance.set(from.hex, have - amount * BigInt(k));
    for (const to of tos) tokenBalance.set(to, (tokenBalance.get(to) ?? 0n) + amount);
  } else if (r < 0.53) {
    const have = tokenBalance.get(from.hex) ?? 0n;
    plan.add(
      from,
      tokenAddr,
      encodeCall(contracts.token, 'transfer', [plan.otherSender(from).hex, have + 1n + rng.bigint(32)]),
      90_000n,
      { expectSuccess: false },
    );
  } else if (r < 0.58) {
    const spender = plan.otherSender(from);
    const amount = rng.bigint(80);
    plan.add(from, tokenAddr, encodeCall(contracts.token, 'approve', [spender.hex, amount]), 70_000n);
    allowances.set(`${from.hex}:${spender.hex}`, amount);
  } else {
    planTransferFrom(plan, from);
  }
}

/** transferFrom by a spender that holds an allowance (if any). */
function planTransferFrom(plan: BlockPlan, from: Sender): void {
  const { rng, contracts, recipients, tokenAddr, tokenBalance, allowances } = plan.world;
  const owners = [...allowances.entries()].filter(([key, a]) => a > 0n && key.endsWith(`:${from.hex}`));
  const entry = owners.length > 0 ? rng.pick(owners) : undefined;
  if (entry === undefined) return;
  const owner = entry[0].split(':')[0]!;
  const have = tokenBalance.get(owner) ?? 0n;
  const amount = [entry[1], have, rng.bigint(40)].reduce((a, b) => (a < b ? a : b));
  const to = rng.pick(recipients).toString();
  plan.add(from, tokenAddr, encodeCall(contracts.token, 'transferFrom', [owner, to, amount]), 100_000n);
  allowances.set(entry[0], entry[1] - amount);
  tokenBalance.set(owner, have - amount);
  tokenBalance.set(to, (tokenBalance.get(to) ?? 0n) + amount);
}

/** Registry writes and failures, plain ETH transfers, Beacon calls, more bursts. */
function planOtherTx(plan: BlockPlan, from: Sender, r: number): void {
  const { rng, contracts, recipients, registryAddr, emitterAddr, beacons, registryEntries } = plan.world;
  if (r < 0.71) {
    const key = BigInt(rng.int(0, 50));
    const value = rng.bigint(128);
    plan.add(from, registryAddr, encodeCall(contracts.registry, 'store', [key, value]), 140_000n, {
      accessList: plan.accessListFor(registryAddr),
    });
    registryEntries.push({ caller: from.hex, key, value });
  } else if (r < 0.73) {
    plan.add(from, registryAddr, encodeCall(contracts.registry, 'fail', [rng.int(0, 1000)]), 60_000n, {
      expectSuccess: false,
    });
  } else if (r < 0.9) {
    const to = rng.chance(0.6) ? plan.otherSender(from).address : rng.pick(recipients);
    const value = rng.chance(0.1) ? 0n : rng.bigint(60);
    plan.add(from, to, new Uint8Array(0), 21_000n, { value });
  } else if (r < 0.94 && beacons.length > 0) {
    const b = rng.pick(beacons);
    plan.add(from, b, encodeCall(contracts.beacon, 'beep', [rng.bigint(32)]), 80_000n);
  } else {
    // more burst traffic on the hot contract
    const n = rng.int(4, 20);
    const data = rng.bytes(rng.int(0, 120));
    plan.add(
      from,
      emitterAddr,
      encodeCall(contracts.emitter, 'burst', [n, rng.bigint(64), data]),
      80_000n + BigInt(n) * 9_000n,
    );
  }
}

/**
 * Congestion after London: a few runs of blocks whose gas used is far above the target, so the
 * base fee climbs as well as falls.
 */
function planCongestion(plan: BlockPlan, gasLimit: bigint): void {
  const w = plan.world;
  if (!plan.london) return;
  if (w.congestionLeft === 0 && w.rng.chance(1 / 60)) w.congestionLeft = w.rng.int(4, 8);
  if (w.congestionLeft === 0) return;
  w.congestionLeft--;
  const room = (gasLimit * 8n) / 10n - plan.gas;
  if (room > 100_000n) {
    plan.add(w.rng.pick(w.senders), w.registryAddr, encodeCall(w.contracts.registry, 'burn', []), room, {
      expectSuccess: false,
    });
  }
}

/**
 * Executes a draft of the block, then finalizes it with the resulting state root, receipts
 * root, bloom and gas used, and checks it against its parent. The Block constructor (rather
 * than createBlock) keeps the signed tx objects as they are.
 */
async function executeBlock(
  setup: ChainSetup,
  parent: BlockHeader,
  fields: BlockFields,
  txs: TypedTransaction[],
  uncles: BlockHeader[],
): Promise<{ block: Block; result: RunBlockResult }> {
  const { common, vm } = setup;
  const draftHeader = createBlockHeader(fields, { common, setHardfork: true, calcDifficultyFromHeader: parent });
  const draft = new Block(draftHeader, txs, uncles, undefined, { common });
  const result = await runBlock(vm, { block: draft, generate: true, skipBlockValidation: true });
  const finalHeader = createBlockHeader(
    {
      ...fields,
      difficulty: draftHeader.difficulty,
      stateRoot: result.stateRoot,
      transactionsTrie: await genTransactionsTrieRoot(txs),
      receiptTrie: result.receiptsRoot,
      logsBloom: result.logsBloom,
      gasUsed: result.gasUsed,
    },
    { common, setHardfork: true },
  );
  const block = new Block(finalHeader, txs, uncles, undefined, { common });
  checkBlock(block, parent, Number(fields.number));
  return { block, result };
}

/** Checks each receipt's status against the plan and counts the block in `stats`. */
function countBlock(stats: ChainStats, planned: PlannedTx[], result: RunBlockResult, block: Block, number: number) {
  for (const [i, p] of planned.entries()) {
    const receipt = result.receipts[i];
    if (receipt === undefined) throw new Error(`block ${number}: missing receipt ${i}`);
    const ok = 'status' in receipt ? receipt.status === 1 : true;
    if (ok !== p.expectSuccess) {
      throw new Error(
        `block ${number} tx ${i}: status ${ok ? 1 : 0}, planned ${p.expectSuccess ? 'success' : 'revert'}`,
      );
    }
    stats.txs++;
    stats.txsByKind[p.kind]++;
    if (p.creation) stats.contractCreations++;
    if (p.plainTransfer) stats.plainTransfers++;
    if (!ok) stats.reverted++;
    stats.senders.add(p.from);
    for (const [address, topics, data] of receipt.logs) {
      const a = bytesToHex(address);
      stats.logs++;
      stats.logsByAddress.set(a, (stats.logsByAddress.get(a) ?? 0) + 1);
      stats.logsByTopicCount[topics.length as 0 | 1 | 2 | 3 | 4]++;
      if (data.length === 0) stats.logsWithEmptyData++;
      if (data.length >= 200) stats.logsWithDataAtLeast200++;
      if (data.length > stats.maxLogDataLength) stats.maxLogDataLength = data.length;
    }
  }
  const { uncleHeaders, header } = block;
  if (planned.length === 0) stats.emptyBlocks++;
  stats.uncles += uncleHeaders.length;
  stats.blocksByUncleCount[uncleHeaders.length as 0 | 1 | 2]++;
  stats.totalDifficulty += header.difficulty;
  const baseFeePerGas = header.baseFeePerGas;
  if (baseFeePerGas !== undefined) {
    if (stats.minBaseFee < 0n || baseFeePerGas < stats.minBaseFee) stats.minBaseFee = baseFeePerGas;
    if (baseFeePerGas > stats.maxBaseFee) stats.maxBaseFee = baseFeePerGas;
  }
  stats.blocks++;
}

/** Worked examples for the README, read back from the final state. */
async function readExamples(vm: VM, world: World): Promise<Pick<FixtureOutput, 'tokenExample' | 'registryExample'>> {
  const holder = world.senders[7]!;
  const holderSlot = mappingSlot(holder.address.bytes, 0n);
  const stored = await vm.stateManager.getStorage(world.tokenAddr, holderSlot);
  const balance = bytesToBigInt(stored);
  const modelled = world.tokenBalance.get(holder.hex);
  if (balance !== (modelled ?? 0n)) {
    throw new Error(`token balance of ${holder.hex}: state has ${balance}, model has ${modelled}`);
  }
  const lastEntry = world.registryEntries[world.registryEntries.length - 1];
  if (lastEntry === undefined) throw new Error('no registry entries were stored');
  return { tokenExample: { holder: holder.hex, balance }, registryExample: lastEntry };
}

/**
 * The fork (fixtures/fork/): the same chain up to FORK_AT, then FORK_BLOCKS other blocks with
 * other transactions and logs, built on the state of block FORK_AT (the in-memory trie keeps
 * every state the main chain passed through).
 */
async function buildFork(
  setup: ChainSetup,
  world: World,
  canonical: BlockHeader[],
  encodedBlocks: Uint8Array[],
  progress: Progress,
): Promise<FixtureOutput['fork']> {
  const forkRng = new Prng('chainnode fixture fork v1');
  await setup.vm.stateManager.setStateRoot(canonical[FORK_AT]!.stateRoot);
  const forkBlocks: Uint8Array[] = encodedBlocks.slice(0, FORK_AT);
  const forkStats = { blocks: 0, txs: 0, logs: 0, headHash: '' };
  let forkParent = canonical[FORK_AT]!;
  for (let number = FORK_AT + 1; number <= FORK_AT + FORK_BLOCKS; number++) {
    const baseFeePerGas = forkParent.calcNextBaseFee();
    const txs = await forkTransactions(setup, world, forkRng, baseFeePerGas);
    const fields = {
      parentHash: forkParent.hash(),
      uncleHash: KECCAK256_RLP_ARRAY,
      coinbase: forkRng.pick(world.miners),
      number: BigInt(number),
      gasLimit: forkParent.gasLimit,
      timestamp: forkParent.timestamp + BigInt(forkRng.int(3, 25)),
      extraData: new TextEncoder().encode('chainnode fixture fork'),
      mixHash: forkRng.bytes(32),
      nonce: forkRng.bytes(8),
      baseFeePerGas,
    };
    const { block, result } = await executeBlock(setup, forkParent, fields, txs, []);
    for (const r of result.receipts) {
      if ('status' in r && r.status !== 1) throw new Error(`fork block ${number}: a tx failed`);
      forkStats.logs += r.logs.length;
    }
    forkStats.blocks++;
    forkStats.txs += txs.length;
    forkBlocks.push(block.serialize());
    forkParent = block.header;
  }
  forkStats.headHash = bytesToHex(forkParent.hash());
  progress(
    `fork: blocks ${FORK_AT + 1}..${FORK_AT + FORK_BLOCKS} on block ${FORK_AT}: ${forkStats.txs} txs, ${forkStats.logs} logs, head ${forkStats.headHash}`,
  );
  return { chainRlp: concatBytes(...forkBlocks), forkAt: FORK_AT, ...forkStats };
}

/** 1-6 type-2 transactions of a fork block: emitAll calls and plain transfers, none reverting. */
async function forkTransactions(
  setup: ChainSetup,
  world: World,
  forkRng: Prng,
  baseFeePerGas: bigint,
): Promise<TypedTransaction[]> {
  const { contracts, emitterAddr, recipients, senders } = world;
  const txs: TypedTransaction[] = [];
  const pending = new Map<string, bigint>();
  const nonceOf = async (s: Sender): Promise<bigint> => {
    const n = pending.get(s.hex) ?? (await setup.vm.stateManager.getAccount(s.address))?.nonce ?? 0n;
    pending.set(s.hex, n + 1n);
    return n;
  };
  const count = forkRng.int(1, 6);
  for (let t = 0; t < count; t++) {
    const from = forkRng.pick(senders);
    const tip = BigInt(forkRng.int(1, 20)) * (GWEI / 10n);
    const emit = forkRng.chance(0.5);
    const data = emit
      ? encodeCall(contracts.emitter, 'emitAll', [forkRng.bigint(64), forkRng.bytes(forkRng.int(0, 80))])
      : new Uint8Array(0);
    txs.push(
      signedBy(
        createFeeMarket1559Tx(
          {
            nonce: await nonceOf(from),
            gasLimit: emit ? 200_000n : 21_000n,
            to: emit ? emitterAddr : forkRng.pick(recipients),
            value: emit ? 0n : BigInt(forkRng.int(1, 1_000_000)),
            data,
            chainId: BigInt(CHAIN_ID),
            maxPriorityFeePerGas: tip,
            maxFeePerGas: baseFeePerGas * 2n + tip,
          },
          { common: setup.txCommons.london },
        ).sign(from.privateKey),
        from,
      ),
    );
  }
  return txs;
}

/**
 * Records `from` as the sender of `tx`, which `from` has just signed, so that runBlock takes it
 * from the transaction's cache instead of recovering it from the signature (a sixth of the
 * generator's time). The chain's signatures are recovered where it matters: every import of
 * chain.rlp recovers each sender and fails the block if its state root then differs.
 */
function signedBy<T extends TypedTransaction>(tx: T, from: Sender): T {
  tx.cache.senderPubKey = from.publicKey;
  return tx;
}

/** Consensus checks that standard PoW validation would make (seal excepted). */
function checkBlock(block: Block, parent: BlockHeader, number: number): void {
  const h = block.header;
  if (h.difficulty !== h.ethashCanonicalDifficulty(parent)) throw new Error(`block ${number}: bad difficulty`);
  h.validateGasLimit(parent);
  if (h.timestamp <= parent.timestamp) throw new Error(`block ${number}: timestamp not increasing`);
  if (h.common.isActivatedEIP(1559) && number !== LONDON_BLOCK && h.baseFeePerGas !== parent.calcNextBaseFee()) {
    throw new Error(`block ${number}: bad base fee`);
  }
  for (const u of block.uncleHeaders) {
    if (u.number >= h.number || u.number < h.number - 6n) throw new Error(`block ${number}: uncle depth out of range`);
  }
}

/** keccak(pad32(key) ++ pad32(slot)): the storage slot of mapping[key] for a mapping at `slot`. */
export function mappingSlot(key: Uint8Array, slot: bigint): Uint8Array {
  const buf = new Uint8Array(64);
  buf.set(key, 32 - key.length);
  const s = BigInt.asUintN(256, slot).toString(16).padStart(64, '0');
  buf.set(Buffer.from(s, 'hex'), 32);
  return keccak256(buf);
}

function bytesToBigInt(b: Uint8Array): bigint {
  return b.length === 0 ? 0n : BigInt(bytesToHex(b));
}

function hexToBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.replace(/^0x/, ''), 'hex'));
}
