// A synthetic chain for the getLogs benchmark, written through the store's own writer and log
// index code (StoreWriter.addPreExecutedBlock: same tables, batches and index, no execution and
// no state). Deterministic for a given size and seed.
//
// Shape (per the issue): a few hot contracts emit half of the logs (the hottest 22%), a long tail
// of rare contracts the other half; a Transfer topic0 on ~38% of logs; mostly 3 topics; indexed
// address topics drawn from a large, skewed population of holders. Headers are real London-style
// headers (hash = keccak of the RLP, parent links, the logs bloom of the block); transactions are
// legacy encodings whose hash is keccak of the bytes (their signatures are not real: the sender is
// stored, as the importer does after recovery); the state is empty (stateRoot = empty trie).
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { StoreWriter } from '@chainnode/store';
import type { BlockInput, LogInput } from '@chainnode/store';

export interface ChainSpec {
  name: string;
  blocks: number;
  /** Mean logs per block (uniform in [mean/2, 3*mean/2]). */
  logsPerBlock: number;
  /** Contracts of the long tail. */
  tailContracts: number;
  /** Holder population (indexed address topics). */
  holders: number;
  /** Blocks per writer batch. */
  groupBlocks: number;
  seed: number;
}

export function chainSpec(size: 'smoke' | 'standard', scale = 1): ChainSpec {
  if (size === 'smoke') return { name: 'smoke', blocks: 2_500, logsPerBlock: 12, tailContracts: 400, holders: 3_000, groupBlocks: 97, seed: 7 };
  return {
    name: scale === 1 ? 'standard' : `standard x${scale}`,
    // 250,000 blocks x 21 logs (>= 5,000,000 logs): with ~43% Transfer logs, (f) over 1,000 blocks
    // stays under the 10,000-result cap (at 25 logs/block it would sit right on it).
    blocks: 250_000 * scale,
    logsPerBlock: 21,
    tailContracts: 20_000 * scale,
    holders: 250_000 * scale,
    // ~100,000 logs per batch: fewer rewrites of the open posting chunks than 1,000-block groups.
    groupBlocks: 5_000,
    seed: 7,
  };
}

/** Shares of the hot contracts (the rest goes to the tail). */
export const HOT_SHARES = [0.22, 0.12, 0.08, 0.05, 0.03];
export const CHAIN_ID = 1337;

const enc = new TextEncoder();
export const TRANSFER = keccak256(enc.encode('Transfer(address,address,uint256)'));
export const APPROVAL = keccak256(enc.encode('Approval(address,address,uint256)'));
export const SWAP = keccak256(enc.encode('Swap(address,uint256,uint256,uint256,uint256,address)'));
const OTHER_SIGS = Array.from({ length: 200 }, (_, i) => keccak256(enc.encode(`Event${i}(uint256,bytes32)`)));
const EMPTY_TRIE = keccak256(RLP.encode(new Uint8Array(0)));
const EMPTY_UNCLES = keccak256(RLP.encode([]));

/** sfc32: a small, fast, deterministic generator with 128 bits of state. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed | 0;
    for (let i = 0; i < 16; i++) this.u32();
  }
  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 0x1_0000_0000;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

function tagged(tag: number, i: number, width: number): Uint8Array {
  // A unique, random-looking value per (tag, i): i in the first 4 bytes, a mix of it after.
  const out = new Uint8Array(width);
  const v = new DataView(out.buffer);
  v.setUint32(0, i);
  out[4] = tag;
  let h = (i * 0x9e3779b1 + tag * 0x85ebca6b) >>> 0;
  for (let p = 5; p < width; p++) {
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d) >>> 0;
    h ^= h >>> 12;
    out[p] = h & 0xff;
  }
  return out;
}

export function contractAddress(i: number): Uint8Array {
  return tagged(0xc0, i, 20);
}

export function holderAddress(i: number): Uint8Array {
  return tagged(0xa0, i, 20);
}

/** An address as an indexed topic: left-padded to 32 bytes. */
export function holderTopic(i: number): Uint8Array {
  const t = new Uint8Array(32);
  t.set(holderAddress(i), 12);
  return t;
}

function tokenIdTopic(i: number): Uint8Array {
  const t = new Uint8Array(32);
  new DataView(t.buffer).setUint32(28, i);
  return t;
}

/** The three bloom bit indexes of a value, cached per population member. */
class BloomBits {
  private readonly cache = new Map<number, Uint16Array>();
  constructor(private readonly make: (i: number) => Uint8Array) {}
  get(i: number): Uint16Array {
    let bits = this.cache.get(i);
    if (bits === undefined) {
      bits = bloomBitsOf(this.make(i));
      this.cache.set(i, bits);
    }
    return bits;
  }
}

function bloomBitsOf(value: Uint8Array): Uint16Array {
  const h = keccak256(value);
  const out = new Uint16Array(3);
  for (let i = 0; i < 3; i++) out[i] = (((h[2 * i] as number) << 8) | (h[2 * i + 1] as number)) & 2047;
  return out;
}

function setBits(bloom: Uint8Array, bits: Uint16Array): void {
  for (const bit of bits) bloom[255 - (bit >> 3)] = (bloom[255 - (bit >> 3)] as number) | (1 << (bit & 7));
}

/** A log as the generator made it (kept in smoke runs for brute-force checks). */
export interface GeneratedLog {
  blockNumber: number;
  logIndex: number;
  address: Uint8Array;
  topics: Uint8Array[];
}

/** What the queries of the bench are drawn from, counted while generating. */
export interface ChainFacts {
  spec: ChainSpec;
  head: number;
  logs: number;
  txs: number;
  /** Address + topic occurrences: what the index indexes. */
  indexedValues: number;
  /** Logs per contract (hot first, then the tail). */
  contractLogs: Uint32Array;
  /** Per holder: Transfers of the hottest contract with the holder as topic2 (incoming). */
  hotIncoming: Uint32Array;
  transferLogs: number;
  /** Seconds in the generator (values, RLP, keccak) and in the store writer (rows, index, batches). */
  generateSeconds: number;
  writeSeconds: number;
  generated?: GeneratedLog[];
}

const hot = HOT_SHARES.length;
const HOT_TOTAL = HOT_SHARES.reduce((a, b) => a + b, 0);

function pickContract(rng: Rng, tail: number): number {
  let u = rng.next();
  for (let i = 0; i < hot; i++) {
    if (u < (HOT_SHARES[i] as number)) return i;
    u -= HOT_SHARES[i] as number;
  }
  // Tail: skewed (density ~ 1/sqrt(rank)), so some tail contracts are busy, most are rare.
  const v = rng.next();
  return hot + Math.floor(tail * v * v);
}

/** Skewed holder choice: a few very active holders (exchanges), a long tail of occasional ones. */
function pickHolder(rng: Rng, holders: number): number {
  const v = rng.next();
  return Math.floor(holders * v * v * v);
}

export interface BuildOptions {
  keepLogs?: boolean;
  onProgress?: (block: number, logs: number) => void;
}

/** Builds the synthetic chain into a fresh datadir. */
export async function buildChain(datadir: string, spec: ChainSpec, opts: BuildOptions = {}): Promise<ChainFacts> {
  const rng = new Rng(spec.seed);
  const contracts = hot + spec.tailContracts;
  const contractBits = new BloomBits(contractAddress);
  const holderBits = new BloomBits(holderTopic);
  const tokenBits = new BloomBits(tokenIdTopic);
  const sigBits = new Map<Uint8Array, Uint16Array>();
  for (const s of [TRANSFER, APPROVAL, SWAP, ...OTHER_SIGS]) sigBits.set(s, bloomBitsOf(s));
  const contractAddr = Array.from({ length: contracts }, (_, i) => contractAddress(i));
  const facts: ChainFacts = {
    spec,
    head: spec.blocks,
    logs: 0,
    txs: 0,
    indexedValues: 0,
    contractLogs: new Uint32Array(contracts),
    hotIncoming: new Uint32Array(spec.holders),
    transferLogs: 0,
    generateSeconds: 0,
    writeSeconds: 0,
  };
  if (opts.keepLogs) facts.generated = [];
  const holderTopicCache = new Map<number, Uint8Array>();
  const holderT = (i: number): Uint8Array => {
    let t = holderTopicCache.get(i);
    if (t === undefined) {
      t = holderTopic(i);
      if (holderTopicCache.size < 2_000_000) holderTopicCache.set(i, t);
    }
    return t;
  };
  const writer = await StoreWriter.open(datadir);
  let genNs = 0n;
  let writeNs = 0n;
  const time = async <T>(which: 'gen' | 'write', f: () => T | Promise<T>): Promise<T> => {
    const t0 = process.hrtime.bigint();
    const r = await f();
    const dt = process.hrtime.bigint() - t0;
    if (which === 'gen') genNs += dt;
    else writeNs += dt;
    return r;
  };
  try {
    const headerOf = (n: number, parent: Uint8Array, bloom: Uint8Array, gasUsed: number): Uint8Array =>
      RLP.encode([
        parent,
        EMPTY_UNCLES,
        contractAddr[0] as Uint8Array,
        EMPTY_TRIE,
        EMPTY_TRIE,
        EMPTY_TRIE,
        bloom,
        0,
        n,
        30_000_000,
        gasUsed,
        1_700_000_000 + n * 12,
        new Uint8Array(0),
        new Uint8Array(32),
        new Uint8Array(8),
        7,
      ]);
    const bodySize = (headerRlp: Uint8Array, txs: Uint8Array[]): number => {
      const listLen = (payload: number): number => {
        if (payload < 56) return payload + 1;
        let lenBytes = 0;
        for (let x = payload; x > 0; x = Math.floor(x / 256)) lenBytes++;
        return payload + 1 + lenBytes;
      };
      const txPayload = txs.reduce((n, t) => n + t.length, 0);
      return listLen(headerRlp.length + listLen(txPayload) + listLen(0));
    };
    const genesisRlp = headerOf(0, new Uint8Array(32), new Uint8Array(256), 0);
    let parent = keccak256(genesisRlp);
    await writer.writeGenesis({
      block: {
        number: 0n,
        hash: parent,
        headerRlp: genesisRlp,
        body: { size: bodySize(genesisRlp, []), transactions: [], uncles: [] },
        totalDifficulty: 0n,
        senders: [],
        txHashes: [],
        receipts: [],
        logs: [],
        logsBloom: new Uint8Array(256),
      },
      chainConfig: { chainId: CHAIN_ID, homesteadBlock: 0, eip150Block: 0, eip155Block: 0, eip158Block: 0, byzantiumBlock: 0, constantinopleBlock: 0, petersburgBlock: 0, istanbulBlock: 0, berlinBlock: 0, londonBlock: 0 },
    });
    const data32 = new Uint8Array(32);
    for (let n = 1; n <= spec.blocks; n++) {
      const block = await time('gen', () => {
        const count = Math.floor(spec.logsPerBlock / 2 + rng.next() * (spec.logsPerBlock + 1));
        const bloom = new Uint8Array(256);
        const txLogs: LogInput[][] = [];
        const senders: Uint8Array[] = [];
        let current: LogInput[] = [];
        for (let li = 0; li < count; li++) {
          if (current.length === 0 || rng.next() < 0.35) {
            current = [];
            txLogs.push(current);
            senders.push(holderAddress(pickHolder(rng, spec.holders)));
          }
          const c = pickContract(rng, spec.tailContracts);
          facts.contractLogs[c] = (facts.contractLogs[c] as number) + 1;
          const address = contractAddr[c] as Uint8Array;
          setBits(bloom, contractBits.get(c));
          const u = rng.next();
          let topics: Uint8Array[];
          let data: Uint8Array = new Uint8Array(0);
          if (u < 0.38) {
            const from = pickHolder(rng, spec.holders);
            const to = pickHolder(rng, spec.holders);
            topics = [TRANSFER, holderT(from), holderT(to)];
            setBits(bloom, holderBits.get(from));
            setBits(bloom, holderBits.get(to));
            data = data32.slice();
            new DataView(data.buffer).setUint32(28, rng.u32());
            facts.transferLogs++;
            if (c === 0) facts.hotIncoming[to] = (facts.hotIncoming[to] as number) + 1;
          } else if (u < 0.63) {
            const a = pickHolder(rng, spec.holders);
            const b = pickHolder(rng, spec.holders);
            topics = [u < 0.48 ? APPROVAL : SWAP, holderT(a), holderT(b)];
            setBits(bloom, holderBits.get(a));
            setBits(bloom, holderBits.get(b));
          } else if (u < 0.83) {
            const a = pickHolder(rng, spec.holders);
            topics = [OTHER_SIGS[rng.int(OTHER_SIGS.length)] as Uint8Array, holderT(a)];
            setBits(bloom, holderBits.get(a));
          } else if (u < 0.95) {
            topics = [OTHER_SIGS[rng.int(OTHER_SIGS.length)] as Uint8Array];
          } else {
            const a = pickHolder(rng, spec.holders);
            const b = pickHolder(rng, spec.holders);
            const id = rng.int(10_000);
            topics = [TRANSFER, holderT(a), holderT(b), tokenIdTopic(id)];
            setBits(bloom, holderBits.get(a));
            setBits(bloom, holderBits.get(b));
            setBits(bloom, tokenBits.get(id));
            facts.transferLogs++;
          }
          setBits(bloom, sigBits.get(topics[0] as Uint8Array) as Uint16Array);
          current.push({ address, topics, data });
          facts.indexedValues += 1 + topics.length;
          facts.generated?.push({ blockNumber: n, logIndex: li, address, topics });
        }
        const txs: Uint8Array[] = [];
        const txHashes: Uint8Array[] = [];
        const receipts: BlockInput['receipts'] = [];
        let gas = 0;
        txLogs.forEach((logs, i) => {
          const raw = RLP.encode([facts.txs + i, 1_000_000_000, 100_000, logs[0]?.address ?? new Uint8Array(20), 0, new Uint8Array(0), CHAIN_ID * 2 + 35, 0x1111, 0x2222]);
          txs.push(raw);
          txHashes.push(keccak256(raw));
          gas += 30_000 + 10_000 * logs.length;
          receipts.push({ type: 0, statusOrState: Uint8Array.of(1), cumulativeGasUsed: BigInt(gas) });
        });
        facts.txs += txs.length;
        facts.logs += count;
        const headerRlp = headerOf(n, parent, bloom, gas);
        const hash = keccak256(headerRlp);
        parent = hash;
        const input: BlockInput = {
          number: BigInt(n),
          hash,
          headerRlp,
          body: { size: bodySize(headerRlp, txs), transactions: txs, uncles: [] },
          totalDifficulty: 0n,
          senders,
          txHashes,
          receipts,
          logs: txLogs,
          logsBloom: bloom,
        };
        return input;
      });
      await time('write', async () => {
        writer.addPreExecutedBlock(block);
        // A group's batch lands while the next group is generated and staged (the importer's
        // pipelining); the last flush waits until everything is durable.
        if (n === spec.blocks) await writer.flush();
        else if (n % spec.groupBlocks === 0) await writer.flushBehind();
      });
      if (n % spec.groupBlocks === 0) opts.onProgress?.(n, facts.logs);
    }
  } finally {
    await writer.close();
  }
  facts.generateSeconds = Number(genNs) / 1e9;
  facts.writeSeconds = Number(writeNs) / 1e9;
  return facts;
}

export { HOT_TOTAL };
