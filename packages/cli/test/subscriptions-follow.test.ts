// eth_subscribe end to end: anvil (the registry's 1.7.1) mines, `node-cli serve --follow` follows
// it into its own datadir and publishes each durable commit, and real clients subscribed to OUR
// node (ethers v6 WebSocketProvider, viem webSocket transport, a raw socket) hear of it. Expected
// answers come from the upstream (anvil's own eth_getLogs / blocks, before and after the reorg),
// and the removed/new log sequence of a reorg is built from the two branches by geth's rule
// (anvil 1.7.1 itself always sends removed:false, so it cannot be the reference for that).
// The node follows anvil over WebSocket, so anvil's pending transactions reach its pending filters
// and newPendingTransactions subscriptions.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, repoRoot, tempDir } from '@chainnode/testkit';
import { Contract, JsonRpcProvider, WebSocketProvider, id as keccakText } from 'ethers';
import type { ContractEventPayload } from 'ethers';
import { createPublicClient, http, parseAbi, webSocket } from 'viem';
import type { Log } from 'viem';
import { DEV, GENESIS, LOGGER_INIT } from './anvil-upstream.js';
import { createKeyCli, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';
import { sleep, WsClient } from './subs-helpers.js';

// Calldata = topic0 (the event's signature hash) + a payload word: the log then ABI-decodes as
// `event Ping(address indexed caller, bytes32 sig, uint256 n)`.
const ABI = ['event Ping(address indexed caller, bytes32 sig, uint256 n)'];
const PING = keccakText('Ping(address,bytes32,uint256)');
const pingData = (n: number): string => `${PING}${n.toString(16).padStart(64, '0')}`;

type Json = Record<string, unknown>;

/**
 * The follower's poll, longer than the whole suite: every block after the first catch-up can only
 * arrive through anvil's newHeads waking the follower (see the test), however slow the machine.
 */
const POLL_MS = 600_000;

/** viem keeps its socket (and reconnects it) after unwatching: close it for good. */
async function closeViem(c: { transport: unknown }): Promise<void> {
  const rpc = await (c.transport as { getRpcClient: () => Promise<{ close: () => void }> }).getRpcClient();
  rpc.close();
}

/** A viem client on the node's WebSocket, watching DEV[1]'s Pings into `into`. */
function viemPings(into: Log[]) {
  const client = createPublicClient({ transport: webSocket(node.ws(key), { reconnect: false }) });
  const unwatch = client.watchContractEvent({
    address: logger as `0x${string}`,
    abi: parseAbi(ABI),
    eventName: 'Ping',
    args: { caller: DEV[1] as `0x${string}` },
    onLogs: (l) => into.push(...l),
  });
  return { client, unwatch };
}

async function rpcResult<T = unknown>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
  if (body.error !== undefined) throw new Error(`${method}: ${body.error.code} ${body.error.message}`);
  return body.result as T;
}

let temp: { dir: string; cleanup: () => Promise<void> };
let anvil: ChildProcess;
let anvilUrl: string;
let node: ServeProcess;
let key: string;
let ours: string;
let logger: string;

async function waitSynced(): Promise<number> {
  const want = await rpcResult<string>(anvilUrl, 'eth_blockNumber', []);
  const head = await rpcResult<Json>(anvilUrl, 'eth_getBlockByNumber', [want, false]);
  for (let i = 0; i < 400; i++) {
    const b = await rpcResult<Json | null>(ours, 'eth_getBlockByNumber', [want, false]).catch(() => null);
    if (b !== null && b.hash === head.hash) return Number(want);
    await sleep(50);
  }
  throw new Error(`our node did not reach block ${want}`);
}

async function ping(from: string, n: number): Promise<void> {
  await rpcResult(anvilUrl, 'eth_sendTransaction', [{ from, to: logger, data: pingData(n), gas: '0x186a0' }]);
}

async function mine(): Promise<void> {
  await rpcResult(anvilUrl, 'evm_mine', []);
}

/** `rounds` blocks, each with a Ping from DEV[1] (n + i) and one from `other` (n + 100 + i); then synced. */
async function pingRounds(rounds: number, other: string, n: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await ping(DEV[1] as string, n + i);
    await ping(other, n + 100 + i);
    await mine();
  }
  await waitSynced();
}

beforeAll(async () => {
  temp = await tempDir('subs-follow-');
  const genesisPath = join(temp.dir, 'genesis.json');
  await writeFile(genesisPath, JSON.stringify(GENESIS));
  const port = await freePort();
  anvil = spawn(
    join(repoRoot(), 'node_modules', '.bin', 'anvil'),
    [
      '--init',
      genesisPath,
      '--hardfork',
      'cancun',
      '--accounts',
      '4',
      '--no-create2',
      '--no-mining',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  anvilUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await rpcResult(anvilUrl, 'eth_chainId', []);
      break;
    } catch (err) {
      if (i > 200) throw err;
      await sleep(100);
    }
  }
  const hash = await rpcResult<string>(anvilUrl, 'eth_sendTransaction', [
    { from: DEV[0], data: LOGGER_INIT, gas: '0x30d40' },
  ]);
  await mine();
  logger = (await rpcResult<Json>(anvilUrl, 'eth_getTransactionReceipt', [hash])).contractAddress as string;
  const datadir = join(temp.dir, 'data');
  key = (await createKeyCli(datadir, 'custom')).key;
  // Followed over HTTP with the upstream's WebSocket beside (--follow-ws): its pending
  // transactions reach the node too, and its new heads wake the follower between polls (a poll
  // of POLL_MS, far longer than a wake-up takes). Following a ws:// URL itself subscribes the
  // same way (follow-replica.test, deployment.test).
  const anvilWs = `ws://127.0.0.1:${port}`;
  node = await spawnServe(datadir, [
    '--follow',
    anvilUrl,
    '--follow-ws',
    anvilWs,
    '--genesis',
    genesisPath,
    '--poll-ms',
    String(POLL_MS),
  ]);
  ours = node.url(key);
  await waitSynced();
}, 180_000);

afterAll(async () => {
  await node?.stop('SIGTERM');
  if (anvil !== undefined && anvil.exitCode === null) anvil.kill('SIGKILL');
  await temp?.cleanup();
});

/** anvil's logs of the Ping filter for caller `from` in blocks a..b (the upstream's own answer). */
async function upstreamPings(from: string, a: number, b: number): Promise<Json[]> {
  const topic1 = `0x${'00'.repeat(12)}${from.slice(2)}`;
  return rpcResult<Json[]>(anvilUrl, 'eth_getLogs', [
    { address: logger, topics: [PING, topic1], fromBlock: `0x${a.toString(16)}`, toBlock: `0x${b.toString(16)}` },
  ]);
}

test("the upstream's new heads (--follow-ws) wake the follower: each block is served long before the next poll", async () => {
  await waitSynced();
  const lags: number[] = [];
  for (let i = 0; i < 5; i++) {
    await sleep(200); // past the wake-up's minimum gap and any step in flight
    await mine();
    const t0 = Date.now();
    await waitSynced();
    lags.push(Date.now() - t0);
  }
  // Polling alone would serve none of them before the 10-minute poll; waitSynced gives up after
  // ~20 s. A stalled machine may make a lag seconds long, never minutes.
  expect(Math.max(...lags)).toBeLessThan(POLL_MS / 10);
});

test('ethers v6 WebSocketProvider: provider.on("block") and contract.on(filter) hear what the chain produces; each block readable at once', async () => {
  const start = await waitSynced();
  const provider = new WebSocketProvider(node.ws(key));
  const blocks: number[] = [];
  const readable: Promise<boolean>[] = [];
  const events: { caller: string; n: bigint; block: number; tx: string; index: number }[] = [];
  try {
    await provider.on('block', (n: number) => {
      blocks.push(n);
      // The race Erigon once had: the block a head announces must be there at once.
      readable.push(
        rpcResult<Json | null>(ours, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false]).then((b) => b !== null),
      );
    });
    const contract = new Contract(logger, ABI, provider);
    // A filter with an argument (a deferred topic filter): ethers hands the listener only the
    // event payload, whose log carries the decoded args.
    await contract.on(contract.filters.Ping!(DEV[1]), (...a: unknown[]) => {
      const { log } = a[a.length - 1] as ContractEventPayload;
      events.push({
        caller: String(log.args[0]).toLowerCase(),
        n: log.args[2] as bigint,
        block: log.blockNumber,
        tx: log.transactionHash,
        index: log.index,
      });
    });
    await sleep(1500); // let both eth_subscribe calls land (ethers does not wait for their answers)
    for (let i = 0; i < 3; i++) {
      await ping(DEV[1] as string, 100 + i);
      await ping(DEV[2] as string, 200 + i); // another caller: filtered out
      await ping(DEV[1] as string, 300 + i);
      await mine();
    }
    await waitSynced();
    for (let i = 0; i < 100 && (events.length < 6 || blocks.length < 3); i++) await sleep(50);
    expect(blocks).toEqual([start + 1, start + 2, start + 3]);
    expect(await Promise.all(readable)).toEqual([true, true, true]);
    const want = await upstreamPings(DEV[1] as string, start + 1, start + 3);
    expect(want.length).toBe(6);
    expect(events).toEqual(
      want.map((l) => ({
        caller: DEV[1],
        n: BigInt(`0x${(l.data as string).slice(66)}`),
        block: Number(l.blockNumber),
        tx: l.transactionHash,
        index: Number(l.logIndex),
      })),
    );
  } finally {
    await provider.destroy();
  }
}, 120_000);

test('viem watchBlocks and watchContractEvent over webSocket() hear the same', async () => {
  const start = await waitSynced();
  const blocks: { number: bigint; hash: string }[] = [];
  const logs: Log[] = [];
  const { client, unwatch: unwatchLogs } = viemPings(logs);
  const unwatchBlocks = client.watchBlocks({
    onBlock: (b) => blocks.push({ number: b.number as bigint, hash: b.hash as string }),
  });
  try {
    await sleep(1500); // let both eth_subscribe calls land (viem does not wait for their answers)
    await pingRounds(2, DEV[3] as string, 400);
    for (let i = 0; i < 100 && (logs.length < 2 || blocks.length < 2); i++) await sleep(50);
    const upstreamBlocks = await Promise.all(
      [start + 1, start + 2].map((n) =>
        rpcResult<Json>(anvilUrl, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false]),
      ),
    );
    expect(blocks).toEqual(upstreamBlocks.map((b) => ({ number: BigInt(b.number as string), hash: b.hash })));
    const want = await upstreamPings(DEV[1] as string, start + 1, start + 2);
    expect(logs.map((l) => [l.blockHash, l.transactionHash, l.logIndex, l.removed])).toEqual(
      want.map((l) => [l.blockHash, l.transactionHash, Number(l.logIndex), false]),
    );
  } finally {
    unwatchBlocks();
    unwatchLogs();
    await closeViem(client);
  }
}, 120_000);

/** A log as a test compares it: block hash, log index, removed. */
type Seen = [string | null, number | null, boolean | undefined];

/**
 * The two HTTP watchers of DEV[1]'s Pings a dApp would install on our node, each polling a filter
 * (eth_newFilter, then eth_getFilterChanges), and the methods each sent. ethers v6's
 * JsonRpcProvider (FilterIdEventSubscriber) polls its filter each time its block poller sees the
 * block number grow; viem's watchContractEvent (poll: true) polls every pollingInterval.
 */
async function httpPingWatchers() {
  const provider = new JsonRpcProvider(ours, undefined, { staticNetwork: true });
  provider.pollingInterval = 100;
  const sent: string[] = [];
  void provider.on('debug', (e: { action: string; payload?: { method: string } | { method: string }[] }) => {
    if (e.action === 'sendRpcPayload') for (const p of [e.payload ?? []].flat()) sent.push(p.method);
  });
  const ethersLogs: Seen[] = [];
  const contract = new Contract(logger, ABI, provider);
  await contract.on(contract.filters.Ping!(DEV[1]), (...a: unknown[]) => {
    const { log } = a[a.length - 1] as ContractEventPayload;
    ethersLogs.push([log.blockHash, log.index, log.removed]);
  });
  const viemSent: string[] = [];
  const client = createPublicClient({
    pollingInterval: 100,
    transport: http(ours, {
      onFetchRequest: async (r) => {
        for (const p of [JSON.parse(await r.clone().text())].flat()) viemSent.push((p as { method: string }).method);
      },
    }),
  });
  const viemLogs: Log[] = [];
  const unwatch = client.watchContractEvent({
    address: logger as `0x${string}`,
    abi: parseAbi(ABI),
    eventName: 'Ping',
    args: { caller: DEV[1] as `0x${string}` },
    poll: true,
    onLogs: (l) => viemLogs.push(...l),
  });
  /** Both polled filters, not their getLogs fallbacks. */
  const polledFilters = (): void => {
    for (const methods of [sent, viemSent]) {
      expect(methods).toContain('eth_newFilter');
      expect(methods).toContain('eth_getFilterChanges');
      expect(methods).not.toContain('eth_getLogs');
    }
  };
  const stop = async (): Promise<void> => {
    unwatch();
    await contract.removeAllListeners();
    provider.destroy();
  };
  return { provider, ethersLogs, client, viemLogs, polledFilters, stop };
}

const seen = (l: Log): Seen => [l.blockHash, l.logIndex, l.removed];

test('over HTTP, polled filters: ethers v6 JsonRpcProvider contract.on(filter), viem watchContractEvent and createBlockFilter hear each event once', async () => {
  const start = await waitSynced();
  const watchers = await httpPingWatchers();
  const { ethersLogs, viemLogs, client } = watchers;
  try {
    const blockFilter = await client.createBlockFilter();
    await sleep(500); // both filters installed
    await pingRounds(3, DEV[2] as string, 1000);
    for (let i = 0; i < 100 && (ethersLogs.length < 3 || viemLogs.length < 3); i++) await sleep(50);
    await sleep(300); // nothing more may come
    const want = await upstreamPings(DEV[1] as string, start + 1, start + 3);
    expect(ethersLogs).toEqual(want.map((l) => [l.blockHash, Number(l.logIndex), false]));
    expect(viemLogs.map(seen)).toEqual(ethersLogs);
    const upstreamBlocks = await Promise.all(
      [start + 1, start + 2, start + 3].map((n) =>
        rpcResult<Json>(anvilUrl, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false]),
      ),
    );
    expect(await client.getFilterChanges({ filter: blockFilter })).toEqual(upstreamBlocks.map((b) => b.hash));
    expect(await client.getFilterChanges({ filter: blockFilter })).toEqual([]);
    watchers.polledFilters();
  } finally {
    await watchers.stop();
  }
}, 120_000);

/** The log JSON (eth_getLogs shape) with `removed` as given; anvil's own objects minus its `removed`. */
const asNotified = (l: Json, block: Json, removed: boolean): Json => ({
  address: l.address,
  topics: l.topics,
  data: l.data,
  blockNumber: l.blockNumber,
  transactionHash: l.transactionHash,
  transactionIndex: l.transactionIndex,
  blockHash: l.blockHash,
  blockTimestamp: block.timestamp,
  logIndex: l.logIndex,
  removed,
});

/**
 * ethers v6 does not hand a removed log (removed: true) to contract.on's listener: its provider
 * emits it as an orphan event, `{ orphan: 'drop-log', log }`, keyed by the whole log as the
 * Log's toJSON() has it. Listen for those of `logs` (anvil's JSON), into `into`. (The filter
 * `log.removedEvent()` builds lacks `_type`, `removed` and `transactionIndex`, so in 6.17 a
 * listener made with it never hears the removal.)
 */
function onEthersRemoved(provider: JsonRpcProvider, logs: Json[], into: Seen[]): void {
  for (const l of logs) {
    const log = {
      _type: 'log',
      address: String(l.address),
      blockHash: String(l.blockHash),
      blockNumber: Number(l.blockNumber),
      data: String(l.data),
      index: Number(l.logIndex),
      removed: true,
      topics: l.topics as string[],
      transactionHash: String(l.transactionHash),
      transactionIndex: Number(l.transactionIndex),
    };
    void provider.on({ orphan: 'drop-log', log }, (r: { blockHash: string; index: number; removed: boolean }) =>
      into.push([r.blockHash, r.index, r.removed]),
    );
  }
}

test('anvil_reorg: removed:true logs of the dropped blocks (geth order), then the new branch; viem onLogs sees them; a head per new block', async () => {
  // Three blocks with Ping logs from DEV[1] (and noise), then a reorg of depth 2 with replacements.
  const start = await waitSynced();
  for (let i = 0; i < 3; i++) {
    await ping(DEV[1] as string, 600 + i);
    await ping(DEV[2] as string, 700 + i);
    await ping(DEV[1] as string, 800 + i);
    await mine();
  }
  const top = await waitSynced();
  expect(top).toBe(start + 3);
  const raw = await WsClient.open(node.ws(key));
  const sub = await raw.subscribe([
    'logs',
    { address: logger, topics: [PING, `0x${'00'.repeat(12)}${(DEV[1] as string).slice(2)}`] },
  ]);
  const heads = await raw.subscribe(['newHeads']);
  // The same over HTTP, polled: a log filter and a block filter made now (at block top).
  const logFilter = await rpcResult<string>(ours, 'eth_newFilter', [
    { address: logger, topics: [PING, `0x${'00'.repeat(12)}${(DEV[1] as string).slice(2)}`] },
  ]);
  const blockFilter = await rpcResult<string>(ours, 'eth_newBlockFilter', []);
  expect(await rpcResult(ours, 'eth_getFilterChanges', [logFilter])).toEqual([]);
  const viemLogs: Log[] = [];
  const { client, unwatch } = viemPings(viemLogs);
  // And the HTTP watchers of dApps (ethers v6 contract.on, viem watchContractEvent), polling filters.
  const watchers = await httpPingWatchers();
  const { ethersLogs, viemLogs: viemHttpLogs } = watchers;
  try {
    await sleep(500);

    // The branch about to be dropped, as the upstream has it now (blocks top-1, top).
    const oldBlocks = await Promise.all(
      [top - 1, top].map((n) => rpcResult<Json>(anvilUrl, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false])),
    );
    const oldLogs = await Promise.all(
      oldBlocks.map((b) =>
        rpcResult<Json[]>(anvilUrl, 'eth_getLogs', [
          { blockHash: b.hash, address: logger, topics: [PING, `0x${'00'.repeat(12)}${(DEV[1] as string).slice(2)}`] },
        ]),
      ),
    );
    onEthersRemoved(watchers.provider, oldLogs.flat(), ethersLogs);
    // Replacements: one Ping from DEV[1] in the first new block, two (one of them DEV[3]'s) in the second.
    const req = (from: string, n: number): Json => ({ from, to: logger, data: pingData(n), gas: '0x186a0' });
    await rpcResult(anvilUrl, 'anvil_reorg', [
      2,
      [
        [req(DEV[1] as string, 900), 0],
        [req(DEV[3] as string, 901), 1],
        [req(DEV[1] as string, 902), 1],
      ],
    ]);
    await waitSynced();
    const newBlocks = await Promise.all(
      [top - 1, top].map((n) => rpcResult<Json>(anvilUrl, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false])),
    );
    expect(newBlocks.map((b) => b.hash)).not.toEqual(oldBlocks.map((b) => b.hash));
    const newLogs = await Promise.all(
      newBlocks.map((b) =>
        rpcResult<Json[]>(anvilUrl, 'eth_getLogs', [
          { blockHash: b.hash, address: logger, topics: [PING, `0x${'00'.repeat(12)}${(DEV[1] as string).slice(2)}`] },
        ]),
      ),
    );
    // geth's rule, from the two branches: dropped blocks oldest first, each in log-index order, removed:true; then the new ones.
    const byIndex = (a: Json, b: Json): number => Number(a.logIndex) - Number(b.logIndex);
    const want = [
      ...oldLogs.flatMap((ls, i) => [...ls].sort(byIndex).map((l) => asNotified(l, oldBlocks[i] as Json, true))),
      ...newLogs.flatMap((ls, i) => ls.map((l) => asNotified(l, newBlocks[i] as Json, false))),
    ];
    expect(want.filter((l) => l.removed === true).length).toBe(4);
    expect(want.filter((l) => l.removed === false).length).toBe(2);
    await raw.until(() => raw.notifications(sub).length >= want.length && raw.notifications(heads).length >= 2);
    await sleep(300); // nothing more may come
    expect(raw.notifications(sub).map((n) => n.result)).toEqual(want);
    expect(raw.notifications(heads).map((n) => n.result.hash)).toEqual(newBlocks.map((b) => b.hash));
    // geth's filters after a reorg: the removed logs (removed:true), then the new branch's; each once.
    expect(await rpcResult(ours, 'eth_getFilterChanges', [logFilter])).toEqual(want);
    expect(await rpcResult(ours, 'eth_getFilterChanges', [logFilter])).toEqual([]);
    expect(await rpcResult(ours, 'eth_getFilterChanges', [blockFilter])).toEqual(newBlocks.map((b) => b.hash));
    expect(await rpcResult(ours, 'eth_uninstallFilter', [logFilter])).toBe(true);
    const wantSeen = want.map((l) => [l.blockHash, Number(l.logIndex), l.removed]);
    for (let i = 0; i < 100 && viemLogs.length < want.length; i++) await sleep(50);
    expect(viemLogs.map(seen)).toEqual(wantSeen);
    // ethers polls its filter only when the block number grows, and the reorg kept the height:
    // it hears the reorg at the next block (an empty one). Its contract.on listener gets the new
    // branch's logs; the removed ones come as orphan events (onEthersRemoved), before them.
    await mine();
    await waitSynced();
    for (let i = 0; i < 100 && (ethersLogs.length < want.length || viemHttpLogs.length < want.length); i++) {
      await sleep(50);
    }
    await sleep(200); // nothing more may come
    expect(ethersLogs).toEqual(wantSeen);
    expect(viemHttpLogs.map(seen)).toEqual(wantSeen);
    watchers.polledFilters();
  } finally {
    unwatch();
    await closeViem(client);
    raw.close();
    await watchers.stop();
  }
}, 120_000);

test('a transaction sent straight to the upstream (heard on its WebSocket, --follow-ws) is reported once by newPendingTransactions and by a pending-transaction filter', async () => {
  await waitSynced();
  const filter = await rpcResult<string>(ours, 'eth_newPendingTransactionFilter', []);
  const raw = await WsClient.open(node.ws(key));
  try {
    const sub = await raw.subscribe(['newPendingTransactions']);
    await sleep(300); // the subscription has read where the journal stands
    const hash = await rpcResult<string>(anvilUrl, 'eth_sendTransaction', [
      { from: DEV[3], to: DEV[3], value: '0x1', gas: '0x5208' },
    ]);
    const seen: string[] = [];
    for (let i = 0; i < 100 && !seen.includes(hash); i++) {
      seen.push(...(await rpcResult<string[]>(ours, 'eth_getFilterChanges', [filter])));
      if (!seen.includes(hash)) await sleep(50);
    }
    await raw.until(() => raw.notifications(sub).length >= 1);
    await mine(); // the node reports it once, mined or not
    await waitSynced();
    await sleep(1200); // a journal read of the subscription and nothing more
    seen.push(...(await rpcResult<string[]>(ours, 'eth_getFilterChanges', [filter])));
    expect(seen).toEqual([hash]);
    expect(raw.notifications(sub).map((n) => n.result)).toEqual([hash]);
  } finally {
    raw.close();
  }
}, 30_000);
