// No thundering herd: 200 concurrent identical requests for records that are not cached yet
// (blocks with their transactions, headers, transactions, trie nodes, accounts, storage slots,
// proofs) cause exactly ONE read of each LevelDB key (a state read from the flat history reads its
// block's canonical row a second time, in its snapshot), through the real store over the fixture
// chain, and all 200 get the same answer. The service is what HTTP, WebSocket and batches all
// call, so this holds for every transport. Reads are counted by wrapping the store's LevelDB
// handle (get, getSync, getMany and iterators).
import { openChainStore } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';
import type { ChainStore } from '@chainnode/core';
import { createRpcService } from '../src/index.js';
import type { JsonBlock, RpcServiceApi } from '../src/index.js';

type Reads = Map<string, number>;
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const q = (n: number): string => `0x${n.toString(16)}`;
const N = 200;

/** Counts every key the store reads from LevelDB from now on. */
function instrument(store: ChainStore): Reads {
  const reads: Reads = new Map();
  const count = (k: string): void => {
    reads.set(k, (reads.get(k) ?? 0) + 1);
  };
  const db = (store as unknown as { db: Record<string, (...a: unknown[]) => unknown> }).db;
  const get = db.get!.bind(db);
  const getSync = db.getSync!.bind(db);
  const getMany = db.getMany!.bind(db);
  const iterator = db.iterator!.bind(db);
  db.get = (key: unknown, ...rest: unknown[]) => {
    count(hex(key as Uint8Array));
    return get(key, ...rest);
  };
  // The cold path reads synchronously (classic-level getSync): those reads count the same.
  db.getSync = (key: unknown, ...rest: unknown[]) => {
    count(hex(key as Uint8Array));
    return getSync(key, ...rest);
  };
  db.getMany = (keys: unknown, ...rest: unknown[]) => {
    for (const k of keys as Uint8Array[]) count(hex(k));
    return getMany(keys, ...rest);
  };
  db.iterator = (opts: unknown, ...rest: unknown[]) => {
    const o = (opts ?? {}) as Record<string, Uint8Array | undefined>;
    count(`iterator:${hex(o.gte ?? o.gt ?? new Uint8Array())}`);
    return iterator(opts, ...rest);
  };
  return reads;
}

/**
 * Every key read once; a key in `twice` at most twice (a block's canonical row when its state is
 * read from the flat history: resolved once by the selector, checked again in the history read's
 * snapshot so a reorg in between cannot answer from the other branch).
 */
function expectEachReadOnce(reads: Reads, twice: ReadonlySet<string> = new Set()): void {
  expect(reads.size).toBeGreaterThan(0);
  const repeated = [...reads].filter(([k, n]) => n !== 1 && !(twice.has(k) && n === 2));
  expect(repeated).toEqual([]);
}

async function concurrently(svc: RpcServiceApi, body: string): Promise<string[]> {
  const replies = await Promise.all(Array.from({ length: N }, () => svc.handle(body)));
  return replies.map((r) => r.body!);
}

const call = (method: string, params: unknown[], id: number | string = 1): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params });

describe('single-flight: concurrent cold requests share one read per record', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let store: ChainStore;
  let svc: RpcServiceApi;
  let reads: Reads;
  /** Learned from a first store, then closed: the store under test starts with empty caches. */
  const known: { txHashes: string[]; miner: string; blockHash: string } = { txHashes: [], miner: '', blockHash: '' };

  beforeAll(async () => {
    ({ dir, cleanup } = await datadirCopy('fixtures'));
    const first = await openChainStore(dir);
    const probe = createRpcService(first);
    for (const n of [1400, 1401, 1402]) {
      const b = JSON.parse((await probe.handle(call('eth_getBlockByNumber', [q(n), false]))).body!) as {
        result: JsonBlock;
      };
      known.txHashes.push(...(b.result.transactions as string[]));
      known.miner = b.result.miner;
    }
    known.blockHash = (
      JSON.parse((await probe.handle(call('eth_getBlockByNumber', [q(1500), false]))).body!) as { result: JsonBlock }
    ).result.hash;
    await first.close();
    expect(known.txHashes.length).toBeGreaterThan(2);
    store = await openChainStore(dir);
    svc = createRpcService(store);
    reads = instrument(store);
  });

  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  beforeEach(() => reads.clear());

  test(`${N} identical batches of 100 eth_getBlockByNumber(n, true): one read per key, one answer`, async () => {
    const batch = JSON.stringify(
      Array.from({ length: 100 }, (_, i) => ({
        jsonrpc: '2.0',
        id: i,
        method: 'eth_getBlockByNumber',
        params: [q(i + 1), true],
      })),
    );
    const replies = await concurrently(svc, batch);
    expectEachReadOnce(reads);
    expect(new Set(replies).size).toBe(1);
    const blocks = (JSON.parse(replies[0]!) as { id: number; result: JsonBlock }[]).map((r) => r.result);
    expect(blocks.map((b) => Number(b.number))).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    // Warm now: the same batch reads nothing more.
    reads.clear();
    expect((await svc.handle(batch)).body).toBe(replies[0]);
    expect(reads.size).toBe(0);
  });

  test(`${N} identical eth_getBlockByHash / eth_getTransactionByHash calls, also mixed in one burst`, async () => {
    const bodies = [
      call('eth_getBlockByHash', [known.blockHash, true]),
      ...known.txHashes.map((h, i) => call('eth_getTransactionByHash', [h], i)),
    ];
    const all = await Promise.all(bodies.flatMap((b) => Array.from({ length: N }, () => svc.handle(b))));
    expectEachReadOnce(reads);
    for (let i = 0; i < bodies.length; i++) {
      const group = all.slice(i * N, (i + 1) * N).map((r) => r.body);
      expect(new Set(group).size).toBe(1);
      expect(JSON.parse(group[0]!).result).not.toBeNull();
    }
    const tx = JSON.parse(all[N]!.body!) as { result: { hash: string; blockNumber: string } };
    expect(tx.result.hash).toBe(known.txHashes[0]);
    expect(Number(tx.result.blockNumber)).toBe(1400);
  });

  test(`${N} identical eth_getProof and eth_getStorageAt calls: one read per trie node, account and slot`, async () => {
    const registry = '0xc3e03991e5e0bd4a705887a58bb2d3fa2538c0c7';
    const bodies = [
      call('eth_getProof', [registry, ['0x0', '0x1'], q(1200)]),
      call('eth_getProof', [known.miner, [], q(1300)]),
      call('eth_getStorageAt', [registry, '0x2', q(1250)]),
    ];
    const all = await Promise.all(bodies.flatMap((b) => Array.from({ length: N }, () => svc.handle(b))));
    // Block 1250's storage slot comes from the flat state history (the fixture datadir keeps it).
    expectEachReadOnce(reads, new Set([`02${(1250).toString(16).padStart(16, '0')}`]));
    // Many trie nodes were read (proofs walk the account and storage tries), each once.
    expect(reads.size).toBeGreaterThan(10);
    for (let i = 0; i < bodies.length; i++) {
      const group = all.slice(i * N, (i + 1) * N).map((r) => r.body);
      expect(new Set(group).size).toBe(1);
      expect(JSON.parse(group[0]!).error).toBeUndefined();
    }
  });
});
