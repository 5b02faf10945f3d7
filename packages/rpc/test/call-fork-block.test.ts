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
import type { ChainStore } from '@chainnode/core';
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
