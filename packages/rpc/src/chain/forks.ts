// The fork schedule of the chain a store holds, read from its geth genesis.json `config`: which
// blob parameters apply to a block (EIP-4844 blob gas price, EIP-7840 blobSchedule), what
// eth_config (EIP-7910) reports, and the EIP-1559 next base fee. geth is the reference: its
// params.ChainConfig field names, its forkid (EIP-2124/EIP-6122) and its eip4844/eip1559 code.
import { crc32 } from 'node:zlib';
import { toQuantity } from '@chainnode/core';
import type { ChainInfo, HeaderRecord, Hex } from '@chainnode/core';

/** Blob parameters of a fork (EIP-7840). */
export interface BlobParams {
  target: number;
  max: number;
  baseFeeUpdateFraction: number;
}

/** Forks activated by block number, in geth's ChainConfig order (forkid gathers these). */
const BLOCK_FORKS = [
  'homesteadBlock',
  'daoForkBlock',
  'eip150Block',
  'eip155Block',
  'eip158Block',
  'byzantiumBlock',
  'constantinopleBlock',
  'petersburgBlock',
  'istanbulBlock',
  'muirGlacierBlock',
  'berlinBlock',
  'londonBlock',
  'arrowGlacierBlock',
  'grayGlacierBlock',
  'mergeNetsplitBlock',
] as const;

/** Forks activated by timestamp, in order; `blob` is the key of its blobSchedule entry. */
const TIME_FORKS = [
  { key: 'shanghaiTime', name: 'shanghai' },
  { key: 'cancunTime', name: 'cancun' },
  { key: 'pragueTime', name: 'prague' },
  { key: 'osakaTime', name: 'osaka' },
  { key: 'bpo1Time', name: 'bpo1' },
  { key: 'bpo2Time', name: 'bpo2' },
  { key: 'bpo3Time', name: 'bpo3' },
  { key: 'bpo4Time', name: 'bpo4' },
  { key: 'bpo5Time', name: 'bpo5' },
  { key: 'amsterdamTime', name: 'amsterdam' },
] as const;

/** Defaults of EIP-4844 / EIP-7691 for configs without a blobSchedule entry. */
const DEFAULT_BLOB: Record<string, BlobParams> = {
  cancun: { target: 3, max: 6, baseFeeUpdateFraction: 3_338_477 },
  prague: { target: 6, max: 9, baseFeeUpdateFraction: 5_007_716 },
  osaka: { target: 6, max: 9, baseFeeUpdateFraction: 5_007_716 },
};

export const GAS_PER_BLOB = 131_072n;
const MIN_BLOB_BASE_FEE = 1n;
/** EIP-7918 (Osaka): the blob base fee is bounded below by the execution cost of a blob. */
const BLOB_BASE_COST = 8192n; // 2^13

const PRECOMPILES: readonly [string, number, string][] = [
  ['ECREC', 1, 'frontier'],
  ['SHA256', 2, 'frontier'],
  ['RIPEMD160', 3, 'frontier'],
  ['ID', 4, 'frontier'],
  ['MODEXP', 5, 'byzantium'],
  ['BN254_ADD', 6, 'byzantium'],
  ['BN254_MUL', 7, 'byzantium'],
  ['BN254_PAIRING', 8, 'byzantium'],
  ['BLAKE2F', 9, 'istanbul'],
  ['KZG_POINT_EVALUATION', 10, 'cancun'],
  ['BLS12_G1ADD', 11, 'prague'],
  ['BLS12_G1MSM', 12, 'prague'],
  ['BLS12_G2ADD', 13, 'prague'],
  ['BLS12_G2MSM', 14, 'prague'],
  ['BLS12_PAIRING_CHECK', 15, 'prague'],
  ['BLS12_MAP_FP_TO_G1', 16, 'prague'],
  ['BLS12_MAP_FP2_TO_G2', 17, 'prague'],
  ['P256VERIFY', 0x100, 'osaka'],
];

type Config = Record<string, unknown>;

const num = (v: unknown): bigint | undefined =>
  typeof v === 'number' ? BigInt(v) : typeof v === 'string' && v !== '' ? BigInt(v) : undefined;

export interface TimeFork {
  name: string;
  time: bigint;
  blob?: BlobParams;
}

/** The schedule of one chain; built once per store (forksOf). */
export class ForkSchedule {
  readonly config: Config;
  readonly timeForks: TimeFork[];
  private readonly genesisTime: bigint;

  constructor(
    private readonly info: ChainInfo,
    genesis: unknown,
  ) {
    const g = (typeof genesis === 'object' && genesis !== null ? genesis : {}) as Config;
    this.config = (typeof g.config === 'object' && g.config !== null ? g.config : {}) as Config;
    this.genesisTime = num(g.timestamp) ?? 0n;
    const schedule = (this.config.blobSchedule ?? {}) as Record<string, BlobParams | undefined>;
    this.timeForks = [];
    let blob: BlobParams | undefined;
    for (const f of TIME_FORKS) {
      const t = num(this.config[f.key]);
      if (t === undefined) continue;
      blob = schedule[f.name] ?? DEFAULT_BLOB[f.name] ?? blob;
      const fork: TimeFork = { name: f.name, time: t };
      if (blob !== undefined && f.name !== 'shanghai') fork.blob = blob;
      this.timeForks.push(fork);
    }
  }

  blockFork(key: (typeof BLOCK_FORKS)[number]): bigint | undefined {
    return num(this.config[key]);
  }

  /** Whether London (EIP-1559) rules apply at block `number`. */
  isLondon(number: bigint): boolean {
    const l = this.blockFork('londonBlock');
    return l !== undefined && number >= l;
  }

  /** The newest time fork active at `timestamp` (undefined before Shanghai). */
  timeForkAt(timestamp: bigint): TimeFork | undefined {
    let out: TimeFork | undefined;
    for (const f of this.timeForks) if (timestamp >= f.time) out = f;
    return out;
  }

  /** Whether the time fork `name` is active at `timestamp`. */
  isActive(name: string, timestamp: bigint): boolean {
    const f = this.timeForks.find((x) => x.name === name);
    return f !== undefined && timestamp >= f.time;
  }

  /** Blob parameters at `timestamp` (undefined before Cancun). */
  blobParams(timestamp: bigint): BlobParams | undefined {
    return this.timeForkAt(timestamp)?.blob;
  }

  /** geth's eip4844.CalcBlobFee: the blob gas price of a block (undefined before Cancun). */
  blobGasPrice(header: HeaderRecord): bigint | undefined {
    const p = this.blobParams(header.timestamp);
    if (p === undefined || header.excessBlobGas === undefined) return undefined;
    return fakeExponential(MIN_BLOB_BASE_FEE, header.excessBlobGas, BigInt(p.baseFeeUpdateFraction));
  }

  /** geth's eip4844.CalcExcessBlobGas for the child of `parent` at `childTime`. */
  nextExcessBlobGas(parent: HeaderRecord, childTime: bigint): bigint | undefined {
    const p = this.blobParams(childTime);
    if (p === undefined) return undefined;
    const parentExcess = parent.excessBlobGas ?? 0n;
    const parentUsed = parent.blobGasUsed ?? 0n;
    const target = BigInt(p.target) * GAS_PER_BLOB;
    if (parentExcess + parentUsed < target) return 0n;
    if (this.isActive('osaka', childTime) && parent.baseFeePerGas !== undefined) {
      // EIP-7918: when execution gas is dearer than blobs, excess grows without subtracting the target fully.
      const parentParams = this.blobParams(parent.timestamp) ?? p;
      const blobFee = fakeExponential(MIN_BLOB_BASE_FEE, parentExcess, BigInt(parentParams.baseFeeUpdateFraction));
      if (BLOB_BASE_COST * parent.baseFeePerGas > GAS_PER_BLOB * blobFee) {
        return parentExcess + (parentUsed * BigInt(p.max - p.target)) / BigInt(p.max);
      }
    }
    return parentExcess + parentUsed - target;
  }

  /** geth's eip1559.CalcBaseFee for the child of `parent` (undefined before London). */
  nextBaseFee(parent: HeaderRecord): bigint | undefined {
    const child = parent.number + 1n;
    if (!this.isLondon(child)) return undefined;
    if (!this.isLondon(parent.number) || parent.baseFeePerGas === undefined) return 1_000_000_000n;
    const target = parent.gasLimit / 2n;
    const base = parent.baseFeePerGas;
    if (parent.gasUsed === target) return base;
    if (parent.gasUsed > target) {
      let delta = (base * (parent.gasUsed - target)) / target / 8n;
      if (delta < 1n) delta = 1n;
      return base + delta;
    }
    const delta = (base * (target - parent.gasUsed)) / target / 8n;
    return base - delta > 0n ? base - delta : 0n;
  }

  /**
   * EIP-7910's fork configuration at `timestamp` (for `current`) or of a later fork: what
   * eth_config answers; null before Cancun (the EIP's scope), as geth does.
   */
  configAt(fork: TimeFork, head: HeaderRecord): JsonForkConfig {
    const active = (name: string): boolean =>
      name === 'frontier'
        ? true
        : name === 'byzantium' || name === 'istanbul'
          ? (this.blockFork(`${name}Block` as (typeof BLOCK_FORKS)[number]) ?? 2n ** 64n) <= head.number
          : this.timeForks.some((f) => f.name === name && f.time <= fork.time);
    const precompiles: Record<string, Hex> = {};
    for (const [name, address, since] of [...PRECOMPILES].sort((a, b) => (a[0] < b[0] ? -1 : 1)))
      if (active(since)) precompiles[name] = `0x${address.toString(16).padStart(40, '0')}`;
    const systemContracts: Record<string, Hex> = {};
    if (active('cancun')) systemContracts.BEACON_ROOTS_ADDRESS = '0x000f3df6d732807ef1319fb7b8bb8522d0beac02';
    if (active('prague')) {
      systemContracts.CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS = '0x0000bbddc7ce488642fb579f8b00f3a590007251';
      const deposit = this.config.depositContractAddress;
      systemContracts.DEPOSIT_CONTRACT_ADDRESS = (
        typeof deposit === 'string' ? deposit.toLowerCase() : '0x00000000219ab540356cbb839cbe05303d7705fa'
      ) as Hex;
      systemContracts.HISTORY_STORAGE_ADDRESS = '0x0000f90827f1c53a10cb7a02335b175320002935';
      systemContracts.WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS = '0x00000961ef480eb55e80d19ad83579a64c007002';
    }
    const out: JsonForkConfig = {
      activationTime: Number(fork.time),
      blobSchedule: fork.blob ?? null,
      chainId: toQuantity(this.info.chainId),
      forkId: this.forkId(head.number, fork.time),
      precompiles,
      systemContracts,
    };
    return out;
  }

  /**
   * EIP-2124 fork hash: CRC32 of the genesis hash, then of every fork block and time passed (as
   * 8-byte big-endian), forks at 0 / at or before the genesis time and duplicates skipped.
   */
  forkId(headNumber: bigint, time: bigint): Hex {
    const points: bigint[] = [];
    for (const k of BLOCK_FORKS) {
      const n = this.blockFork(k);
      if (n !== undefined && n > 0n && n <= headNumber && !points.includes(n)) points.push(n);
    }
    const times: bigint[] = [];
    for (const f of this.timeForks)
      if (f.time > this.genesisTime && f.time <= time && !times.includes(f.time)) times.push(f.time);
    points.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    times.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    let crc = crc32(this.info.genesisHash);
    for (const p of [...points, ...times]) {
      const b = Buffer.alloc(8);
      b.writeBigUInt64BE(p);
      crc = crc32(b, crc);
    }
    return `0x${crc.toString(16).padStart(8, '0')}`;
  }
}

export interface JsonForkConfig {
  activationTime: number;
  blobSchedule: BlobParams | null;
  chainId: Hex;
  forkId: Hex;
  precompiles: Record<string, Hex>;
  systemContracts: Record<string, Hex>;
}

/** EIP-4844's fake_exponential: factor * e^(numerator / denominator), in integers. */
export function fakeExponential(factor: bigint, numerator: bigint, denominator: bigint): bigint {
  let i = 1n;
  let output = 0n;
  let acc = factor * denominator;
  while (acc > 0n) {
    output += acc;
    acc = (acc * numerator) / (denominator * i);
    i++;
  }
  return output / denominator;
}

const schedules = new WeakMap<ChainInfo, ForkSchedule>();

/** The schedule of a store's chain (ChainInfo.genesis), built once. */
export function forksOf(info: ChainInfo): ForkSchedule {
  let s = schedules.get(info);
  if (s === undefined) {
    s = new ForkSchedule(info, info.genesis);
    schedules.set(info, s);
  }
  return s;
}
