// Test helpers for anvil (the registry's @foundry-rs/anvil 1.7.1 binary) as a live upstream:
// start it on a free loopback port from a Cancun genesis.json whose alloc funds exactly the 4 dev
// accounts anvil creates (so anvil's state equals the alloc: see ../shared/research/follow.md),
// JSON-RPC calls and batches, a workload of every tx type anvil mines, and stopping it.
import { createBlockFromRPC } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ANVIL_DEV_ACCOUNTS, cancunGenesis, freePort, repoRoot } from '@chainnode/testkit';
import { createKeyCli, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

export { freePort };

export const DEV: readonly string[] = ANVIL_DEV_ACCOUNTS;

export const GENESIS = cancunGenesis({ accounts: DEV, balance: '0x21e19e0c9bab2400000' });

/**
 * Runtime: with calldata, LOG2(data = calldata, topics = [calldata[0..32], caller]) and
 * SSTORE(calldata[0..32], caller); without calldata, REVERT.
 */
const RUNTIME = '361560195736600060003733600035366000a23360003555005b60006000fd';
export const LOGGER_INIT = `0x601f600c600039601f6000f3${RUNTIME}`;
/**
 * Init code that reverts: a failed contract creation. anvil 1.7.1 leaves an empty account at the
 * would-be contract address in its state trie (measured with eth_getProof), which geth and
 * @ethereumjs/vm do not, so the block's stateRoot cannot be reproduced: a follower of anvil
 * stops there with a stateRoot mismatch (tested as the verification-failure case).
 */
export const REVERTING_INIT = '0x60006000fd';

export interface Envelope {
  id?: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

/**
 * fetch, retried once when the connection was closed under it (a keep-alive socket the server
 * closed as the request went out: a transport race, not an answer).
 */
export async function post(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    await new Promise((r) => setTimeout(r, 100));
    return fetch(url, init);
  }
}

export async function call(url: string, method: string, params: unknown[]): Promise<Envelope> {
  const res = await post(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as Envelope;
}

export async function result<T = unknown>(url: string, method: string, params: unknown[]): Promise<T> {
  const r = await call(url, method, params);
  if (r.error !== undefined) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.result as T;
}

/**
 * anvil's receipt of `hash` once the transaction is mined. Automining happens after
 * eth_sendTransaction has answered, so a receipt asked for at once can still be null: ask again
 * until it is there, failing after `timeoutMs`.
 */
export async function minedReceipt(url: string, hash: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const t0 = Date.now();
  for (;;) {
    const receipt = await result<Record<string, unknown> | null>(url, 'eth_getTransactionReceipt', [hash]);
    if (receipt !== null) return receipt;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${hash}: no receipt from ${url} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Many calls as JSON-RPC batches of `size` (each call's id is its index); the replies in call
 * order, undefined where one is missing.
 */
export async function batchReplies(
  url: string,
  calls: [string, unknown[]][],
  size: number,
): Promise<(Envelope | undefined)[]> {
  const out: (Envelope | undefined)[] = [];
  for (let i = 0; i < calls.length; i += size) {
    const chunk = calls.slice(i, i + size);
    const res = await post(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chunk.map(([method, params], j) => ({ jsonrpc: '2.0', id: i + j, method, params }))),
    });
    const replies = (await res.json()) as Envelope[];
    if (!Array.isArray(replies)) throw new Error(`batch: ${JSON.stringify(replies).slice(0, 200)}`);
    const byId = new Map(replies.map((r) => [r.id, r]));
    chunk.forEach((_, j) => {
      out.push(byId.get(i + j));
    });
  }
  return out;
}

/** Many calls as JSON-RPC batches (in chunks of 200); envelopes in call order. */
export async function batch(url: string, calls: [string, unknown[]][]): Promise<Envelope[]> {
  const replies = await batchReplies(url, calls, 200);
  return replies.map((r) => r ?? { error: { code: 0, message: 'missing reply' } });
}

const live = new Set<() => void>();
process.on('exit', () => {
  for (const k of live) k();
});

export interface Anvil {
  url: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

export async function startAnvil(
  dir: string,
  extra: string[] = [],
  /** `hardfork`: anvil's --hardfork (default cancun; null: anvil's own default, its latest). */
  o: { genesis?: Record<string, unknown>; hardfork?: string | null } = {},
): Promise<Anvil> {
  const genesisPath = join(dir, 'anvil-genesis.json');
  await writeFile(genesisPath, JSON.stringify(o.genesis ?? GENESIS));
  const port = await freePort();
  const bin = join(repoRoot(), 'node_modules', '.bin', 'anvil');
  // node_modules/.bin/anvil is a JS launcher that spawns the platform binary: run it in its own
  // process group and stop the whole group, or the binary outlives the test (holding its pipes).
  const proc = spawn(
    bin,
    [
      '--init',
      genesisPath,
      ...(o.hardfork === null ? [] : ['--hardfork', o.hardfork ?? 'cancun']),
      '--accounts',
      '4',
      '--no-create2',
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      ...extra,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const killGroup = () => {
    try {
      if (proc.pid !== undefined) process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  live.add(killGroup);
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  for (;;) {
    try {
      await result(url, 'eth_chainId', []);
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() - t0 > 20_000) {
        killGroup();
        throw new Error(`anvil did not start:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    port,
    proc,
    stop: async () => {
      killGroup();
      await exited;
      live.delete(killGroup);
    },
  };
}

/** A tx request for eth_sendTransaction / anvil_reorg: kind k of the workload from dev account `from`. */
export function txRequest(k: number, i: number, logger: string | undefined): Record<string, unknown> {
  const from = DEV[i % 4] as string;
  const to = DEV[(i + 1) % 4] as string;
  const word = `0x${(i * 7919 + k).toString(16).padStart(64, '0')}`;
  switch (k % 7) {
    case 0: // legacy transfer
      return { from, to, value: `0x${(1000 + i).toString(16)}`, gasPrice: '0x77359400', type: '0x0', gas: '0x5208' };
    case 1: // EIP-2930 transfer with an access list
      return {
        from,
        to,
        value: '0x1',
        gasPrice: '0x77359400',
        type: '0x1',
        gas: '0x7530',
        accessList: [{ address: logger ?? to, storageKeys: [word] }],
      };
    case 2: // EIP-1559 transfer
      return {
        from,
        to,
        value: '0x2',
        maxFeePerGas: '0x77359400',
        maxPriorityFeePerGas: '0x3b9aca00',
        type: '0x2',
        gas: '0x5208',
      };
    case 3: // log-emitting, storage-writing call (1559)
      return logger === undefined
        ? { from, to, value: '0x3', type: '0x2', gas: '0x5208' }
        : { from, to: logger, data: `${word}${'ab'.repeat(i % 5)}`, type: '0x2', gas: '0x186a0' };
    case 4: // reverting call (legacy)
      return logger === undefined
        ? { from, to, value: '0x4', gasPrice: '0x77359400', type: '0x0', gas: '0x5208' }
        : { from, to: logger, data: '0x', gasPrice: '0x77359400', type: '0x0', gas: '0x186a0' };
    case 5: // contract creation (2930)
      return { from, data: LOGGER_INIT, gasPrice: '0x77359400', type: '0x1', gas: '0x30d40' };
    default: // contract creation (legacy). (Not a failing creation: see REVERTING_INIT.)
      return { from, data: LOGGER_INIT, gasPrice: '0x77359400', type: '0x0', gas: '0x30d40' };
  }
}

const EMPTY_TRIE = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
type Json = Record<string, unknown>;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;

/** Rebuilt sizes by block hash: the hash fixes header and body, so each block is rebuilt once per file. */
const rebuiltSizes = new Map<string, number>();

/** geth's `size` of a block from anvil's JSON: the RLP length of the block @ethereumjs/block rebuilds. */
export function rebuiltSize(block: Json, common: Common): number {
  let size = rebuiltSizes.get(block.hash as string);
  if (size === undefined) {
    size = createBlockFromRPC(block as never, [], { common, setHardfork: true }).serialize().length;
    rebuiltSizes.set(block.hash as string, size);
  }
  return size;
}

/**
 * Every block, transaction, log, uncle, slot and proof of `ours` compared with anvil's answers
 * (geth's rules where anvil deviates: block size, empty storage proofs, uncles of unknown blocks).
 * `extraAccounts`: addresses whose storage and proofs are compared besides the loggers and DEV.
 */
export async function compareWithAnvil(
  anvilUrl: string,
  ours: string,
  opts: {
    common: Common;
    loggers: readonly string[];
    extraAccounts?: readonly string[];
    /** geth's `size` of a block from anvil's JSON (default: rebuilt with @ethereumjs/block). */
    sizeOf?: (block: Json) => number;
    /** What this node answers for a transaction anvil answers `tx` for (default: the same). */
    expectTx?: (tx: Json) => Json | Promise<Json>;
    /** The first block this node holds (it joined the chain there; default 0). */
    from?: number;
  },
): Promise<{ blocks: number; txs: number; logs: number }> {
  const { common, loggers, expectTx } = opts;
  const sizeOf = opts.sizeOf ?? ((b: Json) => rebuiltSize(b, common));
  const head = Number(await result<string>(anvilUrl, 'eth_blockNumber', []));
  const from = opts.from ?? 0;
  const nums = Array.from({ length: head + 1 - from }, (_, i) => from + i);
  const calls: [string, unknown[]][] = nums.map((n) => ['eth_getBlockByNumber', [hexN(n), true]]);
  const [theirs, mine] = await Promise.all([batch(anvilUrl, calls), batch(ours, calls)]);
  const txHashes: string[] = [];
  const blockHashes: string[] = [];
  // Each block's expected size, computed once for the by-number and the by-hash comparisons.
  const sizes: number[] = [];
  for (const [i, n] of nums.entries()) {
    const a = theirs[i]?.result as Json;
    const o = mine[i]?.result as Json;
    expect(a).toBeTruthy();
    // geth rule for size: RLP length of [header, txs, uncles, withdrawals] rebuilt from anvil's JSON.
    const size = sizeOf(a);
    sizes.push(size);
    const want: Json = { ...a, size: hexN(size) };
    if (expectTx !== undefined) want.transactions = await Promise.all((a.transactions as Json[]).map(expectTx));
    expect([n, o]).toEqual([n, want]);
    blockHashes.push(a.hash as string);
    for (const tx of a.transactions as Json[]) txHashes.push(tx.hash as string);
  }
  // By hash, with hashes only.
  const byHash: [string, unknown[]][] = blockHashes.map((h) => ['eth_getBlockByHash', [h, false]]);
  const [ta, tm] = await Promise.all([batch(anvilUrl, byHash), batch(ours, byHash)]);
  ta.forEach((a, i) => {
    const r = a.result as Json;
    expect([i, tm[i]?.result]).toEqual([i, { ...r, size: hexN(sizes[i] as number) }]);
  });
  // Every transaction.
  const txCalls: [string, unknown[]][] = txHashes.map((h) => ['eth_getTransactionByHash', [h]]);
  const [xa, xm] = await Promise.all([batch(anvilUrl, txCalls), batch(ours, txCalls)]);
  for (let i = 0; i < xa.length; i++) {
    const a = xa[i]?.result as Json | null;
    const want = a !== null && expectTx !== undefined ? await expectTx(a) : a;
    expect([txHashes[i], xm[i]?.result]).toEqual([txHashes[i], want]);
  }
  // Uncles: none on this chain; by number and by hash null on both.
  const uncleCalls: [string, unknown[]][] = nums.flatMap((n, i) => [
    ['eth_getUncleByBlockNumberAndIndex', [hexN(n), '0x0']] as [string, unknown[]],
    ['eth_getUncleByBlockHashAndIndex', [blockHashes[i], '0x0']] as [string, unknown[]],
  ]);
  const [ua, um] = await Promise.all([batch(anvilUrl, uncleCalls), batch(ours, uncleCalls)]);
  ua.forEach((a, i) => {
    expect(a.result).toBeNull();
    expect([i, um[i]?.error, um[i]?.result]).toEqual([i, undefined, null]);
  });
  // geth rule: the uncle of an unknown block is null (anvil: -32001 "Resource not found").
  expect((await call(ours, 'eth_getUncleByBlockHashAndIndex', [`0x${'12'.repeat(32)}`, '0x0'])).result).toBeNull();
  // Logs: the whole range, by address, by topic, per block hash.
  const lo = hexN(from);
  const logQueries: Json[] = [
    { fromBlock: lo, toBlock: 'latest' },
    ...loggers.map((address) => ({ fromBlock: lo, toBlock: 'latest', address })),
    { fromBlock: lo, toBlock: 'latest', topics: [null, `0x${'00'.repeat(12)}${(DEV[3] as string).slice(2)}`] },
  ];
  let logs = 0;
  for (const q of logQueries) {
    const [a, o] = await Promise.all([call(anvilUrl, 'eth_getLogs', [q]), call(ours, 'eth_getLogs', [q])]);
    expect(o.result).toEqual(a.result);
    logs += (a.result as unknown[]).length;
    for (const l of o.result as Json[]) expect(blockHashes[Number(l.blockNumber) - from]).toBe(l.blockHash);
  }
  const perBlock: [string, unknown[]][] = blockHashes.map((h) => ['eth_getLogs', [{ blockHash: h }]]);
  const [la, lm] = await Promise.all([batch(anvilUrl, perBlock), batch(ours, perBlock)]);
  la.forEach((a, i) => {
    expect([i, lm[i]?.result]).toEqual([i, a.result]);
  });
  // State at the head: storage of every logger (the slots their calls wrote) and proofs.
  const slots = Array.from({ length: 4 }, (_, k) => `0x${(k * 7919 + 3).toString(16).padStart(64, '0')}`);
  for (const address of [...loggers, ...DEV, ...(opts.extraAccounts ?? [])]) {
    for (const slot of slots) {
      const [a, o] = await Promise.all([
        call(anvilUrl, 'eth_getStorageAt', [address, slot, 'latest']),
        call(ours, 'eth_getStorageAt', [address, slot, 'latest']),
      ]);
      expect(o.result).toEqual(a.result);
    }
    const [a, o] = await Promise.all([
      call(anvilUrl, 'eth_getProof', [address, slots, 'latest']),
      call(ours, 'eth_getProof', [address, slots, 'latest']),
    ]);
    const want = a.result as Json;
    // geth rule: an empty storage trie has no nodes to prove (anvil: ["0x80"]).
    if (want.storageHash === EMPTY_TRIE)
      want.storageProof = (want.storageProof as Json[]).map((p) => ({ ...p, proof: [] }));
    expect(o.result).toEqual(want);
  }
  return { blocks: nums.length, txs: txHashes.length, logs };
}

/**
 * Waits until `ours` serves anvil's current head as "latest" (by hash); throws after `timeoutMs`
 * with both heads and the tail of the node's output.
 */
export async function waitSynced(
  anvilUrl: string,
  ours: string,
  output: () => string,
  timeoutMs = 60_000,
): Promise<void> {
  const t0 = Date.now();
  const want = await result<Json>(anvilUrl, 'eth_getBlockByNumber', ['latest', false]);
  for (;;) {
    const got = (await call(ours, 'eth_getBlockByNumber', ['latest', false])).result as Json | null;
    if (got?.hash === want.hash) return;
    if (Date.now() - t0 > timeoutMs)
      throw new Error(
        `not synced: ours ${got?.number} ${got?.hash}, anvil ${want.number} ${want.hash}\n${output().slice(-2000)}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A node following `upstream` from an empty datadir `dir`/data: `genesis` written to
 * `dir`/genesis.json, a custom-plan key, `serve --follow <upstream> --genesis … --poll-ms 50` and
 * `args`. Returns the node, the key's URL on it and the genesis file's path.
 */
export async function startFollower(
  dir: string,
  upstream: string,
  genesis: unknown,
  args: string[],
): Promise<{ node: ServeProcess; ours: string; genesisPath: string }> {
  const genesisPath = join(dir, 'genesis.json');
  await writeFile(genesisPath, JSON.stringify(genesis));
  const datadir = join(dir, 'data');
  const { key } = await createKeyCli(datadir, 'custom');
  const node = await spawnServe(datadir, ['--follow', upstream, '--genesis', genesisPath, '--poll-ms', '50', ...args]);
  return { node, ours: node.url(key), genesisPath };
}

/** Stops a follower and its anvil and removes their directory; each may be missing (a setup that failed part way). */
export async function stopAll(
  node: ServeProcess | undefined,
  anvil: Anvil | undefined,
  temp: { cleanup: () => Promise<void> } | undefined,
): Promise<void> {
  await node?.stop('SIGTERM');
  await anvil?.stop();
  await temp?.cleanup();
}
