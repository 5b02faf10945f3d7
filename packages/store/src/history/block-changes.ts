// A block's change set read from its state history rows: what a primary serves a replica
// (chainnode_getStateDiff, chainnode_getBlockRange) without diffing the parent's and the block's
// state tries, which costs a walk of every changed path (~100 ms a block at mainnet's shape).
//
// The history is keyed by account then block, so a block's rows cannot be listed without a scan of
// every row. What names them instead is the block's recorded state changes (the accounts and
// slots its transactions changed, TxStateDiffs): the rows at the block's number under those keys
// are each a change of the block (a row exists only where the block changed the key, write.ts),
// and they are all of them exactly when they are as many as the block's StateChanges row counts.
// A change the records do not name (a block-level write: a withdrawal, a system contract's slot;
// the slots an account's deletion cleared) leaves the count short and the caller diffs the tries.
// So the answer is the trie diff's, or none.
import { KECCAK256_NULL } from '@ethereumjs/util';
import { ResponseTooLargeError, bytesEqual, readVarint } from '@chainnode/core';
import type {
  AccountDiffRecord,
  BlockRef,
  BlockTouches,
  StateDiffLimits,
  StateDiffRecord,
  TouchedAccount,
} from '@chainnode/core';
import type { Db } from '../db.js';
import { keccak256 } from '../keccak.js';
import { tables } from '../schema/index.js';
import { ACCOUNT_JSON_CHARS, SLOT_JSON_CHARS, accountFields } from '../trie/index.js';
import { pointRowAt } from './read.js';

/** A StateChanges row decoded: the block's AccountHistory and StorageHistory rows. */
export function decodeStateChanges(raw: Uint8Array): { accounts: number; slots: number } {
  const accounts = readVarint(raw, 0, 'state changes row');
  const slots = readVarint(raw, accounts.end, 'state changes row');
  return { accounts: accounts.value, slots: slots.value };
}

const byKey = (a: { key: Uint8Array }, b: { key: Uint8Array }): number => Buffer.compare(a.key, b.key);

/**
 * The change set of the canonical `block` as diffStates (trie/state-diff.ts) gives it, from the
 * history rows of the keys `touches` names; undefined when they are not the whole change set (or
 * the block has no StateChanges row, or is not canonical). `code` reads a code by its hash.
 * Duplicate keys in `touches` are read once: a key counted twice could stand in for one missing.
 * `pointReads`: the datadir's StateLatest rows are complete (Meta.stateLatest), so an account's
 * code hash before the block, where `touches` does not give it, is read by point reads
 * (read.ts pointRowAt); without, such an account leaves the answer to the trie diff.
 */
export async function historyStateDiff(
  db: Db,
  block: BlockRef,
  touches: BlockTouches,
  code: (codeHash: Uint8Array) => Uint8Array | undefined,
  limits: StateDiffLimits,
  pointReads: boolean,
): Promise<StateDiffRecord | undefined> {
  const snapshot = db.snapshot();
  try {
    const get = (key: Uint8Array): Uint8Array | undefined => db.getSync(key, { snapshot });
    const canonical = get(tables.canonical.key(block.number));
    if (canonical === undefined || !bytesEqual(canonical, block.hash)) return undefined;
    const counted = get(tables.stateChanges.key(block.number));
    if (counted === undefined) return undefined;
    const expected = decodeStateChanges(counted);
    let size = 0;
    const grow = (chars: number): void => {
      size += chars;
      if (size > limits.maxBytes) throw new ResponseTooLargeError();
    };
    // Each account once, its rows at the block read together (one call into LevelDB for all).
    const seen = new Set<string>();
    const named: TouchedAccount[] = [];
    const accountKeys: Uint8Array[] = [];
    const hashes: Uint8Array[] = [];
    for (const touched of touches.accounts) {
      const id = Buffer.from(touched.address).toString('latin1');
      if (seen.has(id)) continue;
      seen.add(id);
      const key = keccak256(touched.address);
      named.push(touched);
      hashes.push(key);
      accountKeys.push(tables.accountHistory.key({ path: key, number: block.number }));
    }
    const rows = await db.getMany(accountKeys, { snapshot });
    // No row: the block left the account as it was (its storage too: a slot written changes the
    // account's storage root). The changed accounts' slots, each once, read together.
    const changed: number[] = [];
    const slotKeys: Uint8Array[] = [];
    const slotHashes: Uint8Array[] = [];
    const slotOwner: number[] = [];
    for (let i = 0; i < named.length; i++) {
      if (rows[i] === undefined) continue;
      changed.push(i);
      const key = hashes[i] as Uint8Array;
      const slotsSeen = new Set<string>();
      for (const slot of (named[i] as TouchedAccount).slots) {
        const slotId = Buffer.from(slot).toString('latin1');
        if (slotsSeen.has(slotId)) continue;
        slotsSeen.add(slotId);
        const slotKey = keccak256(slot);
        const path = new Uint8Array(64);
        path.set(key, 0);
        path.set(slotKey, 32);
        slotHashes.push(slotKey);
        slotOwner.push(i);
        slotKeys.push(tables.storageHistory.key({ path, number: block.number }));
      }
    }
    if (changed.length !== expected.accounts) return undefined;
    const values = slotKeys.length === 0 ? [] : await db.getMany(slotKeys, { snapshot });
    const storage = new Map<number, [Uint8Array, Uint8Array | null][]>();
    let slots = 0;
    for (let j = 0; j < slotKeys.length; j++) {
      const value = values[j];
      if (value === undefined) continue;
      slots++;
      const owner = slotOwner[j] as number;
      let list = storage.get(owner);
      if (list === undefined) storage.set(owner, (list = []));
      list.push([slotHashes[j] as Uint8Array, value.length === 0 ? null : value]);
    }
    if (slots !== expected.slots) return undefined;
    const out: AccountDiffRecord[] = [];
    for (const i of changed) {
      const row = rows[i] as Uint8Array;
      const key = hashes[i] as Uint8Array;
      grow(ACCOUNT_JSON_CHARS);
      // A deleted account: its slots' rows (every slot it had) are counted, not listed, as the
      // trie diff lists none.
      if (row.length === 0) {
        out.push({ key, account: null, storage: [] });
        continue;
      }
      const a = accountFields(row);
      const list = storage.get(i) ?? [];
      for (let k = 0; k < list.length; k++) grow(SLOT_JSON_CHARS);
      const entry: AccountDiffRecord = {
        key,
        account: {
          nonce: a.nonce,
          balance: a.balance,
          storageRoot: a.storageRoot.slice(),
          codeHash: a.codeHash.slice(),
        },
        storage: list.sort((x, y) => Buffer.compare(x[0], y[0])),
      };
      let before = (named[i] as TouchedAccount).codeHashBefore;
      if (before === undefined && !bytesEqual(a.codeHash, KECCAK256_NULL)) {
        // Not known to the caller (a block-level write's account): its row before the block.
        if (!pointReads || block.number === 0n) return undefined;
        const prior = pointRowAt(get, block.number - 1n, tables.accountHistory, key);
        if (prior === undefined) return undefined;
        before = prior === null ? null : accountFields(prior).codeHash;
      }
      if (!bytesEqual(a.codeHash, before ?? KECCAK256_NULL) && !bytesEqual(a.codeHash, KECCAK256_NULL)) {
        const c = code(a.codeHash);
        if (c === undefined) throw new Error('state: code missing for a code hash');
        grow(2 * c.length);
        entry.code = c;
      }
      out.push(entry);
    }
    return { accounts: out.sort(byKey) };
  } finally {
    snapshot.close().catch(() => undefined);
  }
}
