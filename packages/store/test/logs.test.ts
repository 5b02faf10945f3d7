// The log index on a synthetic chain big enough for several full posting chunks per hot value,
// written through StoreWriter.addPreExecutedBlock. Every answer is re-derived by a brute-force
// filter over the logs the test generated itself; the chunk layout is checked to be independent
// of how blocks were grouped into batches.
import { appendFile, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { brotliCompressSync } from 'node:zlib';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { createKeccak } from 'hash-wasm';
import { LogJsonWriter, bytesEqual, chunksToBytes } from '@chainnode/core';
import type { LogQuery, LogQueryResult, LogRecord, LogTextQueryResult } from '@chainnode/core';
import { LevelChainStore, Prefix, StoreWriter, digestDatadir, resealDatadirLogs } from '../src/index.js';
import type { BlockInput, LogInput } from '../src/index.js';
import { openDb } from '../src/db.js';
import type { Db } from '../src/db.js';
import { HOT_ADDR, HOT_TOPIC, blockInput, legacyHeaderRlp, tagged } from './block-input.js';
import {
  LogSegmentSealer,
  SEAL_DEPTH,
  SEGMENT_SPAN,
  hasSpansToReseal,
  sealDueLogSegments,
} from '../src/logs/log-segments.js';
import { readyRowsOf } from '../src/logs/ready-rows.js';
import { unpackStrippedChunk } from '../src/logs/segment-chunks.js';
import type { BlockHashes } from '../src/logs/segment-chunks.js';
import {
  LOG_INDEX_CHUNK,
  LogIndexKind,
  MetaKey,
  OPEN_CHUNK,
  encodeAddressLogsJson,
  tables,
} from '../src/schema/index.js';

const BLOCKS = 700;
/** dirs[5] has AddressLogsJson rows from this block on. */
const ROWS_FROM = 301;
const addr = (i: number) => tagged(0xab, i, 20);
const topic = (i: number) => tagged(0x70, i, 32);

interface Gen {
  blockNumber: bigint;
  logIndex: number;
  txHash: Uint8Array;
  txIndex: number;
  blockHash: Uint8Array;
  timestamp: bigint;
  log: LogInput;
}

// The chain's hashes and blooms through hash-wasm's WebAssembly Keccak (the pure-JS one was most
// of the CPU of building the chain, twice a run): the store's own hash function, which
// keccak.test.ts checks against the pure-JS one at every input length.
const wasmKeccak = await createKeccak(256);
const keccak256 = (data: Uint8Array): Uint8Array => wasmKeccak.init().update(data).digest('binary');

/** Deterministic pseudo-random numbers (LCG) so the chain is the same in every build. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function makeChain(length = BLOCKS): { blocks: BlockInput[]; genesis: BlockInput; all: Gen[] } {
  const r = lcg(42);
  const all: Gen[] = [];
  const block = (n: number, parent: Uint8Array, logs: LogInput[][]): BlockInput => {
    const bloom = new Uint8Array(256);
    for (const l of logs.flat()) {
      for (const v of [l.address, ...l.topics]) {
        const h = keccak256(v);
        for (let i = 0; i < 6; i += 2) {
          const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
          bloom[255 - (bit >> 3)] = (bloom[255 - (bit >> 3)] as number) | (1 << (bit & 7));
        }
      }
    }
    const headerRlp = legacyHeaderRlp(n, parent, bloom, 1_000 + n * 12);
    const hash = keccak256(headerRlp);
    const txs = logs.map((_, i) => RLP.encode([n, i, 21000, new Uint8Array(20), 0, new Uint8Array(0), 27, 1, 1]));
    const txHashes = txs.map((t) => keccak256(t));
    let logIndex = 0;
    logs.forEach((txLogs, i) => {
      for (const log of txLogs)
        all.push({
          blockNumber: BigInt(n),
          logIndex: logIndex++,
          txHash: txHashes[i] as Uint8Array,
          txIndex: i,
          blockHash: hash,
          timestamp: BigInt(1_000 + n * 12),
          log,
        });
    });
    return blockInput({ number: n, hash, headerRlp, txs, txHashes, logs, logsBloom: bloom });
  };
  const genesis = block(0, new Uint8Array(32), []);
  const blocks: BlockInput[] = [];
  let parent = genesis.hash;
  for (let n = 1; n <= length; n++) {
    const logs: LogInput[][] = [];
    // Some blocks without logs, most with 5..20.
    const count = r() < 0.1 ? 0 : 5 + Math.floor(r() * 16);
    for (let i = 0; i < count; i++) {
      if (logs.length === 0 || r() < 0.4) logs.push([]);
      const a = r() < 0.5 ? HOT_ADDR : r() < 0.9 ? addr(Math.floor(r() * 40)) : addr(100 + Math.floor(r() * 400));
      const nTopics = Math.floor(r() * 5); // 0..4
      const topics: Uint8Array[] = [];
      for (let t = 0; t < nTopics; t++) {
        if (t === 0) topics.push(r() < 0.6 ? HOT_TOPIC : topic(Math.floor(r() * 8)));
        else topics.push(topic(t * 1000 + Math.floor(r() * (t === 1 ? 6 : 300))));
      }
      (logs[logs.length - 1] as LogInput[]).push({ address: a, topics, data: Uint8Array.of(i) });
    }
    const b = block(n, parent, logs);
    blocks.push(b);
    parent = b.hash;
  }
  return { blocks, genesis, all };
}

/**
 * Writes the chain in groups of the given sizes. `reopen`: a new writer (empty caches) after every
 * group, as a resumed import has; `cacheBytes`: the writer's open-chunk cache budget (a tiny one
 * drops every value after each flush, so open chunks are read back from LevelDB).
 */
async function buildGrouped(
  dir: string,
  chain: ReturnType<typeof makeChain>,
  groups: number[],
  opts: { reopen?: boolean; cacheBytes?: number; logsJsonFrom?: number } = {},
): Promise<void> {
  const open = () =>
    StoreWriter.open(dir, opts.cacheBytes === undefined ? {} : { openChunkCacheBytes: opts.cacheBytes });
  let w = await open();
  try {
    await w.writeGenesis({ block: chain.genesis, chainConfig: { chainId: 1 } });
    let g = 0;
    let inGroup = 0;
    for (const b of chain.blocks) {
      w.addPreExecutedBlock(b, { logsJson: opts.logsJsonFrom !== undefined && b.number >= BigInt(opts.logsJsonFrom) });
      if (++inGroup >= (groups[g % groups.length] as number)) {
        await w.flush();
        inGroup = 0;
        g++;
        if (opts.reopen) {
          await w.close();
          w = await open();
        }
      }
    }
    await w.flush();
  } finally {
    await w.close();
  }
}

function matches(g: Gen, q: LogQuery): boolean {
  if (g.blockNumber < q.fromBlock || g.blockNumber > q.toBlock) return false;
  if (q.addresses.length > 0 && !q.addresses.some((a) => bytesEqual(a, g.log.address))) return false;
  if (q.topics.length > g.log.topics.length) return false; // geth: fewer topics than positions never matches
  return q.topics.every(
    (t, i) =>
      t === null ||
      t.length === 0 ||
      (g.log.topics[i] !== undefined && t.some((x) => bytesEqual(x, g.log.topics[i] as Uint8Array))),
  );
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
/** A log's JSON as geth writes it, from the test's own record of the chain. */
const jsonOf = (g: Gen): unknown => ({
  address: `0x${hex(g.log.address)}`,
  topics: g.log.topics.map((t) => `0x${hex(t)}`),
  data: `0x${hex(g.log.data)}`,
  blockNumber: `0x${g.blockNumber.toString(16)}`,
  transactionHash: `0x${hex(g.txHash)}`,
  transactionIndex: `0x${g.txIndex.toString(16)}`,
  blockHash: `0x${hex(g.blockHash)}`,
  blockTimestamp: `0x${g.timestamp.toString(16)}`,
  logIndex: `0x${g.logIndex.toString(16)}`,
  removed: false,
});
/** JSON.stringify of jsonOf(g), kept per generated log (queries over the hot address ask for thousands each). */
const jsonTexts = new WeakMap<Gen, string>();
const jsonTextOf = (g: Gen): string => {
  let t = jsonTexts.get(g);
  if (t === undefined) jsonTexts.set(g, (t = JSON.stringify(jsonOf(g))));
  return t;
};
/** JSON.stringify(gens.map(jsonOf)), from the kept texts. */
const jsonArrayOf = (gens: Gen[]): string => `[${gens.map(jsonTextOf).join(',')}]`;

/** A logsText answer with its ASCII bytes as text, to compare with the expected text. */
const asText = (r: LogTextQueryResult | undefined) =>
  r?.kind === 'ok' ? { kind: 'ok', text: chunksToBytes(r.ascii).toString('latin1'), count: r.count } : r;
const opts = (limit = 100_000) => ({ limit, deadline: Date.now() + 60_000 });
const describeLog = (l: { blockNumber: bigint; logIndex: number; transactionHash?: Uint8Array; txHash?: Uint8Array }) =>
  `${l.blockNumber}:${l.logIndex}`;

/** The query mix the index tests check by brute force (deterministic, seeded). */
function queries(): LogQuery[] {
  const r = lcg(7);
  const pick = (n: number) => Math.floor(r() * n);
  const qs: LogQuery[] = [];
  const full = { fromBlock: 0n, toBlock: BigInt(BLOCKS) };
  // Hot topic0 + rare address (the case the streaming intersection is for).
  for (let i = 0; i < 10; i++) qs.push({ ...full, addresses: [addr(100 + pick(400))], topics: [[HOT_TOPIC]] });
  // Hot address + hot topic0 + a topic2 value.
  for (let i = 0; i < 10; i++)
    qs.push({ ...full, addresses: [HOT_ADDR], topics: [[HOT_TOPIC], null, [topic(2000 + pick(300))]] });
  // Arrays on several positions, nulls and empty arrays as wildcards, ranges cutting chunks.
  for (let i = 0; i < 60; i++) {
    const from = pick(BLOCKS);
    const to = from + pick(BLOCKS - from + 20);
    const addresses = i % 4 === 0 ? [] : [HOT_ADDR, addr(pick(40)), addr(100 + pick(400))].slice(0, 1 + (i % 3));
    const t0 = i % 3 === 0 ? null : i % 3 === 1 ? [HOT_TOPIC] : [HOT_TOPIC, topic(pick(8))];
    const t1 = i % 5 === 0 ? [topic(1000 + pick(6)), topic(1000 + pick(6))] : i % 5 === 1 ? [] : null;
    const t2 = i % 7 === 0 ? [topic(2000 + pick(300))] : null;
    const t3 = i % 11 === 0 ? [topic(3000 + pick(300)), topic(3000 + pick(300))] : null;
    qs.push({
      fromBlock: BigInt(from),
      toBlock: BigInt(to),
      addresses,
      topics: [t0, t1, t2, t3].slice(0, 1 + (i % 4)),
    });
  }
  // Value absent from the chain, a value of the wrong width, a topic only at another position.
  qs.push({ ...full, addresses: [addr(99_999)], topics: [] });
  qs.push({ ...full, addresses: [HOT_ADDR.subarray(0, 19)], topics: [] });
  qs.push({ ...full, addresses: [], topics: [null, [HOT_TOPIC]] });
  // Trailing wildcards: they still require that many topics (geth), which the index cannot see.
  qs.push({ ...full, addresses: [], topics: [null] });
  qs.push({ ...full, addresses: [], topics: [null, null, null] });
  qs.push({ ...full, addresses: [HOT_ADDR], topics: [[HOT_TOPIC], null] });
  qs.push({ fromBlock: 40n, toBlock: 90n, addresses: [HOT_ADDR, addr(5)], topics: [[HOT_TOPIC], [], null, null] });
  return qs;
}

/**
 * The index's (or the bloom scan's) logs carry the fields of the generated logs they stand for.
 * The differing logs are collected and compared once (an expect per log cost more than the reads).
 */
function expectLogFields(got: LogRecord[], want: Gen[]): void {
  const fields = (f: (string | string[] | bigint)[]) =>
    JSON.stringify(f, (_, v) => (typeof v === 'bigint' ? `${v}` : v));
  const wrong: { i: number; got: string; want: string }[] = [];
  got.forEach((l, i) => {
    const g = want[i] as Gen;
    const a = fields([
      hex(l.address),
      l.topics.map(hex),
      hex(l.data),
      hex(l.transactionHash),
      hex(l.blockHash),
      l.blockTimestamp,
    ]);
    const b = fields([
      hex(g.log.address),
      g.log.topics.map(hex),
      hex(g.log.data),
      hex(g.txHash),
      hex(g.blockHash),
      g.timestamp,
    ]);
    if (a !== b) wrong.push({ i, got: a, want: b });
  });
  expect(wrong).toEqual([]);
}

/** Runs `edit` on a datadir's raw database: the store open on it is closed first, and opened again after. */
async function editClosed(
  store: LevelChainStore,
  dir: string,
  edit: (db: Db) => Promise<unknown>,
): Promise<LevelChainStore> {
  await store.close();
  const db = await openDb(dir, { create: false });
  try {
    await edit(db);
  } finally {
    await db.close();
  }
  return LevelChainStore.open(dir);
}

/**
 * logsText on every query (and on each cut to the rows' first block) against the brute-force answer:
 * `store` has no AddressLogsJson rows and leaves every query to logs(), `withRows` answers the
 * queries its rows can serve. Counts the answers from rows, and those of them that picked by topic.
 */
async function checkRowsAnswers(
  all: Gen[],
  store: LevelChainStore,
  withRows: LevelChainStore,
): Promise<{ fromRows: number; picked: number }> {
  let fromRows = 0;
  let picked = 0;
  const qs = queries().flatMap((q) => [
    q,
    { ...q, fromBlock: q.fromBlock < BigInt(ROWS_FROM) ? BigInt(ROWS_FROM) : q.fromBlock },
  ]);
  qs.push({
    fromBlock: BigInt(ROWS_FROM),
    toBlock: BigInt(BLOCKS),
    addresses: [HOT_ADDR, HOT_ADDR, addr(3)],
    topics: [],
  });
  for (const q of qs) {
    const want = all.filter((g) => matches(g, q));
    // Without rows (dirs[0] was written without them) the query is left to logs().
    expect(await store.logsText(q, opts())).toBeUndefined();
    const got = await withRows.logsText(q, opts());
    const lastTopic = q.topics.reduce((at, t, i) => (t !== null && t.length > 0 ? i : at), -1);
    const served =
      q.addresses.length > 0 &&
      q.addresses.length <= 8 &&
      q.topics.length === lastTopic + 1 &&
      q.fromBlock >= BigInt(ROWS_FROM);
    if (!served) {
      expect(got).toBeUndefined();
      continue;
    }
    if (got === undefined || got.kind !== 'ok') throw new Error(`expected an answer: ${JSON.stringify(got)}`);
    fromRows++;
    if (lastTopic >= 0 && want.length > 0) picked++;
    expect(got.count).toBe(want.length);
    // Byte for byte as geth writes them (JSON.stringify keeps jsonOf's key order).
    expect(chunksToBytes(got.ascii).every((b) => b < 0x80)).toBe(true); // ASCII: its UTF-8 and Latin-1 alike
    expect(chunksToBytes(got.ascii).toString('latin1')).toBe(jsonArrayOf(want));
  }
  return { fromRows, picked };
}

/** HOT_ADDR's posting chunks: full ones hold LOG_INDEX_CHUNK ids and are keyed by their last id, the open one holds the rest. */
async function expectPostingChunks(db: Db, all: Gen[]): Promise<void> {
  const want = all
    .map((g, id) => ({ g, id }))
    .filter(({ g }) => bytesEqual(g.log.address, HOT_ADDR))
    .map(({ id }) => id + 0);
  const got: number[] = [];
  const chunks: { last: bigint; n: number }[] = [];
  for await (const [k, ids] of tables.logIndex.range(db, {
    gte: { kind: LogIndexKind.Address, value: HOT_ADDR, lastLogId: 0n },
    lte: { kind: LogIndexKind.Address, value: HOT_ADDR, lastLogId: OPEN_CHUNK },
  })) {
    chunks.push({ last: k.lastLogId, n: ids.length });
    if (k.lastLogId !== OPEN_CHUNK) expect(BigInt(ids[ids.length - 1] as number)).toBe(k.lastLogId);
    got.push(...ids);
  }
  // Genesis has no logs, so log id = position in generation order.
  expect(got).toEqual(want);
  const full = chunks.filter((c) => c.last !== OPEN_CHUNK);
  expect(full.length).toBe(Math.floor(want.length / LOG_INDEX_CHUNK));
  for (const c of full) expect(c.n).toBe(LOG_INDEX_CHUNK);
  const open = chunks.filter((c) => c.last === OPEN_CHUNK);
  expect(open.map((c) => c.n)).toEqual(want.length % LOG_INDEX_CHUNK === 0 ? [] : [want.length % LOG_INDEX_CHUNK]);
}

/**
 * logsText of the queries with an address and a topic, from the rows' first block on, against brute
 * force; counts the answers that needed a block whose rows are gone (every third block's).
 */
async function checkLogRowFallback(all: Gen[], withRows: LevelChainStore): Promise<number> {
  let checked = 0;
  for (const q of queries().filter((x) => x.addresses.length > 0 && x.topics.some((t) => t !== null && t.length > 0))) {
    const q2 = { ...q, fromBlock: q.fromBlock < BigInt(ROWS_FROM) ? BigInt(ROWS_FROM) : q.fromBlock };
    const got = await withRows.logsText(q2, opts());
    if (got === undefined) continue;
    const want = all.filter((g) => matches(g, q2));
    expect(asText(got)).toEqual({ kind: 'ok', text: jsonArrayOf(want), count: want.length });
    if (want.some((g) => g.blockNumber % 3n === 0n)) checked++;
  }
  return checked;
}

/** Queries over the cap at several limits: plain, intersections, arrays, trailing wildcards. */
const CAP_CASES: LogQuery[] = [
  { fromBlock: 0n, toBlock: BigInt(BLOCKS), addresses: [], topics: [] },
  { fromBlock: 3n, toBlock: BigInt(BLOCKS), addresses: [HOT_ADDR], topics: [[HOT_TOPIC]] },
  {
    fromBlock: 10n,
    toBlock: 600n,
    addresses: [HOT_ADDR, addr(3)],
    topics: [
      [HOT_TOPIC, topic(1)],
      [topic(1000), topic(1001), topic(1002)],
    ],
  },
  // Trailing wildcards: only logs with enough topics may count toward the cap.
  { fromBlock: 0n, toBlock: BigInt(BLOCKS), addresses: [], topics: [null, null] },
  { fromBlock: 5n, toBlock: BigInt(BLOCKS), addresses: [HOT_ADDR], topics: [[HOT_TOPIC], null, null] },
];

describe('log index over a synthetic chain', () => {
  const chain = makeChain();
  const dirs: string[] = [];
  let store: LevelChainStore;
  let withRows: LevelChainStore;

  beforeAll(async () => {
    for (let i = 0; i < 6; i++) dirs.push(await mkdtemp(join(tmpdir(), 'store-logs-')));
    await buildGrouped(dirs[0] as string, chain, [BLOCKS]);
    await buildGrouped(dirs[1] as string, chain, [1, 7, 33, 2, 120]);
    await buildGrouped(dirs[2] as string, chain, [50]);
    await buildGrouped(dirs[3] as string, chain, [13, 90, 1], { reopen: true });
    await buildGrouped(dirs[4] as string, chain, [5, 64], { cacheBytes: 1 });
    // The same chain with the AddressLogsJson rows real imports write, from block ROWS_FROM on (a
    // datadir written by an older version, then resumed).
    await buildGrouped(dirs[5] as string, chain, [64], { logsJsonFrom: ROWS_FROM });
    store = await LevelChainStore.open(dirs[0] as string);
    withRows = await LevelChainStore.open(dirs[5] as string);
  });
  afterAll(async () => {
    await store?.close();
    await withRows?.close();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  test('the chain exercises several full chunks of the hot values', () => {
    const hotTopic = chain.all.filter(
      (g) => g.log.topics[0] !== undefined && bytesEqual(g.log.topics[0], HOT_TOPIC),
    ).length;
    const hotAddr = chain.all.filter((g) => bytesEqual(g.log.address, HOT_ADDR)).length;
    expect(hotTopic).toBeGreaterThan(2 * LOG_INDEX_CHUNK);
    expect(hotAddr).toBeGreaterThan(3 * LOG_INDEX_CHUNK);
  });

  test('the index bytes do not depend on how blocks were grouped into batches, nor on the writer cache', async () => {
    await store.close();
    const digests = await Promise.all(dirs.slice(0, 5).map((d) => digestDatadir(d)));
    expect(digests[1]).toEqual(digests[0]);
    expect(digests[2]).toEqual(digests[0]);
    expect(digests[3]).toEqual(digests[0]); // reopened writer: open chunks read back from LevelDB
    expect(digests[4]).toEqual(digests[0]); // cache evicted after every flush
    store = await LevelChainStore.open(dirs[0] as string);
  });

  test('posting chunks: full ones hold LOG_INDEX_CHUNK ids and are keyed by their last id, the open one holds the rest', async () => {
    store = await editClosed(store, dirs[0] as string, (db) => expectPostingChunks(db, chain.all));
  });

  test('index and bloom-scan answers equal a brute-force filter (intersections, arrays, nulls, cut ranges)', async () => {
    let nonEmpty = 0;
    for (const q of queries()) {
      const want = chain.all.filter((g) => matches(g, q));
      if (want.length > 0) nonEmpty++;
      const got = await store.logs(q, opts());
      const scan = await store.logsByBloomScan(q, opts());
      if (got.kind !== 'ok' || scan.kind !== 'ok') throw new Error('unexpected too-many');
      expect(got.logs.map(describeLog)).toEqual(want.map(describeLog));
      expect(scan.logs.map(describeLog)).toEqual(want.map(describeLog));
      expectLogFields(got.logs, want);
    }
    expect(nonEmpty).toBeGreaterThan(40);
  });

  test('logsText from the AddressLogsJson rows equals the brute-force answer as geth writes it', async () => {
    const { fromRows, picked } = await checkRowsAnswers(chain.all, store, withRows);
    expect(fromRows).toBeGreaterThan(30);
    expect(picked).toBeGreaterThan(5);
  });

  test('logsText: a row is served as it is; a match whose row is missing comes from its log row', async () => {
    // A marked row for (HOT_ADDR, block 400) shows up in an address-only answer: the answer is the rows' text.
    const q400 = { fromBlock: 400n, toBlock: 400n, addresses: [HOT_ADDR], topics: [] };
    const hot400 = chain.all.filter((g) => matches(g, q400));
    expect(hot400.length).toBeGreaterThan(0);
    // Each log's data marked (the row's text then differs from what the log rows would give).
    const marked: LogRecord[] = hot400.map((g, i) => ({
      address: g.log.address,
      topics: g.log.topics,
      data: Uint8Array.of(0xee, i),
      blockNumber: g.blockNumber,
      blockHash: g.blockHash,
      blockTimestamp: g.timestamp,
      transactionHash: g.txHash,
      transactionIndex: g.txIndex,
      logIndex: g.logIndex,
    }));
    withRows = await editClosed(withRows, dirs[5] as string, (db) =>
      db.put(tables.addressLogsJson.key({ address: HOT_ADDR, number: 400n }), encodeAddressLogsJson(marked)),
    );
    const writer = new LogJsonWriter();
    expect(asText(await withRows.logsText(q400, opts()))).toEqual({
      kind: 'ok',
      text: `[${marked.map((m) => writer.write(m)).join(',')}]`,
      count: marked.length,
    });
    // Rows of every third block gone: queries with topics find their matches in the log rows.
    withRows = await editClosed(withRows, dirs[5] as string, async (db) => {
      // (block 400's marked row goes too)
      for (const g of chain.all)
        if (g.blockNumber % 3n === 0n || g.blockNumber === 400n)
          await db.del(tables.addressLogsJson.key({ address: g.log.address, number: g.blockNumber }));
    });
    expect(await checkLogRowFallback(chain.all, withRows)).toBeGreaterThan(5);
  });

  test('the cap: too-many names the longest fitting prefix, for intersections too', async () => {
    for (const q of CAP_CASES) {
      const want = chain.all.filter((g) => matches(g, q));
      for (const limit of [1, 17, 500, want.length - 1]) {
        const r: LogQueryResult = await store.logs(q, opts(limit));
        const over = want[limit] as Gen;
        expect(r).toEqual({ kind: 'too-many', lastFittingBlock: over.blockNumber - 1n });
        expect(await store.logsByBloomScan(q, opts(limit))).toEqual(r);
        const rowsQ = { ...q, fromBlock: BigInt(ROWS_FROM) };
        const rowsWant = chain.all.filter((g) => matches(g, rowsQ));
        if (q.addresses.length > 0 && q.topics.every((t) => t !== null && t.length > 0) && limit < rowsWant.length) {
          expect(await withRows.logsText(rowsQ, opts(limit))).toEqual({
            kind: 'too-many',
            lastFittingBlock: (rowsWant[limit] as Gen).blockNumber - 1n,
          });
        }
      }
      const ok = await store.logs(q, opts(want.length));
      expect(ok.kind === 'ok' && ok.logs.length).toBe(want.length);
    }
  });

  test('a past deadline stops index and scan queries', async () => {
    const q = { fromBlock: 0n, toBlock: BigInt(BLOCKS), addresses: [HOT_ADDR], topics: [[HOT_TOPIC]] };
    await expect(store.logs(q, { limit: 100_000, deadline: Date.now() - 1 })).rejects.toThrow('query timeout exceeded');
    await expect(store.logsByBloomScan(q, { limit: 100_000, deadline: Date.now() - 1 })).rejects.toThrow(
      'query timeout exceeded',
    );
    await expect(
      withRows.logsText({ ...q, fromBlock: BigInt(ROWS_FROM) }, { limit: 100_000, deadline: Date.now() - 1 }),
    ).rejects.toThrow('query timeout exceeded');
  });
});

/**
 * Random one-address queries, and the edges of the sealed range; each checked by brute force.
 * Counts the answers that came (in part) from segment files.
 */
async function checkSegmentAnswers(
  all: Gen[],
  store: LevelChainStore,
  head: number,
  sealed: [bigint, bigint],
): Promise<number> {
  const r = lcg(7);
  const pick = (n: number) => Math.floor(r() * n);
  const edges = [
    1,
    255,
    256,
    257,
    Number(sealed[0]) - 1,
    Number(sealed[0]),
    Number(sealed[1]) - 1,
    Number(sealed[1]),
    head,
  ];
  const qs: LogQuery[] = [];
  for (const e of edges)
    for (const w of [1, 2, 100, 300])
      qs.push({
        fromBlock: BigInt(Math.max(1, e - pick(w))),
        toBlock: BigInt(Math.min(head, e + pick(w))),
        addresses: [HOT_ADDR],
        topics: [],
      });
  for (let i = 0; i < 150; i++) {
    const from = 1 + pick(head);
    const to = Math.min(head, from + pick(i % 3 === 0 ? 600 : 100));
    const a = i % 4 === 0 ? HOT_ADDR : i % 4 === 3 ? addr(100 + pick(400)) : addr(pick(40));
    qs.push({ fromBlock: BigInt(from), toBlock: BigInt(to), addresses: [a], topics: [] });
  }
  // Sealed blocks keep no rows: two addresses, and an address with a topic, across the boundaries.
  for (let i = 0; i < 16; i++) {
    const from = 1 + pick(head);
    const q = { fromBlock: BigInt(from), toBlock: BigInt(Math.min(head, from + pick(400))) };
    if (i % 2 === 0) qs.push({ ...q, addresses: [HOT_ADDR, addr(pick(40))], topics: [] });
    else qs.push({ ...q, addresses: [i % 4 === 1 ? HOT_ADDR : addr(pick(40))], topics: [[HOT_TOPIC]] });
  }
  let fromSegments = 0;
  for (const q of qs) {
    const want = all.filter((g) => matches(g, q));
    if (q.addresses.length > 1 || q.topics.length > 0) {
      const text = await store.logsText(q, opts());
      if (text !== undefined) {
        expect(asText(text)).toEqual({ kind: 'ok', text: jsonArrayOf(want), count: want.length });
        continue;
      }
      const r = await store.logs(q, opts());
      if (r.kind !== 'ok') throw new Error('unexpected too-many');
      expect(r.logs.map(describeLog)).toEqual(want.map(describeLog));
      continue;
    }
    const got = await store.logsText(q, opts());
    if (got === undefined || got.kind !== 'ok') throw new Error(`expected an answer: ${JSON.stringify(got)}`);
    expect(got.count).toBe(want.length);
    expect(chunksToBytes(got.ascii).toString('latin1')).toBe(jsonArrayOf(want));
    if (q.fromBlock < sealed[1] && q.toBlock >= sealed[0] && got.count > 0) fromSegments++;
  }
  return fromSegments;
}

/**
 * Rewrites span `start` as an earlier release sealed it: its texts (decoded, their hashes written
 * back from `blockOf`) appended uncompressed to the segment file with an index value of its
 * entries alone, or (`withHashes`) compressed chunk by chunk as they are, hashes and all, with an
 * index value that does not say they were stripped.
 */
async function rewriteSpanAsOlder(
  dir: string,
  start: bigint,
  blockOf: (n: bigint) => BlockHashes,
  layout: 'uncompressed' | 'withHashes',
): Promise<void> {
  const db = await openDb(dir, { create: false });
  try {
    const key = (fill: number) => {
      const k = Buffer.alloc(29, fill);
      k[0] = Prefix.LogSegments;
      k.writeBigUInt64BE(start, 1);
      return k;
    };
    const [from, to] = [key(0), key(0xff)];
    const file = join(dir, 'log-segments', '000000.seg');
    let bytes = await readFile(file);
    let rewritten = 0;
    for await (const [key, value] of db.iterator({ gte: from, lte: to })) {
      const dv = new DataView(value.buffer, value.byteOffset, value.byteLength);
      const head = dv.getUint32(12);
      expect(head >>> 30).toBe(3); // compressed, stripped: as spans are sealed now
      const n = head & 0x3fff_ffff;
      const offset = Number(Buffer.from(value).readBigUInt64BE(4));
      const chunks = dv.getUint32(16 + 12 * n);
      const texts: Buffer[] = [];
      let packedStart = 0;
      let textStart = 0;
      for (let j = 0; j < chunks; j++) {
        const next = j + 1 < chunks ? dv.getUint32(16 + 12 * n + 4 + 8 * (j + 1)) : n;
        const packedEnd = dv.getUint32(16 + 12 * n + 8 + 8 * j);
        const textEnd = dv.getUint32(16 + 12 * (next - 1) + 4);
        const packed = bytes.subarray(offset + packedStart, offset + packedEnd);
        texts.push(unpackStrippedChunk(packed, textEnd - textStart, blockOf));
        packedStart = packedEnd;
        textStart = textEnd + 1;
      }
      const old = Buffer.from(value);
      old.writeBigUInt64BE(BigInt(bytes.length), 4);
      if (layout === 'uncompressed') {
        const text = Buffer.from(texts.map((t) => t.toString('latin1')).join(','), 'latin1');
        bytes = Buffer.concat([bytes, text]);
        old.writeUInt32BE(n, 12);
      } else {
        // The same chunks, compressed whole; the chunk table's ends follow their new sizes.
        const packed = texts.map((t) => brotliCompressSync(t));
        let end = 0;
        packed.forEach((c, j) => {
          end += c.length;
          old.writeUInt32BE(end, 16 + 12 * n + 8 + 8 * j);
        });
        old.writeUInt32BE((n | 0x8000_0000) >>> 0, 12);
        bytes = Buffer.concat([bytes, ...packed]);
      }
      await db.put(key, layout === 'uncompressed' ? old.subarray(0, 16 + 12 * n) : old);
      rewritten++;
    }
    expect(rewritten).toBeGreaterThan(0);
    await writeFile(file, bytes);
    // The recorded length follows the file, as a seal's would.
    const metaKey = tables.meta.key(MetaKey.LogSegments);
    const meta = Buffer.from((await db.get(metaKey)) as Uint8Array);
    meta.writeBigUInt64BE(BigInt(bytes.length), 20);
    await db.put(metaKey, meta);
  } finally {
    await db.close();
  }
}

// Sealed log segments (log-segments.ts): spans of SEGMENT_SPAN blocks SEAL_DEPTH below the head
// are served from segment files. Answers re-derived by brute force across the sealed boundaries,
// after a crashed seal's leftover bytes, and after a rewind below the sealed end.
describe('log segments', () => {
  const LENGTH = 1500;
  const chain = makeChain(LENGTH);
  let dir: string;
  let store: LevelChainStore | undefined;
  const segmentsDir = () => join(dir, 'log-segments');

  /** Writes blocks [from, to] (numbers) in groups of 100 into `dir` (genesis first when from is 1), after `before`. */
  async function write(from: number, to: number, before?: (w: StoreWriter) => Promise<void>): Promise<void> {
    await store?.close();
    store = undefined;
    const w = await StoreWriter.open(dir);
    try {
      if (before !== undefined) await before(w);
      if (from === 1) await w.writeGenesis({ block: chain.genesis, chainConfig: { chainId: 1 } });
      for (const b of chain.blocks.slice(from - 1, to)) {
        w.addPreExecutedBlock(b, { logsJson: true });
        if (w.stagedBlocks() >= 100) await w.flush();
      }
      await w.flush();
    } finally {
      await w.close();
    }
    store = await LevelChainStore.open(dir);
  }

  async function sealedRange(): Promise<[bigint, bigint]> {
    await store?.close();
    store = undefined;
    const db = await openDb(dir, { create: false });
    try {
      const raw = await tables.meta.get(db, MetaKey.LogSegments);
      if (raw === undefined) throw new Error('no Meta.logSegments');
      const v = Buffer.from(raw);
      return [v.readBigUInt64BE(0), v.readBigUInt64BE(8)];
    } finally {
      await db.close();
      store = await LevelChainStore.open(dir);
    }
  }

  const checkAnswers = (head: number, sealed: [bigint, bigint]) =>
    checkSegmentAnswers(chain.all, store as LevelChainStore, head, sealed);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'store-segments-'));
  });
  afterAll(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('whole spans SEAL_DEPTH below the head are sealed, and answers across them are exact', async () => {
    await write(1, 1200);
    // Rows from genesis on: spans 0..1023 sealed, as 1023 + SEAL_DEPTH <= 1200 < 1279 + SEAL_DEPTH.
    expect(SEAL_DEPTH).toBe(64n);
    expect(await sealedRange()).toEqual([0n, 4n * BigInt(SEGMENT_SPAN)]);
    expect((await readdir(segmentsDir())).length).toBe(1);
    expect(await checkAnswers(1200, [0n, 1024n])).toBeGreaterThan(100);
    // Compressed: the file holds far less than the sealed logs' JSON.
    const sealedJson = chain.all.filter((g) => g.blockNumber < 1024n).reduce((n, g) => n + jsonTextOf(g).length, 0);
    const file = join(segmentsDir(), (await readdir(segmentsDir()))[0] as string);
    expect((await stat(file)).size * 4).toBeLessThan(sealedJson);
    // The sealed blocks' AddressLogsJson rows are gone, the later blocks' stay.
    await store?.close();
    const db = await openDb(dir, { create: false });
    const rowBlocks: bigint[] = [];
    const prefix = { gte: Uint8Array.of(Prefix.AddressLogsJson), lt: Uint8Array.of(Prefix.AddressLogsJson + 1) };
    for await (const k of db.keys(prefix)) rowBlocks.push(Buffer.from(k).readBigUInt64BE(21));
    await db.close();
    store = await LevelChainStore.open(dir);
    expect(rowBlocks.filter((n) => n < 1024n)).toEqual([]);
    expect(rowBlocks.length).toBeGreaterThan(100);
  });

  // A sealed block's hash and transaction hashes, from the chain the test made.
  const hashesOf = (n: bigint): BlockHashes => {
    const b = n === 0n ? chain.genesis : (chain.blocks[Number(n) - 1] as BlockInput);
    return { hash: b.hash, txHashes: Buffer.concat(b.txHashes) };
  };

  for (const layout of ['uncompressed', 'withHashes'] as const)
    test(`a span sealed ${layout === 'uncompressed' ? 'uncompressed' : 'compressed with its hashes'} (an older datadir) is served as it was, beside the others; db convert seals it as now`, async () => {
      await store?.close();
      store = undefined;
      await rewriteSpanAsOlder(dir, 256n, hashesOf, layout);
      store = await LevelChainStore.open(dir);
      expect(await checkAnswers(1200, [0n, 1024n])).toBeGreaterThan(100);
      // Converted: every span sealed again (compressed, stripped), the file smaller, the same answers.
      await store.close();
      store = undefined;
      const db = await openDb(dir, { create: false });
      expect(await hasSpansToReseal(db)).toBe(true);
      await db.close();
      const r = await resealDatadirLogs(dir);
      expect(r).toMatchObject({ spansBefore: 4, spansAfter: 4 });
      expect(r.bytesAfter * (layout === 'uncompressed' ? 2 : 1)).toBeLessThan(r.bytesBefore);
      const after = await openDb(dir, { create: false });
      expect(await hasSpansToReseal(after)).toBe(false);
      await after.close();
      store = await LevelChainStore.open(dir);
      for (const [from, to] of [
        [1n, 1200n],
        [200n, 300n],
      ] as const) {
        const q = { fromBlock: from, toBlock: to, addresses: [HOT_ADDR], topics: [] };
        const want = chain.all.filter((g) => matches(g, q));
        expect(asText(await store.logsText(q, opts()))).toEqual({
          kind: 'ok',
          text: jsonArrayOf(want),
          count: want.length,
        });
      }
      expect(await checkAnswers(1200, [0n, 1024n])).toBeGreaterThan(100);
    });

  test('the cap: too-many names the same last fitting block inside and across sealed spans', async () => {
    for (const [from, to] of [
      [200, 1100],
      [300, 700],
      [1000, 1200],
    ] as const) {
      const q = { fromBlock: BigInt(from), toBlock: BigInt(to), addresses: [HOT_ADDR], topics: [] };
      const want = chain.all.filter((g) => matches(g, q));
      for (const limit of [1, 7, 100, 1000, want.length - 1]) {
        expect(await (store as LevelChainStore).logsText(q, opts(limit))).toEqual({
          kind: 'too-many',
          lastFittingBlock: (want[limit] as Gen).blockNumber - 1n,
        });
      }
      expect((await (store as LevelChainStore).logsText(q, opts(want.length)))?.kind).toBe('ok');
    }
  });

  test("a crashed seal's bytes past the recorded length are cut off by the next seal", async () => {
    const file = join(segmentsDir(), (await readdir(segmentsDir()))[0] as string);
    const before = (await stat(file)).size;
    await appendFile(file, Buffer.alloc(4096, 0x78)); // 'xxxx...': a seal that never committed
    await write(1201, 1450);
    expect(await sealedRange()).toEqual([0n, 1280n]);
    expect((await stat(file)).size).toBeGreaterThan(before);
    expect((await readFile(file)).includes(Buffer.alloc(64, 0x78))).toBe(false);
    expect(await checkAnswers(1450, [0n, 1280n])).toBeGreaterThan(100);
  });

  test('a rewind below the sealed end unseals its spans; they are sealed again once deep enough', async () => {
    await write(901, 900, async (w) => {
      const removed = await w.rewind(900n);
      expect(removed.length).toBe(550);
    });
    expect(await sealedRange()).toEqual([0n, 768n]);
    expect(await checkAnswers(900, [0n, 768n])).toBeGreaterThan(50);
    await write(901, 1500);
    expect(await sealedRange()).toEqual([0n, 1280n]);
    expect(await checkAnswers(1500, [0n, 1280n])).toBeGreaterThan(100);
  });

  test("spans the seal depth allows but not sealed (a datadir written with a greater depth): db convert's step seals them", async () => {
    // Head 1500, sealed [0, 1280): span 1024 unsealed as an earlier release at depth 256 would
    // have left it, every block's ready rows in place.
    await store?.close();
    store = undefined;
    const db = await openDb(dir, { create: false });
    try {
      const batch = db.batch();
      await (await LogSegmentSealer.open(db, dir)).unsealFrom(1279n, batch);
      for (const [k, v] of await readyRowsOf(db, 1279n)) batch.put(k, v);
      await batch.write();
      expect(await sealDueLogSegments(db, dir)).toBe(1);
      expect(await sealDueLogSegments(db, dir)).toBe(0);
    } finally {
      await db.close();
    }
    store = await LevelChainStore.open(dir);
    expect(await sealedRange()).toEqual([0n, 1280n]);
    expect(await checkAnswers(1500, [0n, 1280n])).toBeGreaterThan(100);
  });

  test('a segment file shorter than its index: the query fails with a store error, nothing is cut short', async () => {
    await store?.close();
    const file = join(segmentsDir(), (await readdir(segmentsDir()))[0] as string);
    await truncate(file, (await stat(file)).size >> 1);
    store = await LevelChainStore.open(dir);
    const q = { fromBlock: 1100n, toBlock: 1200n, addresses: [HOT_ADDR], topics: [] };
    await expect(store.logsText(q, opts())).rejects.toThrow('store unavailable: logsText failed');
    // Blocks past the sealed end still come from the rows.
    const tail = { fromBlock: 1300n, toBlock: 1400n, addresses: [HOT_ADDR], topics: [] };
    expect(asText(await store.logsText(tail, opts()))).toEqual({
      kind: 'ok',
      text: jsonArrayOf(chain.all.filter((g) => matches(g, tail))),
      count: chain.all.filter((g) => matches(g, tail)).length,
    });
  });
});
