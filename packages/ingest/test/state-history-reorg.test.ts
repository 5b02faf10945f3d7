// A reorg deeper than one block and the flat state history. The fixture chain's store imports
// fixtures/fork, which leaves the main chain after block 1590 (ten blocks below its head) and
// adds fifteen blocks of its own: the undo of the ten and the new branch go through the importer
// in small groups. Then, around the fork, every account and slot read from the history at a
// block equals the trie walk at that block (a removed block's row left behind, or a new block's
// row missing, or a key's latest row not set back to its change at or below the fork, would show
// as a wrong value there), and the history tables (with the latest rows) equal, byte for byte,
// those of a second copy that was rewound to block 1590 on its own (a reopened writer, the undo
// alone in its batch) and then took the fork's blocks as plain appends, as a fresh import would.
import { join } from 'node:path';
import { KECCAK256_RLP } from '@ethereumjs/util';
import { LevelChainStore, Prefix, StoreWriter, decodeStateChanges, digestDatadir, keccak256 } from '@chainnode/store';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import { importChain } from '../src/index.js';

const HISTORY = [Prefix.AccountHistory, Prefix.StorageHistory, Prefix.StateLatest, Prefix.StateChanges];
const FORK_AT = 1590n;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Coinbases, senders and recipients of blocks [from, to] (hex, distinct). */
async function addressesOf(store: LevelChainStore, from: bigint, to: bigint): Promise<Set<string>> {
  const out = new Set<string>();
  for (let n = from; n <= to; n++) {
    const b = await store.block((await store.canonicalHash(n)) as Uint8Array);
    if (b === undefined) throw new Error(`block ${n} missing`);
    out.add(hex(b.header.coinbase));
    for (const tx of b.transactions) {
      out.add(hex(tx.from));
      if (tx.to !== undefined && tx.to !== null) out.add(hex(tx.to));
    }
  }
  return out;
}

/** Slot words to read: 0..3, and the mapping entries keccak(holder ++ p) for p in 0..2. */
function slotsOf(holders: Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let p = 0; p < 4; p++) out.push(Uint8Array.from({ length: 32 }, (_, i) => (i === 31 ? p : 0)));
  for (const h of holders)
    for (let p = 0; p < 3; p++) {
      const pre = new Uint8Array(64);
      pre.set(h, 12);
      pre[63] = p;
      out.push(keccak256(pre));
    }
  return out;
}

/** An account read as text, field by field in key order (a Buffer and a Uint8Array of the same bytes alike). */
function accountText(a: object | null | undefined): string {
  if (a === undefined) return 'undefined';
  if (a === null) return 'null';
  const fields = Object.entries(a)
    .filter(([, v]) => v !== undefined)
    .sort(([x], [y]) => (x < y ? -1 : 1))
    .map(([k, v]) => `${k}=${v instanceof Uint8Array ? hex(v) : String(v)}`);
  return fields.join(' ');
}

/**
 * History reads against trie reads at every block of [from, to]; returns the number of non-zero
 * slots seen. What differs is collected and asserted once: a matcher per account and slot (some
 * hundred thousand reads) cost a fifth of this suite's CPU.
 */
async function compareAround(
  store: LevelChainStore,
  addresses: Uint8Array[],
  from: bigint,
  to: bigint,
): Promise<number> {
  const slots = slotsOf(addresses);
  let nonZero = 0;
  const differ: unknown[] = [];
  for (let n = from; n <= to; n++) {
    const block = { number: n, hash: (await store.canonicalHash(n)) as Uint8Array };
    const root = (await store.header(block.hash))?.stateRoot as Uint8Array;
    for (const a of addresses) {
      const account = await store.account(root, a);
      const [got, want] = [accountText(await store.accountAtBlock(block, a)), accountText(account)];
      if (got !== want) differ.push({ n, address: hex(a), got, want });
      if (account === null || hex(account.storageRoot) === hex(KECCAK256_RLP)) continue;
      for (const s of slots) {
        const want = hex(await store.storageAt(root, a, s));
        if (/[^0]/.test(want)) nonZero++;
        const at = hex((await store.storageAtBlock(block, a, s)) as Uint8Array);
        if (at !== want) differ.push({ n, address: hex(a), slot: hex(s), got: at, want });
      }
    }
  }
  expect(differ.slice(0, 20)).toEqual([]);
  return nonZero;
}

test('a 10-block reorg leaves the state history as the trie and as a rewind-then-append', async () => {
  const fork = join(chainDir('fixtures') as string, 'fork');
  const reorged = await datadirCopy('fixtures');
  const appended = await datadirCopy('fixtures');
  try {
    const before = await digestDatadir(reorged.dir, HISTORY);
    let store = await LevelChainStore.open(reorged.dir);
    const touched = await addressesOf(store, FORK_AT - 4n, 1600n);
    await store.close();
    // The undo and the new branch's first blocks share a batch; the rest follow in others.
    const r = await importChain({ from: fork, datadir: reorged.dir, groupBlocks: 4 });
    expect([r.reorgs, r.head.number]).toEqual([1, 1605n]);
    store = await LevelChainStore.open(reorged.dir, { walkDiskReads: -1 });
    try {
      for (const a of await addressesOf(store, FORK_AT + 1n, 1605n)) touched.add(a);
      const addresses = [...touched].map((a) => Uint8Array.from(Buffer.from(a, 'hex')));
      expect(await compareAround(store, addresses, FORK_AT - 2n, 1605n)).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
    const w = await StoreWriter.open(appended.dir);
    try {
      expect((await w.rewind(FORK_AT)).length).toBe(10);
      await w.flush();
    } finally {
      await w.close();
    }
    const a = await importChain({ from: fork, datadir: appended.dir });
    expect([a.reorgs, a.head.number]).toEqual([0, 1605n]);
    const after = await digestDatadir(reorged.dir, HISTORY);
    expect(after.digest).not.toBe(before.digest);
    expect(after).toEqual(await digestDatadir(appended.dir, HISTORY));
    // Every block's StateChanges row counts its history rows (a scan of every row), the fork's
    // blocks' too: the removed blocks' counts went with their rows.
    const w2 = await StoreWriter.open(reorged.dir);
    try {
      const scanned = new Map<bigint, { accounts: number; slots: number }>();
      for (const [prefix, field] of [
        [Prefix.AccountHistory, 'accounts'],
        [Prefix.StorageHistory, 'slots'],
      ] as const)
        for await (const k of w2.db.keys({ gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) })) {
          const n = new DataView(k.buffer, k.byteOffset, k.byteLength).getBigUint64(k.length - 8);
          const c = scanned.get(n) ?? { accounts: 0, slots: 0 };
          c[field]++;
          scanned.set(n, c);
        }
      const counted = new Map<bigint, { accounts: number; slots: number }>();
      for await (const [k, v] of w2.db.iterator({
        gte: Uint8Array.of(Prefix.StateChanges),
        lt: Uint8Array.of(Prefix.StateChanges + 1),
      })) {
        const c = decodeStateChanges(v);
        if (c.accounts + c.slots > 0) counted.set(new DataView(k.buffer, k.byteOffset).getBigUint64(1), c);
      }
      expect(counted.size).toBeGreaterThan(1600);
      expect(counted).toEqual(scanned);
    } finally {
      await w2.close();
    }
  } finally {
    await reorged.cleanup();
    await appended.cleanup();
  }
});
