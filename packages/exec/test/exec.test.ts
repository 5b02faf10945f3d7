// The execution package over the first blocks of the fixture chain, against an independent
// re-execution: @ethereumjs/vm with its own Merkle state, built from genesis.json and run block
// by block from chain.rlp, re-derives every state root, which must equal the header's. At each
// block, StoreStateManager over the imported store's state (the testkit's shared import) reads
// the same accounts (nonce, balance, code hash, storage root), code and low storage slots as the
// re-executed state; and Executor.call of each block's first transaction on its parent's state,
// under the block's own context, ends as its receipt says (success or revert, gas used).
//
// And on the fixture and execution-apis chains, random calls at random blocks answered by
// Executor.call (eth_call's path) and by an independent re-execution, a fresh @ethereumjs/vm over
// the block's state trie (differential.ts), must end alike with the same return or revert data.
// The mainnet-shaped chain is left out: too big to import for the suite.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createBlockFromRLP } from '@ethereumjs/block';
import type { Block } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, KECCAK256_NULL } from '@ethereumjs/util';
import type { Address } from '@ethereumjs/util';
import { createVM, runBlock } from '@ethereumjs/vm';
import type { VM } from '@ethereumjs/vm';
import type { ChainStore, HeaderRecord } from '@chainnode/core';
import { openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy, seededRandom } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { Executor, StoreStateManager } from '../src/index.js';
import type { CallArgs } from '../src/index.js';
import { executorCalls, randomCalls, reExecute } from './differential.js';

/** Random calls of the differential test on each chain. */
const RANDOM_CALLS = 24;

/** Blocks re-executed: the contracts are deployed in block 1, London comes at 600. */
const BLOCKS = 30;

const fixtures = chainDir('fixtures');
const d = fixtures === undefined ? describe.skip : describe;
if (fixtures === undefined) console.log('skipped: fixtures/ not generated, no chain to execute');

interface GenesisJson {
  alloc: Record<string, { balance: string; nonce?: string; code?: string; storage?: Record<string, string> }>;
}

/** The first `count` blocks of chain.rlp. */
async function firstBlocks(dir: string, count: number): Promise<Uint8Array[]> {
  let rest: Uint8Array = await readFile(join(dir, 'chain.rlp'));
  const out: Uint8Array[] = [];
  while (rest.length > 0 && out.length < count) {
    const { remainder } = RLP.decode(rest, true);
    out.push(rest.subarray(0, rest.length - remainder.length));
    rest = remainder;
  }
  return out;
}

/** A VM with its own Merkle state holding the genesis allocation. */
async function genesisVm(genesis: GenesisJson): Promise<{ vm: VM; block: (rlp: Uint8Array) => Block }> {
  const common = createCommonFromGethGenesis(genesis as never, { chain: 'exec-test' });
  const vm = await createVM({ common: common.copy(), setHardfork: true });
  const state = Object.fromEntries(
    Object.entries(genesis.alloc).map(([a, v]) => [
      a,
      [v.balance, v.code, Object.entries(v.storage ?? {}), v.nonce ?? '0x0'] as const,
    ]),
  );
  await (
    vm.stateManager as unknown as { generateCanonicalGenesis(s: unknown): Promise<void> }
  ).generateCanonicalGenesis(state);
  return { vm, block: (rlp) => createBlockFromRLP(rlp, { common, setHardfork: true }) };
}

/** The transaction's EIP-2930 access list as a call takes it (none for a legacy transaction). */
function accessListOf(tx: Block['transactions'][number]): NonNullable<CallArgs['accessList']> {
  if (!('accessList' in tx)) return [];
  return tx.accessList.map(([address, storageKeys]) => ({ address, storageKeys }));
}

/** Random calls at random blocks of `chain` answer alike through Executor.call and a fresh VM. */
async function differential(chain: ChainName, store: ChainStore, seed: number): Promise<void> {
  const dir = chainDir(chain) as string;
  const genesis = JSON.parse(await readFile(join(dir, 'genesis.json'), 'utf8')) as GenesisJson;
  const common = createCommonFromGethGenesis(genesis as never, { chain });
  const executor = new Executor(store.info(), store.stateReader(), (n) => store.canonicalHash(n));
  const calls = await randomCalls(store, seededRandom(seed), RANDOM_CALLS);
  expect(calls.length).toBe(RANDOM_CALLS);
  const kinds = new Set<string>();
  for (const { header, call } of calls) {
    const [want] = await reExecute(store, common, header, [call]);
    const [got] = await executorCalls(executor, header, [call]);
    expect([header.number, bytesToHex(call.to), bytesToHex(call.input), got]).toEqual([
      header.number,
      bytesToHex(call.to),
      bytesToHex(call.input),
      want,
    ]);
    kinds.add(want?.kind ?? '');
  }
  expect(kinds.has('success')).toBe(true);
}

async function headerAt(store: ChainStore, n: bigint): Promise<HeaderRecord> {
  return (await store.header((await store.canonicalHash(n)) as Uint8Array)) as HeaderRecord;
}

d('execution over the fixture chain', () => {
  let store: ChainStore;
  let cleanup: () => Promise<void>;
  let vm: VM;
  let blocks: Block[];
  beforeAll(async () => {
    const copy = await datadirCopy('fixtures');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    const genesis = JSON.parse(await readFile(join(fixtures as string, 'genesis.json'), 'utf8')) as GenesisJson;
    const built = await genesisVm(genesis);
    vm = built.vm;
    blocks = (await firstBlocks(fixtures as string, BLOCKS)).map(built.block);
  }, 1_200_000); // the shared import, when this suite is the first to ask for it
  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  test('the genesis allocation re-derives the stored genesis state root', async () => {
    expect(bytesToHex(await vm.stateManager.getStateRoot())).toBe(bytesToHex((await headerAt(store, 0n)).stateRoot));
  });

  test('each block re-executed re-derives its state root; the store state reads the same accounts, code and slots', async () => {
    const addresses = new Map<string, Address>();
    const state = new StoreStateManager(store.stateReader(), new Uint8Array(32));
    for (const block of blocks) {
      const result = await runBlock(vm, { block, skipHeaderValidation: true });
      const header = await headerAt(store, block.header.number);
      expect([block.header.number, bytesToHex(result.stateRoot)]).toEqual([
        block.header.number,
        bytesToHex(header.stateRoot),
      ]);
      addresses.set(block.header.coinbase.toString(), block.header.coinbase);
      for (const [i, tx] of block.transactions.entries()) {
        const from = tx.getSenderAddress();
        addresses.set(from.toString(), from);
        if (tx.to !== undefined) addresses.set(tx.to.toString(), tx.to);
        const created = result.results[i]?.createdAddress;
        if (created !== undefined) addresses.set(created.toString(), created);
      }
      state.reset(header.stateRoot, Number.POSITIVE_INFINITY);
      for (const address of addresses.values()) {
        const want = await vm.stateManager.getAccount(address);
        const got = await state.getAccount(address);
        const fields = (a: typeof want) =>
          a === undefined ? null : [a.nonce, a.balance, bytesToHex(a.codeHash), bytesToHex(a.storageRoot)];
        expect([address.toString(), fields(got)]).toEqual([address.toString(), fields(want)]);
        if (want === undefined || bytesToHex(want.codeHash) === bytesToHex(KECCAK256_NULL)) continue;
        expect(bytesToHex(await state.getCode(address))).toBe(bytesToHex(await vm.stateManager.getCode(address)));
        for (let slot = 0; slot < 8; slot++) {
          const key = new Uint8Array(32);
          key[31] = slot;
          const stored = bytesToHex(await state.getStorage(address, key));
          expect([address.toString(), slot, stored]).toEqual([
            address.toString(),
            slot,
            bytesToHex(await vm.stateManager.getStorage(address, key)),
          ]);
        }
      }
    }
    expect(addresses.size).toBeGreaterThan(60); // the senders, the coinbases and the contracts of block 1
  });

  test("Executor.call of each block's first transaction on its parent's state ends as its receipt says", async () => {
    const executor = new Executor(store.info(), store.stateReader(), (n) => store.canonicalHash(n));
    let calls = 0;
    for (const block of blocks) {
      const tx = block.transactions[0];
      if (tx === undefined) continue;
      const header = await headerAt(store, block.header.number);
      const parent = await headerAt(store, block.header.number - 1n);
      const receipt = ((await store.receipts(header.hash)) ?? [])[0];
      const outcome = await executor.call(
        parent,
        {
          from: tx.getSenderAddress().bytes,
          to: tx.to?.bytes ?? null,
          gas: tx.gasLimit,
          value: tx.value,
          input: tx.data,
          accessList: accessListOf(tx),
        },
        {
          block: {
            number: header.number,
            time: header.timestamp,
            gasLimit: header.gasLimit,
            feeRecipient: header.coinbase,
            prevRandao: header.mixHash,
          },
        },
      );
      const status = receipt?.statusOrState[0] === 1 ? 'success' : 'revert';
      expect([block.header.number, outcome.kind, outcome.gasUsed]).toEqual([
        block.header.number,
        status,
        receipt?.cumulativeGasUsed,
      ]);
      calls++;
    }
    expect(calls).toBeGreaterThan(BLOCKS / 2);
  });

  test('random calls at random blocks: Executor.call answers as a fresh VM over the block’s trie', async () => {
    await differential('fixtures', store, 0xca11);
  });
});

const apis = chainDir('execution-apis') !== undefined;
(apis ? describe : describe.skip)('eth_call over the execution-apis chain', () => {
  let store: ChainStore;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const copy = await datadirCopy('execution-apis');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
  }, 1_200_000);
  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  test('random calls at random blocks: Executor.call answers as a fresh VM over the block’s trie', async () => {
    await differential('execution-apis', store, 0xca11);
  });
});
