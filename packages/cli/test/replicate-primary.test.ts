// `sync --from <chainnode primary> --ingest replicate` for both bundled chains: the fixture chain
// (proof of work with uncles and rewards) and the execution-apis chain (Frontier to Osaka:
// withdrawals, system contracts, blobs, set-code). The replica takes the primary's raw blocks, raw
// receipts and trie diffs, verifies every root, and must end with a store digest-equal to an
// executing import of the same chain, answering every method byte-equal to the primary at every
// block. A replica of that replica (two hops, on the execution-apis chain) ends the same.
import { join } from 'node:path';
import { digestDatadir } from '@chainnode/store';
import { chainDir, datadirCopy, preparedDatadir, runCli, tempDir } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { compareNodes } from './compare-nodes.js';
import { createKeyCli, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

/** An account with storage to compare state through, per chain. */
const STATE: Record<ChainName, { address: string; slots: string[] }> = {
  fixtures: { address: '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359', slots: ['0x2', `0x${'00'.repeat(31)}07`] },
  // The EIP-4788 beacon-roots contract: written by every Cancun+ block of the chain.
  'execution-apis': { address: '0x000f3df6d732807ef1319fb7b8bb8522d0beac02', slots: ['0x0', '0x1', '0x2'] },
};

const chains = (['fixtures', 'execution-apis'] as ChainName[]).filter((c) => chainDir(c) !== undefined);
if (chains.length < 2) console.log(`replicate-primary: only ${chains.join(', ') || 'no'} chain(s) present`);

describe.each(chains)('replicating a chainnode primary of the %s chain', (chain) => {
  const procs: ServeProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const p of procs) await p.stop('SIGTERM').catch(() => undefined);
    for (const c of cleanups) await c();
  });

  test('every root verified; the store is digest-equal to an executing import; every answer equals the primary', async () => {
    const primaryDir = await datadirCopy(chain);
    cleanups.push(primaryDir.cleanup);
    const temp = await tempDir('replicate-primary-');
    cleanups.push(temp.cleanup);
    const pk = await createKeyCli(primaryDir.dir, 'custom');
    const primary = await spawnServe(primaryDir.dir);
    procs.push(primary);
    const genesis = join(chainDir(chain) as string, 'genesis.json');

    const replicaDir = join(temp.dir, 'replica');
    const r = await runCli(
      ['sync', '--from', primary.url(pk.key), '--genesis', genesis, '--ingest', 'replicate', '--datadir', replicaDir],
      { timeoutMs: 600_000 },
    );
    if (r.code !== 0) throw new Error(`replicating sync failed:\n${r.stderr.slice(-2000)}`);
    expect(r.stderr).toContain('state changes from a chainnode primary (chainnode_getStateDiff)');
    const executed = await digestDatadir(await preparedDatadir(chain));
    expect(await digestDatadir(replicaDir)).toEqual(executed);

    const rk = await createKeyCli(replicaDir, 'custom');
    const replica = await spawnServe(replicaDir);
    procs.push(replica);
    const seen = await compareNodes(primary.url(pk.key), replica.url(rk.key), STATE[chain]);
    expect(seen.blocks).toBeGreaterThan(chain === 'fixtures' ? 1000 : 30);

    // Two hops: a replica of the replica, itself replicating (on the execution-apis chain, whose
    // forks give the primary's diffs every kind of change; the hop is the same code on either).
    if (chain !== 'execution-apis') return;
    const secondDir = join(temp.dir, 'second');
    const r2 = await runCli(
      ['sync', '--from', replica.url(rk.key), '--genesis', genesis, '--ingest', 'replicate', '--datadir', secondDir],
      { timeoutMs: 600_000 },
    );
    if (r2.code !== 0) throw new Error(`second-hop replicating sync failed:\n${r2.stderr.slice(-2000)}`);
    expect(await digestDatadir(secondDir)).toEqual(executed);
  }, 900_000);
});
