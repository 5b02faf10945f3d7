// state-diff.ts (the diff of two state tries) against a model: random states (accounts with
// storage and code) built with @ethereumjs/mpt, random blocks of changes applied to them (balances,
// new accounts with code, deleted accounts, storage slots set, changed, removed, and whole storages
// cleared), and the diff compared entry for entry with the changes the model made. Keys are given
// hashed; some tests crowd the keys under a common prefix, so leaves sit deep and short nodes are
// embedded in their parents. The walk reads nodes only through a counting source: a change of one
// leaf reads only the nodes on its path.
import { createMPT } from '@ethereumjs/mpt';
import type { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes, KECCAK256_NULL, KECCAK256_RLP, MapDB } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { LimitExceededError, ResponseTooLargeError } from '@chainnode/core';
import type { StateDiffRecord } from '@chainnode/core';
import { diffStates } from '../src/trie/state-diff.js';
import type { NodeSource } from '../src/trie/trie-read.js';
import { bytes, hex, rng } from './random.js';

interface ModelAccount {
  nonce: bigint;
  balance: bigint;
  code: Uint8Array;
  storage: Map<string, bigint>; // hex(hashed slot) -> non-zero value
}
type Model = Map<string, ModelAccount>; // hex(hashed address) -> account

/** One node database for every trie of a test (content-addressed, like the store's). */
class Nodes {
  readonly db = new MapDB<string, Uint8Array | string>();
  codes = new Map<string, Uint8Array>();
  reads = 0;
  readonly source: NodeSource = (h) => {
    this.reads++;
    const v = this.db._database.get(hex(h));
    return v === undefined ? undefined : typeof v === 'string' ? Uint8Array.from(Buffer.from(v, 'hex')) : v;
  };
  trie(): Promise<MerklePatriciaTrie> {
    return createMPT({ db: this.db, useKeyHashing: false });
  }
}

const fromHex = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h, 'hex'));

/** The state root of `model`, its tries' nodes written to `nodes`. */
async function build(nodes: Nodes, model: Model): Promise<Uint8Array> {
  const state = await nodes.trie();
  for (const [key, a] of model) {
    const st = await nodes.trie();
    for (const [slot, v] of a.storage) await st.put(fromHex(slot), RLP.encode(bigIntToUnpaddedBytes(v)));
    const codeHash = keccak256(a.code);
    nodes.codes.set(hex(codeHash), a.code);
    await state.put(
      fromHex(key),
      RLP.encode([bigIntToUnpaddedBytes(a.nonce), bigIntToUnpaddedBytes(a.balance), st.root(), codeHash]),
    );
  }
  return state.root();
}

const clone = (m: Model): Model => new Map([...m].map(([k, a]) => [k, { ...a, storage: new Map(a.storage) }]));

/** The diff the model says: what diffStates must return, as JSON-able text. */
function expected(before: Model, after: Model): unknown[] {
  const keys = [...new Set([...before.keys(), ...after.keys()])].sort();
  const out: unknown[] = [];
  for (const key of keys) {
    const a = before.get(key);
    const b = after.get(key);
    if (b === undefined) {
      if (a !== undefined) out.push({ key, account: null, storage: [] });
      continue;
    }
    const storage: [string, string | null][] = [];
    const slots = [...new Set([...(a?.storage.keys() ?? []), ...b.storage.keys()])].sort();
    for (const s of slots) {
      const x = a?.storage.get(s);
      const y = b.storage.get(s);
      if (x !== y) storage.push([s, y === undefined ? null : y.toString(16)]);
    }
    const codeChanged = hex(keccak256(b.code)) !== hex(keccak256(a?.code ?? new Uint8Array()));
    if (a !== undefined && a.nonce === b.nonce && a.balance === b.balance && !codeChanged && storage.length === 0)
      continue;
    const entry: Record<string, unknown> = { key, nonce: b.nonce, balance: b.balance, storage };
    if (codeChanged && b.code.length > 0) entry.code = hex(b.code);
    out.push(entry);
  }
  return out;
}

/** diffStates's answer in expected()'s form, its storage roots and code hashes checked against the model. */
async function actual(nodes: Nodes, d: StateDiffRecord, after: Model): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const a of d.accounts) {
    const key = hex(a.key);
    const storage = a.storage.map(([s, v]) => [hex(s), v === null ? null : BigInt(`0x${hex(v)}`).toString(16)]);
    if (a.account === null) {
      out.push({ key, account: null, storage });
      continue;
    }
    const m = after.get(key)!;
    expect(hex(a.account.codeHash)).toBe(hex(keccak256(m.code)));
    const st = await nodes.trie();
    for (const [s, v] of m.storage) await st.put(fromHex(s), RLP.encode(bigIntToUnpaddedBytes(v)));
    expect(hex(a.account.storageRoot)).toBe(hex(st.root()));
    for (const [, v] of a.storage) if (v !== null) expect(v[0]).not.toBe(0); // minimal big-endian
    const entry: Record<string, unknown> = { key, nonce: a.account.nonce, balance: a.account.balance, storage };
    if (a.code !== undefined) entry.code = hex(a.code);
    out.push(entry);
  }
  return out;
}

/** A random key: 32 random bytes, or (crowded) a fixed 29-byte prefix and 3 random bytes of few values. */
function key(r: (n: number) => number, crowded: boolean): string {
  if (!crowded) return hex(bytes(r, 32));
  return `${'ab'.repeat(29)}${hex(Uint8Array.from({ length: 3 }, () => r(4) * 0x11))}`;
}

function randomState(r: (n: number) => number, crowded: boolean, count: number): Model {
  const m: Model = new Map();
  for (let i = 0; i < count; i++) {
    const storage = new Map<string, bigint>();
    if (r(3) === 0) for (let j = r(12); j > 0; j--) storage.set(key(r, crowded), BigInt(1 + r(300)));
    m.set(key(r, crowded), {
      nonce: BigInt(r(5)),
      balance: BigInt(r(1_000_000)),
      code: r(4) === 0 ? bytes(r, 1 + r(60)) : new Uint8Array(),
      storage,
    });
  }
  return m;
}

/** A random state of `count` accounts from `seed`, built into fresh nodes. */
async function builtState(seed: number, count: number): Promise<{ nodes: Nodes; m: Model; root: Uint8Array }> {
  const nodes = new Nodes();
  const m = randomState(rng(seed), false, count);
  return { nodes, m, root: await build(nodes, m) };
}

/** A block of random changes: every kind the diff must show. */
function randomChanges(r: (n: number) => number, crowded: boolean, m: Model): Model {
  const next = clone(m);
  const keys = [...next.keys()];
  for (let i = 0; i < 1 + r(8); i++) {
    const k = keys[r(keys.length)]!;
    const a = next.get(k);
    if (a === undefined) continue;
    switch (r(7)) {
      case 0:
        a.balance += BigInt(1 + r(1000));
        a.nonce++;
        break;
      case 1:
        next.delete(k); // a deleted account (self-destruct, EIP-161)
        break;
      case 2:
        a.storage.clear(); // every slot removed
        break;
      case 3:
        for (const s of [...a.storage.keys()].slice(0, 1 + r(3))) a.storage.delete(s);
        break;
      case 4:
        for (const s of a.storage.keys()) a.storage.set(s, BigInt(1 + r(1 << 30)) << 200n);
        break;
      case 5:
        a.storage.set(key(r, crowded), BigInt(1 + r(5)));
        break;
      default:
        next.set(key(r, crowded), {
          nonce: 1n,
          balance: 0n,
          code: bytes(r, 1 + r(40)),
          storage: new Map([[key(r, crowded), 7n]]),
        });
    }
  }
  return next;
}

const far = { deadline: Date.now() + 3_600_000, maxBytes: 1e12 };

describe('diffStates against a model', () => {
  for (const [label, crowded, count] of [
    ['random keys', false, 60],
    ['crowded keys: deep leaves, embedded nodes', true, 40],
  ] as const) {
    test(label, async () => {
      const seen = { removed: 0, removedSlots: 0, cleared: 0, codes: 0 };
      for (let seed = 1; seed <= 6; seed++) {
        const r = rng(seed * 31 + (crowded ? 7 : 0));
        const nodes = new Nodes();
        let model = randomState(r, crowded, count);
        let root = await build(nodes, model);
        for (let block = 0; block < 6; block++) {
          const next = randomChanges(r, crowded, model);
          const nextRoot = await build(nodes, next);
          const d = await diffStates(nodes.source, (h) => nodes.codes.get(hex(h)), root, nextRoot, far);
          expect(await actual(nodes, d, next)).toEqual(expected(model, next));
          for (const a of d.accounts) {
            if (a.account === null) seen.removed++;
            if (a.code !== undefined) seen.codes++;
            if (a.account !== null && hex(a.account.storageRoot) === hex(KECCAK256_RLP) && a.storage.length > 0)
              seen.cleared++;
            seen.removedSlots += a.storage.filter(([, v]) => v === null).length;
          }
          // Backwards too: every change undone.
          const back = await diffStates(nodes.source, (h) => nodes.codes.get(hex(h)), nextRoot, root, far);
          expect(await actual(nodes, back, model)).toEqual(expected(next, model));
          model = next;
          root = nextRoot;
        }
      }
      expect(seen.removed).toBeGreaterThan(0);
      expect(seen.removedSlots).toBeGreaterThan(0);
      expect(seen.cleared).toBeGreaterThan(0);
      expect(seen.codes).toBeGreaterThan(0);
    });
  }

  test('from and to the empty state; the same root reads nothing', async () => {
    const { nodes, m, root } = await builtState(5, 30);
    const all = await diffStates(nodes.source, (h) => nodes.codes.get(hex(h)), KECCAK256_RLP, root, far);
    expect(await actual(nodes, all, m)).toEqual(expected(new Map(), m));
    const none = await diffStates(nodes.source, (h) => nodes.codes.get(hex(h)), root, KECCAK256_RLP, far);
    expect(none.accounts.every((a) => a.account === null)).toBe(true);
    expect(none.accounts.length).toBe(m.size);
    nodes.reads = 0;
    expect(await diffStates(nodes.source, () => undefined, root, root, far)).toEqual({ accounts: [] });
    expect(nodes.reads).toBe(0);
  });

  test('one changed balance in 1,000 accounts reads only the nodes on its path', async () => {
    const { nodes, m, root } = await builtState(99, 1000);
    const next = clone(m);
    const [k, a] = [...next][555]!;
    a.balance += 1n;
    const nextRoot = await build(nodes, next);
    nodes.reads = 0;
    const d = await diffStates(nodes.source, () => undefined, root, nextRoot, far);
    expect(d.accounts.map((x) => hex(x.key))).toEqual([k]);
    // 1,000 random keys: a leaf about 3 branches deep; both sides' paths, nothing else.
    expect(nodes.reads).toBeLessThanOrEqual(10);
    expect(nodes.reads).toBeGreaterThanOrEqual(4);
  });

  test('limits: the deadline, the answer size; a missing node or code is an error', async () => {
    const { nodes, m, root } = await builtState(8, 50);
    const src = nodes.source;
    const code = (h: Uint8Array) => nodes.codes.get(hex(h));
    await expect(
      diffStates(src, code, KECCAK256_RLP, root, { deadline: Date.now() - 1, maxBytes: 1e12 }),
    ).rejects.toBeInstanceOf(LimitExceededError);
    await expect(
      diffStates(src, code, KECCAK256_RLP, root, { deadline: far.deadline, maxBytes: 2_000 }),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
    await expect(diffStates(() => undefined, code, KECCAK256_RLP, root, far)).rejects.toThrow('trie: missing node');
    const withCode = [...m.values()].some((a) => a.code.length > 0);
    expect(withCode).toBe(true);
    await expect(diffStates(src, () => undefined, KECCAK256_RLP, root, far)).rejects.toThrow('code missing');
    expect(hex(KECCAK256_NULL)).toBe(hex(keccak256(new Uint8Array())));
  });
});
