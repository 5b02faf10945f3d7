// Polled filters without a transport: a small chain that grows and reorgs under the service,
// polled through the envelope as a client would (geth's semantics: each change once, removed logs
// after a reorg, expiry, another key's filter not found, getFilterLogs = getLogs), and two services
// on one shared filter store standing in for two replicas.
import { toData, toQuantity } from '@chainnode/core';
import type { Bytes, ChainCommit, ChainEvents, ChainStore, CommittedBlock, LogQuery, LogRecord } from '@chainnode/core';
import { createRpcService, FILTER_TIMEOUT_MS, FilterRegistry, MemoryFilterStore } from '../src/index.js';
import type { FilterStateStore, RpcServiceApi } from '../src/index.js';
import { filled, matches } from './fake-store.js';

const A = filled(0xaa, 20);
const B = filled(0xbb, 20);
const T0 = filled(0x10, 32);

interface Block {
  number: bigint;
  hash: Bytes;
  logs: LogRecord[];
}

/** A chain that grows and reorgs; each change is published as a ChainCommit, as the follower does. */
class Chain implements ChainEvents {
  blocks: Block[] = [];
  private listeners: ((c: ChainCommit) => void)[] = [];
  private salt = 0;

  constructor() {
    this.push(0);
  }

  subscribe(listener: (c: ChainCommit) => void): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** Appends a block with `n` logs (alternately from A and B, topic T0). */
  push(n: number): Block {
    const number = BigInt(this.blocks.length);
    const hash = filled(0, 32);
    new DataView(hash.buffer).setUint32(0, Number(number));
    new DataView(hash.buffer).setUint32(4, ++this.salt);
    const logs = Array.from(
      { length: n },
      (_, i): LogRecord => ({
        address: i % 2 === 0 ? A : B,
        topics: [T0],
        data: new Uint8Array([i]),
        blockNumber: number,
        blockHash: hash,
        blockTimestamp: number * 12n,
        transactionHash: filled(i + 1, 32),
        transactionIndex: i,
        logIndex: i,
      }),
    );
    const block = { number, hash, logs };
    this.blocks.push(block);
    return block;
  }

  grow(...logCounts: number[]): void {
    const added = logCounts.map((n) => this.push(n));
    this.publish({ removed: [], added });
  }

  /** Drops the newest `depth` blocks and adds a branch with `logCounts`. */
  reorg(depth: number, ...logCounts: number[]): void {
    const removed = this.blocks.splice(this.blocks.length - depth);
    const added = logCounts.map((n) => this.push(n));
    this.publish({ removed, added });
  }

  private publish(c: { removed: CommittedBlock[]; added: CommittedBlock[] }): void {
    const h = this.blocks.at(-1) as Block;
    for (const l of this.listeners) l({ ...c, head: { number: h.number, hash: h.hash } });
  }

  /** The store's reads the filters and eth_getLogs use. */
  store(): ChainStore {
    const byHash = (hash: Bytes): Block | undefined => this.blocks.find((b) => toData(b.hash) === toData(hash));
    const store = {
      info: () => ({ chainId: 1337n, networkId: 1337n, genesisHash: (this.blocks[0] as Block).hash }),
      head: async () => {
        const h = this.blocks.at(-1) as Block;
        return { number: h.number, hash: h.hash };
      },
      canonicalHash: async (n: bigint) => this.blocks[Number(n)]?.hash,
      blockNumber: async (hash: Bytes) => byHash(hash)?.number,
      logs: async (q: LogQuery, o: { limit: number }) => {
        const out = this.blocks.flatMap((b) => b.logs).filter((l) => matches(q, l));
        if (out.length <= o.limit) return { kind: 'ok' as const, logs: out };
        const over = out[o.limit] as LogRecord;
        return { kind: 'too-many' as const, lastFittingBlock: over.blockNumber - 1n };
      },
    };
    return store as unknown as ChainStore;
  }
}

interface Reply {
  result?: unknown;
  error?: { code: number; message: string };
}

function caller(service: RpcServiceApi, key: string) {
  let id = 0;
  return async (method: string, params: unknown[] = []): Promise<Reply> => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params });
    const reply = await service.handle(body, undefined, undefined, key);
    return JSON.parse(reply.body as string) as Reply;
  };
}

function setup(state: FilterStateStore = new MemoryFilterStore(), chain = new Chain()) {
  const filters = new FilterRegistry({ state });
  filters.attach(chain);
  const service = createRpcService(chain.store(), {}, { filters });
  return { chain, service, filters, call: caller(service, 'key-a') };
}

type JsonLogOut = { blockNumber: string; blockHash: string; logIndex: string; removed: boolean; address: string };

describe('polled filters (eth_newFilter and the rest)', () => {
  test('block filter: every new canonical block once, in order; after a reorg the new branch', async () => {
    const { chain, call } = setup();
    chain.grow(0, 0);
    const id = (await call('eth_newBlockFilter')).result as string;
    expect(id).toMatch(/^0x[0-9a-f]{1,32}$/);
    expect((await call('eth_getFilterChanges', [id])).result).toEqual([]);
    chain.grow(0, 0);
    const hashes = (n: number[]): string[] => n.map((i) => toData((chain.blocks[i] as Block).hash));
    expect((await call('eth_getFilterChanges', [id])).result).toEqual(hashes([3, 4]));
    expect((await call('eth_getFilterChanges', [id])).result).toEqual([]);
    chain.reorg(2, 0, 0, 0);
    expect((await call('eth_getFilterChanges', [id])).result).toEqual(hashes([3, 4, 5]));
  });

  test('log filter: matching logs once; a reorg gives the dropped logs with removed:true, then the new branch', async () => {
    const { chain, call } = setup();
    const id = (await call('eth_newFilter', [{ address: toData(A) }])).result as string;
    chain.grow(2, 3);
    const first = (await call('eth_getFilterChanges', [id])).result as JsonLogOut[];
    expect(first.map((l) => [l.blockNumber, l.logIndex, l.removed])).toEqual([
      ['0x1', '0x0', false],
      ['0x2', '0x0', false],
      ['0x2', '0x2', false],
    ]);
    expect((await call('eth_getFilterChanges', [id])).result).toEqual([]);
    const dropped = toData((chain.blocks[2] as Block).hash);
    chain.reorg(1, 1);
    const second = (await call('eth_getFilterChanges', [id])).result as JsonLogOut[];
    expect(second.map((l) => [l.blockHash === dropped, l.logIndex, l.removed])).toEqual([
      [true, '0x0', true],
      [true, '0x2', true],
      [false, '0x0', false],
    ]);
    // What was delivered, net of removals, is what eth_getLogs finds over the same criteria.
    const all = (await call('eth_getLogs', [{ address: toData(A), fromBlock: '0x1', toBlock: 'latest' }]))
      .result as JsonLogOut[];
    expect(all.map((l) => l.blockHash)).toEqual([...first.slice(0, 1), second[2]].map((l) => l?.blockHash));
  });

  test('a reorg deeper than what the filter delivered: removed logs of every dropped block it covered, the whole new branch', async () => {
    const { chain, call } = setup();
    chain.grow(2, 2, 2);
    const id = (await call('eth_newFilter', [{ address: toData(A) }])).result as string;
    const dropped = chain.blocks.slice(2).map((b) => toData(b.hash));
    chain.reorg(2, 1, 3);
    const got = (await call('eth_getFilterChanges', [id])).result as JsonLogOut[];
    const branch = chain.blocks.slice(2).map((b) => toData(b.hash));
    expect(got.map((l) => [l.blockHash, l.logIndex, l.removed])).toEqual([
      [dropped[0], '0x0', true],
      [dropped[1], '0x0', true],
      [branch[0], '0x0', false],
      [branch[1], '0x0', false],
      [branch[1], '0x2', false],
    ]);
    chain.grow(1);
    expect(((await call('eth_getFilterChanges', [id])).result as JsonLogOut[]).map((l) => l.blockNumber)).toEqual([
      '0x4',
    ]);
  });

  test('a log filter honours fromBlock/toBlock for new blocks; getFilterLogs equals eth_getLogs over its criteria', async () => {
    const { chain, call } = setup();
    chain.grow(2, 2);
    const crit = { fromBlock: '0x2', toBlock: '0x3', topics: [toData(T0)] };
    const id = (await call('eth_newFilter', [crit])).result as string;
    chain.grow(1, 1);
    const changes = (await call('eth_getFilterChanges', [id])).result as JsonLogOut[];
    expect(changes.map((l) => l.blockNumber)).toEqual(['0x3']);
    expect((await call('eth_getFilterLogs', [id])).result).toEqual((await call('eth_getLogs', [crit])).result);
    expect((await call('eth_newFilter', [{ fromBlock: 'pending' }])).error).toEqual({
      code: -32602,
      message: 'pending logs are not supported',
    });
    expect((await call('eth_newFilter', [{ fromBlock: '0x3', toBlock: '0x2' }])).error?.code).toBe(-32602);
  });

  test('expiry 5 minutes after the last poll (an injected clock); uninstall; another key gets "filter not found"', async () => {
    let now = 1_000_000;
    const { call, service } = setup(new MemoryFilterStore(undefined, () => now));
    const other = caller(service, 'key-b');
    const notFound = { code: -32000, message: 'filter not found' };
    const id = (await call('eth_newBlockFilter')).result as string;
    expect((await other('eth_getFilterChanges', [id])).error).toEqual(notFound);
    expect((await other('eth_uninstallFilter', [id])).result).toBe(false);
    now += FILTER_TIMEOUT_MS - 1;
    expect((await call('eth_getFilterChanges', [id])).result).toEqual([]); // a poll extends its life
    now += FILTER_TIMEOUT_MS - 1;
    expect((await call('eth_getFilterChanges', [id])).result).toEqual([]);
    now += FILTER_TIMEOUT_MS;
    expect((await call('eth_getFilterChanges', [id])).error).toEqual(notFound);
    const id2 = (await call('eth_newFilter', [{}])).result as string;
    expect((await call('eth_getFilterLogs', [(await call('eth_newBlockFilter')).result])).error).toEqual(notFound);
    expect((await call('eth_uninstallFilter', [id2])).result).toBe(true);
    expect((await call('eth_uninstallFilter', [id2])).result).toBe(false);
    expect((await call('eth_getFilterChanges', [id2])).error).toEqual(notFound);
    expect((await call('eth_getFilterChanges', [1])).error?.code).toBe(-32602);
  });

  test('limits: filters per key, then -32005', async () => {
    const { call, service } = setup(new MemoryFilterStore({ perKey: 2, total: 3 }));
    await call('eth_newBlockFilter');
    await call('eth_newBlockFilter');
    expect((await call('eth_newBlockFilter')).error).toEqual({
      code: -32005,
      message: 'too many filters for this API key: at most 2',
      data: { limit: 2 },
    });
    const other = caller(service, 'key-b');
    expect((await other('eth_newBlockFilter')).result).toBeDefined();
    expect((await other('eth_newBlockFilter')).error?.message).toBe('too many filters on this node: at most 3');
  });

  test("pending-transaction filter: the transactions this node forwarded and the upstream's since the last poll, each once", async () => {
    const { call, filters } = setup();
    const id = (await call('eth_newPendingTransactionFilter')).result as string;
    const h = (i: number): `0x${string}` => toData(filled(i, 32));
    await filters.scope('anyone').forwarded(h(1));
    await filters.scope('anyone').forwarded(h(2));
    await filters.notePending([h(2), h(3), h(1)]); // the upstream's: the forwarded ones come again
    expect((await call('eth_getFilterChanges', [id])).result).toEqual([h(1), h(2), h(3)]);
    expect((await call('eth_getFilterChanges', [id])).result).toEqual([]);
    expect((await call('eth_newPendingTransactionFilter', [true])).error?.code).toBe(-32602);
  });

  test('two services on one filter store (two replicas): polled alternately and concurrently, each change once', async () => {
    const chain = new Chain();
    const state = new MemoryFilterStore();
    const one = setup(state, chain);
    const two = setup(state, chain);
    const id = (await one.call('eth_newFilter', [{}])).result as string;
    const seen: string[] = [];
    for (let round = 0; round < 12; round++) {
      chain.grow(round % 3, 1);
      if (round === 6) chain.reorg(1, 2);
      const polls = round % 4 === 3 ? [one.call, two.call] : [round % 2 === 0 ? one.call : two.call];
      const got = await Promise.all(polls.map((c) => c('eth_getFilterChanges', [id])));
      for (const r of got)
        for (const l of r.result as JsonLogOut[]) seen.push(`${l.blockHash}/${l.logIndex}/${l.removed}`);
    }
    expect(new Set(seen).size).toBe(seen.length);
    const live = new Set(seen.filter((s) => s.endsWith('false')).map((s) => s.slice(0, -6)));
    for (const s of seen.filter((x) => x.endsWith('true'))) live.delete(s.slice(0, -5));
    const all = (await one.call('eth_getLogs', [{ fromBlock: '0x1' }])).result as JsonLogOut[];
    expect([...live].sort()).toEqual(all.map((l) => `${l.blockHash}/${l.logIndex}`).sort());
    expect(toQuantity(chain.blocks.length - 1)).toBe(all.at(-1)?.blockNumber);
  });
});
