// `npm run bench:read [-- --blocks 400] [--txs 12] [--holders 300] [--anvil-history 128]
//  [--bodies 2000] [--duration 6] [--connections 32] [--only <mix words>] [--serve-args "<args>"]
//  [--settle <load>]`: the read API that
// dApps and wallets call, this node beside anvil 1.7.1 on the same chain in the same run.
// The chain (bench/src/read-chain.ts) is built by anvil (an ERC-20-like token, transfers to
// `holders` addresses, ETH transfers; anvil keeps the state of its last --anvil-history blocks)
// and followed by this node (`serve --follow`); then the varied runner (bench/src/varied-run.ts)
// sends each mix to both: a cold pass (every body once), a check of every distinct reply against
// the bench's own ledger of what it sent (and anvil's receipts), and a warm closed-loop load
// whose every answer is compared with the checked reply. Mixes: eth_call balanceOf at "latest",
// at random recent blocks (anvil answers those), at random historical blocks (this node alone),
// receipts, block receipts, balances/nonces/code at the head and at historical blocks, and a
// dApp-like mix.
// Cold eth_call: right after the node starts (nothing asked yet), 400 balanceOf calls at random
// historical blocks no mix asks, one connection, one after the other; then 2,000 others (over the
// mixes' connections, so every app thread runs some) and 400 more measured (the code compiled,
// the data still never read), then 8,000 others and 2,000 more measured again; p50 as the client
// sees it, and the same client's p50 for eth_chainId over 2,000 calls (the transport's own cost):
// their difference is the server-side time of the call, near enough; and the server's CPU per call
// (its process group's user + system time over the pass, over the calls; /proc counts in 10 ms
// ticks, so ±0.03 ms at 400 calls, ±0.005 ms at 2,000).
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rawOnceThread } from './src/load-thread.js';
import { DIGEST, digest } from './src/load.js';
import { readChainRun } from './src/read-chain.js';
import type { ReadChain } from './src/read-chain.js';
import { printRunRecord } from './src/run-record.js';
import { runVaried } from './src/varied-run.js';
import type { Call, Reply } from './src/varied-mix.js';

printRunRecord('bench:read');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');

let chain: ReadChain | undefined;

/**
 * Every body once over `connections` connections (1: one after the other), each answer checked;
 * p50/p99 as the client sees them, and the server's CPU per call over the pass (ms; undefined
 * where `cpuMs` cannot read it).
 */
async function sequential(
  url: string,
  calls: Call[],
  cpuMs: () => number | undefined,
  connections = 1,
): Promise<{ p50: number; p99: number; cpu: number | undefined }> {
  const u = new URL(url);
  const cpu0 = cpuMs();
  const r = await rawOnceThread({
    host: u.hostname,
    port: Number(u.port),
    path: u.pathname,
    bodies: calls.map((c) => c.body),
    connections,
    seconds: 0,
  });
  const cpu1 = cpuMs();
  if (r.bad + r.errors > 0) throw new Error(`cold pass: ${r.bad} non-200, ${r.errors} socket errors`);
  for (const [i, c] of calls.entries()) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: c.body });
    const buf = Buffer.from(await res.arrayBuffer());
    await (chain as ReadChain).check(c, JSON.parse(buf.toString('utf8')) as Reply, 'chainnode');
    if (!digest(buf).equals(r.digests.subarray(i * DIGEST, (i + 1) * DIGEST)))
      throw new Error(`${c.body}: the cold answer differs from the checked one`);
  }
  const cpu = cpu0 === undefined || cpu1 === undefined ? undefined : (cpu1 - cpu0) / calls.length;
  return { p50: r.p50, p99: r.p99, cpu };
}

const run = readChainRun('bench:read', root, cli, { connections: 32, bodies: 2000 }, (built) => {
  chain = built;
  return built;
});
await runVaried({
  ...run,
  beforeMixes: async (url, cpuMs) => {
    const c = chain as ReadChain;
    const call = await sequential(url, c.cold, cpuMs);
    // Over the mixes' connections, so that every app thread of the server (each takes its own
    // connections) has run calls before the mixes' cold passes, as in a server that has served.
    await sequential(url, c.warmup, cpuMs, run.connections);
    const warmed = await sequential(url, c.coldWarm, cpuMs);
    await sequential(url, c.warmupMore, cpuMs, run.connections);
    const steady = await sequential(url, c.coldSteady, cpuMs);
    const base = await sequential(url, c.baseline, cpuMs);
    const ms = (v: number | undefined): string => (v === undefined ? 'n/a' : v.toFixed(3));
    const row = (what: string, r: { p50: number; p99: number; cpu: number | undefined }): string =>
      `| ${what} | ${r.p50} | ${r.p99} | ${base.p50} | ${Math.max(0, r.p50 - base.p50).toFixed(2)} | ${ms(r.cpu)} | ${ms(base.cpu)} |`;
    return [
      '\nCold eth_call (400 token balanceOf calls at random historical blocks, each body asked once, one connection, one after the other, every answer checked): first in a fresh server process (nothing asked before: its code not yet compiled), then 400 others after 2,000 others of the kind (the code compiled and the upper trie read, the bodies and their answers never asked), and 2,000 more after 10,000 others (a server that has served a while):\n',
      '| calls | client p50 ms | client p99 ms | eth_chainId p50 ms (same client) | server-side p50 ≈ ms | server CPU ms per call | eth_chainId server CPU ms per call |\n|---|---|---|---|---|---|---|',
      row('eth_call balanceOf, historical, fresh process', call),
      row('eth_call balanceOf, historical, after 2,000 others', warmed),
      row('eth_call balanceOf, historical, after 10,000 others', steady),
    ];
  },
});
