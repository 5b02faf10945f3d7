// The read-API bench's chain (bench/read.ts): anvil 1.7.1 builds it and this node follows it.
//  - anvil (--no-mining, --prune-history W: it keeps the state of its last W blocks, as a node
//    without archive does) mines `blocks` blocks from a Cancun genesis: an ERC-20-like token
//    deployed by the first dev account, then per block token transfers from the four dev accounts
//    to `holders` random addresses and plain ETH transfers to them;
//  - `serve --follow anvil` imports every block (executing it itself), then stops: the runner
//    serves that datadir, anvil keeps running with the same blocks (same hashes).
// Every reply is checked against answers computed here, independently of both servers: the
// bench's own ledger of every transfer it sent (token balances, ETH balances of the holders,
// nonces of the senders at every block, the token's code from its deployment on), and for
// receipts anvil's own receipts fetched while building (geth's shape: anvil's extra
// `blockTimestamp` and non-blob `blobGasPrice` dropped).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Interface } from 'ethers';
import { ANVIL_DEV_ACCOUNTS, cancunGenesis, compileToken } from '@chainnode/testkit';
import { spawnChild, stopChild, waitRpc } from './children.js';
import { startAnvil } from './anvil.js';
import { createKey } from './cli.js';
import { Rng } from './synth.js';
import { callMaker, mixOf, qty, shuffle } from './varied-mix.js';
import type { Call, ChainBuilder, ChainUnderTest, Mix, Reply, ServerName } from './varied-mix.js';
import { freePort } from '@chainnode/testkit';
import { arg } from './cli.js';
import type { VariedOptions } from './varied-run.js';

const DEV = ANVIL_DEV_ACCOUNTS as readonly string[];
const GENESIS = cancunGenesis({ accounts: DEV, balance: '0x21e19e0c9bab2400000' });
const SUPPLY = 10n ** 27n;
const GWEI = 1_000_000_000n;

export interface ReadChainOptions {
  cli: string;
  root: string;
  dir: string;
  blocks: number;
  txsPerBlock: number;
  holders: number;
  /** States anvil keeps (--prune-history). */
  anvilHistory: number;
  /** Bodies per mix. */
  bodies: number;
  log: (line: string) => void;
}

export type Json = Record<string, unknown>;

async function rpc(url: string, calls: [string, unknown[]][]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < calls.length; i += 500) {
    const chunk = calls.slice(i, i + 500);
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chunk.map(([method, params], j) => ({ jsonrpc: '2.0', id: j, method, params }))),
    });
    const replies = (await r.json()) as { id: number; result?: unknown; error?: { message: string } }[];
    const byId = new Map(replies.map((x) => [x.id, x]));
    chunk.forEach(([method], j) => {
      const x = byId.get(j);
      if (x === undefined || x.error !== undefined) throw new Error(`${method}: ${x?.error?.message ?? 'no reply'}`);
      out.push(x.result);
    });
  }
  return out;
}
const one = async <T>(url: string, method: string, params: unknown[]): Promise<T> =>
  (await rpc(url, [[method, params]]))[0] as T;

/** A value's history: [block, value] in block order; its value at block n is the last entry at or before n. */
class History<T> {
  private readonly at = new Map<string, [number, T][]>();
  constructor(private readonly initial: T) {}
  set(key: string, block: number, v: T): void {
    const h = this.at.get(key) ?? [];
    if (h.length > 0 && (h[h.length - 1] as [number, T])[0] === block) (h[h.length - 1] as [number, T])[1] = v;
    else h.push([block, v]);
    this.at.set(key, h);
  }
  get(key: string, block = Number.MAX_SAFE_INTEGER): T {
    const h = this.at.get(key);
    if (h === undefined) return this.initial;
    let v = this.initial;
    for (const [b, x] of h) {
      if (b > block) break;
      v = x;
    }
    return v;
  }
}

/** JSON with object keys sorted (the servers order a receipt's fields differently). */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Json).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** geth's receipt from anvil's: its extra `blockTimestamp` and `blobGasPrice` (non-blob) dropped. */
function gethReceipt(r: Json): Json {
  const { blockTimestamp: _t, blobGasPrice, ...rest } = r;
  return r.type === '0x3' ? { ...rest, blobGasPrice } : rest;
}

export interface ReadChain extends ChainUnderTest {
  /** eth_call bodies at historical blocks no mix asks (the cold measurement). */
  cold: Call[];
  /** Token reads at historical blocks asked before coldWarm, none of them in a mix or in cold. */
  warmup: Call[];
  /** As cold, other bodies: measured after warmup. */
  coldWarm: Call[];
  /** More token reads like warmup, asked after coldWarm: 10,000 other calls before coldSteady. */
  warmupMore: Call[];
  /** As cold, other bodies: measured after warmupMore (a server that has served a while). */
  coldSteady: Call[];
  /** eth_chainId bodies: the same client and transport with next to no work behind them. */
  baseline: Call[];
  /** What the chain holds, for benches that make mixes of their own (bench/traces.ts). */
  facts: ReadFacts;
}

/** The read chain's transactions as the bench sent them and anvil mined them. */
export interface ReadFacts {
  head: number;
  tokenAddress: string;
  holders: string[];
  /** Every block's receipts (geth's shape), by number. */
  blockReceipts: Map<number, Json[]>;
  /** States anvil keeps (--prune-history). */
  anvilHistory: number;
}

/** What the bench sent to anvil, block by block: the answers the servers' replies are checked against. */
interface ReadLedger {
  tokenAddress: string;
  iface: Interface;
  holders: string[];
  /** Token balances. */
  token: History<bigint>;
  /** ETH balances of the holders. */
  eth: History<bigint>;
  /** Nonces of the senders. */
  nonces: History<number>;
}

/**
 * Has anvil mine the chain. Block 1: the token; block 2: a quarter of the supply to each other
 * sender; then per block token transfers from the four dev accounts to the holders, and every
 * sixth transaction a plain ETH transfer.
 */
async function mineChain(o: ReadChainOptions, rng: Rng, anvilUrl: string): Promise<ReadLedger> {
  const { abi, bytecode } = compileToken();
  const iface = new Interface(abi as never);
  const holders = Array.from({ length: o.holders }, (_, i) =>
    `0x${(0x1000 + i).toString(16).padStart(8, '0')}${'ab'.repeat(16)}`.toLowerCase(),
  );
  const l: ReadLedger = {
    tokenAddress: '',
    iface,
    holders,
    token: new History<bigint>(0n),
    eth: new History<bigint>(0n),
    nonces: new History<number>(0),
  };
  const nonce = [0, 0, 0, 0];
  const tokenNow = new Map<string, bigint>();
  const ethNow = new Map<string, bigint>();
  const fee = { maxFeePerGas: qty(100n * GWEI), maxPriorityFeePerGas: qty(GWEI), type: '0x2' };
  const deploy = await one<string>(anvilUrl, 'eth_sendTransaction', [
    { from: DEV[0], data: `${bytecode}${iface.encodeDeploy([SUPPLY]).slice(2)}`, gas: '0x200000', ...fee },
  ]);
  nonce[0] = 1;
  await one(anvilUrl, 'evm_mine', []);
  const deployReceipt = await one<Json>(anvilUrl, 'eth_getTransactionReceipt', [deploy]);
  if (deployReceipt.status !== '0x1') throw new Error('token deployment failed');
  l.tokenAddress = (deployReceipt.contractAddress as string).toLowerCase();
  tokenNow.set(DEV[0] as string, SUPPLY);
  l.token.set(DEV[0] as string, 1, SUPPLY);
  l.nonces.set(DEV[0] as string, 1, 1);
  const sent: [string, unknown[]][] = [];
  const send = (from: number, tx: Json): void => {
    sent.push(['eth_sendTransaction', [{ from: DEV[from], ...tx, nonce: qty(nonce[from] as number), ...fee }]]);
    nonce[from] = (nonce[from] as number) + 1;
  };
  const transfer = (from: number, to: string, value: bigint): void => {
    send(from, { to: l.tokenAddress, data: iface.encodeFunctionData('transfer', [to, value]), gas: '0x186a0' });
    tokenNow.set(DEV[from] as string, (tokenNow.get(DEV[from] as string) ?? 0n) - value);
    tokenNow.set(to, (tokenNow.get(to) ?? 0n) + value);
  };
  const mine = async (block: number): Promise<void> => {
    await rpc(anvilUrl, sent.splice(0));
    await one(anvilUrl, 'evm_mine', []);
    for (const [a, v] of tokenNow) l.token.set(a, block, v);
    for (const [a, v] of ethNow) l.eth.set(a, block, v);
    DEV.forEach((a, i) => {
      l.nonces.set(a, block, nonce[i] as number);
    });
  };
  for (let i = 1; i < 4; i++) transfer(0, DEV[i] as string, SUPPLY / 4n);
  await mine(2);
  for (let b = 3; b <= o.blocks; b++) {
    for (let t = 0; t < o.txsPerBlock; t++) {
      const from = t % 4;
      const to = holders[rng.int(holders.length)] as string;
      if (t % 6 === 5) {
        const value = BigInt(1 + rng.int(1_000_000)) * GWEI;
        send(from, { to, value: qty(value), gas: '0x5208' });
        ethNow.set(to, (ethNow.get(to) ?? 0n) + value);
      } else transfer(from, to, BigInt(1 + rng.int(1_000_000_000)));
    }
    await mine(b);
    if (b % 100 === 0) o.log(`read: anvil mined block ${b}`);
  }
  return l;
}

/** anvil's answers the ledger does not hold: every receipt (in geth's shape), the token's code, the senders' balances. */
interface AnvilAnswers {
  head: number;
  blockReceipts: Map<number, Json[]>;
  receipts: Map<string, Json>;
  code: string;
  devBalances: string[];
}

async function anvilAnswers(o: ReadChainOptions, anvilUrl: string, l: ReadLedger): Promise<AnvilAnswers> {
  const head = Number(await one<string>(anvilUrl, 'eth_blockNumber', []));
  if (head !== o.blocks) throw new Error(`anvil head ${head}, expected ${o.blocks}`);
  // Every receipt (all must have succeeded: the ledger assumes so), in geth's shape.
  const blockReceipts = new Map<number, Json[]>();
  const receipts = new Map<string, Json>();
  const nums = Array.from({ length: head }, (_, i) => i + 1);
  const all = (await rpc(
    anvilUrl,
    nums.map((n) => ['eth_getBlockReceipts', [qty(n)]]),
  )) as Json[][];
  all.forEach((rs, i) => {
    const g = rs.map(gethReceipt);
    blockReceipts.set(i + 1, g);
    for (const r of g) {
      if (r.status !== '0x1') throw new Error(`block ${i + 1}: a failed transaction ${String(r.transactionHash)}`);
      receipts.set(r.transactionHash as string, r);
    }
  });
  const code = await one<string>(anvilUrl, 'eth_getCode', [l.tokenAddress, 'latest']);
  const devBalances = (await rpc(
    anvilUrl,
    DEV.map((a) => ['eth_getBalance', [a, 'latest']]),
  )) as string[];
  // The ledger agrees with anvil at the head (a check of the ledger, not of the servers).
  for (const h of [...DEV, ...l.holders.slice(0, 20)]) {
    const w = await one<string>(anvilUrl, 'eth_call', [
      { to: l.tokenAddress, data: l.iface.encodeFunctionData('balanceOf', [h]) },
      'latest',
    ]);
    if (BigInt(w) !== l.token.get(h)) throw new Error(`ledger: balanceOf ${h} ${BigInt(w)} != ${l.token.get(h)}`);
  }
  return { head, blockReceipts, receipts, code, devBalances };
}

/** This node follows anvil into its datadir up to anvil's head, then stops. */
async function followAnvil(o: ReadChainOptions, anvilUrl: string, genesisPath: string, head: number) {
  const datadir = join(o.dir, 'data');
  const key = await createKey(o.cli, datadir);
  const nodePort = await freePort();
  const t1 = Date.now();
  const args = ['serve', '--datadir', datadir, '--port', String(nodePort), '--follow', anvilUrl];
  const follower = spawnChild(process.execPath, [o.cli, ...args, '--genesis', genesisPath, '--poll-ms', '100'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const ours = `http://127.0.0.1:${nodePort}/v3/${key}`;
  await waitRpc(ours, follower);
  const want = await one<Json>(anvilUrl, 'eth_getBlockByNumber', [qty(head), false]);
  for (;;) {
    const got = (await fetch(ours, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['latest', false] }),
    }).then((r) => r.json())) as { result?: Json };
    if (got.result?.hash === want.hash) break;
    if (Date.now() - t1 > 15 * 60_000)
      throw new Error(`follow: not at anvil's head after 15 min: ${got.result?.number}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const followSecs = (Date.now() - t1) / 1000;
  o.log(`read: this node followed ${head} blocks in ${followSecs.toFixed(0)} s`);
  await stopChild(follower);
  return { datadir, followSecs };
}

/** Makers of request bodies, each with the answer it expects. */
function readCalls(o: ReadChainOptions, rng: Rng, l: ReadLedger, a: AnvilAnswers) {
  const { head } = a;
  const call = callMaker();
  const recentFrom = head - Math.min(64, o.anvilHistory) + 1;
  const oldTo = head - o.anvilHistory - 1;
  const holder = (): string => (rng.next() < 0.1 ? DEV[rng.int(4)] : l.holders[rng.int(l.holders.length)]) as string;
  const expect = new Map<string, unknown>();
  const expecting = (c: Call, answer: unknown): Call => {
    expect.set(c.body, answer);
    return c;
  };
  const word = (v: bigint): string => `0x${v.toString(16).padStart(64, '0')}`;
  const balanceOf = (block: number | 'latest', address?: string): Call => {
    const h = address ?? holder();
    const data = l.iface.encodeFunctionData('balanceOf', [h]);
    const c = call('call', 'eth_call', [{ to: l.tokenAddress, data }, block === 'latest' ? 'latest' : qty(block)]);
    return expecting(c, word(l.token.get(h, block === 'latest' ? head : block)));
  };
  const txHashes = [...a.receipts.keys()];
  const receipt = (): Call => {
    const h = txHashes[rng.int(txHashes.length)] as string;
    return expecting(call('receipt', 'eth_getTransactionReceipt', [h]), a.receipts.get(h));
  };
  const blockReceipts = (): Call => {
    const n = 1 + rng.int(head);
    return expecting(call('blockReceipts', 'eth_getBlockReceipts', [qty(n)]), a.blockReceipts.get(n));
  };
  const state = (block: number | 'latest'): Call => {
    const n = block === 'latest' ? head : block;
    const tag = block === 'latest' ? 'latest' : qty(block);
    const k = rng.int(3);
    if (k === 0) {
      // A holder's ETH balance (exact from the ledger); a sender's only at the head (fees: anvil's).
      if (block === 'latest' && rng.next() < 0.2) {
        const i = rng.int(4);
        return expecting(call('account', 'eth_getBalance', [DEV[i], tag]), a.devBalances[i]);
      }
      const h = l.holders[rng.int(l.holders.length)] as string;
      return expecting(call('account', 'eth_getBalance', [h, tag]), qty(l.eth.get(h, n)));
    }
    if (k === 1) {
      const i = rng.int(4);
      const c = call('account', 'eth_getTransactionCount', [DEV[i], tag]);
      return expecting(c, qty(l.nonces.get(DEV[i] as string, n)));
    }
    return expecting(call('account', 'eth_getCode', [l.tokenAddress, tag]), n >= 1 ? a.code : '0x');
  };
  const chainId = (): Call => expecting(call('account', 'eth_chainId', []), '0x7a69');
  const blockNumber = (): Call => expecting(call('account', 'eth_blockNumber', []), qty(head));
  const atRecent = (): number => recentFrom + rng.int(head - recentFrom + 1);
  const atOld = (): number => 2 + rng.int(oldTo - 1);
  /** An address no transfer touched (its token balance is zero): a body no other draw repeats. */
  const freshAddress = (): string =>
    `0x${Array.from({ length: 5 }, () => rng.int(0x1_0000_0000).toString(16).padStart(8, '0')).join('')}`;
  return { expect, balanceOf, receipt, blockReceipts, state, chainId, blockNumber, atRecent, atOld, freshAddress };
}

/** The mixes, and the cold measurement's bodies (read.ts). */
function readMixes(o: ReadChainOptions, rng: Rng, k: ReturnType<typeof readCalls>) {
  const n = o.bodies;
  // The eth_call mixes never repeat a call (the params; ids differ anyway): their cold pass is
  // every call asked once, none answered from the answer cache. At the head there are only ~300
  // holders, so the draws go on with addresses no transfer touched (balance zero) once a holder
  // has been asked.
  const latestCalls = distinctCalls(n, (seen) => {
    const c = k.balanceOf('latest');
    return seen.has(paramsOf(c)) ? k.balanceOf('latest', k.freshAddress()) : c;
  });
  const recentCalls = distinctCalls(n, () => k.balanceOf(k.atRecent()));
  const oldCalls = distinctCalls(n, () => k.balanceOf(k.atOld()));
  const receiptCalls = Array.from({ length: n }, k.receipt);
  const blockReceiptCalls = Array.from({ length: Math.min(n, 1000) }, k.blockReceipts);
  const stateLatest = Array.from({ length: n }, () => k.state('latest'));
  const stateOld = Array.from({ length: n }, () => k.state(k.atOld()));
  const misc: Call[] = [k.blockNumber(), k.chainId()];
  // The cold measurement: token reads at historical blocks no mix asks, and eth_chainId (the
  // transport's own cost, for comparison).
  const cold = Array.from({ length: 400 }, () => k.balanceOf(k.atOld()));
  const baseline = Array.from({ length: 2000 }, k.chainId);
  const next = () => rng.next();
  // A dApp page: token reads at the head dominate, then account reads, receipts, head polls.
  const dapp = mixOf([latestCalls, recentCalls, stateLatest, receiptCalls, misc], [0.45, 0.1, 0.2, 0.15, 0.1], n, next);
  const mixes: Mix[] = [
    { label: 'eth_call balanceOf, latest', calls: latestCalls },
    { label: 'eth_call balanceOf, random recent block (last 64)', calls: recentCalls },
    { label: `eth_call balanceOf, random historical block (older than ${o.anvilHistory})`, calls: oldCalls },
    { label: 'eth_getTransactionReceipt, random tx', calls: receiptCalls },
    { label: 'eth_getBlockReceipts, random block', calls: blockReceiptCalls },
    { label: 'eth_getBalance / eth_getTransactionCount / eth_getCode, latest', calls: stateLatest },
    { label: `eth_getBalance / eth_getTransactionCount / eth_getCode, historical`, calls: stateOld },
    {
      label: 'dApp-like (eth_call latest 45%, recent 10%, account reads 20%, receipts 15%, head 10%)',
      calls: shuffle(dapp, next),
    },
  ];
  // The same measurement after a warm-up on other bodies (the code compiled, the upper trie read):
  // 2,000 token reads at historical blocks, then 400 more to measure, none asked by a mix or above;
  // then 8,000 more and 400 to measure again (V8 is still optimizing the call path after 2,000).
  const taken = new Set([...mixes.flatMap((m) => m.calls), ...cold].map((c) => c.body));
  const fresh = (count: number): Call[] => {
    const out: Call[] = [];
    while (out.length < count) {
      const c = k.balanceOf(k.atOld());
      if (taken.has(c.body)) continue;
      taken.add(c.body);
      out.push(c);
    }
    return out;
  };
  const warmup = fresh(2000);
  const coldWarm = fresh(400);
  const warmupMore = fresh(8000);
  const coldSteady = fresh(2000);
  return {
    mixes,
    cold,
    warmup,
    coldWarm,
    warmupMore,
    coldSteady,
    baseline,
    oldBodies: new Set(
      [...oldCalls, ...stateOld, ...warmup, ...coldWarm, ...warmupMore, ...coldSteady].map((c) => c.body),
    ),
  };
}

/** A body without its id: what makes two calls the same call. */
function paramsOf(c: Call): string {
  return c.body.replace(/"id":\d+,/, '');
}

/** `count` calls of `make`, no two the same call (paramsOf); `make` sees the ones taken so far. */
function distinctCalls(count: number, make: (seen: Set<string>) => Call): Call[] {
  const seen = new Set<string>();
  const out: Call[] = [];
  for (let tries = 0; out.length < count; tries++) {
    if (tries > 50 * count) throw new Error(`read mixes: ${out.length} distinct calls of ${count} wanted`);
    const c = make(seen);
    const key = paramsOf(c);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(c);
  }
  return out;
}

/** Checks a reply against the expected answer; anvil may refuse states it pruned. */
function readChecker(expect: Map<string, unknown>, oldBodies: Set<string>): ChainUnderTest['check'] {
  return async (c: Call, r: Reply, server: ServerName): Promise<'ok' | 'unsupported'> => {
    const want = expect.get(c.body);
    if (want === undefined) throw new Error(`no expected answer for ${c.body}`);
    if (r.error !== undefined) {
      if (server === 'anvil' && oldBodies.has(c.body)) return 'unsupported';
      throw new Error(`${server}: ${c.body} -> error ${JSON.stringify(r.error)}`);
    }
    let got = r.result;
    if (server === 'anvil' && c.method === 'eth_getTransactionReceipt') got = gethReceipt(got as Json);
    if (server === 'anvil' && c.method === 'eth_getBlockReceipts') got = (got as Json[]).map(gethReceipt);
    if (canonical(got) !== canonical(want))
      throw new Error(
        `${server}: ${c.body} -> ${canonical(got).slice(0, 400)}, expected ${canonical(want).slice(0, 400)}`,
      );
    return 'ok';
  };
}

/** The read chain: token and ETH transfers mined by anvil, followed by chainnode. */
export const readBuilder: ChainBuilder<Omit<ReadChainOptions, 'dir' | 'log'>, ReadChain> = {
  name: 'read',
  build: (o, dir, log) => prepareRead({ ...o, dir, log }),
};

async function prepareRead(o: ReadChainOptions): Promise<ReadChain> {
  const rng = new Rng(36);
  const genesisPath = join(o.dir, 'genesis.json');
  writeFileSync(genesisPath, JSON.stringify(GENESIS));
  const { proc: anvil, url: anvilUrl } = await startAnvil(
    { genesisPath, port: await freePort(), fifo: true, pruneHistory: o.anvilHistory, quiet: true },
    ['ignore', 'ignore', 'inherit'],
  );
  const t0 = Date.now();
  const ledger = await mineChain(o, rng, anvilUrl);
  const answers = await anvilAnswers(o, anvilUrl, ledger);
  const { head, receipts } = answers;
  o.log(`read: anvil built ${head} blocks, ${receipts.size} txs in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const { datadir, followSecs } = await followAnvil(o, anvilUrl, genesisPath, head);
  const calls = readCalls(o, rng, ledger, answers);
  const { mixes, cold, warmup, coldWarm, warmupMore, coldSteady, baseline, oldBodies } = readMixes(o, rng, calls);
  return {
    cold,
    warmup,
    coldWarm,
    warmupMore,
    coldSteady,
    baseline,
    facts: {
      head,
      tokenAddress: ledger.tokenAddress,
      holders: ledger.holders,
      blockReceipts: answers.blockReceipts,
      anvilHistory: o.anvilHistory,
    },
    describe: `built by anvil in this run: ${head} blocks, ${receipts.size} transactions (ERC-20 transfers to ${o.holders} holders and ETH transfers), followed by this node (\`serve --follow\`: ${followSecs.toFixed(0)} s); anvil --prune-history ${o.anvilHistory}`,
    mixes,
    datadir,
    anvilUrl,
    ...(anvil.pid !== undefined ? { anvilPgid: anvil.pid } : {}),
    check: readChecker(calls.expect, oldBodies),
    normalise: () => undefined,
    anvilSkips: (calls) => new Set(calls.filter((c) => oldBodies.has(c.body)).map((c) => c.body)),
    close: () => stopChild(anvil),
  };
}

/**
 * The varied runner's options for a bench on the read chain (bench:read, bench:traces), from the
 * command line (--blocks, --txs, --holders, --anvil-history, --bodies, --duration, --connections,
 * --only, --settle, --serve-args); `wrap` makes the built chain the bench's (its own mixes).
 */
export function readChainRun(
  bench: string,
  root: string,
  cli: string,
  defaults: { connections: number; bodies: number },
  wrap: (chain: ReadChain) => ChainUnderTest,
): VariedOptions {
  const opt = (name: string, dflt: string): string => arg(name, dflt) as string;
  const blocks = Number(opt('blocks', '400'));
  const anvilHistory = Number(opt('anvil-history', '128'));
  const bodies = Number(opt('bodies', String(defaults.bodies)));
  return {
    root,
    cli,
    chain: 'scaled',
    blocks,
    anvilHistory,
    anvilProofSample: 0,
    seconds: Number(opt('duration', '6')),
    connections: Number(opt('connections', String(defaults.connections))),
    bodies,
    logBodies: 0,
    ...(process.argv.includes('--only') ? { only: opt('only', '').split(',') } : {}),
    ...(process.argv.includes('--settle') ? { settle: Number(opt('settle', '')) } : {}),
    ...(process.argv.includes('--serve-args')
      ? {
          serveArgs: opt('serve-args', '')
            .split(' ')
            .filter((x) => x !== ''),
        }
      : {}),
    command: `Command: npm run ${bench} -- ${process.argv.slice(2).join(' ')}`,
    builder: {
      name: readBuilder.name,
      build: async (_o, dir, log) => {
        const chain = await readBuilder.build(
          {
            cli,
            root,
            blocks,
            txsPerBlock: Number(opt('txs', '12')),
            holders: Number(opt('holders', '300')),
            anvilHistory,
            bodies,
          },
          dir,
          log,
        );
        return wrap(chain);
      },
    },
  };
}
