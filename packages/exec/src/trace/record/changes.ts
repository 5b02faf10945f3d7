// The recorded form of a block's state changes (its TxStateDiffs rows): what each transaction
// changed of the accounts it touched (parity/state-diff.ts changes()), what prestateTracer's
// diffMode and Parity's stateDiff are fed instead of re-executing. The rows are laid out and cut
// as TxFrames rows (codec.ts encodeBlockFrames: the block's hash, then each transaction's bytes):
//
//   tx      := accountCount(v) account*
//   account := address(20) flags(1) preBalance(b) preNonce(b) [preCodeHash(32)]
//              [postBalance(b)] [postNonce(b)] [postCodeHash(32)] slotCount(v) slot*
//   slot    := key(b) before(b) after(b)
//
// flags: 1 deleted, 2 created, 4 destroyed (hooks.ts ChangedAccount), 8 it had code, 16 its
// balance changed, 32 its nonce changed, 64 its code changed, 128 it has code after. A field
// that did not change is left out; code is kept as its hash (the store's code table holds it).
import type { BlockTouches, Bytes, TouchedAccount } from '@chainnode/core';
import { word } from '../evm-events.js';
import type { AccountFields, ChangedAccount } from '../hooks.js';
import { ByteWriter, txFramesAt } from './codec.js';
import type { ByteReader } from './codec.js';

const F = { deleted: 1, created: 2, destroyed: 4, preCode: 8, balance: 16, nonce: 32, code: 64, postCode: 128 };

const sameHash = (a: Bytes | undefined, b: Bytes | undefined): boolean =>
  a === undefined || b === undefined ? a === b : Buffer.from(a).equals(b);

const bigOf = (b: Bytes): bigint => (b.length === 0 ? 0n : BigInt(`0x${Buffer.from(b).toString('hex')}`));

/** One transaction's changes, encoded. */
export function encodeChanges(accounts: readonly ChangedAccount[]): Uint8Array {
  const w = new ByteWriter();
  w.uint(accounts.length);
  for (const a of accounts) {
    const { pre, post } = a;
    const codeChanged = !sameHash(pre.codeHash, post.codeHash);
    w.raw(a.address);
    w.byte(
      (a.deleted ? F.deleted : 0) |
        (a.created ? F.created : 0) |
        (a.destroyed ? F.destroyed : 0) |
        (pre.codeHash !== undefined ? F.preCode : 0) |
        (post.balance !== pre.balance ? F.balance : 0) |
        (post.nonce !== pre.nonce ? F.nonce : 0) |
        (codeChanged ? F.code : 0) |
        (post.codeHash !== undefined ? F.postCode : 0),
    );
    w.big(pre.balance);
    w.big(pre.nonce);
    if (pre.codeHash !== undefined) w.raw(pre.codeHash);
    if (post.balance !== pre.balance) w.big(post.balance);
    if (post.nonce !== pre.nonce) w.big(post.nonce);
    if (codeChanged && post.codeHash !== undefined) w.raw(post.codeHash);
    w.uint(a.slots.length);
    for (const [slot, before, after] of a.slots) {
      w.big(bigOf(slot));
      w.big(bigOf(before));
      w.big(bigOf(after));
    }
  }
  return w.done();
}

/** One transaction's changes from its bytes in a row (txFramesAt's reader). */
export function decodeChanges(r: ByteReader): ChangedAccount[] {
  const count = r.uint();
  const out: ChangedAccount[] = [];
  for (let i = 0; i < count; i++) {
    const address = r.raw(20);
    const flags = r.byte();
    const has = (f: number) => (flags & f) === f;
    const pre: AccountFields = { balance: r.big(), nonce: r.big(), codeHash: has(F.preCode) ? r.raw(32) : undefined };
    const post: AccountFields = {
      balance: has(F.balance) ? r.big() : pre.balance,
      nonce: has(F.nonce) ? r.big() : pre.nonce,
      codeHash: !has(F.code) ? pre.codeHash : has(F.postCode) ? r.raw(32) : undefined,
    };
    const slots: [Bytes, Bytes, Bytes][] = [];
    const n = r.uint();
    for (let s = 0; s < n; s++) slots.push([word(r.big()), word(r.big()), word(r.big())]);
    out.push({
      address,
      pre,
      post,
      slots,
      deleted: has(F.deleted),
      created: has(F.created),
      destroyed: has(F.destroyed),
    });
  }
  return out;
}

/**
 * The accounts and slots a block's recorded state changes name (its TxStateDiffs rows, joined),
 * each once, with each account's code hash before its first change in the block: the keys of its
 * change set that the store reads from the state history (ChainStore.historyStateDiff, which checks
 * they are all of it). Undefined when the rows are another block's or cannot be read.
 */
export function recordedTouches(rows: Uint8Array, blockHash: Bytes): BlockTouches | undefined {
  const accounts = new Map<string, { address: Bytes; slots: Map<string, Bytes>; codeHashBefore: Bytes | null }>();
  try {
    for (let index = 0; ; index++) {
      const reader = txFramesAt(rows, blockHash, index);
      if (reader === undefined) {
        if (index === 0) return undefined;
        break;
      }
      // decodeChanges' layout, the values skipped: only the keys and the code hash before are kept.
      const count = reader.uint();
      for (let i = 0; i < count; i++) {
        const address = reader.raw(20);
        const flags = reader.byte();
        skipBig(reader); // pre balance
        skipBig(reader); // pre nonce
        const preCode = (flags & F.preCode) !== 0 ? reader.raw(32) : null;
        if ((flags & F.balance) !== 0) skipBig(reader);
        if ((flags & F.nonce) !== 0) skipBig(reader);
        if ((flags & F.code) !== 0 && (flags & F.postCode) !== 0) reader.raw(32);
        const id = Buffer.from(address).toString('latin1');
        let entry = accounts.get(id);
        if (entry === undefined) {
          entry = { address, slots: new Map(), codeHashBefore: preCode };
          accounts.set(id, entry);
        }
        const slots = reader.uint();
        for (let s = 0; s < slots; s++) {
          const len = reader.byte();
          if (len > 32) throw new RangeError('recorded state changes: a slot longer than 32 bytes');
          const key = new Uint8Array(32);
          key.set(reader.raw(len), 32 - len);
          skipBig(reader); // before
          skipBig(reader); // after
          entry.slots.set(Buffer.from(key).toString('latin1'), key);
        }
      }
    }
  } catch {
    return undefined;
  }
  const out: TouchedAccount[] = [];
  for (const e of accounts.values())
    out.push({ address: e.address, slots: [...e.slots.values()], codeHashBefore: e.codeHashBefore });
  return { accounts: out };
}

/** Past a ByteReader.big() field without building its value. */
function skipBig(r: ByteReader): void {
  r.raw(r.byte());
}
