// Following an OP-stack chain of mainnet-shaped blocks (never a timed test):
// `anvil --network optimism` at its default hardfork (every OP fork through Jovian), started from
// the mainnet-shaped export's alloc with an OP devnet config, mines the export's blocks one every
// `--block-seconds` (their transactions sent first, in order); `serve --follow <anvil> --ingest
// replicate` follows it through anvil's prestateTracer diffs. Measured: from evm_mine's return (the
// block exists upstream) to the follower serving that block as its head (its eth_blockNumber,
// polled every 5 ms), per block; and whether the follower falls behind (the last blocks' lag
// against the first ones'). Every followed block's hash, state root and receipts root is checked
// against anvil's at the end.
// The follower asks anvil over HTTP and hears its new heads on anvil's WebSocket (--follow-ws,
// the same port), which wake it between its 100 ms polls; with --poll-only it polls alone, with
// --ws it follows anvil over WebSocket for everything (one socket: requests and heads).
//   npm run bench:follow-op -- --chain <dir written by npm run bench:chain> [--seconds 120]
//     [--block-seconds 2] [--threads N] [--ws | --poll-only]
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ANVIL_DEV_ACCOUNTS, freePort, opDevnetConfig } from '@chainnode/testkit';
import { percentileOf } from './src/anvil.js';
import { killAllChildren, rpc, spawnChild, stopChild, waitRpc } from './src/children.js';
import { arg, createKey, NODE_CLI, ROOT, startServe } from './src/cli.js';
import { readChain } from './src/fixture-chain.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:follow-op');

const chainDir = arg('chain');
if (chainDir === undefined) throw new Error('--chain <dir>: a mainnet-shaped export (npm run bench:chain)');
const seconds = Number(arg('seconds', '120'));
const blockSeconds = Number(arg('block-seconds', '2'));
const threads = arg('threads', '2') as string;
const overWs = process.argv.includes('--ws');
const pollOnly = process.argv.includes('--poll-only');
if (overWs && pollOnly) throw new Error('--ws and --poll-only: one or the other');
const measured = Math.floor(seconds / blockSeconds);

type Json = Record<string, unknown>;
const hexN = (n: number | bigint): string => `0x${n.toString(16)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const base = await mkdtemp(join(tmpdir(), 'bench-follow-op-'));
try {
  const exported = JSON.parse(await readFile(join(resolve(chainDir), 'genesis.json'), 'utf8')) as Json;
  const chain = readChain(join(resolve(chainDir), 'chain.rlp'));
  // Block 1 of the export deploys its contracts; the blocks after it are the measured ones.
  if (chain.length < measured + 1) throw new Error(`the export has ${chain.length} blocks: ${measured + 1} needed`);
  const config = { ...opDevnetConfig(Number((exported.config as Json).chainId)), jovianTime: 0 };
  const genesis = {
    config,
    nonce: '0x0',
    timestamp: exported.timestamp ?? '0x0',
    extraData: '0x',
    gasLimit: exported.gasLimit,
    difficulty: '0x0',
    mixHash: `0x${'00'.repeat(32)}`,
    coinbase: `0x${'00'.repeat(20)}`,
    baseFeePerGas: '0x3b9aca00',
    // anvil funds its four dev accounts (--accounts 4) whatever the alloc says: so does the file.
    alloc: {
      ...(exported.alloc as Json),
      ...Object.fromEntries(
        ANVIL_DEV_ACCOUNTS.map((a) => [a.slice(2).toLowerCase(), { balance: '0x21e19e0c9bab2400000' }]),
      ),
    },
  };
  const genesisPath = join(base, 'genesis.json');
  await writeFile(genesisPath, JSON.stringify(genesis));

  const port = await freePort();
  const anvilUrl = `http://127.0.0.1:${port}`;
  const anvil = spawnChild(
    join(ROOT, 'node_modules', '.bin', 'anvil'),
    [
      ...['--network', 'optimism', '--init', genesisPath, '--accounts', '4', '--no-create2'],
      ...['--gas-limit', String(Number(genesis.gasLimit)), '--no-mining', '--order', 'fifo'],
      ...['--port', String(port), '--host', '127.0.0.1', '--silent'],
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await waitRpc(anvilUrl, anvil);
  const hardfork = await rpc(anvilUrl, 'web3_clientVersion', []);

  /** Sends block `i`'s transactions (one request each: fifo keeps their order) and mines it; its number. */
  let rejected = 0;
  const mine = async (i: number): Promise<number> => {
    const b = chain[i] as (typeof chain)[number];
    await rpc(anvilUrl, 'anvil_setNextBlockBaseFeePerGas', [hexN(b.baseFee > 0n ? b.baseFee : 1n)]);
    for (const t of b.txs) await rpc(anvilUrl, 'eth_sendRawTransaction', [t.raw]).catch(() => rejected++);
    await rpc(anvilUrl, 'evm_mine', []);
    return Number(await rpc(anvilUrl, 'eth_blockNumber', []));
  };

  const dir = join(base, 'follower');
  const key = await createKey(NODE_CLI, dir);
  const follower = await startServe(NODE_CLI, [
    '--datadir',
    dir,
    '--follow',
    overWs ? anvilUrl.replace(/^http/, 'ws') : anvilUrl,
    ...(overWs || pollOnly ? [] : ['--follow-ws', anvilUrl.replace(/^http/, 'ws')]),
    '--genesis',
    genesisPath,
    '--ingest',
    'replicate',
    '--poll-ms',
    '100',
    '--threads',
    threads,
  ]);
  const ours = `http://127.0.0.1:${follower.port}/v3/${key}`;
  const served = async (): Promise<number> => Number(await rpc(ours, 'eth_blockNumber', []).catch(() => '0x0'));

  // The setup block (contracts deployed), followed before the clock starts.
  const health = async (): Promise<Json> =>
    (await (await fetch(`http://127.0.0.1:${follower.port}/health`)).json()) as Json;
  const setup = await mine(0);
  console.error(`bench:follow-op: setup block ${setup} mined (${rejected} transactions refused by anvil)`);
  for (const t0 = Date.now(); (await served()) < setup; await sleep(20))
    if (Date.now() - t0 > 120_000)
      throw new Error(`the follower did not reach block ${setup}: ${JSON.stringify(await health())}`);

  const minedAt = new Map<number, number>();
  const seenAt = new Map<number, number>();
  let stop = false;
  const watcher = (async () => {
    let last = setup;
    while (!stop || last < Math.max(...minedAt.keys())) {
      const n = await served();
      const now = performance.now();
      for (let k = last + 1; k <= n; k++) seenAt.set(k, now);
      if (n > last) last = n;
      await sleep(5);
    }
  })();
  const loads: number[] = [];
  const txs: number[] = [];
  for (let i = 1; i <= measured; i++) {
    const tick = performance.now();
    const n = await mine(i);
    minedAt.set(n, performance.now());
    txs.push(chain[i]?.txs.length ?? 0);
    if (i % 10 === 0) loads.push(loadavg()[0] as number);
    const left = blockSeconds * 1000 - (performance.now() - tick);
    if (left < 0)
      console.error(`bench:follow-op: block ${n} took ${Math.round(-left)} ms past its slot to send and mine`);
    await sleep(Math.max(0, left));
  }
  stop = true;
  const deadline = performance.now() + 120_000;
  while (seenAt.size < minedAt.size && performance.now() < deadline) await sleep(50);
  await watcher;

  const lags = [...minedAt].map(([n, t]) => (seenAt.get(n) ?? Number.NaN) - t);
  const third = Math.floor(lags.length / 3);
  const r1 = (x: number) => Math.round(x);
  // Every followed block against anvil's: hash, state root, receipts root, transaction count.
  let differing = 0;
  let gas = 0;
  for (const n of minedAt.keys()) {
    const [a, o] = (await Promise.all([
      rpc(anvilUrl, 'eth_getBlockByNumber', [hexN(n), false]),
      rpc(ours, 'eth_getBlockByNumber', [hexN(n), false]),
    ])) as Json[];
    gas += Number(a?.gasUsed);
    for (const f of ['hash', 'stateRoot', 'receiptsRoot', 'transactions'])
      if (JSON.stringify(a?.[f]) !== JSON.stringify(o?.[f])) differing++;
  }
  const status = await health();
  console.log(
    JSON.stringify({
      part: 'follow-op',
      upstream: `anvil --network optimism (${hardfork}), default hardfork, over ${overWs ? 'WebSocket' : pollOnly ? 'HTTP, polled' : 'HTTP, its WebSocket newHeads waking the follower'}`,
      blocks: lags.length,
      blockSeconds,
      txsPerBlockMedian: percentileOf(txs, 50),
      mgasPerBlock: Math.round(gas / lags.length / 1e5) / 10,
      rejectedTxs: rejected,
      lagMsP50: r1(percentileOf(lags, 50)),
      lagMsP90: r1(percentileOf(lags, 90)),
      lagMsP99: r1(percentileOf(lags, 99)),
      lagMsMax: r1(Math.max(...lags)),
      firstThirdP50: r1(percentileOf(lags.slice(0, third), 50)),
      lastThirdP50: r1(percentileOf(lags.slice(-third), 50)),
      differingFields: differing,
      follow: status.follow,
      threads,
      load1: loads.map((l) => l.toFixed(2)),
      cpus: cpus().length,
    }),
  );
  await stopChild(follower.proc);
  await stopChild(anvil);
} finally {
  killAllChildren();
  await rm(base, { recursive: true, force: true });
}
