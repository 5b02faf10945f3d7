// The write set of an executed block, for the flat state history (store's StateWrites): the
// importer's state manager records every account and slot the block writes, with the value each
// had before its first write in the block (the parent state's: nothing of the block wrote it
// before), and after the block compares it with the value the block left. Only what differs is
// kept, as the trie diff would list it. An account deleted, wiped (self-destruct, EIP-161's
// removal of a touched empty account) or created in the block has its storage given as its two
// storage roots, which the writer diffs (every slot it lost listed as cleared).
import { RLP } from '@ethereumjs/rlp';
import { MerkleStateManager } from '@ethereumjs/statemanager';
import { KECCAK256_RLP } from '@ethereumjs/util';
import type { Account, Address } from '@ethereumjs/util';
import { keccak256 } from '@chainnode/core';
import type { StateWrites } from '@chainnode/store';

interface Touched {
  address: Address;
  /** The account's leaf before the block (null: absent). */
  before: Uint8Array | null;
  /** Its storage was cleared or the account deleted in the block (maybe reverted later). */
  wiped: boolean;
  /** Written slots (latin1 key) with their values before the block (unpadded). */
  slots: Map<string, { slot: Uint8Array; before: Uint8Array }>;
}

const latin1 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');

function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

/** A MerkleStateManager that records the write set of a block between begin() and end(). */
export class RecordingStateManager extends MerkleStateManager {
  private touched: Map<string, Touched> | undefined;

  /** Starts recording a block's writes (the state is its parent's). */
  begin(): void {
    this.touched = new Map();
  }

  /** Stops recording without a result (the block failed). */
  abandon(): void {
    this.touched = undefined;
  }

  /** The account's record, taking its value before its first write of the block. */
  private async touch(address: Address): Promise<Touched | undefined> {
    const t = this.touched;
    if (t === undefined) return undefined;
    const key = latin1(address.bytes);
    let e = t.get(key);
    if (e === undefined) {
      e = { address, before: (await super.getAccount(address))?.serialize() ?? null, wiped: false, slots: new Map() };
      t.set(key, e);
    }
    return e;
  }

  override async putAccount(address: Address, account?: Account): Promise<void> {
    await this.touch(address);
    return super.putAccount(address, account);
  }

  override async deleteAccount(address: Address): Promise<void> {
    const e = await this.touch(address);
    if (e !== undefined) e.wiped = true;
    return super.deleteAccount(address);
  }

  override async clearStorage(address: Address): Promise<void> {
    const e = await this.touch(address);
    if (e !== undefined) e.wiped = true;
    return super.clearStorage(address);
  }

  override async putStorage(address: Address, key: Uint8Array, value: Uint8Array): Promise<void> {
    const e = await this.touch(address);
    if (e !== undefined && !e.wiped) {
      const k = latin1(key);
      if (!e.slots.has(k))
        e.slots.set(k, { slot: key.slice(), before: (await super.getStorage(address, key)).slice() });
    }
    return super.putStorage(address, key, value);
  }

  /** The recorded block's change set, from the state it left (after runBlock); stops recording. */
  async end(): Promise<StateWrites> {
    const t = this.touched;
    this.touched = undefined;
    const out: StateWrites = { accounts: [], slots: [], storage: [] };
    if (t === undefined) return out;
    for (const e of t.values()) {
      const after = (await this.getAccount(e.address))?.serialize() ?? null;
      if (sameBytes(e.before, after)) continue;
      const hashed = keccak256(e.address.bytes);
      out.accounts.push([hashed, after]);
      if (e.wiped || e.before === null || after === null) {
        const from = e.before === null ? KECCAK256_RLP : storageRootOf(e.before);
        const to = after === null ? KECCAK256_RLP : storageRootOf(after);
        out.storage.push([hashed, from, to]);
        continue;
      }
      for (const s of e.slots.values()) {
        const value = await this.getStorage(e.address, s.slot);
        if (sameBytes(s.before, value)) continue;
        out.slots.push([hashed, keccak256(s.slot), value.length === 0 ? null : value.slice()]);
      }
    }
    return out;
  }
}

/** The storage root field of an account leaf (RLP [nonce, balance, storageRoot, codeHash]). */
function storageRootOf(leaf: Uint8Array): Uint8Array {
  return (RLP.decode(leaf) as Uint8Array[])[2] as Uint8Array;
}
