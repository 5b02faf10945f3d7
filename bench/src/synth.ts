// A synthetic chain for the getLogs benchmark, written through the store's own writer and log
// index code (StoreWriter.addPreExecutedBlock: same tables, batches and index, no execution and
// no state). Deterministic for a given size and seed.
//
// Shape: a few hot contracts emit half of the logs (the hottest 22%), a long tail
// of rare contracts the other half; a Transfer topic0 on ~38% of logs; mostly 3 topics; indexed
// address topics drawn from a large, skewed population of holders. Headers are real London-style
// headers (hash = keccak of the RLP, parent links, the logs bloom of the block); transactions are
// legacy encodings whose hash is keccak of the bytes (their signatures are not real: the sender is
// stored, as the importer does after recovery); the state is empty (stateRoot = empty trie).
import type { MessagePort } from 'node:worker_threads';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createKeccak } from 'hash-wasm';
import { StoreWriter, rlpUintLength, writeRlpUint } from '@chainnode/store';
import type { BlockInput, GenesisInput, LogInput, StoredReceipt } from '@chainnode/store';
import { Sfc32, londonConfig } from '@chainnode/testkit';
import { bloomBits, rlpHeaderLength, writeRlpBytes, writeRlpHeader } from '@chainnode/core';

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

/**
 * The chain of a bench size. `scale` >= 1 multiplies the blocks and the populations (tail
 * contracts, holders); a fractional scale (0 < scale < 1, for quicker iteration) only shortens the
 * chain: same populations and seed, so it is exactly the first blocks of the standard chain.
 */
export function chainSpec(size: 'smoke' | 'standard', scale = 1): ChainSpec {
  if (size === 'smoke')
    return {
      name: 'smoke',
      blocks: 2_500,
      logsPerBlock: 12,
      tailContracts: 400,
      holders: 3_000,
      groupBlocks: 97,
      seed: 7,
    };
  const population = Math.max(1, scale);
  return {
    name: scale === 1 ? 'standard' : `standard x${scale}`,
    // 250,000 blocks x 21 logs (>= 5,000,000 logs): with ~43% Transfer logs, (f) over 1,000 blocks
    // stays under the 10,000-result cap (at 25 logs/block it would sit right on it).
    blocks: Math.round(250_000 * scale),
    logsPerBlock: 21,
    tailContracts: Math.round(20_000 * population),
    holders: Math.round(250_000 * population),
    // ~100,000 logs per batch: fewer rewrites of the open posting chunks than 1,000-block groups.
    groupBlocks: 5_000,
    seed: 7,
  };
}

/** Shares of the hot contracts (the rest goes to the tail). */
export const HOT_SHARES = [0.22, 0.12, 0.08, 0.05, 0.03];
export const CHAIN_ID = 1337;

// ---------------------------------------------------------------------------------------------
// Keccak-256 (Ethereum's) from hash-wasm: hashing headers and transactions is most of the
// generator's time, and its WebAssembly Keccak is the fastest maintained one measured on these
// small inputs (docs/performance.md). One hasher, created (async) once when the module loads.
const keccakHasher = await createKeccak(256);

/** keccak256 of src[start, end), written to out[at, at + 32). */
export function keccak256Into(src: Uint8Array, start: number, end: number, out: Uint8Array, at: number): void {
  out.set(keccakHasher.init().update(src.subarray(start, end)).digest('binary'), at);
}

/** keccak256 of `b`, as a fresh 32-byte array. */
export function keccak256(b: Uint8Array): Uint8Array {
  return keccakHasher.init().update(b).digest('binary');
}
const enc = new TextEncoder();
export const TRANSFER = keccak256(enc.encode('Transfer(address,address,uint256)'));
export const APPROVAL = keccak256(enc.encode('Approval(address,address,uint256)'));
export const SWAP = keccak256(enc.encode('Swap(address,uint256,uint256,uint256,uint256,address)'));
const OTHER_SIGS = Array.from({ length: 200 }, (_, i) => keccak256(enc.encode(`Event${i}(uint256,bytes32)`)));
/** Every topic0 of the chain: TRANSFER, APPROVAL, SWAP, then OTHER_SIGS. */
const SIGS = [TRANSFER, APPROVAL, SWAP, ...OTHER_SIGS];
const SIG_TRANSFER = 0;
const SIG_APPROVAL = 1;
const SIG_SWAP = 2;
const SIG_OTHER = 3;
const EMPTY_TRIE = keccak256(Uint8Array.of(0x80)); // keccak of RLP('')
const EMPTY_UNCLES = keccak256(Uint8Array.of(0xc0)); // keccak of RLP([])

/** The benchmarks' seeded generator: sfc32 from a numeric seed. */
export class Rng extends Sfc32 {
  constructor(seed: number) {
    super(0x9e3779b9, 0x243f6a88, 0xb7e15162, seed);
  }
  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

/** A unique, random-looking value per (tag, i), written to out[at, at + width): i in the first 4 bytes, a mix of it after. */
function taggedInto(tag: number, i: number, width: number, out: Uint8Array, at: number): void {
  out[at] = i >>> 24;
  out[at + 1] = (i >>> 16) & 0xff;
  out[at + 2] = (i >>> 8) & 0xff;
  out[at + 3] = i & 0xff;
  out[at + 4] = tag;
  let h = (i * 0x9e3779b1 + tag * 0x85ebca6b) >>> 0;
  for (let p = 5; p < width; p++) {
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d) >>> 0;
    h ^= h >>> 12;
    out[at + p] = h & 0xff;
  }
}

function tagged(tag: number, i: number, width: number): Uint8Array {
  const out = new Uint8Array(width);
  taggedInto(tag, i, width, out, 0);
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

/** Bloom bits of a population (values made by `make`): core's (byte index, mask) pairs, computed on first use. */
class BloomBits {
  /** Three (byte index, mask) pairs per member. */
  private readonly bits: Uint8Array;
  private readonly known: Uint8Array;
  constructor(
    size: number,
    private readonly make: (i: number) => Uint8Array,
  ) {
    this.bits = new Uint8Array(6 * size);
    this.known = new Uint8Array(size);
  }
  /** Sets member i's bits in `bloom`. */
  set(bloom: Uint8Array, i: number): void {
    const bits = this.bits;
    if (this.known[i] === 0) {
      bits.set(bloomBits(this.make(i)), 6 * i);
      this.known[i] = 1;
    }
    for (let k = 6 * i; k < 6 * i + 6; k += 2) {
      const at = bits[k] as number;
      bloom[at] = (bloom[at] as number) | (bits[k + 1] as number);
    }
  }
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
  /**
   * Seconds in the generator (values, RLP, keccak; on its own thread unless built inline), in the
   * store writer (staging rows and index, flushes, waiting for LevelDB to take each batch), and
   * the wall time of the whole build (first block to the last durable flush).
   */
  generateSeconds: number;
  writeSeconds: number;
  wallSeconds: number;
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

// ---------------------------------------------------------------------------------------------
// RLP by hand (the generator writes headers and transactions straight into its output buffer;
// bench/test checks the bytes against @ethereumjs/rlp). Integer and length-prefix writers are
// the store's (@chainnode/store), shared with its log-row encoder, and so is the string writer.

const GAS_LIMIT = 30_000_000;
const GAS_PRICE = 1_000_000_000;
const TX_GAS = 100_000;
const TX_V = CHAIN_ID * 2 + 35;

/** Payload length of header n's RLP list (see writeHeader). */
function headerPayload(n: number, gasUsed: number): number {
  return (
    33 +
    33 +
    21 +
    3 * 33 +
    259 +
    1 +
    rlpUintLength(n) +
    rlpUintLength(GAS_LIMIT) +
    rlpUintLength(gasUsed) +
    rlpUintLength(1_700_000_000 + n * 12) +
    1 +
    33 +
    9 +
    1
  );
}

/**
 * A London-style header: [parent, unclesHash, coinbase (contract 0), stateRoot, txRoot,
 * receiptRoot (all three the empty trie: no state, and the roots are not checked here), bloom,
 * difficulty 0, number, gasLimit, gasUsed, timestamp, extraData '', mixHash 0, nonce 0, baseFee 7].
 */
function writeHeader(
  out: Uint8Array,
  at: number,
  n: number,
  parent: Uint8Array,
  coinbase: Uint8Array,
  bloom: Uint8Array,
  gasUsed: number,
): number {
  at = writeRlpHeader(out, at, 0xc0, headerPayload(n, gasUsed));
  at = writeRlpBytes(out, at, parent);
  at = writeRlpBytes(out, at, EMPTY_UNCLES);
  at = writeRlpBytes(out, at, coinbase);
  for (let i = 0; i < 3; i++) at = writeRlpBytes(out, at, EMPTY_TRIE);
  at = writeRlpHeader(out, at, 0x80, 256);
  out.set(bloom, at);
  at += 256;
  out[at++] = 0x80; // difficulty 0
  at = writeRlpUint(out, at, n);
  at = writeRlpUint(out, at, GAS_LIMIT);
  at = writeRlpUint(out, at, gasUsed);
  at = writeRlpUint(out, at, 1_700_000_000 + n * 12);
  out[at++] = 0x80; // extraData
  out[at++] = 0xa0; // mixHash: 32 zero bytes
  out.fill(0, at, at + 32);
  at += 32;
  out[at++] = 0x88; // nonce: 8 zero bytes
  out.fill(0, at, at + 8);
  at += 8;
  out[at++] = 7; // baseFee
  return at;
}

/** Payload length of a legacy tx [nonce, gasPrice, gas, to, value 0, data '', v, r, s] (see writeTx). */
function txPayload(nonce: number): number {
  return (
    rlpUintLength(nonce) +
    rlpUintLength(GAS_PRICE) +
    rlpUintLength(TX_GAS) +
    21 +
    1 +
    1 +
    rlpUintLength(TX_V) +
    rlpUintLength(0x1111) +
    rlpUintLength(0x2222)
  );
}

/** The synthetic legacy transaction to[toAt, toAt + 20) (its signature is not real: the sender is stored). */
function writeTx(out: Uint8Array, at: number, nonce: number, to: Uint8Array, toAt: number): number {
  at = writeRlpHeader(out, at, 0xc0, txPayload(nonce));
  at = writeRlpUint(out, at, nonce);
  at = writeRlpUint(out, at, GAS_PRICE);
  at = writeRlpUint(out, at, TX_GAS);
  out[at++] = 0x94;
  out.set(to.subarray(toAt, toAt + 20), at);
  at += 20;
  out[at++] = 0x80; // value 0
  out[at++] = 0x80; // data ''
  at = writeRlpUint(out, at, TX_V);
  at = writeRlpUint(out, at, 0x1111);
  return writeRlpUint(out, at, 0x2222);
}

/** Size field of a stored body: the RLP length of the whole block [header, txs, uncles []]. */
function blockRlpSize(headerLen: number, txBytes: number): number {
  const listLen = (payload: number): number => rlpHeaderLength(payload) + payload;
  return listLen(headerLen + listLen(txBytes) + listLen(0));
}
/** Block 0 of every synthetic chain (it does not depend on the spec). */
export function genesisInput(): GenesisInput {
  const headerRlp = new Uint8Array(rlpHeaderLength(headerPayload(0, 0)) + headerPayload(0, 0));
  writeHeader(headerRlp, 0, 0, new Uint8Array(32), contractAddress(0), new Uint8Array(256), 0);
  return {
    block: {
      number: 0n,
      hash: keccak256(headerRlp),
      headerRlp,
      body: { size: blockRlpSize(headerRlp.length, 0), transactions: [], uncles: [] },
      totalDifficulty: 0n,
      senders: [],
      txHashes: [],
      receipts: [],
      logs: [],
      logsBloom: new Uint8Array(256),
    },
    chainConfig: londonConfig(CHAIN_ID),
  };
}

// ---------------------------------------------------------------------------------------------
// The generator writes batches of blocks into flat buffers, so that a generator thread hands them
// to the writer's thread by transferring one ArrayBuffer (no structured clone of thousands of small
// arrays); decodeBlocks turns a buffer into BlockInputs whose byte fields are views into it.
//
// Per batch: block count u32, then per block: number u32, hash 32, headerRlp (u32 length + bytes),
// body size u32, tx count u32, per tx: the raw tx (u32 length + bytes), sender 20, tx hash 32,
// receipt (type u8, status length u8 + bytes, cumulative gas f64), log count u32, per log: address
// 20, topic count u8, topics 32 each, data (u32 length + bytes); then the logs bloom (256).
// Integers little-endian.

const LOG_TRANSFER = 0; // [Transfer, from, to], data: a 32-byte amount
const LOG_PAIR = 1; // [Approval | Swap, holder, holder]
const LOG_ONE = 2; // [other event, holder]
const LOG_BARE = 3; // [other event]
const LOG_NFT = 4; // [Transfer, from, to, tokenId]

/** The blocks of a synthetic chain (block 1 first), in batches, and the facts counted so far. */
export class ChainGenerator {
  readonly facts: ChainFacts;
  private readonly rng: Rng;
  /** Addresses of every contract and holder, 20 bytes each. */
  private readonly contractAddrs: Uint8Array;
  private readonly holderAddrs: Uint8Array;
  private readonly contractBits: BloomBits;
  private readonly holderBits: BloomBits;
  private readonly tokenBits = new BloomBits(10_000, tokenIdTopic);
  private readonly sigBits = new BloomBits(SIGS.length, (i) => SIGS[i] as Uint8Array);
  // One block's draws: per log its contract, kind, topic0 (index in SIGS), holders a and b, and
  // the amount (LOG_TRANSFER) or token id (LOG_NFT); per tx its first log and sender.
  private readonly logContract: Int32Array;
  private readonly logKind: Uint8Array;
  private readonly logSig: Uint8Array;
  private readonly logA: Int32Array;
  private readonly logB: Int32Array;
  private readonly logX: Float64Array;
  private readonly txFirst: Int32Array;
  private readonly txSender: Int32Array;
  private readonly bloom = new Uint8Array(256);
  private readonly parent = new Uint8Array(32);
  private buf = new Uint8Array(0);
  private dv = new DataView(this.buf.buffer);
  private n = 0;

  constructor(readonly spec: ChainSpec) {
    this.rng = new Rng(spec.seed);
    const contracts = hot + spec.tailContracts;
    this.contractAddrs = new Uint8Array(20 * contracts);
    for (let i = 0; i < contracts; i++) taggedInto(0xc0, i, 20, this.contractAddrs, 20 * i);
    this.holderAddrs = new Uint8Array(20 * spec.holders);
    for (let i = 0; i < spec.holders; i++) taggedInto(0xa0, i, 20, this.holderAddrs, 20 * i);
    this.contractBits = new BloomBits(contracts, (i) => this.contractAddrs.subarray(20 * i, 20 * i + 20));
    this.holderBits = new BloomBits(spec.holders, holderTopic);
    const maxLogs = Math.floor(spec.logsPerBlock / 2 + spec.logsPerBlock + 1) + 1;
    this.logContract = new Int32Array(maxLogs);
    this.logKind = new Uint8Array(maxLogs);
    this.logSig = new Uint8Array(maxLogs);
    this.logA = new Int32Array(maxLogs);
    this.logB = new Int32Array(maxLogs);
    this.logX = new Float64Array(maxLogs);
    this.txFirst = new Int32Array(maxLogs + 1);
    this.txSender = new Int32Array(maxLogs);
    this.facts = {
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
      wallSeconds: 0,
    };
    this.parent.set(genesisInput().block.hash);
  }

  /** The next (up to) `maxBlocks` blocks as an encoded batch (see above), or undefined at the end. */
  nextBatch(maxBlocks: number): ArrayBuffer | undefined {
    const blocks = Math.min(maxBlocks, this.spec.blocks - this.n);
    if (blocks <= 0) return undefined;
    this.buf = new Uint8Array(blocks * 8192);
    this.dv = new DataView(this.buf.buffer);
    this.dv.setUint32(0, blocks, true);
    let at = 4;
    for (let i = 0; i < blocks; i++) at = this.block(at);
    return this.buf.buffer as ArrayBuffer;
  }

  /** Room for `n` more bytes at `at`. */
  private ensure(at: number, n: number): void {
    if (at + n <= this.buf.length) return;
    const bigger = new Uint8Array(Math.max(2 * this.buf.length, at + n));
    bigger.set(this.buf.subarray(0, at));
    this.buf = bigger;
    this.dv = new DataView(bigger.buffer);
  }

  /** Log `li` names two holders (topic1, topic2), drawn in this order; returns the second. */
  private twoHolders(li: number, kind: number, sig: number): number {
    const a = pickHolder(this.rng, this.spec.holders);
    const b = pickHolder(this.rng, this.spec.holders);
    this.logKind[li] = kind;
    this.logSig[li] = sig;
    this.logA[li] = a;
    this.logB[li] = b;
    this.holderBits.set(this.bloom, a);
    this.holderBits.set(this.bloom, b);
    return b;
  }

  /** Draws block n + 1 and writes it at `at`; returns the end. */
  private block(at: number): number {
    const n = ++this.n;
    const { rng, spec, facts, bloom } = this;
    const { logContract, logKind, logSig, logA, logB, logX, txFirst, txSender } = this;
    bloom.fill(0);
    // The draws, in the order that defines the chain.
    const count = Math.floor(spec.logsPerBlock / 2 + rng.next() * (spec.logsPerBlock + 1));
    let txCount = 0;
    for (let li = 0; li < count; li++) {
      if (li === 0 || rng.next() < 0.35) {
        txFirst[txCount] = li;
        txSender[txCount++] = pickHolder(rng, spec.holders);
      }
      const c = pickContract(rng, spec.tailContracts);
      logContract[li] = c;
      facts.contractLogs[c] = (facts.contractLogs[c] as number) + 1;
      this.contractBits.set(bloom, c);
      const u = rng.next();
      let topics: number;
      if (u < 0.38) {
        const to = this.twoHolders(li, LOG_TRANSFER, SIG_TRANSFER);
        logX[li] = rng.u32();
        facts.transferLogs++;
        if (c === 0) facts.hotIncoming[to] = (facts.hotIncoming[to] as number) + 1;
        topics = 3;
      } else if (u < 0.63) {
        this.twoHolders(li, LOG_PAIR, u < 0.48 ? SIG_APPROVAL : SIG_SWAP);
        topics = 3;
      } else if (u < 0.83) {
        const a = pickHolder(rng, spec.holders);
        logKind[li] = LOG_ONE;
        logSig[li] = SIG_OTHER + rng.int(OTHER_SIGS.length);
        logA[li] = a;
        this.holderBits.set(bloom, a);
        topics = 2;
      } else if (u < 0.95) {
        logKind[li] = LOG_BARE;
        logSig[li] = SIG_OTHER + rng.int(OTHER_SIGS.length);
        topics = 1;
      } else {
        this.twoHolders(li, LOG_NFT, SIG_TRANSFER);
        const id = rng.int(10_000);
        logX[li] = id;
        this.tokenBits.set(bloom, id);
        facts.transferLogs++;
        topics = 4;
      }
      this.sigBits.set(bloom, logSig[li] as number);
      facts.indexedValues += 1 + topics;
    }
    txFirst[txCount] = count;
    // The bytes.
    let txBytes = 0;
    for (let i = 0; i < txCount; i++) {
      const p = txPayload(facts.txs + i);
      txBytes += rlpHeaderLength(p) + p;
    }
    const gasUsed = 30_000 * txCount + 10_000 * count;
    const hp = headerPayload(n, gasUsed);
    const headerLen = rlpHeaderLength(hp) + hp;
    this.ensure(at, 4 + 32 + 4 + headerLen + 8 + txBytes + txCount * 75 + count * (20 + 1 + 4 * 32 + 4 + 32) + 256);
    const buf = this.buf;
    const dv = this.dv;
    dv.setUint32(at, n, true);
    const hashAt = at + 4;
    at = hashAt + 32;
    dv.setUint32(at, headerLen, true);
    at += 4;
    const headerAt = at;
    at = writeHeader(buf, at, n, this.parent, this.contractAddrs.subarray(0, 20), bloom, gasUsed);
    keccak256Into(buf, headerAt, at, buf, hashAt);
    this.parent.set(buf.subarray(hashAt, hashAt + 32));
    dv.setUint32(at, blockRlpSize(headerLen, txBytes), true);
    dv.setUint32(at + 4, txCount, true);
    at += 8;
    const contracts = this.contractAddrs;
    const holders = this.holderAddrs;
    let gas = 0;
    for (let i = 0; i < txCount; i++) {
      const first = txFirst[i] as number;
      const end = txFirst[i + 1] as number;
      const rawAt = at + 4;
      at = writeTx(buf, rawAt, facts.txs + i, contracts, 20 * (logContract[first] as number));
      dv.setUint32(rawAt - 4, at - rawAt, true);
      const sender = 20 * (txSender[i] as number);
      buf.set(holders.subarray(sender, sender + 20), at);
      keccak256Into(buf, rawAt, at, buf, at + 20);
      at += 52;
      gas += 30_000 + 10_000 * (end - first);
      buf[at] = 0; // receipt type
      buf[at + 1] = 1; // status: 1 byte, 1
      buf[at + 2] = 1;
      dv.setFloat64(at + 3, gas, true);
      dv.setUint32(at + 11, end - first, true);
      at += 15;
      for (let li = first; li < end; li++) {
        const c = 20 * (logContract[li] as number);
        buf.set(contracts.subarray(c, c + 20), at);
        at += 20;
        const kind = logKind[li] as number;
        const topicsAt = at + 1;
        buf.set(SIGS[logSig[li] as number] as Uint8Array, topicsAt);
        at = topicsAt + 32;
        if (kind !== LOG_BARE) at = this.holderTopic(buf, at, logA[li] as number);
        if (kind === LOG_TRANSFER || kind === LOG_PAIR || kind === LOG_NFT)
          at = this.holderTopic(buf, at, logB[li] as number);
        if (kind === LOG_NFT) at = uint32Word(buf, at, logX[li] as number);
        buf[topicsAt - 1] = (at - topicsAt) / 32;
        if (kind === LOG_TRANSFER) {
          dv.setUint32(at, 32, true);
          at = uint32Word(buf, at + 4, logX[li] as number);
        } else {
          dv.setUint32(at, 0, true);
          at += 4;
        }
      }
    }
    buf.set(bloom, at);
    facts.txs += txCount;
    facts.logs += count;
    return at + 256;
  }

  /** Holder i's address as a 32-byte topic at `at`; returns the end. */
  private holderTopic(buf: Uint8Array, at: number, i: number): number {
    buf.fill(0, at, at + 12);
    buf.set(this.holderAddrs.subarray(20 * i, 20 * i + 20), at + 12);
    return at + 32;
  }
}

/** A 32-byte big-endian word holding a u32, at `at`; returns the end. */
function uint32Word(buf: Uint8Array, at: number, x: number): number {
  buf.fill(0, at, at + 28);
  buf[at + 28] = x >>> 24;
  buf[at + 29] = (x >>> 16) & 0xff;
  buf[at + 30] = (x >>> 8) & 0xff;
  buf[at + 31] = x & 0xff;
  return at + 32;
}

/** The blocks of a batch buffer, as BlockInputs whose byte fields are views into it. */
export function decodeBlocks(buf: ArrayBuffer): BlockInput[] {
  const u8 = new Uint8Array(buf);
  const dv = new DataView(buf);
  let at = 0;
  const u32 = (): number => {
    const x = dv.getUint32(at, true);
    at += 4;
    return x;
  };
  const bytes = (n: number): Uint8Array => {
    const x = u8.subarray(at, at + n);
    at += n;
    return x;
  };
  const out: BlockInput[] = [];
  for (let count = u32(); count > 0; count--) {
    const number = BigInt(u32());
    const hash = bytes(32);
    const headerRlp = bytes(u32());
    const size = u32();
    const txCount = u32();
    const transactions: Uint8Array[] = [];
    const senders: Uint8Array[] = [];
    const txHashes: Uint8Array[] = [];
    const receipts: StoredReceipt[] = [];
    const logs: LogInput[][] = [];
    for (let i = 0; i < txCount; i++) {
      transactions.push(bytes(u32()));
      senders.push(bytes(20));
      txHashes.push(bytes(32));
      const type = u8[at++] as number;
      const statusOrState = bytes(u8[at++] as number);
      const cumulativeGasUsed = BigInt(dv.getFloat64(at, true));
      at += 8;
      receipts.push({ type, statusOrState, cumulativeGasUsed });
      const txLogs: LogInput[] = [];
      for (let l = u32(); l > 0; l--) {
        const address = bytes(20);
        const topics: Uint8Array[] = [];
        for (let t = u8[at++] as number; t > 0; t--) topics.push(bytes(32));
        const data = bytes(u32());
        txLogs.push({ address, topics, data });
      }
      logs.push(txLogs);
    }
    const logsBloom = bytes(256);
    out.push({
      number,
      hash,
      headerRlp,
      body: { size, transactions, uncles: [] },
      totalDifficulty: 0n,
      senders,
      txHashes,
      receipts,
      logs,
      logsBloom,
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The generator thread. This module is also the worker's entry point: started with
// workerData.synthChain, it generates the spec's blocks in batches of BATCH_BLOCKS and posts each
// as a transferred buffer; at most CREDITS batches run ahead of the writer (the writer hands a
// credit back for each batch it takes). Its last message carries the facts.

const BATCH_BLOCKS = 250;
const CREDITS = 8;

type ToWriter = { kind: 'blocks'; buf: ArrayBuffer } | { kind: 'done'; facts: ChainFacts };

async function generatorThread(spec: ChainSpec): Promise<void> {
  const port = parentPort as MessagePort;
  let credits = CREDITS;
  let wake: (() => void) | undefined;
  port.on('message', (m: { credit: number }) => {
    credits += m.credit;
    wake?.();
  });
  const gen = new ChainGenerator(spec);
  let ns = 0n;
  for (;;) {
    while (credits === 0) await new Promise<void>((r) => (wake = r));
    credits--;
    const t0 = process.hrtime.bigint();
    const buf = gen.nextBatch(BATCH_BLOCKS);
    ns += process.hrtime.bigint() - t0;
    if (buf === undefined) break;
    port.postMessage({ kind: 'blocks', buf } satisfies ToWriter, [buf]);
  }
  gen.facts.generateSeconds = Number(ns) / 1e9;
  port.postMessage({ kind: 'done', facts: gen.facts } satisfies ToWriter);
  port.close();
}

if (!isMainThread && (workerData as { synthChain?: ChainSpec } | null)?.synthChain !== undefined) {
  void generatorThread((workerData as { synthChain: ChainSpec }).synthChain);
}

/** Batches from a generator thread; the thread is stopped when the caller stops iterating. */
async function* batchesFromThread(spec: ChainSpec, onFacts: (f: ChainFacts) => void): AsyncGenerator<ArrayBuffer> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { synthChain: spec } });
  const queue: ToWriter[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  worker.on('message', (m: ToWriter) => {
    queue.push(m);
    wake?.();
  });
  worker.on('error', (err) => {
    failure = err;
    wake?.();
  });
  worker.on('exit', (code) => {
    if (code !== 0 && failure === undefined) failure = new Error(`generator thread exited with ${code}`);
    wake?.();
  });
  let taken = 0;
  try {
    for (;;) {
      while (queue.length === 0) {
        if (failure !== undefined) throw failure;
        await new Promise<void>((r) => (wake = r));
      }
      const m = queue.shift() as ToWriter;
      if (m.kind === 'done') {
        onFacts(m.facts);
        return;
      }
      // Credits go back in fours (one message per 1,000 blocks).
      if (++taken % 4 === 0) worker.postMessage({ credit: 4 });
      yield m.buf;
    }
  } finally {
    await worker.terminate();
  }
}

/** Batches generated on this thread (--inline-generator, for comparison). */
function* batchesInline(gen: ChainGenerator, onSeconds: (s: number) => void): Generator<ArrayBuffer> {
  let ns = 0n;
  for (;;) {
    const t0 = process.hrtime.bigint();
    const buf = gen.nextBatch(BATCH_BLOCKS);
    ns += process.hrtime.bigint() - t0;
    onSeconds(Number(ns) / 1e9);
    if (buf === undefined) return;
    yield buf;
  }
}

export interface BuildOptions {
  keepLogs?: boolean;
  /** Generate on the writer's thread instead of a generator thread (the same chain; for comparison). */
  inlineGenerator?: boolean;
  onProgress?: (block: number, logs: number) => void;
}

/**
 * Builds the synthetic chain into a fresh datadir: a generator thread draws the blocks while this
 * thread writes them (groups of spec.groupBlocks blocks, one LevelDB batch each, the next group
 * staged while the previous one lands).
 */
export async function buildChain(datadir: string, spec: ChainSpec, opts: BuildOptions = {}): Promise<ChainFacts> {
  const t0 = performance.now();
  const writer = await StoreWriter.open(datadir);
  let facts: ChainFacts | undefined;
  let inlineSeconds = 0;
  const generated: GeneratedLog[] | undefined = opts.keepLogs ? [] : undefined;
  let logs = 0;
  let writeNs = 0n;
  try {
    await writer.writeGenesis(genesisInput());
    const gen = opts.inlineGenerator ? new ChainGenerator(spec) : undefined;
    const batches =
      gen !== undefined ? batchesInline(gen, (s) => (inlineSeconds = s)) : batchesFromThread(spec, (f) => (facts = f));
    for await (const buf of batches) {
      const blocks = decodeBlocks(buf);
      if (generated !== undefined) {
        for (const b of blocks) {
          let logIndex = 0;
          for (const txLogs of b.logs)
            for (const l of txLogs)
              generated.push({
                blockNumber: Number(b.number),
                logIndex: logIndex++,
                address: l.address,
                topics: l.topics,
              });
        }
      }
      const w0 = process.hrtime.bigint();
      for (const b of blocks) {
        writer.addPreExecutedBlock(b);
        const n = Number(b.number);
        for (const txLogs of b.logs) logs += txLogs.length;
        // A group's batch lands while the next group is generated and staged (the importer's
        // pipelining); the last flush waits until everything is durable.
        if (n === spec.blocks) await writer.flush();
        else if (n % spec.groupBlocks === 0) await writer.flushBehind();
        if (n % spec.groupBlocks === 0 || n === spec.blocks) opts.onProgress?.(n, logs);
      }
      writeNs += process.hrtime.bigint() - w0;
    }
    if (gen !== undefined) {
      facts = gen.facts;
      facts.generateSeconds = inlineSeconds;
    }
  } finally {
    await writer.close();
  }
  if (facts === undefined) throw new Error('the generator thread ended without its facts');
  if (facts.logs !== logs) throw new Error(`the generator counted ${facts.logs} logs, the writer got ${logs}`);
  facts.writeSeconds = Number(writeNs) / 1e9;
  facts.wallSeconds = (performance.now() - t0) / 1000;
  if (generated !== undefined) facts.generated = generated;
  return facts;
}

export { HOT_TOTAL };
