// `db convert` (upkeep/convert.ts) on a copy of the smallest prepared chain written as an earlier
// release wrote it (no flat state history: its rows, their latest rows and Meta.stateHistory
// deleted): the history and latest rows it builds from the trie diffs are digest-equal to the
// import's own; interrupted after its first
// batch and run again, the same; then window=90,000 (the default a new datadir gets) -> window=16 prunes once at the head (Meta.trieFrom
// at the window's start, every node the window's roots reach kept, the rest gone), and
// window -> archive is refused once anything is pruned. The logs written as an earlier release
// wrote them (one Logs row per log) are served the same, and `db convert` rewrites them as the
// import's own LogBlocks rows (digest-equal); so are the recorded trace rows of one a block, cut
// into the import's rows of 16 transactions, and rows of 16 stored uncompressed, compressed as the
// import stores them. A pruning cycle stopped midway is finished by the next run.
import { RLP } from '@ethereumjs/rlp';
import { traceRowSpans } from '@chainnode/core';
import { availableChains, datadirCopy } from '@chainnode/testkit';
import { openDb } from '../src/db.js';
import type { Db } from '../src/db.js';
import { digestDatadir } from '../src/digest.js';
import { LevelChainStore } from '../src/index.js';
import { decodeLogBlock, logBlockFirst } from '../src/logs/index.js';
import {
  MetaKey,
  Prefix,
  expandTraceRow,
  headCodec,
  tables,
  traceRowCompressed,
  traceRowKeyCodec,
} from '../src/schema/index.js';
import { deltaChain, headerStateRoot, nodeBytes, readStateTrie, readTrieFrom } from '../src/trie/index.js';
import { ConvertRefusedError, convertDatadir } from '../src/upkeep/index.js';

const chain = availableChains().includes('execution-apis') ? 'execution-apis' : 'fixtures';

/**
 * Rewrites the recorded trace rows (TxFrames, TxStateDiffs) as earlier releases wrote them: an
 * even block's as its one row (version 1, keyed by the block number alone), an odd block's as
 * rows of 16 transactions stored uncompressed. The rows of each kind written.
 */
async function oldTraceRows(dir: string): Promise<{ oneABlock: number; uncompressed: number }> {
  const leb = (v: number): number[] => (v < 0x80 ? [v] : [(v % 0x80) | 0x80, ...leb(Math.floor(v / 0x80))]);
  const db = await openDb(dir, { create: false });
  const n = { oneABlock: 0, uncompressed: 0 };
  try {
    for (const table of [tables.txFrames, tables.txStateDiffs]) {
      const byBlock = new Map<bigint, [Uint8Array, Uint8Array][]>();
      let compressed = 0;
      const range = { gte: Uint8Array.of(table.prefix), lt: Uint8Array.of(table.prefix + 1) };
      for await (const [k, v] of db.iterator(range)) {
        expect(k.length).toBe(11);
        const { number } = traceRowKeyCodec.decode(k.subarray(1));
        if (traceRowCompressed(v)) compressed++;
        byBlock.set(number, [...(byBlock.get(number) ?? []), [k, expandTraceRow(v)]]);
        await db.del(k);
      }
      // The import stores them compressed (trace-row-codec.ts).
      expect(compressed).toBeGreaterThan(0);
      for (const [number, rows] of byBlock) {
        if (number % 2n === 1n) {
          for (const [k, row] of rows) await db.put(k, row);
          n.uncompressed += rows.length;
          continue;
        }
        const joined = Buffer.concat(rows.map(([, row]) => row));
        const spans = traceRowSpans(joined);
        const head = [1, ...leb(spans.length)];
        for (const x of spans) head.push(...leb((x?.end ?? 0) - (x?.start ?? 0)));
        const txs = spans.map((x) => joined.subarray(x?.start, x?.end));
        await db.put(table.key({ number }), Buffer.concat([joined.subarray(0, 32), Uint8Array.from(head), ...txs]));
        n.oneABlock++;
      }
    }
  } finally {
    await db.close();
  }
  return n;
}

/** Deletes the flat state history and the trie setting as if the datadir predated them. */
async function dropHistory(dir: string): Promise<void> {
  const db = await openDb(dir, { create: false });
  try {
    // The address-appearance index too, as a datadir written before it existed has none.
    for (const prefix of [Prefix.AccountHistory, Prefix.StorageHistory, Prefix.StateLatest, Prefix.Appearances]) {
      const range = { gte: Uint8Array.of(prefix), lt: Uint8Array.of(prefix + 1) };
      await db.clear(range);
      expect(await db.keys({ ...range, limit: 1 }).all()).toEqual([]);
    }
    await db.del(tables.meta.key(MetaKey.StateHistory));
    await db.del(tables.meta.key(MetaKey.StateLatest));
    await db.del(tables.meta.key(MetaKey.StateTrie));
    await db.del(tables.meta.key(MetaKey.AppearancesFrom));
  } finally {
    await db.close();
  }
}

/**
 * Rewrites every LogBlocks row as the Logs rows an earlier release wrote (one RLP row per log);
 * the number of blocks rewritten.
 */
async function oldLogRows(dir: string): Promise<number> {
  const db = await openDb(dir, { create: false });
  try {
    const batch = db.batch();
    let blocks = 0;
    for await (const [k, v] of db.iterator({
      gte: Uint8Array.of(Prefix.LogBlocks),
      lt: Uint8Array.of(Prefix.LogBlocks + 1),
    })) {
      const b = decodeLogBlock(logBlockFirst(k), v);
      b.logs.forEach((log, i) => {
        tables.logs.put(batch, BigInt(b.first + i), log);
      });
      batch.del(k);
      blocks++;
    }
    await batch.write();
    return blocks;
  } finally {
    await db.close();
  }
}

/** Whether the store answers address searches (its appearance index covers the whole chain). */
async function searchable(dir: string): Promise<boolean> {
  const store = await LevelChainStore.open(dir);
  try {
    return (
      (await store.appearances({ address: new Uint8Array(20), direction: 'before', block: undefined, count: 1 })) !==
      undefined
    );
  } finally {
    await store.close();
  }
}

/** Every block's receipts and every log (one getLogs over the chain), as the store answers them. */
async function logAnswers(dir: string): Promise<string> {
  const store = await LevelChainStore.open(dir);
  try {
    const head = (await store.head()).number;
    const out: unknown[] = [];
    for (let n = 0n; n <= head; n++) out.push(await store.receipts((await store.canonicalHash(n)) as Uint8Array));
    out.push(
      await store.logs(
        { fromBlock: 0n, toBlock: head, addresses: [], topics: [] },
        { limit: 1e9, deadline: Date.now() + 60_000 },
      ),
    );
    // The value before toJSON (a Buffer's is an object), and ArrayBuffer.isView, not instanceof:
    // the store's arrays may come from another realm than jest's.
    function plain(this: Record<string, unknown>, key: string, value: unknown): unknown {
      const v = this[key];
      if (typeof v === 'bigint') return v.toString();
      return ArrayBuffer.isView(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex') : value;
    }
    return JSON.stringify(out, plain);
  } finally {
    await store.close();
  }
}

type Nested = Uint8Array | Nested[];

/**
 * Every node hash reachable from `root` (account trie and storage tries), brute force; into `bases`
 * the rows the reachable deltas are built on (node-delta.ts), which a window keeps too.
 */
function reach(db: Db, root: Uint8Array, out: Set<string>, bases: Set<string>, accounts = true): void {
  const key = Buffer.from(root).toString('hex');
  if (out.has(key) || key === '56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421') return;
  const get = (h: Uint8Array) => tables.trieNodes.getSync(db, h);
  const row = get(root);
  if (row === undefined) throw new Error(`node ${key} missing`);
  for (const b of deltaChain(row, get)) bases.add(Buffer.from(b).toString('hex'));
  const raw = nodeBytes(row, get);
  out.add(key);
  const walk = (n: Nested, acc: boolean): void => {
    if (!Array.isArray(n)) return;
    const child = (c: Nested): void => {
      if (c instanceof Uint8Array && c.length === 32) reach(db, c, out, bases, acc);
      else if (Array.isArray(c)) walk(c, acc);
    };
    if (n.length === 17) for (const c of n.slice(0, 16)) child(c as Nested);
    else if (n.length === 2) {
      const leaf = ((n[0] as Uint8Array)[0] as number) >> 4 >= 2;
      if (!leaf) child(n[1] as Nested);
      else if (acc) reach(db, (RLP.decode(n[1] as Uint8Array) as Uint8Array[])[2] as Uint8Array, out, bases, false);
    }
  };
  walk(RLP.decode(raw) as Nested, accounts);
}

test('db convert: flat state history built from the tries, resumable, digest-equal to the import', async () => {
  const { dir, cleanup } = await datadirCopy(chain);
  try {
    const imported = await digestDatadir(dir);
    const answers = await logAnswers(dir);
    await dropHistory(dir);
    // The logs as an earlier release wrote them (Logs rows): served the same until converted.
    const logBlocks = await oldLogRows(dir);
    expect(logBlocks).toBeGreaterThan(0);
    expect(await searchable(dir)).toBe(false);
    expect(await logAnswers(dir)).toEqual(answers);
    // The recorded trace rows as earlier releases wrote them: one a block, or uncompressed.
    const traceRows = await oldTraceRows(dir);
    expect(traceRows.oneABlock).toBeGreaterThan(0);
    expect(traceRows.uncompressed).toBeGreaterThan(0);
    const stop = new Error('interrupted');
    let batches = 0;
    await expect(
      convertDatadir(dir, {
        batchBlocks: 4,
        onProgress: () => {
          if (++batches === 2) throw stop;
        },
      }),
    ).rejects.toBe(stop);
    const r = await convertDatadir(dir, { batchBlocks: 4, stateTrie: { kind: 'window', blocks: 90_000 } });
    expect(r.historyBlocks).toBe(Number(r.head) + 1 - 8);
    expect(r.latestRows).toBeGreaterThan(0);
    expect(r.stateTrie).toEqual({ from: 'archive', to: 'window=90000' });
    expect(r.prune).toBeUndefined(); // a window longer than the chain: nothing to prune
    expect(r.logs).toBeUndefined(); // spans sealed by this release are compressed already
    expect(r.logBlocks).toBe(logBlocks);
    expect(r.appearanceBlocks).toBe(Number(r.head) + 1);
    expect(r.traceRows).toBe(traceRows.oneABlock);
    expect(r.traceRowsCompressed).toBeGreaterThan(0);
    expect(r.traceRowsCompressed).toBeLessThanOrEqual(traceRows.uncompressed);
    expect(await searchable(dir)).toBe(true);
    expect(await digestDatadir(dir)).toEqual(imported);
    // Nothing left to do a second time.
    const again = await convertDatadir(dir);
    expect([again.historyBlocks, again.appearanceBlocks, again.traceRows, again.traceRowsCompressed]).toEqual([
      0, 0, 0, 0,
    ]);
  } finally {
    await cleanup();
  }
}, 120_000);

/** The TrieNodes rows held that the window [head - 15, head]'s roots do not reach, and the ones they reach not held. */
async function windowNodes(db: Db, head: bigint): Promise<{ extra: number; missing: number }> {
  const live = new Set<string>();
  const bases = new Set<string>();
  for (let n = head - 15n; n <= head; n++) {
    const hash = (await tables.canonical.get(db, n)) as Uint8Array;
    reach(db, headerStateRoot((await tables.headers.get(db, hash)) as Uint8Array), live, bases);
  }
  for (const b of bases) live.add(b);
  const held = new Set<string>();
  for await (const k of db.keys({ gte: Uint8Array.of(Prefix.TrieNodes), lt: Uint8Array.of(Prefix.TrieNodes + 1) }))
    if (k.length === 33) held.add(Buffer.from(k.subarray(1)).toString('hex'));
  return {
    extra: [...held].filter((h) => !live.has(h)).length,
    missing: [...live].filter((h) => !held.has(h)).length,
  };
}

test('db convert: a pruning cycle stopped midway is finished by the next run, which leaves the window unchanged', async () => {
  const { dir, cleanup } = await datadirCopy(chain);
  try {
    let stopped = false;
    const first = await convertDatadir(dir, {
      stateTrie: { kind: 'window', blocks: 16 },
      onProgress: (line) => {
        // The first report of the mark: Meta.trieFrom is written, nothing is deleted yet.
        if (!stopped && line.startsWith('state trie: mark')) {
          stopped = true;
          throw new Error('stopped');
        }
      },
    });
    expect(stopped).toBe(true);
    expect(first.prune?.phase).toBe('failed');
    const head = await (async () => {
      const db = await openDb(dir, { create: false });
      try {
        const h = headCodec.decode((await tables.meta.get(db, MetaKey.Head)) as Uint8Array).number;
        expect(await readTrieFrom(db)).toBe(h - 15n);
        expect(await tables.meta.get(db, MetaKey.TriePruned)).toBeUndefined();
        const w = await windowNodes(db, h);
        expect(w.missing).toBe(0);
        expect(w.extra).toBeGreaterThan(0);
        return h;
      } finally {
        await db.close();
      }
    })();
    const second = await convertDatadir(dir);
    expect(second.stateTrie).toEqual({ from: 'window=16', to: 'window=16' });
    expect(second.prune?.phase).toBe('done');
    expect(second.prune?.deleted).toBeGreaterThan(0);
    const db = await openDb(dir, { create: false });
    try {
      expect(await readTrieFrom(db)).toBe(head - 15n);
      expect(Buffer.from((await tables.meta.get(db, MetaKey.TriePruned)) as Uint8Array).toString()).toBe(
        (head - 15n).toString(),
      );
      expect(await windowNodes(db, head)).toEqual({ extra: 0, missing: 0 });
    } finally {
      await db.close();
    }
    // Finished: the next run leaves it alone.
    expect((await convertDatadir(dir)).prune).toBeUndefined();
  } finally {
    await cleanup();
  }
}, 120_000);

test('db convert: window=90000 -> window=16 prunes at the head; back to archive refused', async () => {
  const { dir, cleanup } = await datadirCopy(chain);
  try {
    const r = await convertDatadir(dir, { stateTrie: { kind: 'window', blocks: 16 } });
    expect(r.stateTrie).toEqual({ from: 'window=90000', to: 'window=16' });
    expect(r.prune?.phase).toBe('done');
    const db = await openDb(dir, { create: false });
    try {
      expect(await readStateTrie(db)).toEqual({ kind: 'window', blocks: 16 });
      const head = headCodec.decode((await tables.meta.get(db, MetaKey.Head)) as Uint8Array).number;
      expect(await readTrieFrom(db)).toBe(head - 15n);
      const live = new Set<string>();
      const bases = new Set<string>();
      for (let n = head - 15n; n <= head; n++) {
        const hash = (await tables.canonical.get(db, n)) as Uint8Array;
        reach(db, headerStateRoot((await tables.headers.get(db, hash)) as Uint8Array), live, bases);
      }
      expect(bases.size).toBeGreaterThan(0);
      for (const b of bases) live.add(b);
      const held = new Set<string>();
      for await (const k of db.keys({ gte: Uint8Array.of(Prefix.TrieNodes), lt: Uint8Array.of(Prefix.TrieNodes + 1) }))
        if (k.length === 33) held.add(Buffer.from(k.subarray(1)).toString('hex'));
      expect([...live].filter((h) => !held.has(h))).toEqual([]);
      expect([...held].filter((h) => !live.has(h))).toEqual([]);
    } finally {
      await db.close();
    }
    await expect(convertDatadir(dir, { stateTrie: { kind: 'archive' } })).rejects.toBeInstanceOf(ConvertRefusedError);
  } finally {
    await cleanup();
  }
}, 120_000);
