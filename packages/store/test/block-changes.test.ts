// A block's change set read from its state history rows (history/block-changes.ts) on a datadir
// written here by the history's own stager: what the chains' tests cannot show because none of
// their blocks deletes an account (the deleted account's cleared slots are counted, not listed),
// the code hash before taken from the caller or read from the account's earlier row, and every
// way the named keys can fall short of the block's count (a slot left out, another named twice
// in its stead), a block that is not canonical, one without a count, and the size limit.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_NULL, KECCAK256_RLP, bigIntToUnpaddedBytes } from '@ethereumjs/util';
import { ResponseTooLargeError } from '@chainnode/core';
import type { AccountDiffRecord, BlockTouches, StateDiffRecord, TouchedAccount } from '@chainnode/core';
import { openDb } from '../src/db.js';
import type { Db } from '../src/db.js';
import { historyStateDiff } from '../src/history/block-changes.js';
import { LatestRows } from '../src/history/latest.js';
import { stageStateStep } from '../src/history/write.js';
import type { StateWrites } from '../src/history/write.js';
import { keccak256 } from '../src/keccak.js';
import { codeNodeKey, tables } from '../src/schema/index.js';

const alloc = (n: number): Uint8Array => new Uint8Array(n);
const hashOf = (n: number): Uint8Array => {
  const h = new Uint8Array(32);
  h.fill(0xbb, 0, 4);
  new DataView(h.buffer).setUint32(28, n);
  return h;
};
const address = (b: number): Uint8Array => new Uint8Array(20).fill(b);
const slot = (b: number): Uint8Array => {
  const s = new Uint8Array(32);
  s[31] = b;
  return s;
};
const root = (b: number): Uint8Array => new Uint8Array(32).fill(b);
const leaf = (balance: bigint, storageRoot: Uint8Array = KECCAK256_RLP, codeHash: Uint8Array = KECCAK256_NULL) =>
  RLP.encode([bigIntToUnpaddedBytes(0n), bigIntToUnpaddedBytes(balance), storageRoot, codeHash]);
const limits = { deadline: Number.POSITIVE_INFINITY, maxBytes: 1e9 };

const [A, C, D, E, Z] = [address(0xa), address(0xc), address(0xd), address(0xe), address(0x2)];
const code1 = Uint8Array.of(0x60, 0x01, 0x00);
const code2 = Uint8Array.of(0x60, 0x02, 0x00);
const [H1, H2] = [keccak256(code1), keccak256(code2)];

/** Writes `writes` as block `n`'s change set, canonical, with its latest rows (as the writer's group does). */
async function writeBlock(db: Db, n: number, writes: StateWrites): Promise<void> {
  const batch = db.batch();
  const latest = new LatestRows(alloc);
  batch.put(tables.canonical.key(BigInt(n)), hashOf(n));
  const step = { number: BigInt(n), parentRoot: root(n), root: root(n + 1), writes };
  await stageStateStep(batch, () => undefined, step, 'put', alloc, undefined, latest);
  latest.stage(batch, db, new Map());
  await batch.write();
}

const touched = (a: Uint8Array, slots: Uint8Array[], codeHashBefore?: Uint8Array | null): TouchedAccount => ({
  address: a,
  slots,
  codeHashBefore,
});

describe('a block change set from the state history', () => {
  let dir: string;
  let db: Db;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'store-block-changes-'));
    db = await openDb(dir, { create: true });
    await db
      .batch()
      .put(tables.trieNodes.key(codeNodeKey(H1)), code1)
      .put(tables.trieNodes.key(codeNodeKey(H2)), code2)
      .write();
    const k = (a: Uint8Array) => keccak256(a);
    // Block 1: A funded; C a contract (code 1) with a slot; D with two slots.
    await writeBlock(db, 1, {
      accounts: [
        [k(A), leaf(1n)],
        [k(C), leaf(0n, root(0xc1), H1)],
        [k(D), leaf(0n, root(0xd1))],
      ],
      slots: [
        [k(C), keccak256(slot(1)), Uint8Array.of(5)],
        [k(D), keccak256(slot(1)), Uint8Array.of(1)],
        [k(D), keccak256(slot(2)), Uint8Array.of(2)],
      ],
      storage: [],
    });
    // Block 2: A's balance; C's slot (its storage root); D deleted (its slots cleared); E created
    // with code 2.
    await writeBlock(db, 2, {
      accounts: [
        [k(A), leaf(2n)],
        [k(C), leaf(0n, root(0xc2), H1)],
        [k(D), null],
        [k(E), leaf(0n, KECCAK256_RLP, H2)],
      ],
      slots: [
        [k(C), keccak256(slot(1)), Uint8Array.of(6)],
        [k(D), keccak256(slot(1)), null],
        [k(D), keccak256(slot(2)), null],
      ],
      storage: [],
    });
  });
  afterAll(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  const block2 = { number: 2n, hash: hashOf(2) };
  const all = (): BlockTouches => ({
    accounts: [
      touched(Z, []), // unchanged: no row at the block
      touched(E, [], null),
      touched(D, [slot(1), slot(2)], null),
      touched(C, [slot(1)], H1),
      touched(A, [], null),
    ],
  });

  test('the named keys are the whole change set: the trie diff’s answer, in key order', async () => {
    const got = (await historyStateDiff(
      db,
      block2,
      all(),
      (h) => db.getSync(tables.trieNodes.key(codeNodeKey(h))),
      limits,
      true,
    )) as StateDiffRecord;
    const accounts: AccountDiffRecord[] = [
      {
        key: keccak256(A),
        account: { nonce: 0n, balance: 2n, storageRoot: KECCAK256_RLP, codeHash: KECCAK256_NULL },
        storage: [],
      },
      {
        key: keccak256(C),
        account: { nonce: 0n, balance: 0n, storageRoot: root(0xc2), codeHash: H1 },
        storage: [[keccak256(slot(1)), Uint8Array.of(6)]],
      },
      // Deleted: its two cleared slots counted, none listed.
      { key: keccak256(D), account: null, storage: [] },
      {
        key: keccak256(E),
        account: { nonce: 0n, balance: 0n, storageRoot: KECCAK256_RLP, codeHash: H2 },
        storage: [],
        code: code2,
      },
    ];
    expect(got).toEqual({ accounts: accounts.sort((x, y) => Buffer.compare(x.key, y.key)) });
  });

  test('a code hash before the caller does not know is read from the account’s earlier row', async () => {
    const code = (h: Uint8Array) => db.getSync(tables.trieNodes.key(codeNodeKey(h)));
    const unknown: BlockTouches = {
      accounts: all().accounts.map((a) => ({ address: a.address, slots: a.slots, codeHashBefore: undefined })),
    };
    const got = (await historyStateDiff(db, block2, unknown, code, limits, true)) as StateDiffRecord;
    const byKey = new Map(got.accounts.map((a) => [Buffer.from(a.key).toString('hex'), a]));
    // C had code 1 at block 1: not sent again; E had no row: its code is new.
    expect(byKey.get(Buffer.from(keccak256(C)).toString('hex'))?.code).toBeUndefined();
    expect(byKey.get(Buffer.from(keccak256(E)).toString('hex'))?.code).toEqual(code2);
    // Without complete latest rows the earlier row is not read: no answer.
    expect(await historyStateDiff(db, block2, unknown, code, limits, false)).toBeUndefined();
  });

  test('keys that fall short of the count, a block not canonical or without a count: no answer', async () => {
    const code = (h: Uint8Array) => db.getSync(tables.trieNodes.key(codeNodeKey(h)));
    const read = (t: BlockTouches, b = block2) => historyStateDiff(db, b, t, code, limits, true);
    const without = (drop: (a: TouchedAccount) => TouchedAccount | undefined): BlockTouches => ({
      accounts: all().accounts.flatMap((a) => drop(a) ?? []),
    });
    // The deleted account's cleared slots left out.
    expect(await read(without((a) => (a.address === D ? touched(D, [], null) : a)))).toBeUndefined();
    // One of them named twice in the other's stead.
    expect(await read(without((a) => (a.address === D ? touched(D, [slot(1), slot(1)], null) : a)))).toBeUndefined();
    // An account named twice in another's stead.
    expect(await read(without((a) => (a.address === A ? touched(C, [slot(1)], H1) : a)))).toBeUndefined();
    // A changed account left out.
    expect(await read(without((a) => (a.address === E ? undefined : a)))).toBeUndefined();
    // Block 2 of another branch; block 3 (no count: none written).
    expect(await read(all(), { number: 2n, hash: hashOf(99) })).toBeUndefined();
    await db.put(tables.canonical.key(3n), hashOf(3));
    expect(await read({ accounts: [] }, { number: 3n, hash: hashOf(3) })).toBeUndefined();
    // Block 1 in full, as a check that the count is per block.
    const one = await read(
      { accounts: [touched(A, [], null), touched(C, [slot(1)], null), touched(D, [slot(1), slot(2)], null)] },
      { number: 1n, hash: hashOf(1) },
    );
    expect(one?.accounts.map((a) => a.storage.length).sort()).toEqual([0, 1, 2]);
  });

  test('an answer past the size limit is refused while it is built', async () => {
    const code = (h: Uint8Array) => db.getSync(tables.trieNodes.key(codeNodeKey(h)));
    await expect(
      historyStateDiff(db, block2, all(), code, { deadline: Number.POSITIVE_INFINITY, maxBytes: 500 }, true),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
  });
});
