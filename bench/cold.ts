// `npm run bench:cold -- --datadir <dir> [--from fixtures] [--only <text>]`: server-side time of COLD calls (nothing
// cached: every block, transaction and storage tuple is asked once, from a freshly opened store),
// through the rpc service's handle() (params, store reads, decoding, formatting, JSON text), one call
// at a time. Prints p50/p90/p99 per kind; replies are checked against the chain export
// (bench/src/fixture-chain.ts: hashes recomputed from chain.rlp). `--only full`: only the calls
// whose row name contains the text (here the full-block row), without the getLogs table. The
// eth_getStorageAt calls are also timed warm: the same calls a second time on the store that
// answered them once (its caches filled); on a mainnet-shaped export, also at blocks between two
// changes of the slot read (token balances).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { openChainStore } from '@chainnode/store';
import { createRpcService, resolveConfig } from '@chainnode/rpc';
import { readChain } from './src/fixture-chain.js';
import { Rng } from './src/synth.js';
import { printRunRecord } from './src/run-record.js';
import { timeCalls } from './src/timed-calls.js';
import { mappingSlot } from './src/mainnet-shape/generator.js';
import type { Manifest } from './src/mainnet-shape/generator.js';

printRunRecord('bench:cold');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const arg = (name: string, dflt?: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const datadir = arg('datadir') as string;
const fromDir = resolve(arg('from', join(root, 'fixtures')) as string);
const only = arg('only');
const chain = readChain(join(fromDir, 'chain.rlp'));
const pct = (xs: number[], p: number): string =>
  ((xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] as number) * 1000).toFixed(0);

/** Times `bodies` on a freshly opened store; with `passes` > 1, the last pass (the earlier ones fill its caches). */
async function run(
  kind: string,
  bodies: string[],
  check: (i: number, reply: { result?: unknown; error?: unknown }) => void,
  passes = 1,
): Promise<void> {
  if (only !== undefined && !kind.includes(only)) return;
  const store = await openChainStore(datadir);
  const svc = createRpcService(store);
  await svc.handle('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}');
  for (let p = 1; p < passes; p++) for (const b of bodies) await svc.handle(b);
  const { times, cpu } = await timeCalls(svc, bodies, check);
  await store.close();
  console.log(
    `| ${kind} | ${bodies.length} | ${pct(times, 0.5)} | ${pct(times, 0.9)} | ${pct(times, 0.99)} | ${pct(cpu, 0.5)} | ${pct(cpu, 0.9)} |`,
  );
}

const body = (method: string, params: unknown[]): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
const rng = new Rng(3);
const order = chain.map((b) => b.number).sort(() => rng.next() - 0.5);
console.log(
  `cold calls, load average ${loadavg()[0]?.toFixed(1)}\n\n| call (each key once, fresh store) | calls | p50 µs | p90 µs | p99 µs | CPU p50 µs | CPU p90 µs |\n|---|---|---|---|---|---|---|`,
);
await run(
  'eth_getBlockByNumber, hashes',
  order.map((n) => body('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])),
  (i, r) => {
    const b = chain[(order[i] as number) - 1];
    if ((r.result as { hash: string }).hash !== b?.hash) throw new Error(`block ${order[i]}: wrong hash`);
  },
);
await run(
  'eth_getBlockByNumber, full',
  order.map((n) => body('eth_getBlockByNumber', [`0x${n.toString(16)}`, true])),
  (i, r) => {
    const b = chain[(order[i] as number) - 1] as (typeof chain)[number];
    const txs = (r.result as { transactions: { hash: string }[] }).transactions;
    if (txs.map((t) => t.hash).join() !== b.txs.map((t) => t.hash).join())
      throw new Error(`block ${order[i]}: wrong txs`);
  },
);
const txs = chain
  .flatMap((b) => b.txs.map((t) => ({ n: b.number, h: t.hash })))
  .sort(() => rng.next() - 0.5)
  .slice(0, 3000);
await run(
  'eth_getTransactionByHash',
  txs.map((t) => body('eth_getTransactionByHash', [t.h])),
  (i, r) => {
    if (Number((r.result as { blockNumber: string }).blockNumber) !== txs[i]?.n) throw new Error('tx: wrong block');
  },
);
// The fixture chain's contracts, or those a mainnet-shaped export's manifest names (pools, hot tokens).
const manifestPath = join(fromDir, 'manifest.json');
const manifest = existsSync(manifestPath) ? (JSON.parse(readFileSync(manifestPath, 'utf8')) as Manifest) : undefined;
const contracts =
  manifest === undefined
    ? [
        '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359',
        '0xac71dc6244075b8763fac5367375306e747c761a',
        '0xc3e03991e5e0bd4a705887a58bb2d3fa2538c0c7',
      ]
    : [
        ...manifest.addresses.pairs.slice(0, 3).map((p) => p.address),
        ...manifest.addresses.tokens.slice(0, manifest.addresses.hotTokens),
      ];
const tuples = Array.from({ length: 3000 }, () => [
  contracts[rng.int(contracts.length)],
  `0x${rng.int(8).toString(16)}`,
  `0x${(1 + rng.int(chain.length)).toString(16)}`,
]);
const storageWord = (_i: number, r: { result?: unknown }): void => {
  if (typeof r.result !== 'string' || r.result.length !== 66) throw new Error('storage: not a word');
};
const storageCalls = tuples.map((t) => body('eth_getStorageAt', t));
await run('eth_getStorageAt', storageCalls, storageWord);
await run('eth_getStorageAt, warm (second pass)', storageCalls, storageWord, 2);
// A mainnet-shaped export: token balances read between two of their changes (balanceOf is slot 0
// of the generator's tokens), the read an explorer or wallet makes at a block between two transfers
// of a holder. The changes are the blocks whose Transfer logs name the holder (the datadir's own
// logs, one uncapped getLogs per token); a tuple is (token, the holder's balance slot, a block
// strictly between two such blocks and in none), so its slot changed at least twice and not at
// that block. Picked by an rng of its own (the rows above keep their tuples).
if (manifest !== undefined) {
  const between = await betweenChanges(manifest.addresses.tokens.slice(0, 8), 3000);
  await run(
    'eth_getStorageAt, between changes',
    between.map((t) => body('eth_getStorageAt', t)),
    storageWord,
  );
}

// In a datadir with a state trie window, proofs below it are refused (-32000, "state trie for
// block N pruned"): counted and timed as answers, and said.
let prunedProofs = 0;
await run(
  'eth_getProof',
  tuples.map((t) => body('eth_getProof', [t[0], [t[1]], t[2]])),
  (_i, r) => {
    const message = (r.error as { message?: string } | undefined)?.message;
    if (message?.startsWith('state trie for block ') === true) prunedProofs++;
    else if (r.result === undefined) throw new Error('proof: no result');
  },
);
if (prunedProofs > 0)
  console.log(`eth_getProof: ${prunedProofs} of ${tuples.length} below the state trie window (refused)`);

// A mainnet-shaped export: getLogs over the hottest token (one store, the first call cold, the
// median of the next 9), checked against the generator's own count of that token's logs. The
// last rows raise the result cap (a service of its own, `logs.maxResults` 1,000,000) to measure
// what the default cap refuses: the hot token over 1,000 blocks and over the whole chain, the
// latter's count equal to the generator's.
if (manifest !== undefined && only === undefined) {
  const hot = manifest.addresses.tokens[0] as string;
  const head = chain.length;
  const transfer = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
  const pool = (manifest.addresses.pairs[0] as { address: string }).address;
  const hotLogs = manifest.stats.logsByAddress[hot] ?? 0;
  // The widest range whose hot-token logs stay under the 10,000-result cap, and the whole chain.
  const under = Math.max(1, Math.min(head, Math.floor((9000 * manifest.stats.blocks) / Math.max(1, hotLogs))));
  const range = (w: number): { fromBlock: string; toBlock: string } => ({
    fromBlock: `0x${(head - w + 1).toString(16)}`,
    toBlock: `0x${head.toString(16)}`,
  });
  const store = await openChainStore(datadir);
  const svc = createRpcService(store);
  const uncapped = createRpcService(
    store,
    resolveConfig({ logs: { ...resolveConfig(undefined).logs, maxResults: 1_000_000 } }),
  );
  const wide = Math.min(head, 1000);
  // What each query must answer, where it is known: the cap error for the hot token over the
  // whole chain (when the generator counted more logs than the cap), and the generator's count
  // once the cap is raised.
  const capped = hotLogs > 10_000 ? ('cap error' as const) : undefined;
  const queries: { label: string; filter: unknown; service: typeof svc; want?: number | 'cap error' }[] = [
    { label: `hot token, ${under} blocks`, filter: { address: hot, ...range(under) }, service: svc },
    {
      label: `hot token, ${head} blocks (over the result cap)`,
      filter: { address: hot, ...range(head) },
      service: svc,
      ...(capped !== undefined ? { want: capped } : {}),
    },
    {
      label: `hot token Transfer, ${under} blocks`,
      filter: { address: hot, topics: [transfer], ...range(under) },
      service: svc,
    },
    {
      label: `hot token Transfer to one pool, ${head} blocks`,
      filter: { address: hot, topics: [transfer, null, `0x${'0'.repeat(24)}${pool.slice(2)}`], ...range(head) },
      service: svc,
    },
    { label: `hot token, ${wide} blocks, cap 1,000,000`, filter: { address: hot, ...range(wide) }, service: uncapped },
    {
      label: `hot token, all ${head} blocks, cap 1,000,000`,
      filter: { address: hot, ...range(head) },
      service: uncapped,
      want: hotLogs,
    },
  ];
  console.log(
    '\n| getLogs (in process) | logs | first call ms | median of next 9 ms | CPU median ms |\n|---|---|---|---|---|',
  );
  for (const { label, filter, service, want } of queries) {
    const times: number[] = [];
    const cpu: number[] = [];
    let n: number | string = 0;
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const r = await service.handle(body('eth_getLogs', [filter]));
      const c = process.cpuUsage(c0);
      times.push(performance.now() - t0);
      cpu.push((c.user + c.system) / 1000);
      const text = r.body ?? '';
      const reply = JSON.parse(text) as { result?: unknown[]; error?: { code: number } };
      if (Array.isArray(reply.result)) n = reply.result.length;
      else if (reply.error?.code === -32005) n = 'cap error';
      else throw new Error(`${label}: ${text.slice(0, 200)}`);
    }
    if (want !== undefined && n !== want)
      throw new Error(`${label}: ${n}, expected ${want} (the generator counted ${hotLogs} hot-token logs)`);
    const rest = times.slice(1).sort((a, b) => a - b);
    const restCpu = cpu.slice(1).sort((a, b) => a - b);
    console.log(`| ${label} | ${n} | ${times[0]?.toFixed(2)} | ${rest[4]?.toFixed(2)} | ${restCpu[4]?.toFixed(2)} |`);
  }
  await store.close();
}

/**
 * `count` tuples (token, balance slot, block) with the block strictly between two changes of the
 * slot, and how many changes each has above its block (printed: what a list of a key's last
 * changes would have to hold to answer them).
 */
async function betweenChanges(tokens: string[], count: number): Promise<string[][]> {
  const store = await openChainStore(datadir);
  const svc = createRpcService(
    store,
    resolveConfig({ logs: { ...resolveConfig(undefined).logs, maxResults: 1_000_000 } }),
  );
  const transfer = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
  const gaps: { token: string; slot: string; from: number; to: number; above: number }[] = [];
  try {
    for (const token of tokens) {
      const filter = { address: token, topics: [transfer], fromBlock: '0x1', toBlock: 'latest' };
      const reply = JSON.parse((await svc.handle(body('eth_getLogs', [filter]))).body as string) as {
        result: { blockNumber: string; topics: string[] }[];
      };
      const changes = new Map<string, number[]>();
      for (const log of reply.result) {
        const n = Number(log.blockNumber);
        for (const holder of log.topics.slice(1, 3)) {
          const list = changes.get(holder) ?? [];
          if (list[list.length - 1] !== n) list.push(n);
          changes.set(holder, list);
        }
      }
      for (const [holder, ns] of changes) {
        if (BigInt(holder) === 0n) continue; // mints and burns
        const slot = `0x${Buffer.from(mappingSlot(BigInt(holder), 0n)).toString('hex')}`;
        for (let i = 1; i < ns.length; i++) {
          const [from, to] = [ns[i - 1] as number, ns[i] as number];
          if (to - from > 1) gaps.push({ token, slot, from, to, above: ns.length - i });
        }
      }
    }
  } finally {
    await store.close();
  }
  const pick = new Rng(5);
  const chosen = Array.from({ length: count }, () => gaps[pick.int(gaps.length)] as (typeof gaps)[number]);
  const within = (k: number): string => `${Math.round((100 * chosen.filter((g) => g.above <= k).length) / count)}%`;
  console.log(
    `between changes: ${gaps.length} gaps of ${tokens.length} tokens' balance slots; the tuples' changes above their block: ` +
      `<= 8: ${within(8)}, <= 16: ${within(16)}, <= 32: ${within(32)}, <= 64: ${within(64)}`,
  );
  return chosen.map((g) => [g.token, g.slot, `0x${(g.from + 1 + pick.int(g.to - g.from - 1)).toString(16)}`]);
}
