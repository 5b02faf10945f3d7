// A synthetic chain with state for the pruner's tests: every block's state changes are a function
// of its number alone (over the parent's state), so an import resumed at any durable head writes
// the same chain. 24 accounts, 8 of them contracts with code and storage; contracts 6 and 7 always
// hold identical storage (their storage tries share every node); contract 5's one slot alternates
// between two values every TOGGLE blocks (its storage trie returns to an earlier shape).
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP } from '@ethereumjs/util';
import { StoreWriter } from '../src/writer/index.js';
import type { WriterOptions } from '../src/writer/index.js';
import { keccak256 } from '../src/keccak.js';
import { tables } from '../src/schema/index.js';
import { headerStateRoot } from '../src/trie/index.js';
import { trieGetSync, updateTrie } from '../src/trie/index.js';
import { openDb } from '../src/db.js';
import { putStateTrie } from '../src/trie/index.js';
import { blockInput, tagged } from './block-input.js';
import { rng } from './random.js';

export const ACCOUNTS = 24;
export const CONTRACTS = 8;
export const TOGGLE = 32;
const SLOTS = 24;

export const address = (i: number): Uint8Array => tagged(0x11, i, 20);
export const slotKey = (s: number): Uint8Array => tagged(0x22, s, 32);
export const codeOf = (i: number): Uint8Array => Uint8Array.of(0x60, i, 0x60, 0, 0x55, 0x00);

type Trie = StoreWriter['trieDb'];

function accountRlp(nonce: number, balance: bigint, storageRoot: Uint8Array, codeHash: Uint8Array): Uint8Array {
  return RLP.encode([nonce, balance, storageRoot, codeHash]);
}

/** The storage writes of contract `c` at block `n` (slot index -> value; 0 deletes). */
function storageWrites(n: number, c: number): [number, number][] {
  if (c === 5) {
    const v = Math.floor(n / TOGGLE) % 2 === 0 ? 0x0a : 0x0b;
    return n % TOGGLE === 0 || n === 0 ? [[0, v]] : [];
  }
  const r = rng(n * 131 + (c === 7 ? 6 : c));
  const out: [number, number][] = [];
  const k = r(4);
  for (let i = 0; i < k; i++) out.push([r(SLOTS), r(3) === 0 ? 0 : 1 + r(1000)]);
  return out;
}

/** Accounts written at block `n` (block 0: all). */
function touched(n: number): number[] {
  if (n === 0) return Array.from({ length: ACCOUNTS }, (_, i) => i);
  const r = rng(n * 7919);
  const set = new Set<number>([5, 6, 7]);
  for (let i = 0; i < 4; i++) set.add(r(ACCOUNTS));
  return [...set].sort((a, b) => a - b);
}

/** Applies block `n`'s changes over `root`, staging the new nodes in `trie`; returns the new root. */
export async function applyBlock(trie: Trie, root: Uint8Array, n: number): Promise<Uint8Array> {
  const get = (h: Uint8Array) => trie.getNodeSync(h);
  const put = (h: Uint8Array, enc: Uint8Array) => trie.putNodeSync(h, enc);
  const changes: [Uint8Array, Uint8Array][] = [];
  for (const i of touched(n)) {
    const key = keccak256(address(i));
    const leaf = n === 0 ? undefined : trieGetSync(root, key, get);
    let storageRoot = leaf === undefined ? KECCAK256_RLP : ((RLP.decode(leaf) as Uint8Array[])[2] as Uint8Array);
    let codeHash = keccak256(new Uint8Array(0));
    if (i < CONTRACTS) {
      const code = codeOf(i);
      codeHash = keccak256(code);
      if (n === 0) await trie.put(`63${Buffer.from(codeHash).toString('hex')}`, code);
      const writes = storageWrites(n, i);
      storageRoot = updateTrie(
        storageRoot,
        writes.map(([s, v]) => [keccak256(slotKey(s)), v === 0 ? undefined : RLP.encode(v)]),
        get,
        put,
      );
    }
    changes.push([key, accountRlp(n, BigInt(n) * 1000n + BigInt(i), storageRoot, codeHash)]);
  }
  return updateTrie(n === 0 ? KECCAK256_RLP : root, changes, get, put);
}

function headerRlp(n: number, parent: Uint8Array, stateRoot: Uint8Array): Uint8Array {
  return RLP.encode([
    parent,
    keccak256(RLP.encode([])),
    new Uint8Array(20),
    stateRoot,
    KECCAK256_RLP,
    KECCAK256_RLP,
    new Uint8Array(256),
    0,
    n,
    30_000_000,
    0,
    n,
    new Uint8Array(0),
    new Uint8Array(32),
    new Uint8Array(8),
  ]);
}

/** A fresh datadir set to keep the state trie of the last `window` blocks. */
export async function windowDatadir(dir: string, window: number): Promise<void> {
  const db = await openDb(dir, { create: true });
  const batch = db.batch();
  putStateTrie(batch, { kind: 'window', blocks: window });
  await batch.write();
  await db.close();
}

export async function openWriter(dir: string, options: WriterOptions = {}): Promise<StoreWriter> {
  return StoreWriter.open(dir, options);
}

/** The state root of stored block `n`. */
export async function stateRootAt(writer: StoreWriter, n: bigint): Promise<Uint8Array> {
  const hash = await tables.canonical.get(writer.db, n);
  const rlp = hash === undefined ? undefined : await tables.headers.get(writer.db, hash);
  if (rlp === undefined) throw new Error(`block ${n} missing`);
  return headerStateRoot(rlp);
}

/**
 * Imports blocks up to `to` (from genesis, or from the durable head), flushing every `group`
 * blocks; `afterFlush` runs after each flush.
 */
export async function buildChain(
  writer: StoreWriter,
  to: number,
  group: number,
  afterFlush?: (n: number) => Promise<void> | void,
): Promise<void> {
  let head = writer.durableHead();
  if (head === undefined) {
    const root = await applyBlock(writer.trieDb, KECCAK256_RLP, 0);
    const rlp = headerRlp(0, new Uint8Array(32), root);
    const hash = keccak256(rlp);
    const block = blockInput({
      number: 0,
      hash,
      headerRlp: rlp,
      txs: [],
      txHashes: [],
      logs: [],
      logsBloom: new Uint8Array(256),
    });
    await writer.writeGenesis({ chainConfig: {}, stateRoot: root, block });
    head = { number: 0n, hash };
  }
  let root = await stateRootAt(writer, head.number);
  let parent = head.hash;
  for (let n = Number(head.number) + 1; n <= to; n++) {
    root = await applyBlock(writer.trieDb, root, n);
    const rlp = headerRlp(n, parent, root);
    parent = keccak256(rlp);
    writer.addBlock(
      blockInput({
        number: n,
        hash: parent,
        headerRlp: rlp,
        txs: [],
        txHashes: [],
        logs: [],
        logsBloom: new Uint8Array(256),
      }),
    );
    if (n % group === 0 || n === to) {
      await writer.flush();
      await afterFlush?.(n);
    }
  }
}
