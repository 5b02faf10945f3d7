// A datadir with a state trie window (`--state-trie window=<N>`) whose trie below the window is
// pruned: a copy of the fixture chain's datadir with Meta.stateTrie and Meta.trieFrom set here and
// every trie node that no root of the window reaches deleted (as the pruner's sweep leaves it, set
// up here so the test does not wait for the pruner). Below trieFrom: the state methods and the
// EVM's calls answer exactly what an archive copy answers (random blocks, addresses, slots and the
// chain's own transactions as calls), from the flat state history; eth_getProof and
// chainnode_getStateDiff are refused with -32000 naming the window and the option. Inside the
// window every proof verifies against the block's state root (@ethereumjs/mpt).
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_RLP, bigIntToUnpaddedBytes, setLengthLeft } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import type { TxRecord } from '@chainnode/core';
import {
  LevelChainStore,
  Prefix,
  StoreWriter,
  deltaChain,
  nodeBytes,
  putStateTrie,
  putTrieFrom,
} from '@chainnode/store';
import { datadirCopy, mulberry32 } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';
import { countingHistoryReads, serviceOnCopy } from './rpc-call.js';

const WINDOW = 64;
const hex = (b: Uint8Array): string => `0x${Buffer.from(b).toString('hex')}`;
const bytes = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h.slice(2), 'hex'));
const q = (n: bigint | number): string => `0x${n.toString(16)}`;

type Rlp = Uint8Array | Rlp[];

/**
 * Adds to `keep` the hash of every node reachable from the state root `root` (storage tries too),
 * and to `bases` the rows the reachable deltas are built on (node-delta.ts), which must stay too.
 */
async function markReachable(w: StoreWriter, keep: Set<string>, bases: Set<string>, root: Uint8Array): Promise<void> {
  const get = (h: Uint8Array) => w.db.getSync(Uint8Array.of(Prefix.TrieNodes, ...h));
  const todo: { ref: Rlp; account: boolean }[] = [{ ref: root, account: true }];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    let node = next.ref;
    if (node instanceof Uint8Array) {
      if (node.length !== 32 || keep.has(hex(node))) continue; // empty, or marked already
      keep.add(hex(node));
      const raw = await w.db.get(Uint8Array.of(Prefix.TrieNodes, ...node));
      if (raw === undefined) throw new Error(`trie node ${hex(node)} missing`);
      for (const b of deltaChain(raw, get)) bases.add(hex(b));
      node = RLP.decode(nodeBytes(raw, get)) as Rlp[];
    }
    const items = node as Rlp[];
    if (items.length === 17) {
      for (const child of items.slice(0, 16)) todo.push({ ref: child, account: next.account });
      continue;
    }
    const leaf = ((items[0] as Uint8Array)[0] as number) >> 4 >= 2;
    if (!leaf) todo.push({ ref: items[1] as Rlp, account: next.account });
    else if (next.account) {
      const storageRoot = (RLP.decode(items[1] as Uint8Array) as Uint8Array[])[2] as Uint8Array;
      if (hex(storageRoot) !== hex(KECCAK256_RLP)) todo.push({ ref: storageRoot, account: false });
    }
  }
}

/** The datadir `dir` as a window of `window` blocks complete from `from`: Meta set, unreachable nodes deleted. */
async function pruneBelow(dir: string, window: number, from: bigint, roots: Uint8Array[]): Promise<number> {
  const w = await StoreWriter.open(dir);
  try {
    const keep = new Set<string>();
    const bases = new Set<string>();
    for (const root of roots) await markReachable(w, keep, bases, root);
    for (const b of bases) keep.add(b);
    const batch = w.db.batch();
    let deleted = 0;
    for await (const k of w.db.keys({ gte: Uint8Array.of(Prefix.TrieNodes), lt: Uint8Array.of(Prefix.TrieNodes + 1) }))
      if (k.length === 33 && !keep.has(hex(k.subarray(1)))) {
        batch.del(k);
        deleted++;
      }
    putStateTrie(batch, { kind: 'window', blocks: window });
    putTrieFrom(batch, from);
    await batch.write();
    return deleted;
  } finally {
    await w.close();
  }
}

async function body(svc: RpcServiceApi, method: string, params: unknown[]): Promise<string> {
  return (await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '';
}

interface JsonProof {
  balance: string;
  nonce: string;
  codeHash: string;
  storageHash: string;
  accountProof: string[];
  storageProof: { key: string; value: string; proof: string[] }[];
}

/** Verifies an eth_getProof answer against `root` with @ethereumjs/mpt (throws when it does not hold). */
async function verifyProof(root: Uint8Array, address: string, p: JsonProof): Promise<void> {
  const leaf = await verifyMerkleProof(keccak256(bytes(address)), p.accountProof.map(bytes), { root });
  const fields = [BigInt(p.nonce), BigInt(p.balance)].map(bigIntToUnpaddedBytes);
  const expected = hex(RLP.encode([...fields, bytes(p.storageHash), bytes(p.codeHash)]));
  if (leaf !== null && hex(leaf) !== expected) throw new Error(`account proof of ${address} does not match`);
  if (leaf === null && BigInt(p.balance) !== 0n) throw new Error(`absence proof of ${address} with a balance`);
  for (const s of p.storageProof) {
    if (p.storageHash === hex(KECCAK256_RLP)) {
      // The empty storage trie: no node to prove, every slot zero.
      if (s.proof.length > 0 || BigInt(s.value) !== 0n) throw new Error(`storage of ${address} not empty`);
      continue;
    }
    const v = await verifyMerkleProof(
      keccak256(setLengthLeft(bigIntToUnpaddedBytes(BigInt(s.key)), 32)),
      s.proof.map(bytes),
      {
        root: bytes(p.storageHash),
      },
    );
    if ((v === null ? 0n : BigInt(hex(RLP.decode(v) as Uint8Array))) !== BigInt(s.value))
      throw new Error(`storage proof of ${address} ${s.key} does not match`);
  }
}

test('below the trie window: state reads and calls equal the archive, proofs refused; inside: proofs verify', async () => {
  const archive = await serviceOnCopy('fixtures');
  const copy = await datadirCopy('fixtures');
  let windowed: LevelChainStore | undefined;
  try {
    const head = (await archive.store.head()).number;
    const from = head - BigInt(WINDOW) + 1n;
    const blocks: { number: bigint; hash: Uint8Array; root: Uint8Array; txs: TxRecord[] }[] = [];
    for (let n = 0n; n <= head; n++) {
      const hash = (await archive.store.canonicalHash(n)) as Uint8Array;
      const b = await archive.store.block(hash);
      if (b === undefined) throw new Error(`block ${n} missing`);
      blocks.push({ number: n, hash, root: b.header.stateRoot, txs: b.transactions });
    }
    const deleted = await pruneBelow(
      copy.dir,
      WINDOW,
      from,
      blocks.filter((b) => b.number >= from).map((b) => b.root),
    );
    expect(deleted).toBeGreaterThan(0);
    windowed = await LevelChainStore.open(copy.dir);
    expect(windowed.stateTrie()).toEqual({ mode: 'window', blocks: WINDOW, trieFrom: from });
    const answered = { n: 0 };
    const svc = createRpcService(countingHistoryReads(windowed, answered));

    const next = mulberry32(128);
    const r = (n: number): number => (next() >>> 0) % n;
    const below = blocks.filter((b) => b.number > 0n && b.number < from);
    const addresses = new Map<string, Uint8Array>();
    const calls: { tx: TxRecord; at: bigint }[] = [];
    for (const b of below)
      for (const tx of b.txs) {
        addresses.set(hex(tx.from), tx.from);
        if (tx.to !== null) addresses.set(hex(tx.to), tx.to);
        if (tx.to !== null && tx.input.length > 0) calls.push({ tx, at: b.number - 1n });
      }
    const list = [...addresses.keys(), hex(Uint8Array.from({ length: 20 }, () => r(256)))];
    const pick = (): string => list[r(list.length)] as string;
    const blockOf = (): unknown => {
      const b = below[r(below.length)] as (typeof below)[number];
      return r(4) === 0 ? { blockHash: hex(b.hash) } : q(b.number);
    };
    const slot = (): string => q(r(4) === 0 ? BigInt(hex(Uint8Array.from({ length: 32 }, () => r(256)))) : r(8));
    const reads = ['eth_getBalance', 'eth_getTransactionCount', 'eth_getCode', 'eth_getAccount', 'eth_getStorageAt'];
    for (let i = 0; i < 120; i++) {
      const method = reads[r(reads.length)] as string;
      const params = method === 'eth_getStorageAt' ? [pick(), slot(), blockOf()] : [pick(), blockOf()];
      const got = await body(svc, method, params);
      expect(got).not.toContain('"error"');
      expect([method, params, got]).toEqual([method, params, await body(archive.svc, method, params)]);
    }
    const values = [{ [pick()]: [slot(), slot()], [pick()]: [slot()] }, blockOf()];
    expect(await body(svc, 'eth_getStorageValues', values)).toBe(
      await body(archive.svc, 'eth_getStorageValues', values),
    );
    expect(answered.n).toBeGreaterThan(100);

    // The chain's own transactions, called on their parent's state (below the window).
    expect(calls.length).toBeGreaterThan(0);
    answered.n = 0;
    let succeeded = 0;
    for (let i = 0; i < 24; i++) {
      const { tx, at } = calls[r(calls.length)] as (typeof calls)[number];
      const call = { from: hex(tx.from), to: hex(tx.to as Uint8Array), input: hex(tx.input), value: q(tx.value) };
      const method = ['eth_call', 'eth_call', 'eth_estimateGas', 'eth_createAccessList'][r(4)] as string;
      const params = [{ ...call, gas: q(tx.gas) }, q(at)];
      const got = await body(svc, method, params);
      expect([method, params, got]).toEqual([method, params, await body(archive.svc, method, params)]);
      if (got.includes('"result"')) succeeded++;
    }
    expect(succeeded).toBeGreaterThan(0);
    expect(answered.n).toBeGreaterThan(0);

    // Proofs: refused below the window, verified inside it.
    const refused = JSON.parse(await body(svc, 'eth_getProof', [pick(), [], q(from - 1n)])) as { error: unknown };
    expect(refused.error).toEqual({
      code: -32000,
      message: `state trie for block ${from - 1n} pruned: this datadir keeps the last ${WINDOW} blocks' tries (--state-trie window=${WINDOW}); a datadir created with --state-trie archive keeps every block's, for proofs at any block`,
    });
    const byHash = JSON.parse(
      await body(svc, 'eth_getProof', [pick(), [], { blockHash: hex(below[0]?.hash as Uint8Array) }]),
    );
    expect(byHash.error.message).toMatch(/^state trie for block 1 pruned/);
    const sim = JSON.parse(await body(svc, 'eth_simulateV1', [{ blockStateCalls: [{ calls: [] }] }, q(from - 1n)]));
    expect(sim.error).toEqual(refused.error);
    const diff = JSON.parse(await body(svc, 'chainnode_getStateDiff', [q(from)])) as { error: { message: string } };
    expect(diff.error.message).toMatch(`state trie for block ${from - 1n} pruned`);
    for (let i = 0; i < 12; i++) {
      const b = blocks[Number(from) + r(WINDOW)] as (typeof blocks)[number];
      const params = [pick(), [slot(), slot()], q(b.number)];
      const got = await body(svc, 'eth_getProof', params);
      expect(got).toBe(await body(archive.svc, 'eth_getProof', params));
      await verifyProof(b.root, params[0] as string, (JSON.parse(got) as { result: JsonProof }).result);
    }
  } finally {
    await windowed?.close();
    await copy.cleanup();
    await archive.close();
  }
});
