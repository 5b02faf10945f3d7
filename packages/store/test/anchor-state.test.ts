// A joined datadir's downloaded first-block state made whole (StoreWriter.completeAnchorState): a
// synthetic chain with state is built from genesis (prune-chain.ts, trie nodes whole), and its
// block 40 becomes the anchor of two joined datadirs that take every trie node and code as a
// download would. Completing one in parts of 2 KiB and the other in one part writes the same
// history rows (AccountHistory, StorageHistory, StateLatest), row for row; every account and slot
// of the chain read at block 40 from the joined datadir's flat history equals the source's state
// trie; and completing again after a crash between parts (the rows of the first parts written,
// the meta rows not) leaves the same rows as one write, with no change listed twice.
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt, setLengthLeft } from '@ethereumjs/util';
import { tempDir } from '@chainnode/testkit';
import type { TempDir } from '@chainnode/testkit';
import { openDb } from '../src/db.js';
import { keccak256 } from '../src/keccak.js';
import { LevelChainStore } from '../src/reader/index.js';
import { MetaKey, Prefix, tables } from '../src/schema/index.js';
import { trieGetSync } from '../src/trie/index.js';
import { StoreWriter } from '../src/writer/index.js';
import { blockInput } from './block-input.js';
import { ACCOUNTS, CONTRACTS, address, buildChain, openWriter, slotKey, stateRootAt } from './prune-chain.js';

const ANCHOR = 40n;
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** Every row of the tables under `prefixes`, as hex pairs in key order. */
async function rowsOf(dir: string, prefixes: number[]): Promise<string[]> {
  const db = await openDb(dir, { create: false });
  const out: string[] = [];
  for (const p of prefixes)
    for await (const [k, v] of db.iterator({ gte: Uint8Array.of(p), lt: Uint8Array.of(p + 1) }))
      out.push(`${hex(k)}=${hex(v)}`);
  await db.close();
  return out;
}

describe('completing a downloaded first-block state', () => {
  let tmp: TempDir;
  let source: string;
  let anchor: { hash: Uint8Array; headerRlp: Uint8Array; root: Uint8Array };
  let nodes: { hash: Uint8Array; bytes: Uint8Array }[];
  let codes: { hash: Uint8Array; bytes: Uint8Array }[];

  beforeAll(async () => {
    tmp = await tempDir('anchor-state-');
    source = `${tmp.dir}/source`;
    const w = await openWriter(source, { trieDeltas: false });
    await buildChain(w, Number(ANCHOR) + 5, 8);
    const hash = (await tables.canonical.get(w.db, ANCHOR)) as Uint8Array;
    anchor = {
      hash,
      headerRlp: (await tables.headers.get(w.db, hash)) as Uint8Array,
      root: await stateRootAt(w, ANCHOR),
    };
    await w.close();
    // Every node and code the source holds (more than block 40's state: a download takes fewer).
    nodes = [];
    codes = [];
    const db = await openDb(source, { create: false });
    for await (const [k, v] of db.iterator({
      gte: Uint8Array.of(Prefix.TrieNodes),
      lt: Uint8Array.of(Prefix.TrieNodes + 1),
    })) {
      const key = k.subarray(1);
      if (key.length === 33 && key[0] === 0x63) codes.push({ hash: key.slice(1), bytes: v });
      else nodes.push({ hash: key.slice(), bytes: v });
    }
    await db.close();
    expect(codes.length).toBe(CONTRACTS);
  }, 60_000);

  afterAll(async () => tmp?.cleanup());

  /** A writer on a new joined datadir at block 40 holding every node and code, its state still pending. */
  async function downloaded(dir: string, partBytes: number | undefined): Promise<StoreWriter> {
    const w = await StoreWriter.open(dir, partBytes === undefined ? {} : { anchorStatePartBytes: partBytes });
    await w.writeAnchor({
      chainConfig: { chainId: 1 },
      genesisHash: keccak256(Uint8Array.of(1)),
      block: blockInput({
        number: Number(ANCHOR),
        hash: anchor.hash,
        headerRlp: anchor.headerRlp,
        txs: [],
        txHashes: [],
        logs: [],
        logsBloom: new Uint8Array(256),
      }),
      downloadState: true,
    });
    await w.writeAnchorStateRows(nodes, codes);
    return w;
  }

  /** The joined datadir `name`, its state completed in parts of `partBytes` (one part: undefined). */
  async function joined(name: string, partBytes: number | undefined): Promise<{ dir: string; parts: number }> {
    const dir = `${tmp.dir}/${name}`;
    const w = await downloaded(dir, partBytes);
    const { parts } = await w.completeAnchorState();
    expect(w.anchorState()).toBe('whole');
    await w.close();
    return { dir, parts };
  }

  test('in parts or in one, the same history rows; each read at block 40 equals the source trie', async () => {
    const parted = await joined('parted', 2048);
    const whole = await joined('whole', undefined);
    expect(parted.parts).toBeGreaterThan(3);
    expect(whole.parts).toBe(1);
    const tablesOf = [Prefix.AccountHistory, Prefix.StorageHistory, Prefix.StateLatest];
    const rows = await rowsOf(whole.dir, tablesOf);
    expect(rows.length).toBeGreaterThan(ACCOUNTS + CONTRACTS * 4);
    expect(await rowsOf(parted.dir, tablesOf)).toEqual(rows);

    // The source's own state trie at block 40, walked directly.
    const srcDb = await openDb(source, { create: false });
    const get = (h: Uint8Array) => tables.trieNodes.getSync(srcDb, h);
    const got = await LevelChainStore.open(parted.dir);
    const block = { number: ANCHOR, hash: anchor.hash };
    let slots = 0;
    for (let i = 0; i < ACCOUNTS; i++) {
      const leaf = trieGetSync(anchor.root, keccak256(address(i)), get) as Uint8Array;
      const [nonce, balance, storageRoot, codeHash] = RLP.decode(leaf) as Uint8Array[];
      const want = {
        nonce: bytesToBigInt(nonce as Uint8Array),
        balance: bytesToBigInt(balance as Uint8Array),
        storageRoot,
        codeHash,
      };
      expect([i, await got.accountAtBlock(block, address(i))]).toEqual([i, want]);
      for (let s = 0; s < 24 && i < CONTRACTS; s++) {
        const v = trieGetSync(storageRoot as Uint8Array, keccak256(slotKey(s)), get);
        const word = setLengthLeft(v === undefined ? new Uint8Array() : (RLP.decode(v) as Uint8Array), 32);
        if (v !== undefined) slots++;
        expect([i, s, await got.storageAtBlock(block, address(i), slotKey(s))]).toEqual([i, s, word]);
      }
    }
    expect(slots).toBeGreaterThan(20);
    await srcDb.close();
    await got.close();
  }, 60_000);

  test('completed again after a crash between parts: the same rows, no change listed twice', async () => {
    const dir = `${tmp.dir}/crashed`;
    const w = await downloaded(dir, 2048);
    await w.completeAnchorState();
    await w.close();
    // As a crash after the first parts leaves it: the meta rows of the last part gone, the state pending.
    const db = await openDb(dir, { create: false });
    const batch = db.batch();
    batch.del(tables.meta.key(MetaKey.StateHistory));
    batch.del(tables.meta.key(MetaKey.StateLatest));
    batch.put(tables.meta.key(MetaKey.AnchorState), new TextEncoder().encode('pending'));
    await batch.write();
    await db.close();
    const again = await StoreWriter.open(dir, { anchorStatePartBytes: 2048 });
    expect(again.anchorState()).toBe('pending');
    expect(again.keepsStateHistory()).toBe(false);
    await again.completeAnchorState();
    await again.close();
    const tablesOf = [Prefix.AccountHistory, Prefix.StorageHistory, Prefix.StateLatest];
    expect(await rowsOf(dir, tablesOf)).toEqual(await rowsOf(`${tmp.dir}/whole`, tablesOf));
    // Equal to the rows of one write: a latest row merged with the first attempt's would list the
    // change at block 40 twice.
  }, 60_000);
});
