// eth_call's executor against an independent re-execution: a fresh @ethereumjs/vm whose
// MerkleStateManager walks the state trie at the block's state root with @ethereumjs/mpt (the
// store's nodes and code as its database, nothing of the store's own walk, caches or
// StoreStateManager), running each call with the EVM's runCall under the block's header. Random
// calls at random blocks: the chain's own transactions to contracts replayed at a later block,
// and random selectors with random arguments sent to the contracts they called.
import { createBlock } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { MerkleStateManager } from '@ethereumjs/statemanager';
import { Address, KECCAK256_NULL, ValueEncoding, bytesToHex, hexToBytes } from '@ethereumjs/util';
import type { BatchDBOp, DB } from '@ethereumjs/util';
import { createVM } from '@ethereumjs/vm';
import type { Bytes, ChainStore, HeaderRecord, SyncStateReader } from '@chainnode/core';
import type { Executor } from '../src/index.js';

/** Gas each call is given (the executor's; the EVM's runCall gets it less the intrinsic gas). */
const GAS = 1_000_000n;

/**
 * A database over the store's trie nodes and code ('c' ++ code hash, as the state manager keys
 * code), read-only underneath: what the VM writes stays in an overlay.
 */
function storeTrieDb(reader: SyncStateReader): DB<string, Uint8Array> {
  const overlay = new Map<string, Uint8Array>();
  const bytes = (k: string | Uint8Array): Uint8Array =>
    typeof k === 'string' ? hexToBytes(k.startsWith('0x') ? (k as `0x${string}`) : `0x${k}`) : k;
  const db: DB<string, Uint8Array> = {
    async get(key) {
      const k = bytes(key);
      const own = overlay.get(bytesToHex(k));
      if (own !== undefined) return own;
      if (k.length === 33 && k[0] === 0x63) return reader.code(k.subarray(1));
      return reader.node?.(k);
    },
    async put(key, value) {
      overlay.set(bytesToHex(bytes(key)), value);
    },
    async del(key) {
      overlay.delete(bytesToHex(bytes(key)));
    },
    async batch(ops: BatchDBOp<string, Uint8Array>[]) {
      for (const op of ops) {
        if (op.type === 'put') await db.put(op.key, op.value);
        else await db.del(op.key);
      }
    },
    shallowCopy: () => db,
    async open() {},
  };
  return db;
}

/** One call: what each side is given. */
export interface DiffCall {
  from: Bytes;
  to: Bytes;
  input: Bytes;
}

export interface Outcome {
  kind: 'success' | 'revert' | 'halt';
  returnValue: string;
}

/** The independent side: a fresh VM over the trie at the header's state root. */
export async function reExecute(store: ChainStore, common: Common, header: HeaderRecord, calls: DiffCall[]) {
  common.setHardforkBy({ blockNumber: header.number, timestamp: header.timestamp });
  const trie = new MerklePatriciaTrie({
    db: storeTrieDb(store.stateReader()),
    valueEncoding: ValueEncoding.Bytes,
    useKeyHashing: true,
    root: header.stateRoot,
    common,
  });
  const stateManager = new MerkleStateManager({ trie, common });
  const vm = await createVM({ common, stateManager });
  // geth's eth_call context: an unpriced call sees a zero base fee (NoBaseFee).
  const block = createBlock(
    {
      header: {
        number: header.number,
        timestamp: header.timestamp,
        gasLimit: header.gasLimit,
        coinbase: header.coinbase,
        difficulty: header.difficulty,
        mixHash: header.mixHash,
        ...(header.baseFeePerGas !== undefined ? { baseFeePerGas: 0n } : {}),
        ...(header.excessBlobGas !== undefined ? { excessBlobGas: header.excessBlobGas, blobGasUsed: 0n } : {}),
        ...(header.parentBeaconBlockRoot !== undefined ? { parentBeaconBlockRoot: header.parentBeaconBlockRoot } : {}),
        ...(header.withdrawalsRoot !== undefined ? { withdrawalsRoot: header.withdrawalsRoot } : {}),
        ...(header.requestsHash !== undefined ? { requestsHash: header.requestsHash } : {}),
      },
    },
    { common, skipConsensusFormatValidation: true },
  );
  const out: Outcome[] = [];
  for (const c of calls) {
    await stateManager.checkpoint();
    const r = await vm.evm.runCall({
      caller: new Address(c.from),
      origin: new Address(c.from),
      to: new Address(c.to),
      data: c.input,
      gasLimit: GAS - intrinsicGas(c.input),
      block,
    });
    await stateManager.revert();
    const err = r.execResult.exceptionError?.error;
    out.push({
      kind: err === undefined ? 'success' : err === 'revert' ? 'revert' : 'halt',
      returnValue: bytesToHex(r.execResult.returnValue),
    });
  }
  return out;
}

/** The executor's side: Executor.call (eth_call's path) of the same calls. */
export async function executorCalls(executor: Executor, header: HeaderRecord, calls: DiffCall[]) {
  const out: Outcome[] = [];
  for (const c of calls) {
    const r = await executor.call(header, { from: c.from, to: c.to, input: c.input, gas: GAS });
    out.push({ kind: r.kind, returnValue: bytesToHex(r.returnValue) });
  }
  return out;
}

/** The transaction's intrinsic gas as far as the call's budget goes (no creation, no access list). */
function intrinsicGas(input: Bytes): bigint {
  let g = 21_000n;
  for (const b of input) g += b === 0 ? 4n : 16n;
  return g;
}

/**
 * `count` random calls over blocks [1, head]: a transaction of a random block to a contract,
 * replayed by its sender at a random block from it to the head, or a random selector (one of the
 * transactions' own, or four random bytes) with random words sent to that contract there.
 */
export async function randomCalls(
  store: ChainStore,
  random: () => number,
  count: number,
): Promise<{ header: HeaderRecord; call: DiffCall }[]> {
  const head = (await store.head()).number;
  const pick = (lo: bigint, hi: bigint): bigint => lo + BigInt(Math.floor(random() * Number(hi - lo + 1n)));
  const headerAt = async (n: bigint) =>
    (await store.header((await store.canonicalHash(n)) as Uint8Array)) as HeaderRecord;
  const out: { header: HeaderRecord; call: DiffCall }[] = [];
  for (let tries = 0; out.length < count && tries < count * 20; tries++) {
    const n = pick(1n, head);
    const block = await store.block((await store.canonicalHash(n)) as Uint8Array);
    const txs = (block?.transactions ?? []).filter((t) => t.to !== null && t.input.length >= 4);
    const tx = txs[Math.floor(random() * txs.length)];
    if (tx === undefined || tx.to === null) continue;
    const at = await headerAt(pick(n, head));
    const account = store.stateReader().account(at.stateRoot, tx.to);
    if (account === null || bytesToHex(account.codeHash) === bytesToHex(KECCAK256_NULL)) continue;
    let input = tx.input;
    if (random() < 0.5) {
      const words = Math.floor(random() * 3);
      input = new Uint8Array(4 + 32 * words);
      input.set(random() < 0.5 ? tx.input.subarray(0, 4) : [0, 1, 2, 3].map(() => Math.floor(random() * 256)));
      for (let i = 4; i < input.length; i++) input[i] = random() < 0.7 ? 0 : Math.floor(random() * 256);
    }
    out.push({ header: at, call: { from: tx.from, to: tx.to, input } });
  }
  return out;
}
