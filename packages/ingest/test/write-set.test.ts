// The write sets the flat state history is written from, against a model: the full leaf dumps of
// the parent's and the block's state tries (and of each changed account's storage tries). A block
// deletes an account with storage (self-destruct), wipes and re-creates another, creates one
// with storage, changes a balance, clears, sets and rewrites slots (one to its own value), touches
// an account without changing it, and makes writes it reverts; the importer's recording state
// manager and the replica pipeline's overlay must both give exactly the model's change set, with
// every slot a deleted or wiped account lost.
import { Common, Mainnet } from '@ethereumjs/common';
import { createMPT } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { Caches } from '@ethereumjs/statemanager';
import { Account, Address, KECCAK256_RLP, MapDB, bytesToHex } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/core';
import type { StateWrites, StoreWriter } from '@chainnode/store';
import { StateOverlay } from '../src/replicate/state.js';
import { RecordingStateManager } from '../src/write-set.js';

type Db = MapDB<string, Uint8Array | string>;

const addr = (b: number): Address => new Address(new Uint8Array(20).fill(b));
const slot = (b: number): Uint8Array => Uint8Array.from({ length: 32 }, (_, i) => (i === 31 ? b : 0));
const hex = (b: Uint8Array): string => bytesToHex(b);

/** Every leaf of the trie at `root` (hex key -> hex leaf value). */
async function leaves(db: Db, root: Uint8Array): Promise<Map<string, string>> {
  if (hex(root) === hex(KECCAK256_RLP)) return new Map();
  const trie = await createMPT({ db, root, useKeyHashing: false });
  return new Map(Object.entries((await trie.getValueMap()).values));
}

/** The change set as sorted lines: `a <key> <leaf|null>`, `s <key> <slot> <value|null>`. */
async function modelChanges(db: Db, parentRoot: Uint8Array, root: Uint8Array): Promise<string[]> {
  const out: string[] = [];
  const [before, after] = [await leaves(db, parentRoot), await leaves(db, root)];
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const [b, a] = [before.get(key), after.get(key)];
    if (b === a) continue;
    out.push(`a ${key} ${a ?? null}`);
    const storageRoot = (leaf: string | undefined) =>
      leaf === undefined ? KECCAK256_RLP : (RLP.decode(Buffer.from(leaf.slice(2), 'hex')) as Uint8Array[])[2];
    out.push(...(await storageLines(db, key, storageRoot(b) as Uint8Array, storageRoot(a) as Uint8Array)));
  }
  return out.sort();
}

/** The slots that differ between two storage tries of `key`, as model lines. */
async function storageLines(db: Db, key: string, from: Uint8Array, to: Uint8Array): Promise<string[]> {
  const out: string[] = [];
  const [before, after] = [await leaves(db, from), await leaves(db, to)];
  const value = (leaf: string | undefined) =>
    leaf === undefined ? null : hex(RLP.decode(Buffer.from(leaf.slice(2), 'hex')) as Uint8Array);
  for (const s of new Set([...before.keys(), ...after.keys()]))
    if (before.get(s) !== after.get(s)) out.push(`s ${key} ${s} ${value(after.get(s))}`);
  return out;
}

/** A write set as model lines (its storage entries expanded from the two tries). */
async function writeLines(db: Db, w: StateWrites): Promise<string[]> {
  const out = w.accounts.map(([k, a]) => `a ${hex(k)} ${a === null ? null : hex(a)}`);
  out.push(...w.slots.map(([k, s, v]) => `s ${hex(k)} ${hex(s)} ${v === null ? null : hex(v)}`));
  for (const [k, from, to] of w.storage) out.push(...(await storageLines(db, hex(k), from, to)));
  return out.sort();
}

const A = addr(0xa1);
const B = addr(0xb2);
const C = addr(0xc3);
const D = addr(0xd4);
const E = addr(0xe5);
const F = addr(0xf6);
const G = addr(0x07);

/** The parent state: A, B and D with storage, C and F without; its node db and root. */
async function parentState(): Promise<{ db: Db; sm: RecordingStateManager; parentRoot: Uint8Array }> {
  const db: Db = new MapDB();
  const trie = await createMPT({ db, useKeyHashing: true });
  const sm = new RecordingStateManager({ trie, common: new Common({ chain: Mainnet }), caches: new Caches() });
  for (const [a, balance] of [
    [A, 1n],
    [B, 2n],
    [C, 3n],
    [D, 4n],
    [F, 5n],
  ] as const)
    await sm.putAccount(a, new Account(1n, balance));
  for (const [a, s, v] of [
    [A, 1, 5],
    [A, 2, 6],
    [A, 3, 7],
    [B, 1, 1],
    [B, 2, 2],
    [D, 1, 9],
    [D, 2, 8],
  ] as const)
    await sm.putStorage(a, slot(s), Uint8Array.of(v));
  return { db, sm, parentRoot: await sm.getStateRoot() };
}

test("the importer's recorded write set is the trie's change set, wiped storage included", async () => {
  const { db, sm, parentRoot } = await parentState();
  sm.begin();
  await sm.checkpoint();
  await sm.deleteAccount(A);
  await sm.clearStorage(B);
  await sm.putStorage(B, slot(2), Uint8Array.of(0x11));
  await sm.putStorage(B, slot(9), Uint8Array.of(0x22));
  await sm.modifyAccountFields(C, { balance: 30n });
  await sm.putStorage(D, slot(1), Uint8Array.of(9));
  await sm.putStorage(D, slot(2), new Uint8Array(0));
  await sm.putStorage(D, slot(3), Uint8Array.of(0x33));
  await sm.putStorage(D, slot(5), Uint8Array.of(1));
  await sm.putStorage(D, slot(5), new Uint8Array(0));
  await sm.putAccount(E, new Account(0n, 7n));
  await sm.putStorage(E, slot(1), Uint8Array.of(1));
  await sm.putAccount(F, new Account(1n, 5n));
  await sm.checkpoint();
  await sm.putAccount(G, new Account(0n, 9n));
  await sm.putStorage(D, slot(4), Uint8Array.of(0x44));
  await sm.revert();
  await sm.commit();
  const root = await sm.getStateRoot();
  const writes = await sm.end();

  const model = await modelChanges(db, parentRoot, root);
  expect(await writeLines(db, writes)).toEqual(model);
  expect(model.filter((l) => l.startsWith('s ') && l.endsWith(' null')).length).toBe(5); // A's 3, B's 1, D's 1
  // Only the deleted, wiped and created accounts' storage is walked; D's slots come as written.
  expect(writes.storage.map(([k]) => hex(k)).sort()).toEqual([A, B, E].map((a) => hex(keccak256(a.bytes))).sort());
  expect(writes.slots.length).toBe(2);
});

test("the replica overlay's write set is the trie's change set, wiped storage included", async () => {
  const { db, parentRoot } = await parentState();
  const node = (h: Uint8Array): Uint8Array | undefined => {
    const v = db._database.get(hex(h).slice(2));
    return v === undefined ? undefined : typeof v === 'string' ? Uint8Array.from(Buffer.from(v, 'hex')) : v;
  };
  const trieDb = {
    getNodeSync: node,
    putNodeSync: (h: Uint8Array, e: Uint8Array) => db._database.set(hex(h).slice(2), Buffer.from(e).toString('hex')),
    put: async () => undefined,
  } as unknown as StoreWriter['trieDb'];
  const k = (a: Address): Uint8Array => keccak256(a.bytes);
  const s = (b: number): Uint8Array => keccak256(slot(b));
  const overlay = new StateOverlay(trieDb, parentRoot);
  await overlay.remove(k(A));
  await overlay.remove(k(B));
  await overlay.setFields(k(B), { nonce: 1n });
  await overlay.setStorage(k(B), s(2), Uint8Array.of(0x11));
  await overlay.setFields(k(C), { balance: 30n });
  await overlay.setStorage(k(D), s(1), Uint8Array.of(9));
  await overlay.setStorage(k(D), s(2), new Uint8Array(0));
  await overlay.setStorage(k(D), s(3), Uint8Array.of(0x33));
  await overlay.keepZeroLeaf(k(D), s(6));
  await overlay.setFields(k(E), { balance: 7n });
  await overlay.setStorage(k(E), s(1), Uint8Array.of(1));
  await overlay.setFields(k(F), { balance: 5n });
  const writes: StateWrites = { accounts: [], slots: [], storage: [] };
  const root = await overlay.commit(writes);

  const model = await modelChanges(db, parentRoot, root);
  expect(await writeLines(db, writes)).toEqual(model);
  expect(writes.storage.map(([key]) => hex(key)).sort()).toEqual([A, B, E].map((a) => hex(k(a))).sort());
  expect(writes.slots.length).toBe(3); // D's slots 2 and 3, and its zero-valued leaf 6
});
