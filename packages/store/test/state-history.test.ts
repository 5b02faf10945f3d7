// The flat state history (history/) against the archive trie: on every prepared chain (the fixture
// chain, and the execution-apis chain when it is checked out), random historical reads of
// accounts and slots (ones the history holds, slots it cleared, keys never touched), each at a
// random block, answer what a walk of that block's state trie answers. By hashed key first (every
// table row reachable), then through the reader's by-block methods with real addresses and slots.
// Reports the history's cost per block (key + value bytes of its two tables). The tables, written
// at import from the executor's write sets, equal byte for byte the rows the diff of each block's
// parent and block state tries gives (the writer's fallback where no write set is given): every
// block of the execution-apis chain, every eighth of the fixture chain. Each key's StateLatest row
// is its last history row with the numbers of the rows before it, and the point reads
// (pointRowAtCanonical) answer what the seek answers; without Meta.stateLatest (a datadir written
// before the table, or with its rows in the earlier form without the list) the reader's reads
// seek, and agree; `db convert`'s fill then writes the rows the import wrote, StateLatest's and the
// index's (keys changed more often than StateLatest lists: history-index.test.ts).
import { KECCAK256_RLP } from '@ethereumjs/util';
import { availableChains, datadirCopy } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { openDb } from '../src/db.js';
import type { Db } from '../src/db.js';
import { EMPTY_STATE_ROOT, accountRowAt, slotRowAt, stageStateStep, stateHistoryRoot } from '../src/history/index.js';
import { pointRowAtCanonical } from '../src/history/read.js';
import { LATEST_CHANGES, decodeLatest, fillLatest } from '../src/history/latest.js';
import { LevelChainStore } from '../src/reader/reader.js';
import { MetaKey, Prefix, headCodec, tables } from '../src/schema/index.js';
import { storedNode } from '../src/trie/node-delta.js';
import { accountFields, headerStateRoot, rlpString, trieGet } from '../src/trie/trie-read.js';
import { bytes, hex, rng } from './random.js';

/** The trie's nodes by hash, deltas rebuilt (node-delta.ts), each rebuilt node kept for the walks to come. */
function rebuiltNodes(db: Db): (h: Uint8Array) => Uint8Array | undefined {
  const cache = new Map<string, Uint8Array>();
  const raw = (k: Uint8Array) => tables.trieNodes.getSync(db, k);
  return (h) => {
    const key = hex(h);
    let node = cache.get(key);
    if (node === undefined) {
      node = storedNode(raw, h);
      if (node !== undefined) cache.set(key, node);
    }
    return node;
  };
}

const READS = 1500;

/** The state root of every block 0..head (block 0: the genesis alloc's, as the history records it). */
async function stateRoots(db: Db): Promise<Uint8Array[]> {
  const genesisRoot = await stateHistoryRoot(db);
  if (genesisRoot === undefined) throw new Error('the prepared datadir keeps no state history');
  const head = headCodec.decode((await tables.meta.get(db, MetaKey.Head)) as Uint8Array);
  const roots = [genesisRoot];
  for (let n = 1n; n <= head.number; n++) {
    const hash = (await tables.canonical.get(db, n)) as Uint8Array;
    roots.push(headerStateRoot((await tables.headers.get(db, hash)) as Uint8Array));
  }
  return roots;
}

interface Paths {
  accounts: Uint8Array[];
  slots: Uint8Array[];
  /** Slot paths with a tombstone (a slot cleared, or its account deleted or re-created). */
  cleared: Uint8Array[];
  bytes: number;
}

/** The distinct keys of the two history tables, and their bytes. */
async function historyPaths(db: Db): Promise<Paths> {
  const out: Paths = { accounts: [], slots: [], cleared: [], bytes: 0 };
  let last = '';
  for await (const [k, v] of tables.accountHistory.range(db)) {
    out.bytes += 1 + 40 + v.length;
    if (hex(k.path) !== last) out.accounts.push(k.path.slice());
    last = hex(k.path);
  }
  for await (const [k, v] of tables.storageHistory.range(db)) {
    out.bytes += 1 + 72 + v.length;
    if (hex(k.path) !== last) out.slots.push(k.path.slice());
    if (v.length === 0 && hex(k.path) !== hex(out.cleared[out.cleared.length - 1] ?? new Uint8Array(0)))
      out.cleared.push(k.path.slice());
    last = hex(k.path);
  }
  return out;
}

const eq = (a: Uint8Array | null, b: Uint8Array | null): boolean =>
  a === null || b === null ? a === b : hex(a) === hex(b);

/** Reads the point reads answered (the rest were left to the seek), in the current compareByKey. */
let pointAnswered = 0;

/** Whether the point reads at block `n` answer `want`, or leave the read to the seek (undefined). */
function pointEq(
  db: Db,
  n: number,
  table: typeof tables.accountHistory,
  path: Uint8Array,
  want: Uint8Array | null,
): boolean {
  const hash = db.getSync(tables.canonical.key(BigInt(n))) as Uint8Array;
  const got = pointRowAtCanonical(db, { number: BigInt(n), hash }, table, path);
  if (got !== undefined) pointAnswered++;
  return got === undefined || eq(got, want);
}

/**
 * Every history key's StateLatest row is its last row's number and value with the numbers of its
 * LATEST_CHANGES rows before it (all of them when fewer), and there are no others.
 */
async function checkLatest(db: Db): Promise<number> {
  const want = new Map<string, { numbers: number[]; value: string }>();
  const range = { gte: Uint8Array.of(Prefix.AccountHistory), lt: Uint8Array.of(Prefix.StorageHistory + 1) };
  for await (const [k, v] of db.iterator(range)) {
    const path = hex(k.subarray(1, k.length - 8));
    const row = want.get(path) ?? { numbers: [], value: '' };
    row.numbers.push(Number(Buffer.from(k.subarray(k.length - 8)).readBigUInt64BE()));
    row.value = hex(v);
    want.set(path, row);
  }
  const wrong: string[] = [];
  let rows = 0;
  for await (const [k, v] of tables.stateLatest.range(db)) {
    rows++;
    const w = want.get(hex(k));
    const got = decodeLatest(v);
    const changes = w?.numbers.slice(0, -1).reverse().slice(0, LATEST_CHANGES);
    const same = w !== undefined && got.number === w.numbers.at(-1) && hex(got.value) === w.value;
    if (!same || got.changes.join() !== changes?.join()) wrong.push(`${hex(k)}: ${JSON.stringify(got)}`);
  }
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(rows).toBe(want.size);
  return rows;
}

/**
 * Rewrites the StateLatest rows in the earlier form (number ++ value, no list) under the earlier
 * flag only, as a datadir of the release before the list was written.
 */
async function toUnlistedLatest(db: Db): Promise<void> {
  const batch = db.batch();
  for await (const [k, v] of tables.stateLatest.range(db)) {
    const row = decodeLatest(v);
    const old = new Uint8Array(8 + row.value.length);
    new DataView(old.buffer).setBigUint64(0, BigInt(row.number));
    old.set(row.value, 8);
    tables.stateLatest.put(batch, k, old);
  }
  batch.del(tables.meta.key(MetaKey.StateLatest));
  tables.meta.put(batch, MetaKey.StateLatestUnlisted, new Uint8Array(0));
  await batch.write();
}

/** The HistoryIndex rows (history/change-index.ts): how many, and all of them as one text. */
async function indexDigest(db: Db): Promise<{ rows: number; text: string }> {
  let rows = 0;
  const parts: string[] = [];
  const range = { gte: Uint8Array.of(Prefix.HistoryIndex), lt: Uint8Array.of(Prefix.HistoryIndex + 1) };
  for await (const [k, v] of db.iterator(range)) {
    rows++;
    parts.push(`${hex(k)}:${hex(v)}`);
  }
  return { rows, text: parts.join('\n') };
}

/** Hashed-key reads at random blocks: history rows against trie walks. */
async function compareByKey(db: Db, chain: ChainName, seed: number): Promise<void> {
  const roots = await stateRoots(db);
  const paths = await historyPaths(db);
  expect(paths.accounts.length).toBeGreaterThan(0);
  expect(paths.slots.length).toBeGreaterThan(0);
  const nodes = rebuiltNodes(db);
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[r(xs.length)] as T;
  const accountAtRoot = (root: Uint8Array, key: Uint8Array) => trieGet(nodes, root, key)?.slice() ?? null;
  let mismatches = 0;
  let present = 0;
  pointAnswered = 0;
  for (let i = 0; i < READS; i++) {
    const n = r(roots.length);
    const root = roots[n] as Uint8Array;
    const kind = r(10);
    if (kind < 4) {
      const key = kind === 0 ? bytes(r, 32) : pick(paths.accounts);
      const want = accountAtRoot(root, key);
      if (want !== null) present++;
      if (!eq(await accountRowAt(db, BigInt(n), key), want)) mismatches++;
      if (!pointEq(db, n, tables.accountHistory, key, want)) mismatches++;
    } else {
      const path =
        kind === 4
          ? bytes(r, 64)
          : kind < 7
            ? pick(paths.cleared.length > 0 ? paths.cleared : paths.slots)
            : pick(paths.slots);
      const account = accountAtRoot(root, path.subarray(0, 32));
      const storageRoot = account === null ? undefined : accountFields(account).storageRoot;
      const leaf =
        storageRoot === undefined || hex(storageRoot) === hex(KECCAK256_RLP)
          ? null
          : trieGet(nodes, storageRoot, path.subarray(32));
      const want = leaf === null ? null : rlpString(leaf).slice();
      if (want !== null) present++;
      if (!eq(await slotRowAt(db, BigInt(n), path), want)) mismatches++;
      if (!pointEq(db, n, tables.storageHistory, path, want)) mismatches++;
    }
  }
  expect(mismatches).toBe(0);
  expect(present).toBeGreaterThan(READS / 4);
  // Point reads answered (the seek is checked by the datadir without them: the test's end).
  expect(pointAnswered).toBeGreaterThan(READS / 5);
  console.log(
    `${chain}: ${READS} random historical reads by key equal the trie's (${present} present, ${pointAnswered} by point reads); history: ` +
      `${paths.accounts.length} accounts, ${paths.slots.length} slots (${paths.cleared.length} cleared at some block), ` +
      `${paths.bytes} bytes of key + value over ${roots.length} blocks = ${Math.round(paths.bytes / roots.length)} bytes per block`,
  );
}

/** Reads through the reader's by-block methods, with real addresses (senders, recipients, coinbases) and low slots. */
async function compareByAddress(store: LevelChainStore, seed: number): Promise<void> {
  const head = (await store.head()).number;
  const r = rng(seed);
  const addresses: Uint8Array[] = [];
  for (let k = 0; k < 40; k++) {
    const b = await store.block((await store.canonicalHash(BigInt(r(Number(head) + 1)))) as Uint8Array);
    if (b === undefined) throw new Error('block missing');
    addresses.push(b.header.coinbase);
    for (const tx of b.transactions.slice(0, 3)) {
      addresses.push(tx.from);
      if (tx.to !== undefined && tx.to !== null) addresses.push(tx.to);
    }
  }
  addresses.push(bytes(r, 20));
  const stateRoot = async (n: bigint) => (await store.header((await store.canonicalHash(n)) as Uint8Array))?.stateRoot;
  expect(await store.hasStateHistory()).toBe(true);
  for (let i = 0; i < 300; i++) {
    const n = BigInt(1 + r(Number(head)));
    const block = { number: n, hash: (await store.canonicalHash(n)) as Uint8Array };
    const root = (await stateRoot(n)) as Uint8Array;
    const address = addresses[r(addresses.length)] as Uint8Array;
    expect(await store.accountAtBlock(block, address)).toEqual(await store.account(root, address));
    const slot = new Uint8Array(32);
    slot[31] = r(8);
    expect(hex((await store.storageAtBlock(block, address, slot)) as Uint8Array)).toBe(
      hex(await store.storageAt(root, address, slot)),
    );
  }
  // No account is an answer too (a wallet asking about fresh addresses): asked again at the same
  // block, it is answered from the cache without a read.
  const absent = bytes(r, 20);
  const block = { number: head, hash: (await store.canonicalHash(head)) as Uint8Array };
  expect(await store.accountAtBlock(block, absent)).toBeNull();
  const db = (store as unknown as { db: Db }).db;
  const getSync = db.getSync.bind(db);
  let reads = 0;
  db.getSync = ((...a: Parameters<Db['getSync']>) => {
    reads++;
    return getSync(...a);
  }) as Db['getSync'];
  try {
    expect(await store.accountAtBlock(block, absent)).toBeNull();
  } finally {
    db.getSync = getSync;
  }
  expect(reads).toBe(0);
}

/**
 * The rows of the two history tables against the rows the trie diff gives, for every block of
 * the chain that `sampled` takes (the diff of all 1,600 blocks of the fixture chain costs ~4 s of
 * CPU; the whole chain was compared once, digest-equal, when the write sets replaced the diff).
 */
async function compareWithDiff(db: Db, sampled: (n: number) => boolean): Promise<void> {
  const roots = await stateRoots(db);
  const nodes = rebuiltNodes(db);
  const expected = new Map<string, string>();
  const counts = new Map<string, string>();
  const batch = {
    put: (k: Uint8Array, v: Uint8Array) => (k[0] === Prefix.StateChanges ? counts : expected).set(hex(k), hex(v)),
    del: () => {
      throw new Error('no deletes here');
    },
  };
  for (let n = 0; n < roots.length; n++) {
    if (!sampled(n)) continue;
    const parentRoot = n === 0 ? EMPTY_STATE_ROOT : (roots[n - 1] as Uint8Array);
    const step = { number: BigInt(n), parentRoot, root: roots[n] as Uint8Array };
    await stageStateStep(batch, nodes, step, 'put', (size) => new Uint8Array(size));
  }
  const wrong: string[] = [];
  let stored = 0;
  const range = { gte: Uint8Array.of(Prefix.AccountHistory), lt: Uint8Array.of(Prefix.StorageHistory + 1) };
  for await (const [k, v] of db.iterator(range)) {
    const number = Number(Buffer.from(k.subarray(k.length - 8)).readBigUInt64BE());
    if (!sampled(number)) continue;
    stored++;
    if (expected.get(hex(k)) !== hex(v)) wrong.push(`${hex(k)}: ${hex(v)}, the diff: ${expected.get(hex(k))}`);
  }
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(stored).toBe(expected.size);
  // Each sampled block's count of its rows, as the import wrote it.
  expect(counts.size).toBeGreaterThan(0);
  for (const [k, v] of counts)
    expect([k, hex((await db.get(Buffer.from(k, 'hex'))) ?? new Uint8Array())]).toEqual([k, v]);
}

describe.each(availableChains())('state history of the %s chain', (chain) => {
  test('random historical account and slot reads equal the archive trie; the rows equal the trie diff', async () => {
    const { dir, cleanup } = await datadirCopy(chain);
    let imported: { rows: number; text: string } | undefined;
    try {
      const db = await openDb(dir, { create: false });
      try {
        expect(await tables.meta.get(db, MetaKey.StateLatest)).toBeDefined();
        expect(await tables.meta.get(db, MetaKey.HistoryIndex)).toBeDefined();
        await checkLatest(db);
        imported = await indexDigest(db);
        expect(imported.rows).toBeGreaterThan(0);
        await compareByKey(db, chain, 46);
        await compareWithDiff(db, chain === 'fixtures' ? (n) => n % 8 === 0 : () => true);
      } finally {
        await db.close();
      }
      const store = await LevelChainStore.open(dir, { walkDiskReads: -1 });
      try {
        await compareByAddress(store, 47);
      } finally {
        await store.close();
      }
      // A datadir written before StateLatest existed (no Meta.stateLatest), or with its rows in
      // the earlier form without the list (Meta.stateLatestUnlisted): every read seeks.
      for (const earlier of ['none', 'unlisted'] as const) {
        const old = await openDb(dir, { create: false });
        if (earlier === 'none') await old.del(tables.meta.key(MetaKey.StateLatest));
        else {
          await fillLatest(old);
          await toUnlistedLatest(old);
        }
        await old.close();
        const seeks = await LevelChainStore.open(dir, { walkDiskReads: -1 });
        try {
          await compareByAddress(seeks, 48);
        } finally {
          await seeks.close();
        }
      }
      // `db convert`'s fill writes the rows again as the import did, the index rows too (the
      // datadir's as the import wrote them were read above).
      const filled = await openDb(dir, { create: false });
      try {
        await fillLatest(filled);
        expect(await tables.meta.get(filled, MetaKey.StateLatestUnlisted)).toBeUndefined();
        await checkLatest(filled);
        expect(await indexDigest(filled)).toEqual(imported);
      } finally {
        await filled.close();
      }
    } finally {
      await cleanup();
    }
  });
});
