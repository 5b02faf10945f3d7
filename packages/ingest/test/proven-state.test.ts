// State proven on demand (joined/proven-state.ts) over a store that holds no state and an
// upstream that answers eth_getProof from a full state trie (built here with @ethereumjs/mpt): a
// proof is checked by the synchronous walk before anything is answered or kept; one that does not
// verify (a flipped node, a stated balance that is not the proven one) is refused and nothing of it
// is kept; concurrent cold reads share one upstream request.
import { createMPT, createMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToBytes } from '@ethereumjs/util';
import { UpstreamRpcError, keccak256 } from '@chainnode/core';
import type { AccountRecord, ChainStore, UpstreamClient } from '@chainnode/core';
import { trieGet } from '@chainnode/store';
import { UnprovenStateError, withProvenState } from '../src/joined/proven-state.js';

const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;
const bytes = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h.slice(2), 'hex'));
const word = (n: number): Uint8Array => {
  const w = new Uint8Array(32);
  w[31] = n;
  return w;
};
const addressOf = (n: number): Uint8Array => new Uint8Array(20).fill(n);
const EMPTY_CODE = keccak256(new Uint8Array());

/** A state of 40 accounts; account 7 holds storage slots 1..5 (value: slot * 1000). */
async function fullState(): Promise<{
  root: Uint8Array;
  proof: (address: Uint8Array, slots: Uint8Array[]) => Promise<Record<string, unknown>>;
}> {
  const storage = await createMPT({ useKeyHashing: false });
  for (let s = 1; s <= 5; s++) await storage.put(keccak256(word(s)), RLP.encode(bigIntToBytes(BigInt(s * 1000))));
  const state = await createMPT({ useKeyHashing: false });
  const accounts = new Map<string, Uint8Array[]>();
  for (let i = 1; i <= 40; i++) {
    const fields = [bigIntToBytes(BigInt(i)), bigIntToBytes(BigInt(i) * 10n ** 18n), storage.root(), EMPTY_CODE];
    if (i !== 7) fields[2] = keccak256(RLP.encode(new Uint8Array()));
    accounts.set(hex(addressOf(i)), fields);
    await state.put(keccak256(addressOf(i)), RLP.encode(fields));
  }
  const quantity = (b: Uint8Array | undefined): string =>
    `0x${(b === undefined ? 0n : BigInt(hex(b) === '0x' ? 0 : hex(b))).toString(16)}`;
  return {
    root: state.root(),
    proof: async (address, slots) => {
      const f = accounts.get(hex(address));
      const storageProof = [];
      for (const s of slots) {
        const v = f?.[2] !== undefined && hex(f[2]) === hex(storage.root()) ? await storage.get(keccak256(s)) : null;
        storageProof.push({
          key: hex(s),
          value: v === null ? '0x0' : quantity(RLP.decode(v) as Uint8Array),
          proof: v === null ? [] : (await createMerkleProof(storage, keccak256(s))).map(hex),
        });
      }
      return {
        address: hex(address),
        balance: quantity(f?.[1]),
        nonce: quantity(f?.[0]),
        accountProof: (await createMerkleProof(state, keccak256(address))).map(hex),
        storageProof,
      };
    },
  };
}

/** A store that holds no state of its own: reads walk the nodes added to it. */
function emptyStore(root: Uint8Array): { store: ChainStore; nodes: Map<string, Uint8Array> } {
  const nodes = new Map<string, Uint8Array>();
  const source = (h: Uint8Array) => nodes.get(hex(h));
  const account = (r: Uint8Array, a: Uint8Array): AccountRecord | null => {
    const v = trieGet(source, r, keccak256(a));
    if (v === null) return null;
    const f = RLP.decode(v) as Uint8Array[];
    return {
      nonce: BigInt(hex(f[0] as Uint8Array) === '0x' ? 0 : hex(f[0] as Uint8Array)),
      balance: BigInt(hex(f[1] as Uint8Array)),
      storageRoot: f[2] as Uint8Array,
      codeHash: f[3] as Uint8Array,
    };
  };
  const slotOf = (storageRoot: Uint8Array, slot: Uint8Array): Uint8Array => {
    const v = trieGet(source, storageRoot, keccak256(slot));
    const out = new Uint8Array(32);
    if (v !== null) {
      const b = RLP.decode(v) as Uint8Array;
      out.set(b, 32 - b.length);
    }
    return out;
  };
  const store = {
    canonicalStateRoot: async () => root,
    account: async (r: Uint8Array, a: Uint8Array) => account(r, a),
    storageAt: async (r: Uint8Array, a: Uint8Array, slot: Uint8Array) => {
      const acc = account(r, a);
      return acc === null ? new Uint8Array(32) : slotOf(acc.storageRoot, slot);
    },
    code: async () => undefined,
    stateReader: () => ({
      account: (r: Uint8Array, a: Uint8Array) => account(r, a),
      storage: (storageRoot: Uint8Array, slot: Uint8Array) => slotOf(storageRoot, slot),
      code: () => undefined,
    }),
    info: () => ({ firstBlock: 10n }),
    addProvenState: (ns: Uint8Array[]) => {
      for (const n of ns) nodes.set(hex(keccak256(n)), n);
      return Promise.resolve();
    },
  };
  return { store: store as unknown as ChainStore, nodes };
}

/** An upstream answering eth_getProof from `state`; counts requests; `lie` changes what it answers. */
function upstreamOf(state: Awaited<ReturnType<typeof fullState>>) {
  const u = {
    requests: 0,
    proofs: 0,
    lie: 'none' as 'none' | 'balance' | 'node',
    origin: 'http://upstream.test',
    async answer(method: string, params: unknown[]): Promise<unknown> {
      if (method === 'eth_getCode') return '0x';
      expect(method).toBe('eth_getProof');
      u.proofs++;
      const [address, slots] = params as [string, string[]];
      const reply = await state.proof(bytes(address), slots.map(bytes));
      if (u.lie === 'balance') reply.balance = '0x1';
      if (u.lie === 'node') {
        const proof = reply.accountProof as string[];
        const last = proof[proof.length - 1] as string;
        proof[proof.length - 1] = `${last.slice(0, -2)}${last.endsWith('00') ? '01' : '00'}`;
      }
      return reply;
    },
    /** An address the upstream answers with an error object (a pruned state, say). */
    failing: undefined as string | undefined,
    async call(method: string, params: unknown[]): Promise<unknown> {
      u.requests++;
      if (params[0] === u.failing) throw new UpstreamRpcError(u.origin, -32000, 'missing trie node');
      return u.answer(method, params);
    },
    async batch(method: string, list: unknown[][]): Promise<unknown[]> {
      u.requests++;
      // As the client does: one error object fails the batch.
      if (list.some((p) => p[0] === u.failing)) throw new UpstreamRpcError(u.origin, -32000, 'missing trie node');
      return Promise.all(list.map((p) => u.answer(method, p)));
    },
    close: async () => undefined,
  };
  return u;
}

async function setup() {
  const state = await fullState();
  const { store, nodes } = emptyStore(state.root);
  const upstream = upstreamOf(state);
  const { store: proven, state: layer } = withProvenState(store, { upstream: upstream as UpstreamClient });
  const root = (await proven.canonicalStateRoot?.(12n)) as Uint8Array;
  return { proven, layer, upstream, nodes, root };
}

test('a cold read is proven, answered and kept: the second reads nothing upstream', async () => {
  const { proven, upstream, root, layer } = await setup();
  expect((await proven.account(root, addressOf(3)))?.balance).toBe(3n * 10n ** 18n);
  expect(hex(await proven.storageAt(root, addressOf(7), word(2))).endsWith('000007d0')).toBe(true);
  // An absent account: proven absent (by a proof, or by the nodes kept already).
  expect(await proven.account(root, new Uint8Array(20).fill(0xee))).toBeNull();
  const asked = upstream.requests;
  expect(asked).toBeGreaterThanOrEqual(2);
  expect((await proven.account(root, addressOf(3)))?.nonce).toBe(3n);
  expect(hex(await proven.storageAt(root, addressOf(7), word(2))).endsWith('000007d0')).toBe(true);
  expect(await proven.account(root, new Uint8Array(20).fill(0xee))).toBeNull();
  expect(upstream.requests).toBe(asked);
  expect(layer.stats).toMatchObject({ fetches: asked, verified: asked, rejected: 0 });
});

test('a proof that does not verify (a flipped node, a stated balance not proven) is refused and nothing kept', async () => {
  const { proven, upstream, root, nodes, layer } = await setup();
  for (const lie of ['node', 'balance'] as const) {
    upstream.lie = lie;
    const e = await proven.account(root, addressOf(5)).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(UnprovenStateError);
    expect((e as Error).message).toContain(lie === 'node' ? 'does not lead from state root' : 'balance of');
    expect(nodes.size).toBe(0);
  }
  // Lies in a batch: each answer refused on its own.
  const both = await Promise.allSettled([proven.account(root, addressOf(6)), proven.account(root, addressOf(8))]);
  expect(both.map((r) => r.status === 'rejected' && r.reason instanceof UnprovenStateError)).toEqual([true, true]);
  expect(upstream.requests).toBe(3);
  expect(nodes.size).toBe(0);
  expect(layer.stats.rejected).toBe(4);
  upstream.lie = 'none';
  expect((await proven.account(root, addressOf(5)))?.balance).toBe(5n * 10n ** 18n);
  expect(nodes.size).toBeGreaterThan(0);
});

test('concurrent cold reads share one upstream request', async () => {
  const { proven, upstream, root } = await setup();
  const same = await Promise.all([1, 2, 3].map(() => proven.account(root, addressOf(9))));
  expect(same.map((a) => a?.balance)).toEqual([9n, 9n, 9n].map((n) => n * 10n ** 18n));
  expect([upstream.requests, upstream.proofs]).toEqual([1, 1]);
  // Different accounts asked together: one request (a batch).
  const mixed = await Promise.all([11, 12, 13].map((i) => proven.account(root, addressOf(i))));
  expect(mixed.map((a) => a?.nonce)).toEqual([11n, 12n, 13n]);
  expect([upstream.requests, upstream.proofs]).toEqual([2, 4]);
  // An error object for one of them: the others answered all the same.
  upstream.failing = hex(addressOf(15));
  const some = await Promise.allSettled([14, 15, 16].map((i) => proven.account(root, addressOf(i))));
  expect(some.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  expect((some[1] as PromiseRejectedResult).reason.message).toMatch(/upstream failed.*missing trie node/);
});

test("a call's known paths are proven together before it runs: its reads find them", async () => {
  const { proven, upstream, root } = await setup();
  const paths = [
    { address: addressOf(21), slots: [] },
    { address: addressOf(7), slots: [word(1), word(3)] },
  ];
  await proven.prefetchState?.(root, paths, addressOf(7));
  // One batch of proofs, the target's code alongside (it has none here: nothing kept).
  expect([upstream.requests, upstream.proofs]).toEqual([2, 2]);
  const reader = proven.stateReader();
  expect(reader.account(root, addressOf(21))?.nonce).toBe(21n);
  const target = reader.account(root, addressOf(7));
  expect(hex(reader.storage(target?.storageRoot as Uint8Array, word(3))).endsWith('0bb8')).toBe(true);
  // Held already: nothing asked.
  await proven.prefetchState?.(root, paths, addressOf(7));
  expect(upstream.requests).toBe(2);
});
