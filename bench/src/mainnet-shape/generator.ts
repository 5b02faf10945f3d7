// The mainnet-shaped chain: blocks of 150-250 transactions and 15-30 Mgas of real contract code
// (ERC-20 transfers and approvals, swaps on constant-product pools through a router, router
// multicalls, NFT mints and transfers, plain transfers), with a few hot contracts and a long tail
// of addresses. Every block is executed with @ethereumjs/vm's runBlock, the executor of the
// import path (packages/ingest), and sealed with the roots it computed, so every root is real;
// every receipt's status is checked against the plan. The mix by count follows published shares
// (docs/performance.md, "Mainnet-shaped blocks", cites them). Deterministic: every choice comes
// from one sfc32 stream seeded from a string, signatures are RFC 6979, so the same parameters
// give the same bytes. The output is geth's export format (genesis.json + chain.rlp) plus
// manifest.json (addresses, parameters and statistics), which the benches read.
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { RLP } from '@ethereumjs/rlp';
import { Block, type BlockHeader, createBlockHeader, genTransactionsTrieRoot } from '@ethereumjs/block';
import { type Common, createCommonFromGethGenesis, type GethGenesis, parseGethGenesisState } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { Caches, MerkleStateManager } from '@ethereumjs/statemanager';
import { createFeeMarket1559Tx, createLegacyTx, type TypedTransaction } from '@ethereumjs/tx';
import { Address, bytesToHex, calculateSigRecovery, KECCAK256_RLP_ARRAY } from '@ethereumjs/util';
import { createVM, runBlock } from '@ethereumjs/vm';
import { keccak256 } from '@chainnode/core';
import secp256k1 from 'secp256k1';
import type { BatchDBOp, DB } from '@ethereumjs/util';
import { preMergeGenesis, Sfc32 } from '@chainnode/testkit';
import { BlockFrameRecorder } from '@chainnode/exec';
import { ImportPipeline } from '@chainnode/ingest';
import { StoreWriter } from '@chainnode/store';
import type { BlockInput } from '@chainnode/store';
import { compileMainnetContracts, encodeCall, type MainnetContracts } from './contracts.js';

/** Bump when the output for the same parameters changes: it keys the cache. */
export const GENERATOR_VERSION = 1;
export const CHAIN_ID = 1337;
export const GENESIS_TIMESTAMP = 1_700_000_000;
export const GAS_LIMIT = 36_000_000n;
const GWEI = 1_000_000_000n;
const ETHER = 10n ** 18n;
const MAX = (1n << 256n) - 1n;
const BLOCK_GAS_CAP = 29_000_000;
/** Below this estimate a block takes more transactions (up to 250): 15-30 Mgas per block. */
const BLOCK_GAS_FLOOR = 19_000_000;

export interface ShapeParams {
  blocks: number;
  /** Funded accounts that send transactions (keys derived from public strings: test-only). */
  senders: number;
  seed: string;
}

export const MAINNET_PARAMS: Omit<ShapeParams, 'blocks'> = { senders: 3000, seed: 'chainnode mainnet shape v1' };

/** What a transaction of the mix is, for the statistics and the manifest. */
export const KINDS = [
  'eth-transfer',
  'erc20-transfer',
  'erc20-approve',
  'dex-swap',
  'dex-swap-reverted',
  'router-multicall',
  'nft-mint',
  'nft-transfer',
] as const;
export type Kind = (typeof KINDS)[number];

/**
 * Share of transactions by count. Plain ETH transfers ~29-34% and ERC-20 (stablecoins
 * included) ~25% (Glassnode via Delphi Digital 2023; Glassnode 2020); DEX swaps through routers
 * the largest gas user (~30-40% of gas: Nansen via Rapture 2022; CoinDesk 2020); NFTs a large
 * gas share in busy months (28% in January 2023, CryptoSlate). See docs/performance.md.
 */
export const MIX: Record<Kind, number> = {
  'eth-transfer': 0.29,
  'erc20-transfer': 0.27,
  'erc20-approve': 0.06,
  'dex-swap': 0.12,
  'dex-swap-reverted': 0.015,
  'router-multicall': 0.125,
  'nft-mint': 0.09,
  'nft-transfer': 0.03,
};

const HOT_TOKENS = 3;
const TAIL_TOKENS = 40;
const HOT_NFTS = 2;
const TAIL_NFTS = 10;
const TAIL_HOLDERS = 150;
const RESERVE = 10n ** 12n * ETHER;

export interface ShapeAddresses {
  router: string;
  tokens: string[];
  hotTokens: number;
  pairs: { address: string; token0: number; token1: number }[];
  nfts: string[];
  hotNfts: number;
  builders: string[];
}

export interface ShapeStats {
  blocks: number;
  txs: number;
  logs: number;
  gasUsed: number;
  /** Distinct storage slots written per block (from the generator's model), summed over blocks. */
  storageWrites: number;
  /** Distinct accounts whose leaf changed per block (senders, recipients, contracts, builder), summed. */
  accountsTouched: number;
  byKind: Record<Kind, { txs: number; gas: number }>;
  logsByAddress: Record<string, number>;
  minTxs: number;
  maxTxs: number;
  minGas: number;
  maxGas: number;
  freshAddresses: number;
  headHash: string;
  headStateRoot: string;
}

export interface Manifest {
  shape: 'mainnet';
  generatorVersion: number;
  params: ShapeParams;
  solcVersion: string;
  chainId: number;
  addresses: ShapeAddresses;
  stats: ShapeStats;
}

class Rng extends Sfc32 {
  constructor(seed: string) {
    const h = keccak256(new TextEncoder().encode(seed));
    const v = new DataView(h.buffer, h.byteOffset, h.byteLength);
    super(v.getUint32(0), v.getUint32(4), v.getUint32(8), v.getUint32(12));
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** Skewed index in [0, n): index 0 most likely (u^k, k > 1). */
  skewed(n: number, k = 2.5): number {
    return Math.min(n - 1, Math.floor(n * this.next() ** k));
  }
  bigint(lo: bigint, hi: bigint): bigint {
    const span = hi - lo + 1n;
    const r = (BigInt(this.u32()) << 32n) | BigInt(this.u32());
    return lo + ((r * span) >> 64n);
  }
}

const EMPTY_ROOT_HEX = '56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
const EMPTY_CODE_HEX = 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';

/**
 * The generator's node store: a Map of the trie nodes (and contract code) by hex key, from which
 * `retainOnly(root)` drops every node the state at `root` no longer reaches, so the generator
 * holds one state, not the archive (the import builds the archive). Deletes from the MPT are
 * ignored: a node may be shared by two tries (the same slot and value in two tokens).
 */
class StateNodes implements DB<string, Uint8Array> {
  map = new Map<string, Uint8Array>();
  async get(key: string): Promise<Uint8Array | undefined> {
    return this.map.get(key);
  }
  async put(key: string, val: Uint8Array): Promise<void> {
    this.map.set(key, val);
  }
  async del(): Promise<void> {}
  async batch(ops: BatchDBOp<string, Uint8Array>[]): Promise<void> {
    for (const op of ops) if (op.type === 'put') this.map.set(op.key, op.value);
  }
  shallowCopy(): DB<string, Uint8Array> {
    return this;
  }
  async open(): Promise<void> {}

  retainOnly(root: Uint8Array): void {
    const keep = new Map<string, Uint8Array>();
    const visit = (hexKey: string, account: boolean): void => {
      if (keep.has(hexKey) || hexKey === EMPTY_ROOT_HEX) return;
      const bytes = this.map.get(hexKey);
      if (bytes === undefined) throw new Error(`state node ${hexKey} missing`);
      keep.set(hexKey, bytes);
      walk(RLP.decode(bytes) as unknown as NodeItems, account);
    };
    type NodeItems = (Uint8Array | NodeItems)[];
    const child = (ref: Uint8Array | NodeItems, account: boolean): void => {
      if (ref instanceof Uint8Array) {
        if (ref.length === 32) visit(Buffer.from(ref).toString('hex'), account);
      } else walk(ref, account);
    };
    const walk = (items: NodeItems, account: boolean): void => {
      if (items.length === 17) {
        for (let i = 0; i < 16; i++) child(items[i]!, account);
        return;
      }
      const path = items[0] as Uint8Array;
      const leaf = path[0]! >> 4 >= 2;
      if (!leaf) {
        child(items[1]!, account);
        return;
      }
      if (!account) return;
      const [, , storageRoot, codeHash] = RLP.decode(items[1] as Uint8Array) as Uint8Array[];
      visit(Buffer.from(storageRoot!).toString('hex'), false);
      const ch = Buffer.from(codeHash!).toString('hex');
      if (ch !== EMPTY_CODE_HEX) {
        const codeKey = `63${ch}`;
        const code = this.map.get(codeKey);
        if (code === undefined) throw new Error(`code ${ch} missing`);
        keep.set(codeKey, code);
      }
    };
    visit(Buffer.from(root).toString('hex'), true);
    this.map = keep;
  }
}

const cpuSince = (from: NodeJS.CpuUsage): number => {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1e6;
};

const labelAddress = (label: string): Address => new Address(keccak256(new TextEncoder().encode(label)).slice(12));
const word = (v: bigint): string => `0x${v.toString(16).padStart(64, '0')}`;
const hexBytes = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h.replace(/^0x/, ''), 'hex'));

/** keccak(pad32(key) ++ pad32(slot)): the slot of mapping[key] for a mapping at `slot`. */
export function mappingSlot(key: Uint8Array | bigint, slot: bigint | Uint8Array): Uint8Array {
  const buf = new Uint8Array(64);
  if (typeof key === 'bigint') buf.set(hexBytes(word(key)), 0);
  else buf.set(key, 32 - key.length);
  buf.set(typeof slot === 'bigint' ? hexBytes(word(slot)) : slot, 32);
  return keccak256(buf);
}

interface Sender {
  key: Uint8Array;
  pub: Uint8Array;
  address: Address;
  hex: string;
}

interface Pool {
  address: Address;
  t0: number;
  t1: number;
  r0: bigint;
  r1: bigint;
}

/** One planned transaction: its kind, whether it must succeed, and the rough gas it will use. */
interface Planned {
  tx: TypedTransaction;
  kind: Kind;
  ok: boolean;
  /** Swap steps of a multicall, NFTs of a mint, else 1. */
  units: number;
}

export interface GenerateOptions extends ShapeParams {
  chainRlpPath: string;
  /**
   * Also write every block into this datadir as the import does (ImportPipeline writes genesis,
   * then the store's writer takes each block and the trie nodes its execution wrote, in groups of
   * up to 256 blocks): one execution gives both the export and an imported datadir, and the
   * generation's rate is the import's (execution with the import's trie cache and hash function,
   * sender recovery, staging, batches) without its decoding and root comparisons.
   */
  datadir?: string;
  /** Asked after each block: true ends the chain there (its first blocks are those of any longer one). */
  stop?: () => boolean;
  /** Called with genesis.json's text before the first block (a partial chain is then importable). */
  onGenesis?: (json: string) => void;
  progress?: (msg: string) => void;
}

export interface GenerateResult {
  genesisJson: string;
  /** Deterministic: parameters, addresses and statistics. */
  manifest: Manifest;
  /** Wall-clock seconds: the whole generation, and runBlock alone (execution and state root). */
  timing: {
    totalSeconds: number;
    executeSeconds: number;
    writeSeconds: number;
    /** CPU seconds (user + system, all threads of the process) in runBlock and in the writes. */
    executeCpuSeconds: number;
    writeCpuSeconds: number;
  };
  /** Per block, with a datadir: what the archive trie gained against what the block wrote. */
  growth: BlockGrowth[];
}

export interface BlockGrowth {
  number: number;
  txs: number;
  gas: number;
  storageWrites: number;
  accountsTouched: number;
  /** Trie nodes (and code) the block's execution handed to the store, and their key + value bytes. */
  trieNodes: number;
  trieBytes: number;
}

/** The import's sender recovery (packages/ingest/src/ecrecover.ts): libsecp256k1. */
function nativeEcrecover(msgHash: Uint8Array, v: bigint, r: Uint8Array, s: Uint8Array, chainId?: bigint): Uint8Array {
  const recovery = calculateSigRecovery(v, chainId);
  if (recovery !== 0n && recovery !== 1n) throw new Error('Invalid signature v value');
  const sig = new Uint8Array(64);
  sig.set(r, 32 - r.length);
  sig.set(s, 64 - s.length);
  return secp256k1.ecdsaRecover(sig, Number(recovery), msgHash, false).subarray(1);
}

/** The chain's actors: the funded senders and the contracts and builders at fixed addresses. */
interface Actors {
  senders: Sender[];
  router: Address;
  tokens: Address[];
  nfts: Address[];
  builders: Address[];
  pools: Pool[];
}

function actorsOf(count: number): Actors {
  const senders: Sender[] = Array.from({ length: count }, (_, i) => {
    const key = keccak256(new TextEncoder().encode(`chainnode-mainnet-shape-sender-${i}`));
    const pub = secp256k1.publicKeyCreate(key, false).subarray(1);
    const address = new Address(keccak256(pub).slice(12));
    return { key, pub, address, hex: address.toString() };
  });
  const router = labelAddress('mainnet-shape-router');
  const tokens = Array.from({ length: HOT_TOKENS + TAIL_TOKENS }, (_, i) => labelAddress(`mainnet-shape-token-${i}`));
  const nfts = Array.from({ length: HOT_NFTS + TAIL_NFTS }, (_, i) => labelAddress(`mainnet-shape-nft-${i}`));
  const builders = Array.from({ length: 6 }, (_, i) => labelAddress(`mainnet-shape-builder-${i}`));
  const pairDefs: [number, number][] = [
    [0, 1],
    [0, 2],
    [1, 2],
  ];
  for (let i = 0; i < 12; i++) pairDefs.push([0, HOT_TOKENS + i]);
  const pools: Pool[] = pairDefs.map(([a, b], i) => ({
    address: labelAddress(`mainnet-shape-pair-${i}`),
    t0: a,
    t1: b,
    r0: RESERVE,
    r1: RESERVE,
  }));
  return { senders, router, tokens, nfts, builders, pools };
}

/** One swap planned on the model. */
interface Swap {
  pool: Pool;
  zeroForOne: boolean;
  amountIn: bigint;
  out: bigint;
}

const swapOut = (p: Pool, zeroForOne: boolean, amountIn: bigint): bigint => {
  const [rIn, rOut] = zeroForOne ? [p.r0, p.r1] : [p.r1, p.r0];
  const inWithFee = amountIn * 997n;
  return (inWithFee * rOut) / (rIn * 1000n + inWithFee);
};

/**
 * The generator's model of the chain: token balances, router allowances, NFT ownership, nonces,
 * known addresses; and per block the distinct slots and accounts written, for the store's growth
 * factors. Every choice is drawn from its one random stream.
 */
class ShapeModel {
  readonly bal: Map<string, bigint>[];
  readonly routerAllowed: Set<string>[];
  readonly nftNext: bigint[];
  readonly owned: Map<string, bigint[]>[];
  /** For each sender, the collection of each NFT it holds (one entry per token). */
  readonly ownedBy = new Map<string, number[]>();
  readonly holders: Sender[] = [];
  readonly nonces = new Map<string, bigint>();
  readonly known: Address[] = [];
  fresh = 0;
  slots = new Set<string>();
  accounts = new Set<string>();

  constructor(
    readonly rng: Rng,
    readonly actors: Actors,
  ) {
    this.bal = actors.tokens.map(() => new Map<string, bigint>());
    this.routerAllowed = actors.tokens.map(() => new Set<string>());
    this.nftNext = actors.nfts.map(() => 0n);
    this.owned = actors.nfts.map(() => new Map<string, bigint[]>());
  }

  /** A new block: no slot or account written yet. */
  startBlock(): void {
    this.slots = new Set();
    this.accounts = new Set();
  }

  /** Pairs of (contract, slot label): each a storage write; the contract's account changes too. */
  touch(...pairs: (Address | string)[]): void {
    for (let i = 0; i < pairs.length; i += 2) {
      const a = (pairs[i] as Address).toString();
      this.slots.add(`${a}|${pairs[i + 1] as string}`);
      this.accounts.add(a);
    }
  }

  balance(t: number, holder: string): bigint {
    return this.bal[t]!.get(holder) ?? 0n;
  }

  move(t: number, from: string, to: string, v: bigint): void {
    this.bal[t]!.set(from, this.balance(t, from) - v);
    this.bal[t]!.set(to, this.balance(t, to) + v);
  }

  pickSender(): Sender {
    const { senders } = this.actors;
    return senders[this.rng.skewed(senders.length, 1.8)]!;
  }

  recipient(): Address {
    const r = this.rng.next();
    if (r < 0.35 || this.known.length === 0) {
      const a = labelAddress(`mainnet-shape-address-${this.fresh++}`);
      this.known.push(a);
      return a;
    }
    if (r < 0.7) return this.pickSender().address;
    return this.known[this.known.length - 1 - this.rng.skewed(this.known.length, 3)]!;
  }

  pickKind(): Kind {
    let r = this.rng.next();
    for (const k of KINDS) {
      r -= MIX[k];
      if (r < 0) return k;
    }
    return 'eth-transfer';
  }

  pickToken(s: Sender): number {
    const rng = this.rng;
    if (rng.chance(0.7)) return rng.skewed(HOT_TOKENS, 1.6);
    const t = HOT_TOKENS + rng.skewed(TAIL_TOKENS, 2);
    return this.balance(t, s.hex) > 0n ? t : rng.skewed(HOT_TOKENS, 1.6);
  }

  /** Plans one swap on the model (the caller checks allowance); undefined when it cannot. */
  planSwap(s: Sender): Swap | undefined {
    const { rng } = this;
    const { pools } = this.actors;
    const pool = pools[rng.chance(0.7) ? rng.skewed(3, 1.5) : 3 + rng.skewed(pools.length - 3, 2)]!;
    const canPay = (t: number): boolean => this.routerAllowed[t]!.has(s.hex) && this.balance(t, s.hex) !== 0n;
    let zeroForOne = rng.chance(0.5);
    let tIn = zeroForOne ? pool.t0 : pool.t1;
    if (!canPay(tIn)) {
      zeroForOne = !zeroForOne;
      tIn = zeroForOne ? pool.t0 : pool.t1;
      if (!canPay(tIn)) return undefined;
    }
    const have = this.bal[tIn]!.get(s.hex)!;
    const cap = (zeroForOne ? pool.r0 : pool.r1) / 5000n;
    const amountIn = rng.bigint(1n, have < cap ? have : cap);
    const out = swapOut(pool, zeroForOne, amountIn);
    if (out === 0n) return undefined;
    return { pool, zeroForOne, amountIn, out };
  }

  applySwap(s: Sender, w: Swap): void {
    const { tokens } = this.actors;
    const { pool, zeroForOne, amountIn, out } = w;
    const [tIn, tOut] = zeroForOne ? [pool.t0, pool.t1] : [pool.t1, pool.t0];
    this.move(tIn, s.hex, pool.address.toString(), amountIn);
    this.move(tOut, pool.address.toString(), s.hex, out);
    if (zeroForOne) {
      pool.r0 += amountIn;
      pool.r1 -= out;
    } else {
      pool.r1 += amountIn;
      pool.r0 -= out;
    }
    const pa = pool.address.toString();
    this.touch(tokens[tIn]!, `b${s.hex}`, tokens[tIn]!, `b${pa}`, tokens[tOut]!, `b${pa}`, tokens[tOut]!, `b${s.hex}`);
    this.touch(pool.address, 'r0', pool.address, 'r1', pool.address, 'p0', pool.address, 'p1', pool.address, 't');
  }
}

/**
 * The contracts' genesis storage, by address: every sender holds the hot tokens (the router
 * allowed), a few hold each tail token, the pools hold their reserves; every token its supply.
 */
function genesisStorage(m: ShapeModel): Map<string, Map<string, string>> {
  const { rng, bal } = m;
  const { senders, router, tokens, pools } = m.actors;
  const storage = new Map<string, Map<string, string>>();
  const setSlot = (a: Address, slot: Uint8Array, v: bigint): void => {
    let s = storage.get(a.toString());
    if (s === undefined) storage.set(a.toString(), (s = new Map()));
    s.set(bytesToHex(slot), word(v));
  };
  const supply = tokens.map(() => 0n);
  const credit = (t: number, holder: Address, v: bigint): void => {
    bal[t]!.set(holder.toString(), m.balance(t, holder.toString()) + v);
    supply[t]! += v;
    setSlot(tokens[t]!, mappingSlot(holder.bytes, 0n), m.balance(t, holder.toString()));
  };
  for (const s of senders) {
    for (let t = 0; t < HOT_TOKENS; t++) {
      credit(t, s.address, rng.bigint(1_000n, 5_000_000n) * ETHER);
      setSlot(tokens[t]!, mappingSlot(router.bytes, mappingSlot(s.address.bytes, 1n)), MAX);
      m.routerAllowed[t]!.add(s.hex);
    }
  }
  for (let t = HOT_TOKENS; t < tokens.length; t++) {
    for (let k = 0; k < TAIL_HOLDERS; k++) {
      const s = senders[rng.int(0, senders.length - 1)]!;
      credit(t, s.address, rng.bigint(10n, 100_000n) * ETHER);
    }
  }
  for (const p of pools) {
    credit(p.t0, p.address, p.r0);
    credit(p.t1, p.address, p.r1);
    setSlot(p.address, hexBytes(word(0n)), BigInt(tokens[p.t0]!.toString()));
    setSlot(p.address, hexBytes(word(1n)), BigInt(tokens[p.t1]!.toString()));
    setSlot(p.address, hexBytes(word(2n)), p.r0);
    setSlot(p.address, hexBytes(word(3n)), p.r1);
  }
  tokens.forEach((t, i) => {
    setSlot(t, hexBytes(word(2n)), supply[i]!);
  });
  return storage;
}

/** genesis.json: the senders' ether; the contracts with their code and storage. */
function genesisOf(m: ShapeModel, c: MainnetContracts): GethGenesis {
  const storage = genesisStorage(m);
  const { senders, router, tokens, pools, nfts } = m.actors;
  const alloc: GethGenesis['alloc'] = {};
  for (const s of senders) alloc[s.hex] = { balance: `0x${(1_000n * ETHER).toString(16)}` };
  const code = (a: Address, runtime: Uint8Array): void => {
    const st = storage.get(a.toString());
    alloc[a.toString()] = {
      balance: '0x0',
      code: bytesToHex(runtime),
      ...(st !== undefined ? { storage: Object.fromEntries([...st.entries()].sort()) } : {}),
    };
  };
  code(router, c.router.runtime);
  for (const t of tokens) code(t, c.token.runtime);
  for (const p of pools) code(p.address, c.pair.runtime);
  for (const n of nfts) code(n, c.nft.runtime);
  return preMergeGenesis({
    chainId: CHAIN_ID,
    londonBlock: 0,
    timestamp: GENESIS_TIMESTAMP,
    extraData: bytesToHex(new TextEncoder().encode('chainnode mainnet shape')),
    gasLimit: GAS_LIMIT,
    difficulty: 0x400000n,
    alloc,
    baseFeePerGas: GWEI,
  }) as GethGenesis;
}

/** A state trie as the import's: hashed keys, values as views, core's Keccak (through `common`). */
function stateTrie(
  db: DB<string, Uint8Array> | StoreWriter['trieDb'],
  common: Common,
  cacheSize?: number,
): MerklePatriciaTrie {
  const cache = cacheSize !== undefined ? { cacheSize } : {};
  return new MerklePatriciaTrie({ db, useKeyHashing: true, valueEncoding: 'view', common, ...cache });
}

/** Where the blocks execute: the VM over the state, and the datadir's writer when there is one. */
interface ShapeState {
  common: Common;
  vm: Awaited<ReturnType<typeof createVM>>;
  /** The state in memory, without a datadir. */
  nodes: StateNodes;
  writer: StoreWriter | undefined;
  genesisHeader: BlockHeader;
}

/**
 * Without a datadir: the state in memory (one state). With one: the import's setup (pipeline.ts,
 * genesis.ts): the trie over the store writer's node overlay, a 200,000-node cache, senders
 * recovered by libsecp256k1. Both hash with core's hash-wasm Keccak, as the import does.
 */
async function openState(genesis: GethGenesis, sink: string | undefined): Promise<ShapeState> {
  const common = createCommonFromGethGenesis(genesis, {
    chain: 'chainnode-mainnet-shape',
    customCrypto: sink === undefined ? { keccak256 } : { ecrecover: nativeEcrecover, keccak256 },
  });
  const nodes = new StateNodes();
  const genesisSm = new MerkleStateManager({
    trie: stateTrie(nodes, common),
    common,
    caches: new Caches(),
  });
  await genesisSm.generateCanonicalGenesis(parseGethGenesisState(genesis));
  const genesisRoot = await genesisSm.getStateRoot();
  const imported = sink === undefined ? undefined : await openImport(sink, genesis, genesisRoot, common);
  if (imported !== undefined) nodes.map.clear();
  const genesisHeader = createBlockHeader(
    {
      number: 0n,
      gasLimit: GAS_LIMIT,
      difficulty: 0x400000n,
      timestamp: BigInt(GENESIS_TIMESTAMP),
      extraData: hexBytes(genesis.extraData as string),
      nonce: hexBytes(genesis.nonce as string),
      stateRoot: genesisRoot,
      baseFeePerGas: GWEI,
    },
    { common, setHardfork: true },
  );
  const storedGenesis = imported?.genesisHash;
  if (storedGenesis !== undefined && bytesToHex(storedGenesis) !== bytesToHex(genesisHeader.hash()))
    throw new Error(
      `the import built genesis ${bytesToHex(storedGenesis)}, the generator ${bytesToHex(genesisHeader.hash())}`,
    );
  const sm = imported?.sm ?? genesisSm;
  const vm = await createVM({ common: common.copy(), stateManager: sm, setHardfork: true });
  return { common, vm, nodes, writer: imported?.writer, genesisHeader };
}

/** The datadir as the import opens it: genesis written by the pipeline, then the store's writer. */
async function openImport(sink: string, genesis: GethGenesis, genesisRoot: Uint8Array, common: Common) {
  const pipeline = await ImportPipeline.open({ datadir: sink, genesis: { json: genesis } });
  const genesisHash = pipeline.genesisHash;
  await pipeline.close();
  const writer = await StoreWriter.open(sink);
  const sm = new MerkleStateManager({ trie: stateTrie(writer.trieDb, common, 200_000), common, caches: new Caches() });
  await sm.setStateRoot(genesisRoot);
  return { genesisHash, writer, sm };
}

type Signer = (unsigned: TypedTransaction, s: Sender) => TypedTransaction;

function signerOf(sink: string | undefined): Signer {
  return (unsigned, s) => {
    const { signature, recid } = secp256k1.ecdsaSign(unsigned.getHashedMessageToSign(), s.key);
    const signed = (
      unsigned as { addSignature(v: bigint, r: Uint8Array, s: Uint8Array, c: boolean): TypedTransaction }
    ).addSignature(BigInt(recid), signature.slice(0, 32), signature.slice(32), true);
    // The signer is known: spare the executor a recovery, unless it stands for the import.
    if (sink === undefined) (signed.cache as { senderPubKey?: Uint8Array }).senderPubKey = s.pub;
    return signed;
  };
}

interface Timing {
  executeSeconds: number;
  writeSeconds: number;
  executeCpuSeconds: number;
  writeCpuSeconds: number;
}

/** Runs `fn`, adding its wall-clock and CPU seconds to `what`'s. */
async function timed<T>(t: Timing, what: 'execute' | 'write', fn: () => Promise<T>): Promise<T> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const r = await fn();
  if (what === 'execute') {
    t.executeSeconds += (performance.now() - wall) / 1000;
    t.executeCpuSeconds += cpuSince(cpu);
  } else {
    t.writeSeconds += (performance.now() - wall) / 1000;
    t.writeCpuSeconds += cpuSince(cpu);
  }
  return r;
}

/** Mean gas per unit (swap step, NFT) of each kind so far. */
type PerUnit = Record<Kind, { gas: number; units: number }>;

/** One generation under way: the model, where blocks execute and go, and what is counted. */
interface Generation {
  o: GenerateOptions;
  c: MainnetContracts;
  m: ShapeModel;
  st: ShapeState;
  txCommon: Common;
  sign: Signer;
  out: WriteStream;
  stats: ShapeStats;
  perUnit: PerUnit;
  timing: Timing;
  growth: BlockGrowth[];
  /** With a datadir: the total difficulty so far, and when the writer last flushed. */
  td: bigint;
  lastFlush: number;
}

/** One block's transactions, planned on the model until the block is full. */
class BlockPlan {
  readonly planned: Planned[] = [];
  estGas = 0;

  constructor(
    readonly g: Generation,
    private readonly baseFee: bigint,
  ) {}

  add(s: Sender, kind: Kind, to: Address, data: Uint8Array, gas: number, ok = true, value = 0n, units = 1): void {
    const { m, txCommon } = this.g;
    const nonce = m.nonces.get(s.hex) ?? 0n;
    m.nonces.set(s.hex, nonce + 1n);
    const tip = BigInt(m.rng.int(1, 200)) * (GWEI / 100n);
    const gasLimit = kind === 'eth-transfer' ? 21_000n : BigInt(gas * 2 + 50_000);
    const base = { nonce, gasLimit, to, value, data };
    const unsigned = m.rng.chance(0.08)
      ? createLegacyTx({ ...base, gasPrice: this.baseFee + tip }, { common: txCommon })
      : createFeeMarket1559Tx(
          { ...base, chainId: BigInt(CHAIN_ID), maxPriorityFeePerGas: tip, maxFeePerGas: this.baseFee * 2n + tip },
          { common: txCommon },
        );
    this.planned.push({ tx: this.g.sign(unsigned, s), kind, ok, units });
    m.accounts.add(s.hex);
    // The estimate that fills the block: the mean gas per unit (swap step, NFT) of this kind so
    // far; the static figure until the kind has been seen.
    const seen = this.g.perUnit[kind];
    this.estGas += seen.units > 0 ? (seen.gas / seen.units) * units : gas;
  }

  fill(): void {
    const { m } = this.g;
    const want = m.rng.int(150, 250);
    while (
      (this.planned.length < want || this.estGas < BLOCK_GAS_FLOOR) &&
      this.planned.length < 250 &&
      this.estGas < BLOCK_GAS_CAP
    ) {
      const s = m.pickSender();
      const kind = m.pickKind();
      if (PLAN[kind]?.(this, s, kind) === true) continue;
      // eth-transfer, and the fallback when the drawn action had nothing to act on.
      const to = m.recipient();
      m.accounts.add(to.toString());
      this.add(s, 'eth-transfer', to, new Uint8Array(0), 21_000, true, m.rng.bigint(10n ** 14n, 10n ** 18n));
    }
  }
}

const swapCall = (c: MainnetContracts, w: Swap, minOut: bigint, to: Sender) =>
  encodeCall(c.router, 'swapExactIn', [w.pool.address.toString(), w.zeroForOne, w.amountIn, minOut, to.hex]);

const planSwapTx = (b: BlockPlan, s: Sender, kind: Kind): boolean => {
  const { m, c } = b.g;
  const w = m.planSwap(s);
  if (w === undefined) return false;
  if (kind === 'dex-swap') {
    m.applySwap(s, w);
    b.add(s, kind, m.actors.router, swapCall(c, w, (w.out * 99n) / 100n, s), 95_000);
  } else {
    b.add(s, kind, m.actors.router, swapCall(c, w, w.out + 1n + w.out / 50n, s), 60_000, false);
  }
  return true;
};

/** Plans one transaction of the kind from the sender on the model; false when it had nothing to act on. */
const PLAN: Partial<Record<Kind, (b: BlockPlan, s: Sender, kind: Kind) => boolean>> = {
  'erc20-transfer': (b, s, kind) => {
    const { m, c } = b.g;
    const t = m.pickToken(s);
    const have = m.balance(t, s.hex);
    if (have === 0n) return false;
    const to = m.recipient();
    const v = m.rng.bigint(1n, have / 20n + 1n);
    const token = m.actors.tokens[t]!;
    m.move(t, s.hex, to.toString(), v);
    m.touch(token, `b${s.hex}`, token, `b${to.toString()}`);
    b.add(s, kind, token, encodeCall(c.token, 'transfer', [to.toString(), v]), 45_000);
    return true;
  },
  'erc20-approve': (b, s, kind) => {
    const { m, c } = b.g;
    const t = m.pickToken(s);
    const toRouter = m.rng.chance(0.5);
    const spender = toRouter ? m.actors.router : m.recipient();
    const v = m.rng.chance(0.6) ? MAX : m.rng.bigint(1n, 10n ** 24n);
    if (toRouter && v === MAX) m.routerAllowed[t]!.add(s.hex);
    else if (toRouter) m.routerAllowed[t]!.delete(s.hex);
    const token = m.actors.tokens[t]!;
    m.touch(token, `a${s.hex}${spender.toString()}`);
    b.add(s, kind, token, encodeCall(c.token, 'approve', [spender.toString(), v]), 46_000);
    return true;
  },
  'dex-swap': planSwapTx,
  'dex-swap-reverted': planSwapTx,
  'router-multicall': (b, s, kind) => {
    const { m, c } = b.g;
    const steps: Uint8Array[] = [];
    const n = m.rng.int(2, 5);
    for (let i = 0; i < n; i++) {
      const w = m.planSwap(s);
      if (w === undefined) continue;
      m.applySwap(s, w);
      steps.push(swapCall(c, w, w.out, s));
    }
    if (steps.length === 0) return false;
    const data = encodeCall(c.router, 'multicall', [steps]);
    b.add(s, kind, m.actors.router, data, 40_000 + 80_000 * steps.length, true, 0n, steps.length);
    return true;
  },
  'nft-mint': (b, s, kind) => {
    const { m, c } = b.g;
    const { rng } = m;
    const nft = m.actors.nfts;
    const i = rng.chance(0.7) ? rng.skewed(HOT_NFTS, 1.5) : HOT_NFTS + rng.skewed(TAIL_NFTS, 2);
    const n = 1 + rng.skewed(12, 1.6);
    const ids = m.owned[i]!.get(s.hex) ?? [];
    const mine = m.ownedBy.get(s.hex) ?? [];
    if (mine.length === 0) m.holders.push(s);
    m.ownedBy.set(s.hex, mine);
    for (let k = 0; k < n; k++) {
      ids.push(m.nftNext[i]! + BigInt(k));
      mine.push(i);
      m.touch(nft[i]!, `o${m.nftNext[i]! + BigInt(k)}`);
    }
    m.touch(nft[i]!, `b${s.hex}`, nft[i]!, 'next');
    m.owned[i]!.set(s.hex, ids);
    m.nftNext[i]! += BigInt(n);
    b.add(s, kind, nft[i]!, encodeCall(c.nft, 'mint', [s.hex, n]), 30_000 + 47_000 * n, true, 0n, n);
    return true;
  },
  'nft-transfer': (b, _s, kind) => {
    // The sender is a holder (a minter that still holds one).
    const { m, c } = b.g;
    const { rng, holders } = m;
    if (holders.length === 0) return false;
    const h = holders[rng.int(0, holders.length - 1)]!;
    const mine = m.ownedBy.get(h.hex)!;
    const i = mine.splice(rng.int(0, mine.length - 1), 1)[0]!;
    if (mine.length === 0) holders.splice(holders.indexOf(h), 1);
    const ids = m.owned[i]!.get(h.hex)!;
    const id = ids.splice(rng.int(0, ids.length - 1), 1)[0]!;
    const to = m.recipient();
    const nft = m.actors.nfts[i]!;
    m.touch(nft, `o${id}`, nft, `b${h.hex}`, nft, `b${to.toString()}`);
    b.add(h, kind, nft, encodeCall(c.nft, 'transferFrom', [h.hex, to.toString(), id]), 60_000);
    return true;
  },
};

type Executed = Awaited<ReturnType<typeof runBlock>>;

/** Executes the block's transactions on the VM and seals the block with the roots it computed. */
async function executeAndSeal(
  g: Generation,
  parent: BlockHeader,
  number: number,
  txs: TypedTransaction[],
  coinbase: Address,
  baseFee: bigint,
): Promise<{ block: Block; result: Executed; frames: BlockFrameRecorder | undefined }> {
  const { common, vm } = g.st;
  const headerData = {
    parentHash: parent.hash(),
    uncleHash: KECCAK256_RLP_ARRAY,
    coinbase,
    number: BigInt(number),
    gasLimit: GAS_LIMIT,
    timestamp: parent.timestamp + 12n,
    extraData: new TextEncoder().encode('chainnode mainnet shape'),
    mixHash: keccak256(new TextEncoder().encode(`mix ${number}`)),
    nonce: new Uint8Array(8),
    baseFeePerGas: baseFee,
  };
  const draftHeader = createBlockHeader(headerData, { common, setHardfork: true, calcDifficultyFromHeader: parent });
  const draft = new Block(draftHeader, txs, [], undefined, { common });
  // With a datadir that records them, the call frames and state changes, as the import records them.
  const frames =
    g.st.writer?.recordsFrames() === true && txs.length > 0 ? new BlockFrameRecorder(vm, draft) : undefined;
  const result = await timed(g.timing, 'execute', async () => {
    try {
      return await runBlock(vm, { block: draft, generate: true, skipBlockValidation: true });
    } finally {
      frames?.detach();
    }
  });
  const header = createBlockHeader(
    {
      ...headerData,
      difficulty: draftHeader.difficulty,
      stateRoot: result.stateRoot,
      transactionsTrie: await genTransactionsTrieRoot(txs),
      receiptTrie: result.receiptsRoot,
      logsBloom: result.logsBloom,
      gasUsed: result.gasUsed,
    },
    { common, setHardfork: true },
  );
  return { block: new Block(header, txs, [], undefined, { common }), result, frames };
}

/** Checks every receipt's status against the plan; counts the block in the statistics. Returns its gas. */
function recordBlock(g: Generation, planned: Planned[], result: Executed, number: number): number {
  const { stats, perUnit } = g;
  let cumulative = 0n;
  for (const [i, p] of planned.entries()) {
    const r = result.receipts[i]!;
    const ok = 'status' in r && r.status === 1;
    if (ok !== p.ok) throw new Error(`block ${number} tx ${i} (${p.kind}): status ${ok ? 1 : 0}, planned ${p.ok}`);
    const gas = Number(r.cumulativeBlockGasUsed - cumulative);
    cumulative = r.cumulativeBlockGasUsed;
    stats.byKind[p.kind].txs++;
    stats.byKind[p.kind].gas += gas;
    perUnit[p.kind].gas += gas;
    perUnit[p.kind].units += p.units;
    for (const [address] of r.logs) {
      const a = bytesToHex(address);
      stats.logsByAddress[a] = (stats.logsByAddress[a] ?? 0) + 1;
      stats.logs++;
    }
  }
  const gasUsed = Number(result.gasUsed);
  stats.blocks++;
  stats.txs += planned.length;
  stats.gasUsed += gasUsed;
  stats.minTxs = Math.min(stats.minTxs, planned.length);
  stats.maxTxs = Math.max(stats.maxTxs, planned.length);
  stats.minGas = Math.min(stats.minGas, gasUsed);
  stats.maxGas = Math.max(stats.maxGas, gasUsed);
  return gasUsed;
}

/** With a datadir: the block to the writer (flushed as the import flushes) and what the archive trie gained. */
async function stageBlock(
  g: Generation,
  writer: StoreWriter,
  block: Block,
  result: Executed,
  raw: Uint8Array,
  frames: BlockFrameRecorder | undefined,
) {
  await timed(g.timing, 'write', async () => {
    const staged = (writer.trieDb as unknown as { current: Map<string, Uint8Array> }).current;
    let trieBytes = 0;
    for (const [k, v] of staged) trieBytes += k.length / 2 + v.length;
    g.growth.push({
      number: Number(block.header.number),
      txs: block.transactions.length,
      gas: Number(result.gasUsed),
      storageWrites: g.m.slots.size,
      accountsTouched: g.m.accounts.size,
      trieNodes: staged.size,
      trieBytes,
    });
    g.td += block.header.difficulty;
    writer.addBlock({ ...blockInput(block, result, raw, g.td), frames: frames?.row(block.hash()) });
    if (
      writer.stagedBlocks() >= 256 ||
      writer.stagedBytes() >= 64 * 2 ** 20 ||
      performance.now() - g.lastFlush > 2000
    ) {
      await writer.flush();
      g.lastFlush = performance.now();
    }
  });
}

/** Plans, executes, seals and writes block `number` on `parent`; returns its header. */
async function generateBlock(g: Generation, parent: BlockHeader, number: number): Promise<BlockHeader> {
  const { m, stats } = g;
  const baseFee = parent.calcNextBaseFee();
  m.startBlock();
  const plan = new BlockPlan(g, baseFee);
  plan.fill();
  const txs = plan.planned.map((p) => p.tx);
  const { builders } = m.actors;
  const coinbase = builders[m.rng.int(0, builders.length - 1)]!;
  m.accounts.add(coinbase.toString());
  stats.storageWrites += m.slots.size;
  stats.accountsTouched += m.accounts.size;
  const { block, result, frames } = await executeAndSeal(g, parent, number, txs, coinbase, baseFee);
  recordBlock(g, plan.planned, result, number);
  const raw = RLP.encode(block.raw());
  if (!g.out.write(raw)) await once(g.out, 'drain');
  if (g.st.writer !== undefined) await stageBlock(g, g.st.writer, block, result, raw, frames);
  return block.header;
}

function progressLine(g: Generation, number: number, t0: number): string {
  const { stats, timing: t } = g;
  const mgas = stats.gasUsed / 1e6;
  const secs = (performance.now() - t0) / 1000;
  return (
    `block ${number}/${g.o.blocks}: ${stats.txs} txs, ${stats.logs} logs, ${mgas.toFixed(0)} Mgas; ` +
    `execution ${(mgas / t.executeSeconds).toFixed(1)} Mgas/s, with writes ${(mgas / (t.executeSeconds + t.writeSeconds)).toFixed(1)} ` +
    `(per CPU-second ${(mgas / (t.executeCpuSeconds + t.writeCpuSeconds)).toFixed(1)}), ${secs.toFixed(0)} s, ` +
    `heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB, ${g.st.writer === undefined ? g.st.nodes.map.size : 'archive'} state nodes`
  );
}

function emptyStats(): ShapeStats {
  return {
    blocks: 0,
    txs: 0,
    logs: 0,
    gasUsed: 0,
    storageWrites: 0,
    accountsTouched: 0,
    byKind: Object.fromEntries(KINDS.map((k) => [k, { txs: 0, gas: 0 }])) as ShapeStats['byKind'],
    logsByAddress: {},
    minTxs: Number.MAX_SAFE_INTEGER,
    maxTxs: 0,
    minGas: Number.MAX_SAFE_INTEGER,
    maxGas: 0,
    freshAddresses: 0,
    headHash: '',
    headStateRoot: '',
  };
}

function manifestOf(o: GenerateOptions, c: MainnetContracts, a: Actors, stats: ShapeStats): Manifest {
  return {
    shape: 'mainnet',
    generatorVersion: GENERATOR_VERSION,
    params: { blocks: stats.blocks, senders: o.senders, seed: o.seed },
    solcVersion: c.solcVersion,
    chainId: CHAIN_ID,
    addresses: {
      router: a.router.toString(),
      tokens: a.tokens.map((t) => t.toString()),
      hotTokens: HOT_TOKENS,
      pairs: a.pools.map((p) => ({ address: p.address.toString(), token0: p.t0, token1: p.t1 })),
      nfts: a.nfts.map((n) => n.toString()),
      hotNfts: HOT_NFTS,
      builders: a.builders.map((b) => b.toString()),
    },
    stats,
  };
}

export async function generateMainnetShape(o: GenerateOptions): Promise<GenerateResult> {
  const t0 = performance.now();
  const progress = o.progress ?? (() => {});
  const c: MainnetContracts = compileMainnetContracts();
  const m = new ShapeModel(new Rng(o.seed), actorsOf(o.senders));
  const genesis = genesisOf(m, c);
  const st = await openState(genesis, o.datadir);
  const genesisJson = `${JSON.stringify(genesis, null, 1)}\n`;
  o.onGenesis?.(genesisJson);
  progress(`genesis ${bytesToHex(st.genesisHeader.hash())}: ${Object.keys(genesis.alloc).length} accounts`);
  const g: Generation = {
    o,
    c,
    m,
    st,
    txCommon: st.common.copy(),
    sign: signerOf(o.datadir),
    out: createWriteStream(o.chainRlpPath),
    stats: emptyStats(),
    perUnit: Object.fromEntries(KINDS.map((k) => [k, { gas: 0, units: 0 }])) as PerUnit,
    timing: { executeSeconds: 0, writeSeconds: 0, executeCpuSeconds: 0, writeCpuSeconds: 0 },
    growth: [],
    td: st.genesisHeader.difficulty,
    lastFlush: performance.now(),
  };
  let parent = st.genesisHeader;
  for (let number = 1; number <= o.blocks; number++) {
    parent = await generateBlock(g, parent, number);
    if (st.writer === undefined && number % 20 === 0) st.nodes.retainOnly(parent.stateRoot);
    if (o.stop?.() === true && number < o.blocks) {
      progress(`stopped after block ${number}`);
      break;
    }
    if (number % 50 === 0 || number === o.blocks || number <= 3) progress(progressLine(g, number, t0));
  }
  g.out.end();
  await once(g.out, 'finish');
  const writer = st.writer;
  if (writer !== undefined)
    await timed(g.timing, 'write', async () => {
      await writer.flush();
      await writer.close();
    });
  g.stats.freshAddresses = m.fresh;
  g.stats.headHash = bytesToHex(parent.hash());
  g.stats.headStateRoot = bytesToHex(parent.stateRoot);
  return {
    genesisJson,
    manifest: manifestOf(o, c, m.actors, g.stats),
    timing: { totalSeconds: (performance.now() - t0) / 1000, ...g.timing },
    growth: g.growth,
  };
}

/** The store's rows of an executed block, as the import pipeline builds them (pipeline.ts). */
function blockInput(
  block: Block,
  result: Awaited<ReturnType<typeof runBlock>>,
  raw: Uint8Array,
  td: bigint,
): BlockInput {
  const txHashes = block.transactions.map((tx) => tx.hash());
  return {
    number: block.header.number,
    hash: block.hash(),
    headerRlp: block.header.serialize(),
    body: { size: raw.length, transactions: block.transactions.map((tx) => tx.serialize()), uncles: [] },
    totalDifficulty: td,
    senders: block.transactions.map((tx) => tx.getSenderAddress().bytes),
    txHashes,
    receipts: result.receipts.map((r, i) => ({
      type: block.transactions[i]?.type ?? 0,
      statusOrState: 'stateRoot' in r ? r.stateRoot : Uint8Array.of(r.status),
      cumulativeGasUsed: r.cumulativeBlockGasUsed,
    })),
    logs: result.receipts.map((r) => r.logs.map(([address, topics, data]) => ({ address, topics, data }))),
    logsBloom: result.logsBloom,
  };
}
