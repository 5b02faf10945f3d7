// The account and storage methods (balance, nonce, code, reth's account shapes, storage) answered
// from the store's flat state history equal the same methods answered by walking each block's
// state trie, on every prepared chain: one store, two services over it (the second sees a store
// without the by-block reads, so it walks the trie). Random blocks (by number, by hash, and the
// tags), addresses (senders, recipients, coinbases, one never seen) and slots (low ones, mapping
// entries of the addresses, random words). A block hash that is not canonical is never answered
// from the history.
import { KECCAK256_NULL } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import type { ChainStore } from '@chainnode/core';
import { availableChains, mulberry32 } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';
import { countingHistoryReads, serviceOnCopy } from './rpc-call.js';

const CALLS = 250;
const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;

/** `store` without its by-block state reads: every state method walks the trie. */
function trieOnly(store: ChainStore): ChainStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'accountAtBlock' || key === 'storageAtBlock') return undefined;
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** A slot word: one of 0..7, a mapping entry keccak(address ++ p) for p in 0..2, or a random word. */
function slotWord(addresses: Uint8Array[], r: (n: number) => number): string {
  const kind = r(4);
  if (kind < 2) return `0x${r(8).toString(16)}`;
  if (kind === 3) return hex(Uint8Array.from({ length: 32 }, () => r(256)));
  const pre = new Uint8Array(64);
  pre.set(addresses[r(addresses.length)] as Uint8Array, 12);
  pre[63] = r(3);
  return hex(keccak256(pre));
}

async function body(svc: RpcServiceApi, method: string, params: unknown[]): Promise<string> {
  return (await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '';
}

// walkDiskReads -1: every by-block read from the history's seek; 1: the store's trie walk first
// when it needs at most one node from disk, else the seek (the two mixed, as served).
const cases = availableChains().flatMap((chain) => [-1, 1].map((walkDiskReads) => [chain, walkDiskReads] as const));

describe.each(cases)('state reads from the history of the %s chain (walkDiskReads %d)', (chain, walkDiskReads) => {
  test('equal the trie walk at random blocks, addresses and slots', async () => {
    const { store, close } = await serviceOnCopy(chain, { walkDiskReads });
    try {
      expect(await store.hasStateHistory()).toBe(true);
      const answered = { n: 0 };
      const history = createRpcService(countingHistoryReads(store, answered));
      const trie = createRpcService(trieOnly(store));
      const next = mulberry32(46);
      const r = (n: number): number => (next() >>> 0) % n;
      const head = Number((await store.head()).number);
      const hashes: string[] = [];
      for (let n = 0; n <= head; n++) hashes.push(hex((await store.canonicalHash(BigInt(n))) as Uint8Array));
      const seen = new Map<string, Uint8Array>();
      const called = new Map<string, Uint8Array>();
      for (let k = 0; k < 120; k++) {
        const b = await store.block((await store.canonicalHash(BigInt(r(head + 1)))) as Uint8Array);
        if (b === undefined) throw new Error('block missing');
        seen.set(hex(b.header.coinbase), b.header.coinbase);
        for (const tx of b.transactions.slice(0, 4)) {
          seen.set(hex(tx.from), tx.from);
          if (tx.to !== undefined && tx.to !== null) called.set(hex(tx.to), tx.to);
        }
      }
      const addresses = [...seen.values(), ...called.values(), Uint8Array.from({ length: 20 }, () => r(256))];
      // Storage is read mostly of the contracts among the called addresses (code at the head).
      const headRoot = (await store.stateRoot((await store.head()).hash)) as Uint8Array;
      const holders: Uint8Array[] = [];
      for (const a of called.values()) {
        const account = await store.account(headRoot, a);
        if (account !== null && hex(account.codeHash) !== hex(KECCAK256_NULL)) holders.push(a);
      }
      expect(holders.length).toBeGreaterThan(0);
      const selector = (): unknown => {
        const kind = r(10);
        if (kind === 0) return ['latest', 'earliest', 'safe', 'finalized', 'pending'][r(5)];
        const n = r(head + 1);
        return kind < 4 ? { blockHash: hashes[n] } : `0x${n.toString(16)}`;
      };
      const methods = [
        'eth_getBalance',
        'eth_getTransactionCount',
        'eth_getCode',
        'eth_getAccount',
        'eth_getAccountInfo',
        'eth_getStorageAt',
      ];
      let nonZero = 0;
      for (let i = 0; i < CALLS; i++) {
        const method = methods[r(methods.length)] as string;
        const from = method === 'eth_getStorageAt' && r(4) > 0 && holders.length > 0 ? holders : addresses;
        const address = hex(from[r(from.length)] as Uint8Array);
        const block = selector();
        const params = method === 'eth_getStorageAt' ? [address, slotWord(addresses, r), block] : [address, block];
        // The history first: the trie service's walk would fill the node cache for it.
        const got = await body(history, method, params);
        const want = await body(trie, method, params);
        expect([method, params, got]).toEqual([method, params, want]);
        if (method === 'eth_getStorageAt' && /"0x0*[1-9a-f]/.test(want)) nonZero++;
      }
      for (let i = 0; i < 20; i++) {
        const request: Record<string, string[]> = {};
        for (const from of [holders, holders, addresses])
          request[hex(from[r(from.length)] as Uint8Array)] = [0, 1, 2, 3].map(() => slotWord(addresses, r));
        const params = [request, selector()];
        const got = await body(history, 'eth_getStorageValues', params);
        const want = await body(trie, 'eth_getStorageValues', params);
        expect(got).toBe(want);
        nonZero += want.match(/"0x0*[1-9a-f]/g)?.length ?? 0;
      }
      expect(answered.n).toBeGreaterThan(CALLS / 2);
      expect(nonZero).toBeGreaterThan(0);

      // A hash that is not the canonical block of its number is not answered from the history.
      const stranger = { number: 1n, hash: Uint8Array.from({ length: 32 }, () => 0xab) };
      expect(await store.accountAtBlock(stranger, addresses[0] as Uint8Array)).toBeUndefined();
      expect(await store.storageAtBlock(stranger, addresses[0] as Uint8Array, new Uint8Array(32))).toBeUndefined();
      const unknown = [hex(addresses[0] as Uint8Array), { blockHash: hex(stranger.hash) }];
      expect(await body(history, 'eth_getBalance', unknown)).toBe(await body(trie, 'eth_getBalance', unknown));
    } finally {
      await close();
    }
  });
});
