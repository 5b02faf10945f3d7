// A joined datadir's first-block state downloaded by hash (joined/state-download.ts), from the
// executed fixture chain's store as the primary (its chainnode_getStateNodes answers: the store's
// stateNodes and code, whole nodes rebuilt from delta rows), checked independently: @ethereumjs/mpt
// walks every leaf of the account trie and of each account's storage trie over the downloaded
// rows only (a missing node fails the walk), every code hashes to its account's code hash, and the
// leaves it counts are the ones the download counted. Then an upstream that lies (one byte of one
// node, a node withheld) is refused, what it had verified is kept, and a truthful retry resumes from
// it to the same whole state; so does a walk over rows a crash left without their children.
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { KECCAK256_NULL, KECCAK256_RLP, ValueEncoding, bytesToHex, equalsBytes, hexToBytes } from '@ethereumjs/util';
import type { BatchDBOp, DB } from '@ethereumjs/util';
import { UpstreamError } from '@chainnode/core';
import type { ChainStore, UpstreamClient } from '@chainnode/core';
import { keccak256, openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import { BlockVerificationError } from '../src/errors.js';
import { downloadState } from '../src/joined/state-download.js';
import type { StateSink } from '../src/joined/state-download.js';

const present = chainDir('fixtures') !== undefined;
const maybe = present ? describe : describe.skip;

/** The sink: rows in maps, as a joined datadir's TrieNodes would hold them. */
class MapSink implements StateSink {
  nodes = new Map<string, Uint8Array>();
  codes = new Map<string, Uint8Array>();
  writes = 0;
  node(hash: Uint8Array): Uint8Array | undefined {
    return this.nodes.get(bytesToHex(hash));
  }
  hasCode(hash: Uint8Array): boolean {
    return this.codes.has(bytesToHex(hash));
  }
  async write(
    nodes: { hash: Uint8Array; bytes: Uint8Array }[],
    codes: { hash: Uint8Array; bytes: Uint8Array }[],
  ): Promise<void> {
    this.writes++;
    for (const n of nodes) this.nodes.set(bytesToHex(n.hash), n.bytes);
    for (const c of codes) this.codes.set(bytesToHex(c.hash), c.bytes);
  }
}

type Tamper = (reply: { nodes: (string | null)[]; codes: (string | null)[] }, request: number) => void;

/** A chainnode primary's chainnode_getStateNodes over `store`, with an optional lie. */
function primaryClient(store: ChainStore, tamper?: Tamper): UpstreamClient & { requests: number } {
  const c = {
    origin: 'http://primary.test',
    requests: 0,
    async call(method: string, params: unknown[]): Promise<unknown> {
      if (method !== 'chainnode_getStateNodes') throw new UpstreamError(`unexpected ${method}`);
      const [nodes, codes] = params as [string[], string[]];
      const found = await (store.stateNodes as NonNullable<ChainStore['stateNodes']>)(
        nodes.map((h) => hexToBytes(h as `0x${string}`)),
      );
      const foundCodes = await Promise.all(codes.map((h) => store.code(hexToBytes(h as `0x${string}`))));
      const reply = {
        nodes: found.map((b) => (b === undefined ? null : bytesToHex(b))),
        codes: foundCodes.map((b) => (b === undefined ? null : bytesToHex(b))),
      };
      tamper?.(reply, c.requests);
      c.requests++;
      return reply;
    },
    batch: async () => [],
    close: async () => undefined,
  };
  return c;
}

/**
 * An @ethereumjs/mpt database over the sink's rows only. A row it lacks throws an error of its own:
 * mpt's walks pass over its 'Missing node in DB' silently.
 */
function sinkDb(sink: MapSink): DB<string, Uint8Array> {
  const key = (k: string | Uint8Array): string =>
    typeof k === 'string' ? (k.startsWith('0x') ? k : `0x${k}`) : bytesToHex(k);
  const db: DB<string, Uint8Array> = {
    get: async (k) => {
      const row = sink.nodes.get(key(k));
      if (row === undefined) throw new Error(`node ${key(k)} not downloaded`);
      return row;
    },
    put: async () => {
      throw new Error('read only');
    },
    del: async () => {
      throw new Error('read only');
    },
    batch: async (_ops: BatchDBOp<string, Uint8Array>[]) => {
      throw new Error('read only');
    },
    shallowCopy: () => db,
    open: async () => undefined,
  };
  return db;
}

/** Every leaf of the state `root` walked by @ethereumjs/mpt over the sink alone; codes checked by their hashes. */
async function walkIndependently(sink: MapSink, root: Uint8Array): Promise<{ accounts: number; slots: number }> {
  const trieAt = (r: Uint8Array): MerklePatriciaTrie =>
    new MerklePatriciaTrie({ db: sinkDb(sink), valueEncoding: ValueEncoding.Bytes, useKeyHashing: true, root: r });
  let accounts = 0;
  let slots = 0;
  const storageRoots: Uint8Array[] = [];
  await trieAt(root).walkAllValueNodes(async (node) => {
    accounts++;
    const [, , storageRoot, codeHash] = RLP.decode(node.value() as Uint8Array) as Uint8Array[];
    if (!equalsBytes(storageRoot as Uint8Array, KECCAK256_RLP)) storageRoots.push(storageRoot as Uint8Array);
    if (!equalsBytes(codeHash as Uint8Array, KECCAK256_NULL)) {
      const code = sink.codes.get(bytesToHex(codeHash as Uint8Array));
      expect(code).toBeDefined();
      expect(bytesToHex(keccak256(code as Uint8Array))).toBe(bytesToHex(codeHash as Uint8Array));
    }
  });
  // Each storage trie once, as the download walks it (the same contract deployed twice shares one).
  const seen = new Set<string>();
  for (const r of storageRoots) {
    if (seen.has(bytesToHex(r))) continue;
    seen.add(bytesToHex(r));
    await trieAt(r).walkAllValueNodes(async () => {
      slots++;
    });
  }
  return { accounts, slots };
}

maybe('first-block state download (fixture chain, block 1,000)', () => {
  let store: ChainStore;
  let cleanup: () => Promise<void>;
  let root: Uint8Array;
  let whole: MapSink;

  beforeAll(async () => {
    const copy = await datadirCopy('fixtures');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    const hash = await store.canonicalHash(1000n);
    root = (await store.header(hash as Uint8Array))?.stateRoot as Uint8Array;
  }, 120_000);

  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  test('every node and code of the state, each checked by its hash: an independent walk finds them all', async () => {
    whole = new MapSink();
    const client = primaryClient(store);
    const stats = await downloadState({ client, block: 1000n, stateRoot: root, sink: whole, batchNodes: 64 });
    expect(stats.complete).toBe(true);
    expect(stats.local).toBe(0);
    expect(stats.fetched).toBe(whole.nodes.size);
    expect(stats.codes).toBe(whole.codes.size);
    expect(stats.accounts).toBeGreaterThan(200);
    expect(stats.codes).toBeGreaterThan(10);
    expect(client.requests).toBeGreaterThan(whole.nodes.size / 64);
    for (const [h, bytes] of whole.nodes) expect(bytesToHex(keccak256(bytes))).toBe(h);
    const walked = await walkIndependently(whole, root);
    expect(walked).toEqual({ accounts: stats.accounts, slots: stats.slots });
    expect(walked.slots).toBeGreaterThan(100);
    // The walk fails on a missing node: without one leaf's row it cannot finish.
    const short = new MapSink();
    short.codes = whole.codes;
    const dropped = [...whole.nodes.keys()][whole.nodes.size - 1];
    for (const [h, bytes] of whole.nodes) if (h !== dropped) short.nodes.set(h, bytes);
    await expect(walkIndependently(short, root)).rejects.toThrow(`node ${dropped} not downloaded`);
  }, 120_000);

  test('a flipped byte in one node is refused; what was verified is kept and a truthful retry completes from it', async () => {
    const sink = new MapSink();
    const lying = primaryClient(store, (reply, request) => {
      if (request !== 3) return;
      const i = reply.nodes.findIndex((n) => n !== null);
      const n = reply.nodes[i] as string;
      reply.nodes[i] = `${n.slice(0, -2)}${(Number.parseInt(n.slice(-2), 16) ^ 1).toString(16).padStart(2, '0')}`;
    });
    const err = await downloadState({
      client: lying,
      block: 1000n,
      stateRoot: root,
      sink,
      batchNodes: 32,
      inFlight: 1,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlockVerificationError);
    expect((err as Error).message).toMatch(
      /^block 1000: state trie node mismatch: upstream says 0x[0-9a-f]{64}, computed 0x[0-9a-f]{64}$/,
    );
    // Nothing unverified was written: every row hashes to its key.
    expect(sink.nodes.size).toBeGreaterThan(0);
    for (const [h, bytes] of sink.nodes) expect(bytesToHex(keccak256(bytes))).toBe(h);
    const kept = sink.nodes.size;
    const stats = await downloadState({ client: primaryClient(store), block: 1000n, stateRoot: root, sink });
    expect(stats.complete).toBe(true);
    expect(stats.local).toBeGreaterThanOrEqual(kept);
    expect([...sink.nodes.keys()].sort()).toEqual([...whole.nodes.keys()].sort());
    expect([...sink.codes.keys()].sort()).toEqual([...whole.codes.keys()].sort());
  }, 120_000);

  test('a withheld node is an upstream error naming it', async () => {
    const sink = new MapSink();
    const withholding = primaryClient(store, (reply, request) => {
      if (request === 1) reply.nodes[0] = null;
    });
    const err = await downloadState({
      client: withholding,
      block: 1000n,
      stateRoot: root,
      sink,
      inFlight: 1,
      batchNodes: 16,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as Error).message).toMatch(
      /^http:\/\/primary\.test does not hold trie node 0x[0-9a-f]{64} of block 1000's state/,
    );
  }, 120_000);

  test('rows a crash left without their children are walked again, not trusted', async () => {
    // Every third node of the whole state kept (the root among them), the rest gone: as after
    // writes that landed while the walk below them had not.
    const sink = new MapSink();
    let i = 0;
    for (const [h, bytes] of whole.nodes) if (i++ % 3 === 0 || h === bytesToHex(root)) sink.nodes.set(h, bytes);
    const kept = sink.nodes.size;
    const stats = await downloadState({ client: primaryClient(store), block: 1000n, stateRoot: root, sink });
    expect(stats.local).toBe(kept);
    expect(stats.fetched).toBe(whole.nodes.size - kept);
    expect(await walkIndependently(sink, root)).toEqual({ accounts: stats.accounts, slots: stats.slots });
  }, 120_000);
});
