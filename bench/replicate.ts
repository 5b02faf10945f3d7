// Replication benchmark (never a timed test). In one run, per chain (the fixture chain, the
// execution-apis chain, and any other export given with --chain <dir>):
//  1. the executing import of the chain's export (genesis.json + chain.rlp) into a fresh datadir;
//  2. a chainnode primary (`serve`, a child process) on that datadir, and replication from it
//     (`--ingest replicate`, in this process) into another fresh datadir, with where its time
//     goes: waiting for the primary, decoding, recomputing roots, applying state changes (trie
//     updates and hashing), writing batches.
// Then 3. head lag while anvil mines one block per second (20 transactions, a third of them
// storage-writing, log-emitting calls), followed by `serve --follow --ingest replicate`.
//   npm run bench:replicate [-- --seconds 60] [--chain <dir>]... [--lag-only]
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { ReplicationTimings, followUpstream, importChain } from '@chainnode/ingest';
import { EXECUTED_ONLY, digestDatadir, sizeOnDisk } from '@chainnode/store';
import { ANVIL_DEV_ACCOUNTS } from '@chainnode/testkit';
import { printLagLine, startDevAnvil, trailLags } from './src/anvil.js';
import { processCpuMs, rpc } from './src/children.js';
import { arg, createKey, startServe } from './src/cli.js';
import { printRunRecord } from './src/run-record.js';

printRunRecord('bench:replicate');

const root = resolve('.');
const cli = join(root, 'packages', 'cli', 'bin', 'node-cli.js');
const args = process.argv.slice(2);
const lagSeconds = Number(arg('seconds', '60'));
const lagOnly = args.includes('--lag-only');
const chains: string[] = [];
for (let i = 0; i < args.length; i++) if (args[i] === '--chain') chains.push(resolve(args[i + 1] as string));
if (chains.length === 0) {
  chains.push(join(root, 'fixtures'));
  const ea = resolve(root, '..', 'shared', 'chains', 'execution-apis');
  if (existsSync(join(ea, 'chain.rlp'))) chains.push(ea);
}

const serve = (argv: string[]) => startServe(cli, ['--threads', '1', ...argv]);

const key = (datadir: string): Promise<string> => createKey(cli, datadir);

const r1 = (x: number) => Math.round(x * 10) / 10;

const base = await mkdtemp(join(tmpdir(), 'bench-replicate-'));
const kill: ChildProcess[] = [];
try {
  if (!lagOnly) {
    for (const chain of chains) {
      const name = basename(chain);
      const executedDir = join(base, `${name}-executed`);
      const load0 = loadavg()[0];
      let t0 = performance.now();
      const imp = await importChain({ from: chain, datadir: executedDir });
      const execSecs = (performance.now() - t0) / 1000;
      const pk = await key(executedDir);
      const primary = await serve(['--datadir', executedDir]);
      kill.push(primary.proc);
      const timings = new ReplicationTimings();
      const replicaDir = join(base, `${name}-replica`);
      // CPU of both sides over the replication alone (the primary's start and the import before excluded).
      const primaryCpu0 = processCpuMs(primary.proc.pid as number);
      const replicaCpu0 = process.cpuUsage();
      t0 = performance.now();
      const rep = await followUpstream({
        url: `http://127.0.0.1:${primary.port}/v3/${pk}`,
        datadir: replicaDir,
        genesisPath: join(chain, 'genesis.json'),
        ingest: 'replicate',
        timings,
      });
      const repSecs = (performance.now() - t0) / 1000;
      const replicaCpu = process.cpuUsage(replicaCpu0);
      const primaryCpuSeconds = (processCpuMs(primary.proc.pid as number) - primaryCpu0) / 1000;
      // The primary lets go of its datadir before both stores are digested.
      await new Promise<void>((res) => {
        primary.proc.once('exit', () => res());
        primary.proc.kill('SIGTERM');
      });
      const [de, dr] = await Promise.all([
        digestDatadir(executedDir, undefined, EXECUTED_ONLY),
        digestDatadir(replicaDir, undefined, EXECUTED_ONLY),
      ]);
      if (de.digest !== dr.digest) throw new Error(`${name}: the replica's store differs from the executed one`);
      const mgas = Number(timings.gas) / 1e6;
      console.log(
        JSON.stringify({
          part: 'throughput',
          chain: name,
          blocks: imp.blocks,
          txs: imp.txs,
          logs: imp.logs,
          mgas: r1(mgas),
          datadirMiB: r1((await sizeOnDisk(executedDir)) / 2 ** 20),
          executeSeconds: r1(execSecs),
          executeBlocksPerSec: r1(imp.blocks / execSecs),
          executeMgasPerSec: r1(mgas / execSecs),
          replicateSeconds: r1(repSecs),
          replicateBlocksPerSec: r1(rep.blocks / repSecs),
          replicateMgasPerSec: r1(mgas / repSecs),
          speedup: r1(execSecs / repSecs),
          replicaCpuSeconds: r1((replicaCpu.user + replicaCpu.system) / 1e6),
          primaryCpuSeconds: r1(primaryCpuSeconds),
          replicateMs: {
            waitingForPrimary: Math.round(timings.fetchWaitMs),
            decode: Math.round(timings.decodeMs),
            roots: Math.round(timings.rootsMs),
            stateTrie: Math.round(timings.stateMs),
            writes: Math.round(timings.writeMs),
          },
          storesDigestEqual: true,
          load1Before: load0?.toFixed(2),
          load1After: loadavg()[0]?.toFixed(2),
        }),
      );
    }
  }

  // Head lag while anvil mines 1 block/s, replicated.
  const anvil = await startDevAnvil(base);
  const anvilUrl = anvil.url;
  const gpath = anvil.genesisPath;
  try {
    const dev = [...ANVIL_DEV_ACCOUNTS];
    // A logger contract: calls write one storage slot and emit one log.
    const runtime = '361560195736600060003733600035366000a23360003555005b60006000fd';
    await rpc(anvilUrl, 'eth_sendTransaction', [
      { from: dev[0], data: `0x601f600c600039601f6000f3${runtime}`, gas: '0x30d40' },
    ]);
    await rpc(anvilUrl, 'evm_mine', []);
    const first = (await rpc(anvilUrl, 'eth_getBlockByNumber', ['latest', true])) as {
      transactions: { hash: string }[];
    };
    const logger = (
      (await rpc(anvilUrl, 'eth_getTransactionReceipt', [first.transactions[0]?.hash])) as { contractAddress: string }
    ).contractAddress;
    const fdir = join(base, 'follower');
    const fk = await key(fdir);
    const follower = await serve([
      '--datadir',
      fdir,
      '--follow',
      anvilUrl,
      '--genesis',
      gpath,
      '--ingest',
      'replicate',
      '--poll-ms',
      '100',
    ]);
    kill.push(follower.proc);
    const fUrl = `http://127.0.0.1:${follower.port}/v3/${fk}`;
    const txsOf = (s: number): object[] =>
      Array.from({ length: 20 }, (_, i) =>
        i % 3 === 0
          ? { from: dev[i % 4], to: logger, data: `0x${(s * 20 + i).toString(16).padStart(64, '0')}`, gas: '0x186a0' }
          : { from: dev[i % 4], to: dev[(i + 1) % 4], value: '0x1', gas: '0x5208' },
      );
    const lags = await trailLags(anvilUrl, fUrl, lagSeconds, txsOf, 'the replica');
    printLagLine(lags, { ingest: 'replicate' });
  } finally {
    await anvil.stop();
  }
} finally {
  for (const p of kill) p.kill('SIGKILL');
  await rm(base, { recursive: true, force: true });
}
