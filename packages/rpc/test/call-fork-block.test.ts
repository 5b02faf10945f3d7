// The kept call answers over the same chain: a hit answers the miss's bytes (a revert too); a
// number or "latest" resolves to a hash before the cache is asked, so after a reorg (the store's
// block N replaced) or a new head the answer is the new block's; a flood of distinct calls stays
// within the byte budget.
//
// eth_call at the blocks around a fork: the fixture chain turns London on at block 600, whose
// header must carry the initial base fee for @ethereumjs/block while an unpriced call runs with
// a zero base fee (geth's NoBaseFee). At 598..602 every call of FixtureToken's views
// (totalSupply, balanceOf of its busiest holders) equals the storage word it reads, read by
// eth_getStorageAt at the same block; and BASEFEE under a priced call is the header's.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import type { ChainHead, ChainStore } from '@chainnode/core';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';
import { callRpc } from './rpc-call.js';

const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
const word = (hex: string): string => hex.replace(/^0x/, '').padStart(64, '0');
const slotOf = (holder: string): string =>
  `0x${Buffer.from(keccak256(Buffer.from(word(holder) + word('0'), 'hex'))).toString('hex')}`;

const rpc = callRpc<{ result?: string; error?: unknown }>;

const available = chainDir('fixtures') !== undefined;
(available ? describe : describe.skip)('eth_call at the London fork block of the fixture chain', () => {
  let store: ChainStore;
  let svc: RpcServiceApi;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const copy = await datadirCopy('fixtures');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    svc = createRpcService(store);
  });

  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  /** The busiest holder of blocks n-10..n whose balance block b changes: [holder, b]. */
  async function changedBalance(n: number): Promise<[string, number]> {
    for (let b = n - 10; b <= n; b++) {
      const tag = `0x${b.toString(16)}`;
      const logs = await rpc(svc, 'eth_getLogs', [{ address: TOKEN, fromBlock: tag, toBlock: tag }]);
      for (const l of logs.result as unknown as { topics: string[] }[]) {
        if (l.topics.length !== 3 || l.topics[1] === l.topics[2]) continue;
        return [`0x${(l.topics[2] as string).slice(26)}`, b];
      }
    }
    throw new Error(`no token transfer in blocks ${n - 10}..${n}`);
  }

  /** `store` whose block `n` and head are what `view` says (a reorg, a new head). */
  function viewOf(view: { remap: Map<bigint, bigint>; head: bigint }): ChainStore {
    return new Proxy(store, {
      get(target, key) {
        if (key === 'canonicalHash') return (n: bigint) => target.canonicalHash(view.remap.get(n) ?? n);
        if (key === 'head')
          return async (): Promise<ChainHead> => ({
            number: view.head,
            hash: (await target.canonicalHash(view.head)) as Uint8Array,
          });
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  }

  test('kept answers: a hit answers the miss’s bytes, a revert too; a number or latest after a reorg or a new head answers the new block', async () => {
    const [holder, b] = await changedBalance(300);
    const call = { to: TOKEN, data: `0x70a08231${word(holder)}` };
    const hashOf = async (n: number): Promise<string> =>
      ((await rpc(svc, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).result as unknown as { hash: string })
        .hash;
    const at = async (n: number): Promise<string> =>
      (await rpc(svc, 'eth_call', [call, { blockHash: await hashOf(n) }])).result as string;
    const [before, after] = [await at(b - 1), await at(b)];
    expect(before).not.toBe(after);
    const view = { remap: new Map<bigint, bigint>(), head: BigInt(b - 1) };
    const kept = createRpcService(viewOf(view));
    const body = (block: string) =>
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_call', params: [call, block] });
    const tag = `0x${b.toString(16)}`;
    // A hit answers exactly the miss's bytes (the second ask keeps the answer, the third hits).
    const first = (await kept.handle(body(tag))).body;
    const miss = (await kept.handle(body(tag))).body;
    const hit = (await kept.handle(body(tag))).body;
    expect([first, hit, kept.answers?.stats().hits, kept.answers?.stats().misses]).toEqual([miss, miss, 1, 2]);
    expect(JSON.parse(miss as string).result).toBe(after);
    // A reorg: block b is now the block before it (its transfer undone); the same number answers that block.
    view.remap.set(BigInt(b), BigInt(b - 1));
    expect(JSON.parse((await kept.handle(body(tag))).body as string).result).toBe(before);
    // A new head: latest answers from it.
    expect(JSON.parse((await kept.handle(body('latest'))).body as string).result).toBe(before);
    view.head = BigInt(b);
    view.remap.clear();
    expect(JSON.parse((await kept.handle(body('latest'))).body as string).result).toBe(after);
    // A revert is an answer too (transferring more than the holder has): the same bytes again.
    const revert = JSON.stringify({
      jsonrpc: '2.0',
      id: 8,
      method: 'eth_call',
      params: [{ from: holder, to: TOKEN, data: `0xa9059cbb${word(TOKEN)}${'f'.repeat(64)}` }, tag],
    });
    const reverted = (await kept.handle(revert)).body;
    expect(JSON.parse(reverted as string).error.code).toBe(3);
    expect((await kept.handle(revert)).body).toBe(reverted); // kept now
    const hits = kept.answers?.stats().hits as number;
    expect((await kept.handle(revert)).body).toBe(reverted);
    expect(kept.answers?.stats().hits).toBe(hits + 1);
  });

  test('kept answers: a flood of distinct calls stays within the byte budget, the oldest dropped first', async () => {
    const budget = 8 * 1024;
    const kept = createRpcService(store, { callCacheBytes: budget });
    const body = (i: number) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'eth_call',
        params: [{ to: `0x${(0x1000 + i).toString(16).padStart(40, '0')}`, data: '0x70a08231' }, 'latest'],
      });
    // Each asked twice: an answer is kept on its second ask.
    for (let i = 1; i <= 120; i++) {
      for (let ask = 0; ask < 2; ask++)
        expect(JSON.parse((await kept.handle(body(i))).body as string).result).toBe('0x');
      expect(kept.answers?.stats().bytes).toBeLessThanOrEqual(budget);
    }
    const { entries, misses } = kept.answers?.stats() ?? { entries: 0, misses: 0 };
    expect(entries).toBeGreaterThan(10);
    expect(entries).toBeLessThan(120);
    await kept.handle(body(120)); // the newest is kept
    await kept.handle(body(1)); // the oldest is not
    expect(kept.answers?.stats()).toMatchObject({ hits: 1, misses: misses + 1 });
  });

  test('598..602: totalSupply and balanceOf equal the storage they read; BASEFEE is the header’s when priced', async () => {
    const genesis = JSON.parse(readFileSync(join(chainDir('fixtures') as string, 'genesis.json'), 'utf8')) as {
      config: { londonBlock: number };
    };
    const london = genesis.config.londonBlock;
    expect(london).toBe(600);
    // Holders: the recipients of the token's transfers in the blocks before the fork.
    const holders = new Set<string>();
    for (let n = london - 30; n < london && holders.size < 6; n++) {
      const logs = await rpc(svc, 'eth_getLogs', [
        { address: TOKEN, fromBlock: `0x${n.toString(16)}`, toBlock: `0x${n.toString(16)}` },
      ]);
      for (const l of logs.result as unknown as { topics: string[] }[])
        if (l.topics.length === 3) holders.add(`0x${(l.topics[2] as string).slice(26)}`);
    }
    expect(holders.size).toBeGreaterThan(0);
    for (let n = london - 2; n <= london + 2; n++) {
      const tag = `0x${n.toString(16)}`;
      const supply = await rpc(svc, 'eth_call', [{ to: TOKEN, data: '0x18160ddd' }, tag]);
      const slot2 = await rpc(svc, 'eth_getStorageAt', [TOKEN, '0x2', tag]);
      expect([n, supply.error, supply.result]).toEqual([n, undefined, slot2.result]);
      expect(BigInt(supply.result as string)).toBeGreaterThan(0n);
      for (const h of holders) {
        const bal = await rpc(svc, 'eth_call', [{ to: TOKEN, data: `0x70a08231${word(h)}` }, tag]);
        const st = await rpc(svc, 'eth_getStorageAt', [TOKEN, slotOf(h), tag]);
        expect([n, h, bal.error, bal.result]).toEqual([n, h, undefined, st.result]);
      }
      // BASEFEE (0x48, from London on) returned by init code run as a creation call: 0 unpriced,
      // the header's when priced (sent by a funded account: the token's deployer pays nothing here).
      if (n < london) continue;
      const code = '0x4860005260206000f3';
      const header = (await rpc(svc, 'eth_getBlockByNumber', [tag, true])).result as unknown as {
        baseFeePerGas: string;
        transactions: { from: string }[];
      };
      const from = (header.transactions[0] as { from: string }).from;
      const unpriced = await rpc(svc, 'eth_call', [{ from, data: code }, tag]);
      const priced = await rpc(svc, 'eth_call', [{ from, data: code, gas: '0x10000', gasPrice: '0x77359400' }, tag]);
      expect([n, unpriced.error, BigInt(unpriced.result as string)]).toEqual([n, undefined, 0n]);
      expect([n, priced.error, BigInt(priced.result as string)]).toEqual([n, undefined, BigInt(header.baseFeePerGas)]);
    }
  });
});
