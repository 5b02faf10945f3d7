// anvil as the benches start it: from a genesis.json whose alloc it then holds exactly (no
// accounts of its own, no CREATE2 deployer), mining only when asked (evm_mine), Cancun rules.
// The dev chain of the follow and replicate benches is anvil's four dev accounts funded.
import type { ChildProcess, StdioOptions } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { ANVIL_DEV_ACCOUNTS, cancunGenesis, freePort } from '@chainnode/testkit';
import { rpc, spawnChild, stopChild, waitRpc } from './children.js';
import { ROOT } from './cli.js';

export interface AnvilFlags {
  genesisPath: string;
  port: number;
  /** How many of the mnemonic's accounts it unlocks (default 4). */
  accounts?: number;
  /** Their balance in ether, when the genesis funds them with another than anvil's default. */
  balanceEther?: bigint;
  /** Where it writes the states it evicts from memory. */
  cachePath?: string;
  /** Keep only the states of the last `pruneHistory` blocks. */
  pruneHistory?: number;
  /** Transactions in the order sent (--order fifo), not by fee. */
  fifo?: boolean;
  /** Loopback only, and no log of each request. */
  quiet?: boolean;
}

/** The anvil flags that make its genesis state equal the genesis file's alloc (see AnvilFlags). */
export function anvilFlags(o: AnvilFlags): string[] {
  return [
    '--init',
    o.genesisPath,
    ...(o.cachePath !== undefined ? ['--cache-path', o.cachePath] : []),
    '--hardfork',
    'cancun',
    '--accounts',
    String(o.accounts ?? 4),
    ...(o.balanceEther !== undefined ? ['--balance', String(o.balanceEther)] : []),
    '--no-create2',
    '--no-mining',
    ...(o.fifo === true ? ['--order', 'fifo'] : []),
    ...(o.pruneHistory !== undefined ? ['--prune-history', String(o.pruneHistory)] : []),
    '--port',
    String(o.port),
    ...(o.quiet === true ? ['--host', '127.0.0.1', '--silent'] : []),
  ];
}

export interface RunningAnvil {
  proc: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** anvil started with `flags` as a tracked child; resolves once it answers JSON-RPC. */
export async function startAnvil(flags: AnvilFlags, stdio: StdioOptions = 'ignore'): Promise<RunningAnvil> {
  const proc = spawnChild(join(ROOT, 'node_modules', '.bin', 'anvil'), anvilFlags(flags), { stdio });
  const url = `http://127.0.0.1:${flags.port}`;
  await waitRpc(url, proc);
  return { proc, url, stop: () => stopChild(proc) };
}

/** anvil on a free port from a Cancun genesis funding its four dev accounts, written into `dir`. */
export async function startDevAnvil(dir: string): Promise<RunningAnvil & { genesisPath: string }> {
  const genesisPath = join(dir, 'genesis.json');
  await writeFile(
    genesisPath,
    JSON.stringify(cancunGenesis({ accounts: ANVIL_DEV_ACCOUNTS, balance: '0x21e19e0c9bab2400000' })),
  );
  return { ...(await startAnvil({ genesisPath, port: await freePort() })), genesisPath };
}

/**
 * Sends `txs` to anvil, mines them into a block and waits until `followerUrl` serves that block
 * as its latest: the follower's lag in ms (throws after 30 s, naming `who`).
 */
export async function mineAndTrail(anvilUrl: string, followerUrl: string, txs: object[], who: string): Promise<number> {
  for (const tx of txs) await rpc(anvilUrl, 'eth_sendTransaction', [tx]);
  await rpc(anvilUrl, 'evm_mine', []);
  const mined = Date.now();
  const want = ((await rpc(anvilUrl, 'eth_getBlockByNumber', ['latest', false])) as { hash: string }).hash;
  for (;;) {
    const got = (await rpc(followerUrl, 'eth_getBlockByNumber', ['latest', false]).catch(() => null)) as {
      hash?: string;
    } | null;
    if (got?.hash === want) return Date.now() - mined;
    if (Date.now() - mined > 30_000) throw new Error(`${who} does not keep up`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * The lag part of the follow benches: `seconds` blocks, one a second, block `s` holding the
 * transactions `txsOf(s)`, each trailed by the follower (mineAndTrail); its lags in ms.
 */
export async function trailLags(
  anvilUrl: string,
  followerUrl: string,
  seconds: number,
  txsOf: (s: number) => object[],
  who: string,
): Promise<number[]> {
  const lags: number[] = [];
  for (let s = 0; s < seconds; s++) {
    const tick = Date.now();
    lags.push(await mineAndTrail(anvilUrl, followerUrl, txsOf(s), who));
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - tick))));
  }
  return lags;
}

/** The lag part's JSON line (20 transactions a block, 100 ms polls): `head` fields, the lags' p50 and p99, `tail` fields, the load. */
export function printLagLine(lags: number[], head: object, tail: object = {}): void {
  console.log(
    JSON.stringify({
      part: 'lag',
      ...head,
      blocks: lags.length,
      txsPerBlock: 20,
      pollMs: 100,
      lagMsP50: percentileOf(lags, 50),
      lagMsP99: percentileOf(lags, 99),
      ...tail,
      load1: loadavg()[0]?.toFixed(2),
      cpus: cpus().length,
    }),
  );
}

/** The median of `xs` (the mean of the middle two when their count is even); NaN when empty. */
export function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
}

/** The p-th percentile (nearest rank below) of `xs`; NaN when empty. */
export function percentileOf(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}
