// Joining a live chain at block 1,000: a chainnode primary of the fixture chain is the upstream,
// behind a proxy that counts (and on demand falsifies) what passes. `sync --start-block 1000` brings
// in history from 1,000 verified by roots and hash links, and no state; `serve --follow` then
// answers:
// - every block, transaction, log and getLogs range from 1,000 to the head byte-equal to the
//   primary's;
// - state (balance, nonce, code, storage, proofs, eth_call) at random blocks >= 1,000 equal to the primary's,
//   proven on demand; the same queries again read nothing from the upstream (counted at the proxy);
// - below 1,000: geth's 4444 "pruned history unavailable"; with --history-upstream (a second
//   proxy in front of the primary) the primary's answers: blocks, transactions, receipts, raw
//   data, getLogs ranges across 1,000, state, all verified (headers by hash links down from
//   1,000, bodies and receipts by their roots, state by proofs); a history upstream that changes a
//   transaction, a log or a balance is never served;
// - a proxy that changes a balance in eth_getProof answers, or one byte of one proof node: never
//   served, the call fails with a clear error, the metrics and /health count the refusal, and the
//   truthful answer afterwards is the primary's.
// SIGKILL during the history backfill (twice, at random moments: a third kill proved the same
// again), resumed: the datadir is digest-equal to an uninterrupted one.
// With --join-state download (and a trie window of 64 blocks): block 1,000's whole state from the
// primary (a trie node that does not hash to its reference stops the sync; serve --follow on the
// datadir resumes), then every later block with its state changes; state at every block from 1,000
// equals the primary's (below the window from the flat history started at 1,000), never proven on
// demand; proofs below the window are the window's clear error.
import { spawn } from 'node:child_process';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { digestDatadir } from '@chainnode/store';
import { Sfc32, chainDir, cliBin, datadirCopy, runCli, tempDir } from '@chainnode/testkit';
import { call, result } from './anvil-upstream.js';
import { compareNodes, rawBatch } from './compare-nodes.js';
import { startJoinProxy } from './join-proxy.js';
import type { JoinProxy } from './join-proxy.js';
import { bannerOf, createKeyCli, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

const FIRST = 1000;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;
const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
const EMITTER = '0xac71dc6244075b8763fac5367375306e747c761a';
const REGISTRY = '0xc3e03991e5e0bd4a705887a58bb2d3fa2538c0c7';

const present = chainDir('fixtures') !== undefined;
const maybe = present ? describe : describe.skip;

/** `sync --start-block 1000` from the proxy into `<tmp>/joined`: history only; its digest, and a copy for --history-upstream. */
async function syncJoined(
  proxy: JoinProxy,
  genesis: string,
  tmp: string,
): Promise<{ dir: string; digest: string; historyDir: string }> {
  const dir = join(tmp, 'joined');
  const r = await runCli(
    ['sync', '--from', proxy.url, '--genesis', genesis, '--start-block', String(FIRST), '--datadir', dir],
    { timeoutMs: 600_000 },
  );
  if (r.code !== 0) throw new Error(`joining sync failed:\n${r.stderr.slice(-2000)}`);
  expect(r.stderr).toContain(`joining the chain at block ${FIRST}`);
  // History only: no state was asked for.
  expect(proxy.counts.get('chainnode_getStateDiff') ?? 0).toBe(0);
  expect(proxy.counts.get('eth_getProof') ?? 0).toBe(0);
  const digest = (await digestDatadir(dir)).digest;
  const historyDir = join(tmp, 'joined-history');
  await cp(dir, historyDir, { recursive: true });
  return { dir, digest, historyDir };
}

/**
 * Blocks, transactions, uncles, logs per block and per 100-block range, storage and proofs of
 * the token at sampled blocks (proven on demand), byte for byte; wider getLogs ranges too.
 */
async function compareJoined(primaryUrl: string, joinedUrl: string): Promise<void> {
  const seen = await compareNodes(
    primaryUrl,
    joinedUrl,
    { address: TOKEN, slots: ['0x2', `0x${'00'.repeat(31)}07`] },
    FIRST,
  );
  expect(seen.blocks).toBe(601);
  expect(seen.txs).toBeGreaterThan(3000);
  // Wider getLogs ranges, by address and topic, equal too.
  const ranges: [string, unknown[]][] = [
    ['eth_getLogs', [{ fromBlock: hexN(FIRST), toBlock: 'latest', address: EMITTER }]],
    ['eth_getLogs', [{ fromBlock: hexN(FIRST + 250), toBlock: hexN(FIRST + 420), address: TOKEN }]],
    ['eth_getLogs', [{ fromBlock: 'earliest', toBlock: hexN(FIRST + 40) }]],
  ];
  const [la, lb] = await Promise.all([
    rawBatch(primaryUrl, ranges.slice(0, 2)),
    rawBatch(joinedUrl, ranges.slice(0, 2)),
  ]);
  expect(lb).toEqual(la);
  // `earliest` is the first block held.
  expect(await result(joinedUrl, 'eth_getBlockByNumber', ['earliest', false])).toEqual(
    await result(primaryUrl, 'eth_getBlockByNumber', [hexN(FIRST), false]),
  );
}

/** 60 random state queries at blocks >= 1,000: balance, nonce, code, storage, proofs and eth_call. */
function stateCalls(accounts: string[]): [string, unknown[]][] {
  const rng = new Sfc32(0x10_00, 1, 2, 3);
  const calls: [string, unknown[]][] = [];
  for (let i = 0; i < 60; i++) {
    const block = hexN(FIRST + Math.floor(rng.next() * 601));
    const address = accounts[Math.floor(rng.next() * accounts.length)] as string;
    const slot = hexN(Math.floor(rng.next() * 8));
    calls.push(['eth_getBalance', [address, block]]);
    calls.push(['eth_getTransactionCount', [address, block]]);
    calls.push(['eth_getCode', [address, block]]);
    calls.push(['eth_getStorageAt', [address, slot, block]]);
    calls.push(['eth_getProof', [address, [slot, '0x2'], block]]);
    // eth_call runs the EVM over proven state: its first run records what it missed.
    const holder = accounts[3 + Math.floor(rng.next() * (accounts.length - 3))] as string;
    calls.push(['eth_call', [{ to: TOKEN, input: `0x70a08231${holder.slice(2).padStart(64, '0')}` }, block]]);
    calls.push(['eth_call', [{ to: TOKEN, input: '0x18160ddd' }, block]]);
  }
  return calls;
}

/** `serve --follow` over `dir` with `--history-upstream`: its URL for a new key. */
async function spawnHistoryNode(
  dir: string,
  followUrl: string,
  historyUrl: string,
): Promise<{ node: ServeProcess; url: string }> {
  const hk = await createKeyCli(dir, 'custom');
  const node = await spawnServe(dir, [
    '--threads',
    '1',
    '--follow',
    followUrl,
    '--history-upstream',
    historyUrl,
    '--poll-ms',
    '1000',
    '--metrics-port',
    '0',
  ]);
  return { node, url: node.url(hk.key) };
}

/** Queries below block 1,000 (blocks, transactions, receipts, raw data, getLogs ranges, state), as the primary has them. */
async function historyCalls(primaryUrl: string, accounts: string[]): Promise<[string, unknown[]][]> {
  const blockOf = async (n: number) =>
    (await result(primaryUrl, 'eth_getBlockByNumber', [hexN(n), true])) as {
      hash: string;
      transactions: { hash: string }[];
    };
  const calls: [string, unknown[]][] = [];
  for (const n of [0, 1, 500, 900, 990, 998, 999]) {
    const b = hexN(n);
    calls.push(['eth_getBlockByNumber', [b, false]], ['eth_getBlockByNumber', [b, true]]);
    calls.push(['eth_getBlockReceipts', [b]], ['eth_getBlockTransactionCountByNumber', [b]]);
    calls.push(['debug_getRawBlock', [b]], ['debug_getRawHeader', [b]], ['debug_getRawReceipts', [b]]);
    calls.push(['eth_getUncleCountByBlockNumber', [b]], ['eth_getTransactionByBlockNumberAndIndex', [b, '0x1']]);
  }
  let txs = 0;
  for (const n of [995, 990, 600]) {
    const blk = await blockOf(n);
    calls.push(['eth_getBlockByHash', [blk.hash, true]], ['eth_getLogs', [{ blockHash: blk.hash }]]);
    for (const t of blk.transactions.slice(0, 4)) {
      txs++;
      calls.push(['eth_getTransactionByHash', [t.hash]], ['eth_getTransactionReceipt', [t.hash]]);
      calls.push(['debug_getRawTransaction', [t.hash]]);
    }
  }
  expect(txs).toBeGreaterThan(6);
  // getLogs ranges below 1,000 and across it.
  calls.push(['eth_getLogs', [{ fromBlock: hexN(900), toBlock: hexN(FIRST + 20), address: EMITTER }]]);
  calls.push(['eth_getLogs', [{ fromBlock: hexN(950), toBlock: hexN(999), address: TOKEN }]]);
  calls.push(['eth_getLogs', [{ fromBlock: hexN(985), toBlock: hexN(FIRST + 5) }]]);
  // State below 1,000: proven against the verified headers' state roots.
  for (const n of [999, 950, 700]) {
    const b = hexN(n);
    for (const a of accounts.slice(0, 6)) {
      calls.push(['eth_getBalance', [a, b]], ['eth_getTransactionCount', [a, b]]);
    }
    calls.push(['eth_getCode', [TOKEN, b]], ['eth_getStorageAt', [TOKEN, '0x2', b]]);
    calls.push(['eth_getProof', [TOKEN, ['0x2'], b]]);
    calls.push(['eth_call', [{ to: TOKEN, input: '0x18160ddd' }, b]]);
  }
  return calls;
}

/** The node with a history upstream answers `calls` as the primary does, from the history upstream. */
async function checkHistoryAnswers(
  primaryUrl: string,
  url: string,
  calls: [string, unknown[]][],
  history: JoinProxy,
): Promise<void> {
  const want = await rawBatch(primaryUrl, calls);
  const got = await rawBatch(url, calls);
  calls.forEach((c, i) => {
    expect([c, got[i]]).toEqual([c, want[i]]);
  });
  // Real answers, not empty ones: the primary holds every block asked.
  expect(want.filter((t) => t.includes('"error"'))).toEqual([]);
  const lookups =
    /^(eth_getBlockBy|eth_getTransactionBy(Hash|BlockNumberAndIndex)|eth_getTransactionReceipt|eth_getBlockReceipts|debug_)/;
  expect(
    calls.filter((c, i) => lookups.test(c[0]) && (want[i] as string).includes('"result":null') && c[1][0] !== '0x0'),
  ).toEqual([]);
  expect(want.some((t) => /"result":\[\{"address"/.test(t))).toBe(true);
  // The headers below 1,000 were walked in batches; proofs came from the history upstream.
  expect(history.counts.get('eth_getBlockByNumber') ?? 0).toBeGreaterThan(900);
  expect(history.counts.get('eth_getProof') ?? 0).toBeGreaterThan(0);
}

/** Lies of the history upstream: a changed transaction, a changed log, a changed balance. Blocks and accounts not read yet. */
async function checkHistoryLies(
  primaryUrl: string,
  url: string,
  history: JoinProxy,
  accounts: string[],
): Promise<void> {
  const logBlocks: number[] = [];
  for (let n = 801; n < 899 && logBlocks.length < 2; n++) {
    const rs = (await result(primaryUrl, 'eth_getBlockReceipts', [hexN(n)])) as { logs: unknown[] }[];
    if (rs.some((r) => r.logs.length > 0)) logBlocks.push(n);
  }
  expect(logBlocks.length).toBe(2);
  const lies: { lie: 'tx' | 'log' | 'balance'; call: [string, unknown[]]; says: RegExp }[] = [
    {
      lie: 'tx',
      call: ['eth_getBlockByNumber', [hexN(logBlocks[0] as number), true]],
      says: /^history not verified: http:\/\/127\.0\.0\.1:\d+ answered history that does not match this node's headers \(block \d+: (transactionsRoot|transaction 0)/,
    },
    {
      lie: 'log',
      call: ['eth_getBlockReceipts', [hexN(logBlocks[1] as number)]],
      says: /^history not verified: .*(receiptsRoot|logsBloom)/,
    },
    {
      lie: 'balance',
      call: ['eth_getBalance', [accounts[7] as string, hexN(720)]],
      says: /^state not proven: http:\/\/127\.0\.0\.1:\d+ answered a proof that does not verify .*balance of/,
    },
  ];
  for (const l of lies) {
    history.lie = l.lie;
    const [m, p] = l.call;
    if (l.lie === 'log') {
      const rs = (await result(primaryUrl, m, p)) as { logs: unknown[] }[];
      expect(rs.some((r) => r.logs.length > 0)).toBe(true);
    }
    const e = await call(url, m, p);
    expect([l.lie, e.result]).toEqual([l.lie, undefined]);
    expect(e.error?.code).toBe(-32000);
    expect(e.error?.message).toMatch(l.says);
    expect(e.error?.message).toContain(history.url.replace(/\/$/, ''));
    // Still refused while the lie goes on (nothing was kept); the truth afterwards is the primary's.
    expect((await call(url, m, p)).error?.code).toBe(-32000);
    history.lie = 'none';
    expect(await rawBatch(url, [l.call])).toEqual(await rawBatch(primaryUrl, [l.call]));
  }
}

/** Lies of the follow upstream in eth_getProof (a changed balance, a flipped proof node): never served. */
async function checkProofLies(
  proxy: JoinProxy,
  joinedUrl: string,
  primaryUrl: string,
  accounts: string[],
): Promise<void> {
  // Queries no earlier test made: each must reach the upstream.
  const probe = (block: number, address: string): [string, unknown[]] => ['eth_getBalance', [address, hexN(block)]];
  const cases: { lie: 'balance' | 'node'; block: number; address: string }[] = [
    { lie: 'balance', block: FIRST + 3, address: accounts[5] as string },
    { lie: 'node', block: FIRST + 7, address: accounts[6] as string },
  ];
  for (const c of cases) {
    proxy.lie = c.lie;
    const [m, p] = probe(c.block, c.address);
    const e = await call(joinedUrl, m, p);
    expect(e.result).toBeUndefined();
    expect(e.error?.code).toBe(-32000);
    expect(e.error?.message).toMatch(
      /^state not proven: http:\/\/127\.0\.0\.1:\d+ answered a proof that does not verify/,
    );
    expect(e.error?.message).toContain(c.lie === 'balance' ? 'balance of' : 'does not lead from state root');
    // Asked again while the upstream still lies: still refused (nothing was stored).
    expect((await call(joinedUrl, m, p)).error?.code).toBe(-32000);
    proxy.lie = 'none';
    expect(await result(joinedUrl, m, p)).toEqual(await result(primaryUrl, m, p));
  }
}

/** `args` (a sync) started and SIGKILLed twice at random moments. */
async function killSyncTwice(args: string[]): Promise<void> {
  const rng = new Sfc32(0x51_61, 1, 2, 3);
  for (let k = 0; k < 2; k++) {
    const child = spawn(process.execPath, [cliBin(), ...args], { stdio: 'ignore' });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    await new Promise((r) => setTimeout(r, 1500 + Math.floor(rng.next() * 4000)));
    child.kill('SIGKILL');
    await exited;
  }
}

/** Calls below block 1,000 (`below`): blocks, state, proofs, logs and transactions. */
function prunedProbes(below: string): [string, unknown[]][] {
  return [
    ['eth_getBlockByNumber', [below, false]],
    ['eth_getBalance', [TOKEN, below]],
    ['eth_getStorageAt', [TOKEN, '0x2', '0x0']],
    ['eth_getProof', [TOKEN, [], below]],
    ['eth_getLogs', [{ fromBlock: hexN(FIRST - 100), toBlock: hexN(FIRST + 10) }]],
    ['eth_getTransactionByBlockNumberAndIndex', [below, '0x0']],
  ];
}

/** The refused history and proofs counted in the metrics; /health names the history upstream. */
async function checkHistoryRejections(node: ServeProcess): Promise<void> {
  const metricsUrl = bannerOf(node.output()).metrics;
  const text = await (await fetch(metricsUrl as string)).text();
  expect(text).toMatch(/^chainnode_history_upstream_rejected_total 4$/m);
  expect(text).toMatch(/^chainnode_proven_state_rejected_total 2$/m);
  const health = JSON.parse(await (await fetch(`${node.base}/health`)).text()) as Record<string, unknown>;
  expect(JSON.stringify(health)).toMatch(/"historyUpstream":\{"origin":"http:\/\/127\.0\.0\.1:\d+","fetches":\d+/);
}

/** `sync` joining at block 1,000 from `from` into `dir`, in groups of 8 blocks. */
function joinSyncArgs(from: string, genesis: string, dir: string): string[] {
  return [
    'sync',
    '--from',
    from,
    '--genesis',
    genesis,
    '--start-block',
    String(FIRST),
    '--datadir',
    dir,
    '--group-blocks',
    '8',
  ];
}

maybe('joining a chainnode primary of the fixture chain at block 1,000', () => {
  const procs: ServeProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  let primary: ServeProcess;
  let primaryUrl: string;
  let proxy: JoinProxy;
  let temp: { dir: string; cleanup: () => Promise<void> };
  let joined: ServeProcess;
  let joinedUrl: string;
  let genesis: string;
  let digestJoined: string;
  /** A copy of the joined datadir, served with --history-upstream. */
  let historyDir: string;
  let accounts: string[];

  beforeAll(async () => {
    const primaryDir = await datadirCopy('fixtures');
    cleanups.push(primaryDir.cleanup);
    temp = await tempDir('join-primary-');
    cleanups.push(temp.cleanup);
    const pk = await createKeyCli(primaryDir.dir, 'custom');
    primary = await spawnServe(primaryDir.dir, ['--threads', '1']);
    procs.push(primary);
    primaryUrl = primary.url(pk.key);
    proxy = await startJoinProxy(primaryUrl);
    cleanups.push(() => proxy.close());
    genesis = join(chainDir('fixtures') as string, 'genesis.json');
    const alloc = Object.keys((JSON.parse(await readFile(genesis, 'utf8')) as { alloc: object }).alloc);
    accounts = [TOKEN, EMITTER, REGISTRY, ...alloc.slice(0, 12).map((a) => (a.startsWith('0x') ? a : `0x${a}`))];
  }, 300_000);

  afterAll(async () => {
    for (const p of procs) await p.stop('SIGTERM').catch(() => undefined);
    for (const c of cleanups.reverse()) await c();
  });

  test('sync --start-block 1000: history from 1,000, verified; serve --follow answers like the primary', async () => {
    const synced = await syncJoined(proxy, genesis, temp.dir);
    const dir = synced.dir;
    digestJoined = synced.digest;
    historyDir = synced.historyDir;

    const jk = await createKeyCli(dir, 'custom');
    joined = await spawnServe(dir, [
      '--threads',
      '1',
      '--follow',
      proxy.url,
      '--poll-ms',
      '1000',
      '--metrics-port',
      '0',
    ]);
    procs.push(joined);
    joinedUrl = joined.url(jk.key);
    await compareJoined(primaryUrl, joinedUrl);
  }, 900_000);

  test('eth_call alone at a block whose state nothing read yet runs over proven state', async () => {
    const block = hexN(FIRST + 2);
    const calls: [string, unknown[]][] = [
      ['eth_call', [{ to: TOKEN, input: '0x18160ddd' }, block]],
      ['eth_estimateGas', [{ to: TOKEN, input: '0x18160ddd' }, block]],
    ];
    proxy.counts = new Map();
    const want = await rawBatch(primaryUrl, calls);
    expect(await rawBatch(joinedUrl, calls)).toEqual(want);
    expect(want[0]).toMatch(/"result":"0x0*[1-9a-f]/);
    expect(proxy.counts.get('eth_getProof') ?? 0).toBeGreaterThan(0);
  }, 120_000);

  test('state at random blocks >= 1,000 equals the primary; a second run reads nothing upstream', async () => {
    const calls = stateCalls(accounts);
    proxy.counts = new Map();
    const want = await rawBatch(primaryUrl, calls);
    const first = await rawBatch(joinedUrl, calls);
    calls.forEach((c, i) => {
      expect([c, first[i]]).toEqual([c, want[i]]);
    });
    expect(proxy.counts.get('eth_getProof') ?? 0).toBeGreaterThan(20);
    expect(first.filter((t, i) => calls[i]?.[0] === 'eth_call' && t.includes('"result":"0x')).length).toBe(120);
    proxy.counts = new Map();
    const second = await rawBatch(joinedUrl, calls);
    expect(second).toEqual(want);
    // Nothing but the follower's head polls reached the upstream.
    expect(proxy.counts.get('eth_getProof') ?? 0).toBe(0);
    expect(proxy.counts.get('eth_getCode') ?? 0).toBe(0);
  }, 600_000);

  test('below block 1,000: 4444 pruned history unavailable', async () => {
    const below = hexN(FIRST - 1);
    for (const [method, params] of prunedProbes(below)) {
      const e = await call(joinedUrl, method, params);
      expect([method, e.error]).toEqual([
        method,
        { code: 4444, message: 'pruned history unavailable', data: { firstBlock: hexN(FIRST) } },
      ]);
    }
    // The primary answers them (it holds the whole chain).
    expect((await call(primaryUrl, 'eth_getBlockByNumber', [below, false])).result).not.toBeNull();
  }, 120_000);

  test('with --history-upstream: below block 1,000 the answers of the primary, verified; its lies never served', async () => {
    const history = await startJoinProxy(primaryUrl);
    cleanups.push(() => history.close());
    const { node, url } = await spawnHistoryNode(historyDir, proxy.url, history.url);
    procs.push(node);
    const calls = await historyCalls(primaryUrl, accounts);
    await checkHistoryAnswers(primaryUrl, url, calls, history);

    await checkHistoryLies(primaryUrl, url, history, accounts);
    await checkHistoryRejections(node);
    await node.stop('SIGTERM');
  }, 600_000);

  test('a lying upstream (a changed balance, a flipped proof node) is never served', async () => {
    const health = async (): Promise<string> => (await fetch(`${joined.base}/health`)).text();
    await checkProofLies(proxy, joinedUrl, primaryUrl, accounts);
    const h = JSON.parse(await health()) as Record<string, unknown>;
    expect(JSON.stringify(h)).toMatch(/"rejected":4/);
    const metricsUrl = bannerOf(joined.output()).metrics;
    expect(metricsUrl).toBeDefined();
    const text = await (await fetch(metricsUrl as string)).text();
    expect(text).toMatch(/^chainnode_proven_state_rejected_total 4$/m);
    expect(text).toMatch(new RegExp(`^chainnode_follow_first_block ${FIRST}$`, 'm'));
  }, 120_000);

  test("--join-state download: block 1,000's whole state from the primary, checked node by node; every later state read local", async () => {
    const dir = join(temp.dir, 'downloaded');
    // A primary whose trie nodes do not hash to the hashes asked for: refused, the sync stops.
    proxy.lie = 'stateNode';
    const lied = await runCli(
      [...joinSyncArgs(proxy.url, genesis, dir), '--join-state', 'download', '--state-trie', 'window=64'],
      { timeoutMs: 120_000 },
    );
    proxy.lie = 'none';
    expect(lied.code).not.toBe(0);
    expect(lied.stderr).toMatch(
      /block 1000: state trie node mismatch: upstream says 0x[0-9a-f]{64}, computed 0x[0-9a-f]{64}/,
    );
    // `serve --follow` on the datadir the sync joined, the primary truthful: it resumes the download,
    // then follows with every later block's state changes (each block's state root checked).
    proxy.counts = new Map();
    const k = await createKeyCli(dir, 'custom');
    const node = await spawnServe(dir, ['--follow', proxy.url, '--join-state', 'download', '--poll-ms', '200']);
    procs.push(node);
    const url = node.url(k.key);
    const head = (await result(primaryUrl, 'eth_blockNumber', [])) as string;
    for (let i = 0; (await result(url, 'eth_blockNumber', [])) !== head; i++) {
      if (i > 600) throw new Error(`the joined node did not reach ${head}:\n${node.output().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(node.output()).toMatch(/state of block 1000 whole: [1-9]\d* trie nodes/);
    // /health and the metrics say so.
    const health = JSON.parse(await (await fetch(`${node.base}/health`)).text()) as {
      follow: { stateDownload?: { block: number; whole: boolean; nodes: number } };
    };
    expect(health.follow.stateDownload).toMatchObject({ block: FIRST, whole: true });
    expect(health.follow.stateDownload?.nodes).toBeGreaterThan(100);
    // The window the datadir was created with: the trie below it pruned (in cycles paced by the
    // import, so below some block above 1,000, not necessarily the last 64 blocks yet).
    let trieFrom = 0;
    for (let i = 0; trieFrom <= FIRST; i++) {
      if (i > 600) throw new Error(`the joined node did not prune its trie below any block above ${FIRST}`);
      await new Promise((r) => setTimeout(r, 100));
      const h = JSON.parse(await (await fetch(`${node.base}/health`)).text()) as { stateTrie: { trieFrom: number } };
      trieFrom = h.stateTrie.trieFrom;
    }
    expect(proxy.counts.get('chainnode_getStateNodes') ?? 0).toBeGreaterThan(0);
    expect(
      (proxy.counts.get('chainnode_getBlockRange') ?? 0) + (proxy.counts.get('chainnode_getStateDiff') ?? 0),
    ).toBeGreaterThan(0);
    // State at every block from 1,000 as the primary has it (below the window from the flat state
    // history the download started at 1,000), none of it proven on demand; a proof below the
    // window is refused with the window's error, as for a datadir from genesis.
    const calls = stateCalls(accounts);
    const want = await rawBatch(primaryUrl, calls);
    const got = await rawBatch(url, calls);
    let refused = 0;
    let proofs = 0;
    calls.forEach((c, i) => {
      const block = Number(c[1][c[1].length - 1]);
      if (c[0] === 'eth_getProof' && block < trieFrom) {
        refused++;
        expect([c, got[i]]).toEqual([
          c,
          expect.stringMatching(
            /"code":-32000,"message":"state trie for block \d+ pruned: this datadir keeps the last 64 blocks' tries/,
          ),
        ]);
      } else {
        if (c[0] === 'eth_getProof') proofs++;
        expect([c, got[i]]).toEqual([c, want[i]]);
      }
    });
    // Whatever the random blocks drew: a proof at 1,000 is below the window, one at the head in it.
    const below = await call(url, 'eth_getProof', [TOKEN, ['0x2'], hexN(FIRST)]);
    expect(below.error?.message).toMatch(
      /^state trie for block 1000 pruned: this datadir keeps the last 64 blocks' tries/,
    );
    const atHead: [string, unknown[]] = ['eth_getProof', [TOKEN, ['0x2'], head]];
    expect(await rawBatch(url, [atHead])).toEqual(await rawBatch(primaryUrl, [atHead]));
    expect(refused + proofs).toBe(60);
    expect(want.filter((t) => t.includes('"error"'))).toEqual([]);
    expect(proxy.counts.get('eth_getProof') ?? 0).toBe(0);
    await node.stop('SIGTERM');
    // The join mode is the datadir's: another one given is refused.
    const other = await runCli([...joinSyncArgs(proxy.url, genesis, dir), '--join-state', 'proofs']);
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain('joined its chain with --join-state download, fixed when it joined');
  }, 600_000);

  test('SIGKILL during the history backfill, resumed: digest-equal to the uninterrupted join', async () => {
    const dir = join(temp.dir, 'killed');
    const args = joinSyncArgs(primaryUrl, genesis, dir);
    await killSyncTwice(args);
    const r = await runCli(args, { timeoutMs: 600_000 });
    if (r.code !== 0) throw new Error(`resumed sync failed:\n${r.stderr.slice(-2000)}`);
    expect((await digestDatadir(dir)).digest).toEqual(digestJoined);
  }, 900_000);
});
