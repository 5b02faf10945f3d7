// The trie window's pruner (trie-prune.ts) on a synthetic chain with state (prune-chain.ts), a
// window of 16 blocks:
// - while cycles run in the background, proofs of accounts and slots at blocks inside the window
//   verify against the block's state root with @ethereumjs/mpt's verifier (independent);
// - a storage trie that returns to an earlier shape, written by a block imported while a cycle
//   sweeps the nodes its earlier shape left dead, keeps them;
// - after a final cycle the TrieNodes table holds exactly the nodes reachable from the window's
//   roots (brute force: a walk of every root), and every code row;
// - a rewind below the window is refused; one inside it is followed;
// - SIGKILL (child process) during the mark, during the sweep and during the import, then a
//   resumed import to the same head and a final cycle: the datadir digest equals an uninterrupted
//   run's; a writer opened after a cycle that did not finish its sweep starts one with its first
//   group, not a cadence later.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { RLP } from '@ethereumjs/rlp';
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { KECCAK256_RLP } from '@ethereumjs/util';
import { tempDir } from '@chainnode/testkit';
import type { TempDir } from '@chainnode/testkit';
import { digestDatadir } from '../src/digest.js';
import { keccak256 } from '../src/keccak.js';
import { Prefix, tables } from '../src/schema/index.js';
import { deltaChain, nodeBytes, storedNode, trieGet } from '../src/trie/index.js';
import type { PruneReport } from '../src/trie/index.js';
import { HashSet } from '../src/trie/index.js';
import { putTrieFrom, readTrieFrom, readTriePruned } from '../src/trie/index.js';
import { openDb } from '../src/db.js';
import type { StoreWriter } from '../src/writer/index.js';
import { RewindBelowTrieWindowError } from '../src/writer/index.js';
import {
  ACCOUNTS,
  CONTRACTS,
  TOGGLE,
  address,
  buildChain,
  openWriter,
  slotKey,
  stateRootAt,
  windowDatadir,
} from './prune-chain.js';
import { hex, rng } from './random.js';

type Nested = Uint8Array | Nested[];
const WINDOW = 16;

/**
 * Every stored node hash reachable from `root` (account leaves lead into their storage tries), and
 * into `bases` the rows the reachable deltas are built on (node-delta.ts), which the window keeps too.
 */
function reachable(
  get: (h: Uint8Array) => Uint8Array | undefined,
  root: Uint8Array,
  into: Set<string>,
  bases: Set<string>,
): void {
  const visit = (ref: Nested, accounts: boolean): void => {
    let node: Nested = ref;
    if (!Array.isArray(ref)) {
      if (ref.length !== 32 || hex(ref) === hex(KECCAK256_RLP) || into.has(hex(ref))) return;
      const row = get(ref);
      if (row === undefined) throw new Error(`node ${hex(ref)} missing`);
      into.add(hex(ref));
      for (const b of deltaChain(row, get)) bases.add(hex(b));
      node = RLP.decode(nodeBytes(row, get)) as Nested;
    }
    if (!Array.isArray(node)) return;
    if (node.length === 17) for (const c of node.slice(0, 16)) visit(c, accounts);
    else if (((node[0] as Uint8Array)[0] as number) >> 4 < 2) visit(node[1] as Nested, accounts);
    else if (accounts) visit((RLP.decode(node[1] as Uint8Array) as Uint8Array[])[2] as Uint8Array, false);
  };
  visit(root, true);
}

async function storedKeys(w: StoreWriter): Promise<{ nodes: Set<string>; codes: number }> {
  const nodes = new Set<string>();
  let codes = 0;
  for await (const k of w.db.keys({ gt: Uint8Array.of(Prefix.TrieNodes), lt: Uint8Array.of(Prefix.TrieNodes + 1) })) {
    if (k.length === 33) nodes.add(hex(k.subarray(1)));
    else codes++;
  }
  return { nodes, codes };
}

/** A proof of account `i` (and, for a contract, of one slot) at block `n`, checked with @ethereumjs/mpt. */
async function checkProof(w: StoreWriter, n: bigint, i: number, slot: number): Promise<void> {
  const get = (h: Uint8Array) => storedNode((k) => tables.trieNodes.getSync(w.db, k), h);
  const root = await stateRootAt(w, n);
  const proof: Uint8Array[] = [];
  const leaf = trieGet(get, root, keccak256(address(i)), proof);
  expect(leaf).not.toBeNull();
  const verified = await verifyMerkleProof(address(i), proof, { root, useKeyHashing: true });
  expect(hex(verified as Uint8Array)).toBe(hex(leaf as Uint8Array));
  if (i >= CONTRACTS) return;
  const storageRoot = (RLP.decode(verified as Uint8Array) as Uint8Array[])[2] as Uint8Array;
  if (hex(storageRoot) === hex(KECCAK256_RLP)) return;
  const slotProof: Uint8Array[] = [];
  const value = trieGet(get, storageRoot, keccak256(slotKey(slot)), slotProof);
  const v = await verifyMerkleProof(slotKey(slot), slotProof, { root: storageRoot, useKeyHashing: true });
  expect(v === null ? null : hex(v)).toBe(value === null ? null : hex(value));
}

describe('trie window pruning', () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await tempDir('prune-');
  });
  afterAll(async () => {
    await tmp.cleanup();
  });

  test('proofs verify while cycles run; re-written nodes survive; the window holds exactly its nodes', async () => {
    const dir = join(tmp.dir, 'inproc');
    await windowDatadir(dir, WINDOW);
    const reports: PruneReport[] = [];
    const w = await openWriter(dir, { prune: { onReport: (r) => reports.push(r), markBatch: 8, sweepChunk: 16 } });
    const r = rng(46);
    let checked = 0;
    const checkWhileRunning = async () => {
      // Proofs interleaved with the cycle's steps (it yields a turn after each).
      for (let k = 0; k < 3; k++) {
        const from = w.stateTrieFrom();
        const head = (w.durableHead()?.number ?? 0n) as bigint;
        const n = from + BigInt(r(Number(head - from) + 1));
        await checkProof(w, n, r(ACCOUNTS), r(24));
        checked++;
        await new Promise((res) => setImmediate(res));
      }
    };
    try {
      // Up to block 2*TOGGLE-1: contract 5's slot holds its second value since TOGGLE; the
      // window [2*TOGGLE-16, 2*TOGGLE-1] no longer reaches the nodes of its first shape.
      await buildChain(w, 2 * TOGGLE - 1, 4, checkWhileRunning);
      await w.pruneIdle();
      expect(reports.some((p) => p.phase === 'done' && p.deleted > 0)).toBe(true);
      let settled = false;
      const cycle = w.pruneTrie().finally(() => {
        settled = true;
      });
      const sweeping = () => reports.some((p) => p.phase === 'sweep' && p.from === BigInt(TOGGLE + 16));
      while (!sweeping() && !settled) await new Promise((res) => setImmediate(res));
      // Block 2*TOGGLE writes the first shape again, while the sweep runs over the snapshot that holds it dead.
      await buildChain(w, 2 * TOGGLE, 4);
      const before = reports.length;
      const done = (await cycle) as PruneReport;
      expect(done.phase).toBe('done');
      expect(reports.slice(before).some((p) => p.phase === 'sweep')).toBe(true);
      expect(done.written).toBeGreaterThan(0);
      await checkProof(w, BigInt(2 * TOGGLE), 5, 0);
      // On, with cycles in the background and proofs between the flushes.
      await buildChain(w, 160, 4, checkWhileRunning);
      await w.pruneIdle();
      const last = (await w.pruneTrie()) as PruneReport;
      expect(last.phase).toBe('done');
      const from = await readTrieFrom(w.db);
      expect(from).toBe(160n - BigInt(WINDOW) + 1n);
      expect(w.stateTrieFrom()).toBe(from);
      const live = new Set<string>();
      const bases = new Set<string>();
      const get = (h: Uint8Array) => tables.trieNodes.getSync(w.db, h);
      for (let n = from; n <= 160n; n++) reachable(get, await stateRootAt(w, n), live, bases);
      for (const b of bases) live.add(b);
      const stored = await storedKeys(w);
      expect(stored.nodes.size).toBe(live.size);
      expect([...live].filter((h) => !stored.nodes.has(h))).toEqual([]);
      expect(stored.codes).toBe(CONTRACTS);
      expect(checked).toBeGreaterThan(90);
      // A reorg deeper than the window is refused; one inside it is followed.
      await expect(w.rewind(from - 1n)).rejects.toBeInstanceOf(RewindBelowTrieWindowError);
      await w.rewind(from + 2n);
      await w.flush();
      await buildChain(w, 164, 4);
      await checkProof(w, 164n, 6, 3);
    } finally {
      await w.close();
    }
  });

  test('a set of hashes: members found, others not, across growth', () => {
    const s = new HashSet(4);
    const hs = Array.from({ length: 5000 }, (_, i) => keccak256(Uint8Array.of(i >> 8, i)));
    expect(hs.filter((h) => s.add(h)).length).toBe(5000);
    expect(hs.filter((h) => s.add(h)).length).toBe(0);
    expect(s.size).toBe(5000);
    expect(hs.every((h) => s.has(h))).toBe(true);
    expect(hs.some((h) => s.has(keccak256(h)))).toBe(false);
  });

  test('a cycle stopped before its sweep finished: the next open starts one with its first group', async () => {
    const dir = join(tmp.dir, 'unfinished');
    await windowDatadir(dir, WINDOW);
    // No cycle while the chain is built to 40 (a cadence longer than the chain).
    const w1 = await openWriter(dir, { prune: { cadence: 1000n } });
    await buildChain(w1, 40, 4);
    await w1.close();
    // What a cycle started at head 40 leaves when killed before its sweep finished: Meta.trieFrom
    // at its window start, no Meta.triePruned.
    const db = await openDb(dir, { create: false });
    const batch = db.batch();
    putTrieFrom(batch, 25n);
    await batch.write();
    await db.close();
    const reports: PruneReport[] = [];
    const w2 = await openWriter(dir, { prune: { onReport: (r) => reports.push(r) } });
    try {
      await buildChain(w2, 44, 4);
      await w2.pruneIdle();
    } finally {
      await w2.close();
    }
    // Block 44's window starts at 29, less than a cadence (16) past 25: a cycle only because the last was unfinished.
    expect(reports.filter((r) => r.phase === 'done').map((r) => r.from)).toEqual([29n]);
    const after = await openDb(dir, { create: false });
    try {
      expect(await readTriePruned(after)).toBe(29n);
      expect(await readTrieFrom(after)).toBe(29n);
    } finally {
      await after.close();
    }
  });

  describe('SIGKILL, resume, digest-equal', () => {
    const TO = 64;
    const child = fileURLToPath(new URL('./prune-child.js', import.meta.url));
    /** Runs the child to `TO`; with `killAt`, SIGKILLs it at its `killAt.index`-th line starting with `killAt.phase`. */
    const run = (dir: string, killAt?: { phase: string; index: number }): Promise<string[]> =>
      new Promise((resolve, reject) => {
        const p = spawn(process.execPath, [child, dir, String(TO)], { stdio: ['ignore', 'pipe', 'pipe'] });
        const lines: string[] = [];
        let seen = 0;
        let err = '';
        p.stderr.on('data', (d: Buffer) => {
          err += d.toString();
        });
        createInterface({ input: p.stdout }).on('line', (line) => {
          lines.push(line);
          if (killAt !== undefined && line.startsWith(killAt.phase) && ++seen === killAt.index) p.kill('SIGKILL');
        });
        p.on('error', reject);
        p.on('close', (code, signal) => {
          if (signal === 'SIGKILL' || code === 0) resolve(lines);
          else reject(new Error(`child exited ${code}: ${err}`));
        });
      });

    let reference: { digest: string; entries: number };
    let counts: Record<string, number>;
    beforeAll(async () => {
      const dir = join(tmp.dir, 'reference');
      const lines = await run(dir);
      counts = {};
      for (const l of lines) {
        const phase = l.split(' ')[0] as string;
        counts[phase] = (counts[phase] ?? 0) + 1;
      }
      reference = await digestDatadir(dir);
    });

    test.each(['mark', 'sweep', 'flushed'])('killed during %s', async (phase) => {
      const total = counts[phase] ?? 0;
      expect(total).toBeGreaterThan(2);
      // In the first half of the run's steps of that kind: the child has work left when the kill lands.
      const index = 1 + rng(phase.length * 97)(Math.floor(total / 2));
      const dir = join(tmp.dir, `killed-${phase}`);
      const first = await run(dir, { phase, index });
      expect(first.some((l) => l.startsWith('final'))).toBe(false);
      // Killed in a cycle's mark: Meta.trieFrom is its start, and Meta.triePruned (the last
      // finished one's) below it. (Killed at a sweep's last step, the cycle may finish first.)
      const meta = await openDb(dir, { create: false });
      const [trieFrom, pruned] = await Promise.all([readTrieFrom(meta), readTriePruned(meta)]);
      await meta.close();
      if (phase === 'mark') expect((pruned ?? -1n) < trieFrom).toBe(true);
      const second = await run(dir);
      expect(second.some((l) => l.startsWith('final done'))).toBe(true);

      expect(await digestDatadir(dir)).toEqual(reference);
    });
  });
});
