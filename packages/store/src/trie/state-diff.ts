// The state change of a block as a diff of two Merkle-Patricia tries: the parent's state root and
// the block's. Both tries are walked side by side from their roots, by nibble path; a subtree is
// skipped as soon as its reference (node hash, or the bytes of a node embedded in its parent) is
// the same on both sides, so the walk reads only the nodes on changed paths. Where one side has
// nothing (a new or deleted subtree), every leaf of the other side is listed. An account leaf that
// changed has its storage tries diffed the same way (from the empty trie for a new account), and
// its code read when its code hash changed.
//
// Node shapes (Yellow Paper, appendix D): a branch is a 17-item list (16 children, value); a leaf
// or an extension is [hex-prefix path, value | child]. A child reference is a 32-byte hash, an
// embedded node (a list, when its RLP is shorter than 32 bytes) or empty. Secure tries have
// 32-byte keys: every leaf sits at 64 nibbles, and a branch never holds a value.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_NULL, KECCAK256_RLP } from '@ethereumjs/util';
import { LimitExceededError, ResponseTooLargeError, bytesEqual } from '@chainnode/core';
import type { AccountDiffRecord, StateDiffLimits, StateDiffRecord } from '@chainnode/core';
import { accountFields, rlpString } from './trie-read.js';
import type { NodeSource } from './trie-read.js';
import type { Nested } from './trie-update.js';

/** A decoded node; a short node (leaf or extension) with `at` of its path's nibbles already walked. */
type TrieNode =
  | { kind: 'branch'; items: Nested[] }
  | { kind: 'short'; path: Uint8Array; at: number; leaf: boolean; value: Nested };

/**
 * One side of the walk at a path: nothing (null), a child reference not read yet (`ref` is what
 * identifies the subtree: its hash, or its embedded bytes), or a node read.
 */
type Side = null | { ref: Uint8Array; item: Nested } | TrieNode;

/** A leaf that differs: its 32-byte key and its values on either side (null: absent there). */
type Emit = (key: Uint8Array, before: Uint8Array | null, after: Uint8Array | null) => Promise<void> | undefined;

/** Let other requests run at least this often (ms) during one diff. */
const YIELD_EVERY_MS = 4;

class Walk {
  private last = Date.now();
  constructor(
    private readonly nodes: NodeSource,
    private readonly deadline: number,
  ) {
    if (Date.now() > deadline) throw new LimitExceededError('query timeout exceeded');
  }

  /** Past the deadline: throws; now and then: a turn of the event loop (undefined otherwise, no await). */
  tick(): Promise<void> | undefined {
    const now = Date.now();
    if (now > this.deadline) throw new LimitExceededError('query timeout exceeded');
    if (now - this.last < YIELD_EVERY_MS) return undefined;
    return nextTurn().then(() => {
      this.last = Date.now();
      if (this.last > this.deadline) throw new LimitExceededError('query timeout exceeded');
    });
  }

  /** The side of a trie's root hash. */
  root(hash: Uint8Array): Side {
    return bytesEqual(hash, KECCAK256_RLP) ? null : { ref: hash, item: hash };
  }

  /** Diffs two sides at the nibble path `path`, calling `emit` for every leaf that differs, in key order. */
  async diff(a: Side, b: Side, path: number[], emit: Emit): Promise<void> {
    if (a !== null && b !== null && 'ref' in a && 'ref' in b && bytesEqual(a.ref, b.ref)) return;
    const t = this.tick();
    if (t !== undefined) await t;
    const x = this.load(a);
    const y = this.load(b);
    if (x === null && y === null) return;
    if (x === null || y === null) {
      await this.all(x ?? (y as TrieNode), path, x === null ? 'after' : 'before', emit);
      return;
    }
    if (x.kind === 'short' && y.kind === 'short' && sameRest(x, y)) {
      const at = [...path, ...x.path.subarray(x.at)];
      if (x.leaf && y.leaf) {
        const va = x.value as Uint8Array;
        const vb = y.value as Uint8Array;
        if (!bytesEqual(va, vb)) await emit(keyOf(at), va, vb);
        return;
      }
      if (!x.leaf && !y.leaf) {
        await this.diff(child(x.value), child(y.value), at, emit);
        return;
      }
    }
    const [ca, va] = expand(x);
    const [cb, vb] = expand(y);
    if (va !== null || vb !== null) throw new Error('trie: a value at a branch of a secure trie');
    for (let i = 0; i < 16; i++) {
      path.push(i);
      await this.diff(ca[i] as Side, cb[i] as Side, path, emit);
      path.pop();
    }
  }

  /** Every leaf under `node`, as added (`after`) or removed (`before`). */
  private async all(node: TrieNode, path: number[], side: 'before' | 'after', emit: Emit): Promise<void> {
    const t = this.tick();
    if (t !== undefined) await t;
    if (node.kind === 'short') {
      const at = [...path, ...node.path.subarray(node.at)];
      if (node.leaf) {
        const v = node.value as Uint8Array;
        await (side === 'after' ? emit(keyOf(at), null, v) : emit(keyOf(at), v, null));
        return;
      }
      const next = this.load(child(node.value));
      if (next !== null) await this.all(next, at, side, emit);
      return;
    }
    for (let i = 0; i < 16; i++) {
      const next = this.load(child(node.items[i] as Nested));
      if (next === null) continue;
      path.push(i);
      await this.all(next, path, side, emit);
      path.pop();
    }
  }

  /** The node of a side (reading it by hash when it is a reference to one). */
  private load(s: Side): TrieNode | null {
    if (s === null) return null;
    if (!('ref' in s)) return s;
    if (s.item instanceof Uint8Array) {
      const raw = this.nodes(s.item);
      if (raw === undefined) throw new Error('trie: missing node');
      // A copy: the source may hand out views of a cache that other callers reuse while this walk yields.
      return decodeNode(RLP.decode(raw.slice()) as Nested);
    }
    return decodeNode(s.item);
  }
}

/** The side of a child reference (empty, hash, or embedded node). */
function child(item: Nested): Side {
  if (item instanceof Uint8Array) {
    if (item.length === 0) return null;
    if (item.length !== 32) throw new Error('trie: bad child reference');
    return { ref: item, item };
  }
  return { ref: RLP.encode(item), item };
}

function decodeNode(n: Nested): TrieNode {
  if (!Array.isArray(n)) throw new Error('trie: node is not a list');
  if (n.length === 17) return { kind: 'branch', items: n };
  if (n.length !== 2) throw new Error(`trie: node with ${n.length} items`);
  const hp = n[0];
  if (!(hp instanceof Uint8Array) || hp.length === 0) throw new Error('trie: bad hex-prefix path');
  const flag = (hp[0] as number) >> 4;
  if (flag > 3) throw new Error('trie: bad hex-prefix flag');
  const odd = (flag & 1) === 1;
  const path = new Uint8Array((hp.length - 1) * 2 + (odd ? 1 : 0));
  let p = 0;
  if (odd) path[p++] = (hp[0] as number) & 0x0f;
  for (let i = 1; i < hp.length; i++) {
    path[p++] = (hp[i] as number) >> 4;
    path[p++] = (hp[i] as number) & 0x0f;
  }
  const leaf = flag >= 2;
  if (leaf && !(n[1] instanceof Uint8Array)) throw new Error('trie: leaf value is a list');
  return { kind: 'short', path, at: 0, leaf, value: n[1] as Nested };
}

/** Two short nodes whose remaining paths are the same. */
function sameRest(x: TrieNode & { kind: 'short' }, y: TrieNode & { kind: 'short' }): boolean {
  return x.path.length - x.at === y.path.length - y.at && bytesEqual(x.path.subarray(x.at), y.path.subarray(y.at));
}

/** A node as 16 child sides and its value (a short node occupies the one child its next nibble names). */
function expand(n: TrieNode): [Side[], Uint8Array | null] {
  const out = new Array<Side>(16).fill(null);
  if (n.kind === 'branch') {
    for (let i = 0; i < 16; i++) out[i] = child(n.items[i] as Nested);
    const v = n.items[16];
    if (!(v instanceof Uint8Array)) throw new Error('trie: branch value is a list');
    return [out, v.length === 0 ? null : v];
  }
  if (n.at === n.path.length) {
    // Only a leaf ends here (an extension's end is its child, taken below).
    return [out, n.value as Uint8Array];
  }
  const next = n.at + 1;
  out[n.path[n.at] as number] = next === n.path.length && !n.leaf ? child(n.value) : { ...n, at: next };
  return [out, null];
}

/** The 32-byte key of a leaf from its 64 nibbles. */
function keyOf(nibbles: number[]): Uint8Array {
  if (nibbles.length !== 64) throw new Error(`trie: a leaf at ${nibbles.length} nibbles in a secure trie`);
  const key = new Uint8Array(32);
  for (let i = 0; i < 32; i++) key[i] = ((nibbles[2 * i] as number) << 4) | (nibbles[2 * i + 1] as number);
  return key;
}

/** Characters of the answer's JSON per item, roughly: what `limits.maxBytes` is compared with. */
export const ACCOUNT_JSON_CHARS = 320;
export const SLOT_JSON_CHARS = 140;

/**
 * The state change between the state tries `parentRoot` and `root` (see the file comment): the
 * account leaves that differ, with their storage changes and new code. `code` reads a code by its
 * hash. Throws past `limits` (deadline, estimated answer size), and on a missing or malformed node.
 */
export async function diffStates(
  nodes: NodeSource,
  code: (codeHash: Uint8Array) => Uint8Array | undefined,
  parentRoot: Uint8Array,
  root: Uint8Array,
  limits: StateDiffLimits,
): Promise<StateDiffRecord> {
  const walk = new Walk(nodes, limits.deadline);
  const accounts: AccountDiffRecord[] = [];
  let size = 0;
  const grow = (chars: number): void => {
    size += chars;
    if (size > limits.maxBytes) throw new ResponseTooLargeError();
  };
  await walk.diff(walk.root(parentRoot), walk.root(root), [], async (key, before, after) => {
    grow(ACCOUNT_JSON_CHARS);
    if (after === null) {
      accounts.push({ key, account: null, storage: [] });
      return;
    }
    const a = accountFields(after);
    const account = {
      nonce: a.nonce,
      balance: a.balance,
      storageRoot: a.storageRoot.slice(),
      codeHash: a.codeHash.slice(),
    };
    let oldStorageRoot = KECCAK256_RLP;
    let oldCodeHash = KECCAK256_NULL;
    if (before !== null) {
      const b = accountFields(before);
      oldStorageRoot = b.storageRoot.slice();
      oldCodeHash = b.codeHash.slice();
    }
    const entry: AccountDiffRecord = { key, account, storage: [] };
    if (!bytesEqual(account.codeHash, oldCodeHash) && !bytesEqual(account.codeHash, KECCAK256_NULL)) {
      const c = code(account.codeHash);
      if (c === undefined) throw new Error('state: code missing for a code hash');
      grow(2 * c.length);
      entry.code = c;
    }
    if (!bytesEqual(account.storageRoot, oldStorageRoot)) {
      await walk.diff(walk.root(oldStorageRoot), walk.root(account.storageRoot), [], (slot, _, value) => {
        grow(SLOT_JSON_CHARS);
        entry.storage.push([slot, value === null ? null : rlpString(value).slice()]);
        return undefined;
      });
    }
    accounts.push(entry);
  });
  return { accounts };
}

/** Receives the changes stateChanges finds; values are views, valid during the call only. */
export interface StateChangeSink {
  /** An account leaf that differs: its hashed address and its RLP after (null: deleted). */
  account(key: Uint8Array, after: Uint8Array | null): void;
  /** A slot that differs: the account's hashed address, the hashed slot, the value after (minimal bytes; null: cleared). */
  slot(accountKey: Uint8Array, slotKey: Uint8Array, after: Uint8Array | null): void;
}

/**
 * Every account and slot that differs between the state tries `parentRoot` and `root`, without
 * limits (the state history's change set of a block). An account deleted or re-created has its
 * storage diffed against the empty trie on the missing side, so every slot it had is listed.
 */
export async function stateChanges(
  nodes: NodeSource,
  parentRoot: Uint8Array,
  root: Uint8Array,
  sink: StateChangeSink,
): Promise<void> {
  const walk = new Walk(nodes, Number.POSITIVE_INFINITY);
  await walk.diff(walk.root(parentRoot), walk.root(root), [], async (key, before, after) => {
    sink.account(key, after);
    const from = before === null ? KECCAK256_RLP : accountFields(before).storageRoot.slice();
    const to = after === null ? KECCAK256_RLP : accountFields(after).storageRoot.slice();
    await diffStorage(walk, key, from, to, sink);
  });
}

/** Every slot of account `key` that differs between its storage tries `from` and `to`. */
async function diffStorage(
  walk: Walk,
  key: Uint8Array,
  from: Uint8Array,
  to: Uint8Array,
  sink: StateChangeSink,
): Promise<void> {
  if (bytesEqual(from, to)) return;
  await walk.diff(walk.root(from), walk.root(to), [], (slot, _, value) => {
    sink.slot(key, slot, value === null ? null : rlpString(value));
    return undefined;
  });
}

/**
 * Every slot that differs between two storage tries of the account `key` (a deleted or re-created
 * account's: every slot of `from` that `to` lacks is listed as cleared), without limits.
 */
export function storageChanges(
  nodes: NodeSource,
  key: Uint8Array,
  from: Uint8Array,
  to: Uint8Array,
  sink: StateChangeSink,
): Promise<void> {
  return diffStorage(new Walk(nodes, Number.POSITIVE_INFINITY), key, from, to, sink);
}
