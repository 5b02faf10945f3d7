// chainnode_getStateDiff over REAL imported stores (the fixture chain and the execution-apis
// chain, each imported by the executing import), re-derived independently: a state trie of our
// own (@ethereumjs/mpt, keys given hashed) is built from genesis.json's alloc, and every block's
// diff is applied to it in turn (account leaves put or deleted, each account's storage trie
// updated from the storage entries and its root recomputed here, never taken from the answer).
// After each block the trie's root must equal the header's stateRoot, and every code must hash to
// its codeHash. A diff with one entry changed must fail that check.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes, bytesToHex, hexToBytes, KECCAK256_NULL, KECCAK256_RLP } from '@ethereumjs/util';
import type { PrefixedHexString } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { createKeccak } from 'hash-wasm';
import { LimitExceededError, ResponseTooLargeError } from '@chainnode/core';
import { recordedTouches } from '@chainnode/exec';
import { LevelChainStore, Prefix, StoreWriter } from '@chainnode/store';
import { availableChains, chainDir, datadirCopy } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { JsonStateDiff, RpcServiceApi } from '../src/index.js';
import { formatStateDiff } from '../src/formatters/state-diff.js';
import { observingCalls, serviceOnCopy } from './rpc-call.js';

type Hex = PrefixedHexString;
const b = (h: string): Uint8Array => hexToBytes(h as Hex);
const hx = (u: Uint8Array): string => bytesToHex(u);
const EMPTY_ROOT = hx(KECCAK256_RLP);
const EMPTY_CODE = hx(KECCAK256_NULL);
const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/;
const HASH = /^0x[0-9a-f]{64}$/;

const chains = availableChains();

async function call<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const reply = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
  const r = JSON.parse(reply.body!) as { result?: T; error?: unknown };
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

async function callError(svc: RpcServiceApi, method: string, params: unknown[]): Promise<unknown> {
  const reply = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
  return (JSON.parse(reply.body!) as { error?: unknown }).error;
}

// The tries' node hashes through hash-wasm's WebAssembly Keccak (the pure-JS one was a fifth of
// this suite's CPU); the roots are checked against the headers' either way.
const wasmKeccak = await createKeccak(256);
const nodeHash = (data: Uint8Array): Uint8Array => wasmKeccak.init().update(data).digest('binary');
const newTrie = (): MerklePatriciaTrie =>
  new MerklePatriciaTrie({ useKeyHashing: false, useKeyHashingFunction: nodeHash });

/** Our own copy of a state: the account trie, each account's storage trie, and the codes seen. */
class State {
  accounts = newTrie();
  storage = new Map<string, MerklePatriciaTrie>();
  codes = new Map<string, Uint8Array>([[EMPTY_CODE, new Uint8Array()]]);

  static async fromGenesis(path: string): Promise<State> {
    const genesis = JSON.parse(readFileSync(path, 'utf8')) as {
      alloc: Record<string, { balance?: string; nonce?: string; code?: string; storage?: Record<string, string> }>;
    };
    const s = new State();
    for (const [addr, acc] of Object.entries(genesis.alloc)) {
      const key = hx(keccak256(b(addr.startsWith('0x') ? addr : `0x${addr}`)));
      const st = newTrie();
      for (const [slot, value] of Object.entries(acc.storage ?? {})) {
        const v = BigInt(value);
        if (v !== 0n) await st.put(keccak256(b(slot)), RLP.encode(bigIntToUnpaddedBytes(v)));
      }
      const code = acc.code !== undefined ? b(acc.code) : new Uint8Array();
      const codeHash = hx(keccak256(code));
      s.codes.set(codeHash, code);
      s.storage.set(key, st);
      await s.accounts.put(
        b(key),
        RLP.encode([
          bigIntToUnpaddedBytes(BigInt(acc.nonce ?? 0)),
          bigIntToUnpaddedBytes(BigInt(acc.balance ?? 0)),
          st.root(),
          b(codeHash),
        ]),
      );
    }
    return s;
  }

  /** Applies one block's diff; returns the new state root. */
  async apply(diff: JsonStateDiff): Promise<string> {
    for (const a of diff.accounts) {
      if (a.account === null) {
        await this.accounts.del(b(a.key));
        this.storage.delete(a.key);
        continue;
      }
      // A copy of the parent's storage trie (the empty trie for a new account).
      const parent = this.storage.get(a.key);
      const st = parent === undefined ? newTrie() : parent.shallowCopy(false);
      for (const [slot, value] of a.storage) {
        if (value === null) await st.del(b(slot));
        else await st.put(b(slot), RLP.encode(bigIntToUnpaddedBytes(BigInt(value))));
      }
      this.storage.set(a.key, st);
      if (a.code !== undefined) this.codes.set(hx(keccak256(b(a.code))), b(a.code));
      await this.accounts.put(
        b(a.key),
        RLP.encode([
          bigIntToUnpaddedBytes(BigInt(a.account.nonce)),
          bigIntToUnpaddedBytes(BigInt(a.account.balance)),
          st.root(), // recomputed: the answer's storageRoot is not used
          b(a.account.codeHash),
        ]),
      );
    }
    return hx(this.accounts.root());
  }
}

/**
 * Shape checks: lowercase hex, quantities minimal, both lists sorted by key. Returns what is wrong
 * (empty when nothing is): the caller asserts the list once per block, as one expect per field
 * of every account and slot costs more than the walk itself.
 */
function shapeProblems(d: JsonStateDiff): string[] {
  const problems: string[] = [];
  const want = (ok: boolean, what: string): void => {
    if (!ok) problems.push(what);
  };
  for (const h of [d.blockHash, d.parentStateRoot, d.stateRoot]) want(HASH.test(h), `root/hash ${h}`);
  want(QUANTITY.test(d.number), `number ${d.number}`);
  for (let i = 0; i < d.accounts.length; i++) {
    const a = d.accounts[i]!;
    want(HASH.test(a.key), `key ${a.key}`);
    if (i > 0) want(d.accounts[i - 1]!.key < a.key, `${a.key} out of order`);
    const fields = a.code === undefined ? ['key', 'account', 'storage'] : ['key', 'account', 'code', 'storage'];
    want(Object.keys(a).join() === fields.join(), `${a.key} fields ${Object.keys(a).join()}`);
    if (a.account !== null) {
      want(QUANTITY.test(a.account.nonce), `${a.key} nonce ${a.account.nonce}`);
      want(QUANTITY.test(a.account.balance), `${a.key} balance ${a.account.balance}`);
      want(HASH.test(a.account.storageRoot), `${a.key} storageRoot ${a.account.storageRoot}`);
      want(HASH.test(a.account.codeHash), `${a.key} codeHash ${a.account.codeHash}`);
    } else want(a.storage.length === 0, `${a.key} removed with storage`);
    if (a.code !== undefined) want(/^0x([0-9a-f]{2})+$/.test(a.code), `${a.key} code`);
    for (let j = 0; j < a.storage.length; j++) {
      const [slot, value] = a.storage[j]!;
      want(HASH.test(slot), `${a.key} slot ${slot}`);
      if (j > 0) want(a.storage[j - 1]![0] < slot, `${a.key} slot ${slot} out of order`);
      // A zero slot is deleted, never stored.
      if (value !== null) want(QUANTITY.test(value) && value !== '0x0', `${a.key} slot ${slot} value ${value}`);
    }
  }
  return problems;
}

type Seen = Record<'accounts' | 'removedAccounts' | 'slots' | 'removedSlots' | 'storageEmptied' | 'codes', number>;

/**
 * After a block's diff is applied: every account's code is known (from genesis or an earlier
 * diff) and hashes to its codeHash (each distinct code hashed once, in `hashed`), and the storage
 * root recomputed here is the one the account leaf says. Counts what the diff holds into `seen`;
 * returns what is wrong (empty when nothing is).
 */
function accountProblems(
  diff: JsonStateDiff,
  state: State,
  seen: Seen,
  hashed: Set<string>,
  parentStorageRoots: Map<string, string>,
): string[] {
  const problems: string[] = [];
  for (const a of diff.accounts) {
    seen.accounts++;
    if (a.account === null) {
      seen.removedAccounts++;
      continue;
    }
    const { codeHash, storageRoot } = a.account;
    const code = state.codes.get(codeHash);
    if (code === undefined) problems.push(`${a.key}: no code for ${codeHash}`);
    else if (!hashed.has(codeHash)) {
      if (hx(keccak256(code)) !== codeHash) problems.push(`${a.key}: code does not hash to ${codeHash}`);
      hashed.add(codeHash);
    }
    if (a.code !== undefined) {
      seen.codes++;
      if (codeHash === EMPTY_CODE) problems.push(`${a.key}: code given with the empty code hash`);
    }
    const ours = hx(state.storage.get(a.key)!.root());
    if (ours !== storageRoot) problems.push(`${a.key}: storage root ${ours}, the leaf says ${storageRoot}`);
    if (storageRoot === EMPTY_ROOT && parentStorageRoots.get(a.key) !== EMPTY_ROOT) seen.storageEmptied++;
    for (const [, v] of a.storage) {
      seen.slots++;
      if (v === null) seen.removedSlots++;
    }
  }
  return problems;
}

/** `store` counting the state diffs its state history answered (history) and left to the trie diff (trie). */
function countingHistoryDiffs(store: LevelChainStore, from: { history: number; trie: number }): LevelChainStore {
  return observingCalls(store, ['historyStateDiff'], (out) => {
    if (out === undefined) from.trie++;
    else from.history++;
  });
}

test.each(chains)(
  '%s: every block’s diff, applied to the parent state, gives the block’s stateRoot',
  async (chain) => {
    const { store, close } = await serviceOnCopy(chain);
    // Which answers the state history gave (the blocks whose every change the records and the
    // block-level keys name), and which the trie diff.
    const from = { history: 0, trie: 0 };
    const svc = createRpcService(countingHistoryDiffs(store, from));
    try {
      const state = await State.fromGenesis(join(chainDir(chain)!, 'genesis.json'));
      const head = (await store.head()).number;
      const genesis = (await store.header((await store.canonicalHash(0n))!))!;
      expect(hx(state.accounts.root())).toBe(hx(genesis.stateRoot));
      const seen: Seen = { accounts: 0, removedAccounts: 0, slots: 0, removedSlots: 0, storageEmptied: 0, codes: 0 };
      const hashedCodes = new Set<string>();
      let tampered = false;
      for (let n = 1n; n <= head; n++) {
        const hash = (await store.canonicalHash(n))!;
        const header = (await store.header(hash))!;
        // By number for most blocks, by hash (and EIP-1898 object) for some.
        const param = n % 3n === 0n ? hx(hash) : n % 7n === 0n ? { blockHash: hx(hash) } : `0x${n.toString(16)}`;
        const diff = await call<JsonStateDiff>(svc, 'chainnode_getStateDiff', [param]);
        // Each matcher only for a difference: one per field of every block cost more than the checks.
        const shape = shapeProblems(diff);
        if (shape.length > 0) expect(shape.map((m) => `block ${n}: ${m}`)).toEqual([]);
        const fields = [diff.blockHash, BigInt(diff.number), diff.stateRoot, diff.parentStateRoot];
        const want = [hx(hash), n, hx(header.stateRoot), hx(state.accounts.root())];
        if (fields.some((f, i) => f !== want[i])) expect({ block: n, fields }).toEqual({ block: n, fields: want });
        // Whichever path answered, the answer is the trie diff's: compared on every fourth block
        // and the last 16 (walking both tries costs as much as the rest of the test); every
        // block's answer is applied below, and its root must be the header's.
        if (n % 4n === 1n || n > head - 16n) {
          const limits = { deadline: Date.now() + 60_000, maxBytes: 1e9 };
          const trie = await store.stateDiff(b(diff.parentStateRoot), header.stateRoot, limits);
          const formatted = formatStateDiff(
            { hash, number: n, parentStateRoot: b(diff.parentStateRoot), stateRoot: header.stateRoot },
            trie,
          );
          // Equal texts are equal answers; any other pair goes through the deep comparison.
          if (JSON.stringify(diff) !== JSON.stringify(formatted)) expect(diff).toEqual(formatted);
        }
        if (!tampered && diff.accounts.some((a) => a.storage.some(([, v]) => v !== null))) {
          // One value changed: the root must not match (a copy of the state takes the lie).
          const lie = structuredClone(diff);
          const acc = lie.accounts.find((a) => a.storage.some(([, v]) => v !== null))!;
          const entry = acc.storage.find(([, v]) => v !== null)!;
          entry[1] = `0x${(BigInt(entry[1]!) + 1n).toString(16)}`;
          const copy = new State();
          copy.accounts = state.accounts.shallowCopy(false);
          copy.storage = new Map(state.storage);
          expect(await copy.apply(lie)).not.toBe(hx(header.stateRoot));
          tampered = true;
        }
        const parentStorageRoots = new Map(
          diff.accounts.map((a) => {
            const st = state.storage.get(a.key);
            return [a.key, st === undefined ? EMPTY_ROOT : hx(st.root())];
          }),
        );
        const root = await state.apply(diff);
        if (root !== hx(header.stateRoot))
          throw new Error(`block ${n}: diff applied gives ${root}, header says ${hx(header.stateRoot)}`);
        const wrong = accountProblems(diff, state, seen, hashedCodes, parentStorageRoots);
        if (wrong.length > 0) expect(wrong.map((m) => `block ${n}: ${m}`)).toEqual([]);
      }
      console.log(`${chain}: ${head} blocks, ${JSON.stringify(seen)}, answered from ${JSON.stringify(from)}`);
      expect(tampered).toBe(true);
      // Both chains' import recorded every transaction's state changes, and neither changes what
      // no record or block-level key names (the DAO fork, a request dequeued, a deletion): every
      // block is read from the history.
      expect(from).toEqual({ history: Number(head), trie: 0 });
      expect(seen.codes).toBeGreaterThan(0);
      expect(seen.slots).toBeGreaterThan(0);
      // Neither chain removes an account leaf or a storage slot in any block (this walk over every
      // block's diff finds none, and a missed one would have failed the root check): deletions are
      // covered by store/test/state-diff.test.ts against a model.
    } finally {
      await close();
    }
  },
  600_000,
);

test('errors: genesis, unknown blocks, size and time limits', async () => {
  const chain = chains[chains.length - 1]!;
  const c = await datadirCopy(chain);
  const store = await LevelChainStore.open(c.dir);
  try {
    const svc = createRpcService(store);
    const head = (await store.head()).number;
    expect(await callError(svc, 'chainnode_getStateDiff', ['0x0'])).toEqual({
      code: -32000,
      message: 'genesis has no parent state diff',
    });
    expect(await callError(svc, 'chainnode_getStateDiff', ['earliest'])).toEqual({
      code: -32000,
      message: 'genesis has no parent state diff',
    });
    expect(await callError(svc, 'chainnode_getStateDiff', [`0x${(head + 1n).toString(16)}`])).toEqual({
      code: -32000,
      message: 'header not found',
    });
    expect(await callError(svc, 'chainnode_getStateDiff', [`0x${'ab'.repeat(32)}`])).toEqual({
      code: -32000,
      message: 'header for hash not found',
    });
    expect(await callError(svc, 'chainnode_getStateDiff', [])).toEqual({
      code: -32602,
      message: 'missing value for required argument 0',
    });
    expect(await callError(svc, 'chainnode_getStateDiff', ['2'])).toEqual({
      code: -32602,
      message: 'invalid argument 0: hex string without 0x prefix',
    });
    // latest is the head's diff.
    const latest = await call<JsonStateDiff>(svc, 'chainnode_getStateDiff', ['latest']);
    expect(BigInt(latest.number)).toBe(head);
    // An answer larger than the batch answer limit is refused while it is being built.
    const small = createRpcService(store, { maxBatchResponseBytes: 200 });
    expect(await callError(small, 'chainnode_getStateDiff', ['latest'])).toEqual({
      code: -32003,
      message: 'response too large',
    });
    // Past its deadline the walk stops.
    const h = (await store.header((await store.canonicalHash(head))!))!;
    const p = (await store.header(h.parentHash))!;
    await expect(
      store.stateDiff(p.stateRoot, h.stateRoot, { deadline: Date.now() - 1, maxBytes: 1e9 }),
    ).rejects.toBeInstanceOf(LimitExceededError);
    await expect(
      store.stateDiff(p.stateRoot, h.stateRoot, { deadline: Date.now() + 60_000, maxBytes: 10 }),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
    // The same root on both sides: nothing changed, nothing read past the root.
    expect(await store.stateDiff(h.stateRoot, h.stateRoot, { deadline: Date.now() + 60_000, maxBytes: 1e9 })).toEqual({
      accounts: [],
    });
  } finally {
    await store.close();
    await c.cleanup();
  }
}, 300_000);

test('a block whose counted changes its named keys do not all reach is answered by the trie diff', async () => {
  const chain = chains[0]!;
  const c = await datadirCopy(chain);
  try {
    // The blocks the history answers, and their answers, on the untouched copy.
    const answered = new Map<bigint, JsonStateDiff>();
    let head = 0n;
    {
      const store = await LevelChainStore.open(c.dir);
      const svc = createRpcService(store);
      head = (await store.head()).number;
      for (let n = head; n > 0n && answered.size < 3; n--) {
        const hash = (await store.canonicalHash(n))!;
        const header = (await store.header(hash))!;
        const rows = await store.txStateDiffs(hash);
        if (rows === undefined) continue;
        const touches = recordedTouches(rows, hash)!;
        const limits = { deadline: Date.now() + 60_000, maxBytes: 1e9 };
        const read = await store.historyStateDiff({ number: n, hash }, touches, limits);
        if (read === undefined || read.accounts.length < 2) continue;
        answered.set(n, await call<JsonStateDiff>(svc, 'chainnode_getStateDiff', [`0x${n.toString(16)}`]));
        // Without one changed account, or with another named twice in its stead, the keys are not
        // all of the change set: no answer from the history.
        const changed = touches.accounts.filter((a) =>
          read.accounts.some((r) => hx(r.key) === hx(keccak256(a.address))),
        );
        const dropped = touches.accounts.filter((a) => a !== changed[0]);
        expect(await store.historyStateDiff({ number: n, hash }, { accounts: dropped }, limits)).toBeUndefined();
        const doubled = { accounts: [...dropped, changed[1]!] };
        expect(await store.historyStateDiff({ number: n, hash }, doubled, limits)).toBeUndefined();
        // A block that is not canonical.
        expect(await store.historyStateDiff({ number: n, hash: header.parentHash }, touches, limits)).toBeUndefined();
      }
      await store.close();
    }
    expect(answered.size).toBe(3);
    // Each block's count set one up, one down, or gone: the same answers, from the trie diff.
    const w = await StoreWriter.open(c.dir);
    const [a, b2, c3] = [...answered.keys()] as [bigint, bigint, bigint];
    const countKey = (n: bigint): Uint8Array => {
      const k = new Uint8Array(9);
      k[0] = Prefix.StateChanges;
      new DataView(k.buffer).setBigUint64(1, n);
      return k;
    };
    const rowOf = async (n: bigint): Promise<Uint8Array> => (await w.db.get(countKey(n)))!;
    const upA = Uint8Array.from(await rowOf(a));
    upA[0] = (upA[0] as number) + 1; // accounts: a count below 128 is one varint byte
    const downB = Uint8Array.from(await rowOf(b2));
    downB[0] = (downB[0] as number) - 1;
    await w.db.batch().put(countKey(a), upA).put(countKey(b2), downB).del(countKey(c3)).write();
    await w.close();
    const store = await LevelChainStore.open(c.dir);
    const from = { history: 0, trie: 0 };
    const svc = createRpcService(countingHistoryDiffs(store, from));
    try {
      for (const [n, want] of answered)
        expect(await call<JsonStateDiff>(svc, 'chainnode_getStateDiff', [`0x${n.toString(16)}`])).toEqual(want);
      expect(from).toEqual({ history: 0, trie: 3 });
    } finally {
      await store.close();
    }
  } finally {
    await c.cleanup();
  }
}, 300_000);
