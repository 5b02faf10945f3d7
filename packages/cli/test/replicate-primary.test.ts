// `sync --from <chainnode primary> --ingest replicate`: on the execution-apis chain (Frontier to
// Osaka: withdrawals, system contracts, blobs, set-code) the replica takes the primary's raw
// blocks, raw receipts and state changes, verifies every root, and must end with a store
// digest-equal to an executing import of the same chain, answering every method byte-equal to
// the primary at every block; a replica of that replica (two hops) ends the same. (The fixture
// chain's whole replication, proof of work with uncles and rewards, is follow-replica.test's.) On
// both chains chainnode_getBlockRange's blocks equal the three per-block answers; on the fixture
// chain, a primary whose range answer lies about one block's state is refused at that block,
// nothing of it written, and a primary without the range method is asked block by block.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { EXECUTED_ONLY, digestDatadir, openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy, preparedDatadir, runCli, tempDir } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { result } from './anvil-upstream.js';
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

  const fixturesOnly = chain === 'fixtures' ? test : test.skip;
  // The fixture chain's whole replication from a chainnode primary, digest-equal to its executing
  // import and answering as the primary does, is follow-replica.test's (R1, `serve --follow
  // --ingest replicate` from an empty datadir, SIGKILLed four times): here, the execution-apis chain.
  const executionApisOnly = chain === 'execution-apis' ? test : test.skip;
  let primary: ServeProcess;
  let pk: { key: string };
  let temp: { dir: string; cleanup: () => Promise<void> };
  const genesis = join(chainDir(chain) as string, 'genesis.json');
  beforeAll(async () => {
    const primaryDir = await datadirCopy(chain);
    cleanups.push(primaryDir.cleanup);
    temp = await tempDir('replicate-primary-');
    cleanups.push(temp.cleanup);
    pk = await createKeyCli(primaryDir.dir, 'custom');
    primary = await spawnServe(primaryDir.dir);
    procs.push(primary);
  }, 600_000);

  executionApisOnly(
    'every root verified; the store is digest-equal to an executing import; every answer equals the primary',
    async () => {
      const replicaDir = join(temp.dir, 'replica');
      const r = await runCli(
        ['sync', '--from', primary.url(pk.key), '--genesis', genesis, '--ingest', 'replicate', '--datadir', replicaDir],
        { timeoutMs: 600_000 },
      );
      if (r.code !== 0) throw new Error(`replicating sync failed:\n${r.stderr.slice(-2000)}`);
      expect(r.stderr).toContain('state changes from a chainnode primary (chainnode_getStateDiff)');
      const executed = await digestDatadir(await preparedDatadir(chain), undefined, EXECUTED_ONLY);
      expect(await digestDatadir(replicaDir, undefined, EXECUTED_ONLY)).toEqual(executed);

      const rk = await createKeyCli(replicaDir, 'custom');
      const replica = await spawnServe(replicaDir);
      procs.push(replica);
      const seen = await compareNodes(primary.url(pk.key), replica.url(rk.key), STATE[chain]);
      expect(seen.blocks).toBe(55);

      // Two hops: a replica of the replica, itself replicating (the chain's forks give the
      // primary's diffs every kind of change).
      const secondDir = join(temp.dir, 'second');
      const r2 = await runCli(
        ['sync', '--from', replica.url(rk.key), '--genesis', genesis, '--ingest', 'replicate', '--datadir', secondDir],
        { timeoutMs: 600_000 },
      );
      if (r2.code !== 0) throw new Error(`second-hop replicating sync failed:\n${r2.stderr.slice(-2000)}`);
      expect(await digestDatadir(secondDir, undefined, EXECUTED_ONLY)).toEqual(executed);
    },
    900_000,
  );

  test('a range answer holds the per-block answers, at most 64 blocks, none past the head', async () => {
    const url = primary.url(pk.key);
    const head = Number(await result<string>(url, 'eth_blockNumber', []));
    const from = Math.max(1, head - 40);
    const range = await result<Json[]>(url, 'chainnode_getBlockRange', [hexN(from), hexN(head + 10)]);
    expect(range.length).toBe(head - from + 1);
    for (let i = 0; i < range.length; i++) {
      const n = hexN(from + i);
      expect(range[i]).toEqual({
        block: await result(url, 'debug_getRawBlock', [n]),
        receipts: await result(url, 'debug_getRawReceipts', [n]),
        stateDiff: await result(url, 'chainnode_getStateDiff', [n]),
      });
    }
    // The caps: 64 blocks; on the execution-apis chain, block 2's 21 MB of receipts pass the byte
    // cap, so an answer from block 1 stops before it (the next answer holds it alone).
    const capped = await result<Json[]>(url, 'chainnode_getBlockRange', ['0x1', hexN(1000)]);
    expect(capped).toHaveLength(chain === 'fixtures' ? 64 : 1);
    expect(await result(url, 'chainnode_getBlockRange', [hexN(head + 1), hexN(head + 5)])).toEqual([]);
  });

  /** `sync --ingest replicate --to <to>` through `proxy` into a new datadir: the run and the datadir's head. */
  async function syncThrough(
    proxy: Proxy,
    to: number,
    name: string,
  ): Promise<{ code: number | null; stderr: string; head: bigint }> {
    const dir = join(temp.dir, name);
    const r = await runCli(
      [
        'sync',
        '--from',
        proxy.url,
        '--genesis',
        genesis,
        '--ingest',
        'replicate',
        '--to',
        String(to),
        '--datadir',
        dir,
      ],
      { timeoutMs: 120_000 },
    );
    const store = await openChainStore(dir);
    try {
      return { code: r.code, stderr: r.stderr, head: (await store.head()).number };
    } finally {
      await store.close();
    }
  }

  // The lie and the older primary are the same code on either chain: once, on the fixture chain.
  fixturesOnly('a primary that lies about one block of a range is refused at that block', async () => {
    const lieAt = 40;
    const proxy = await startProxy(primary.url(pk.key), { lieAt });
    try {
      const r = await syncThrough(proxy, 60, 'lied-to');
      expect(proxy.told()).toBeGreaterThan(0);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`block ${lieAt}: stateRoot mismatch`);
      expect(r.head).toBe(BigInt(lieAt - 1)); // nothing of the lying block written
    } finally {
      await proxy.close();
    }
  });

  fixturesOnly('a primary without chainnode_getBlockRange is asked block by block', async () => {
    const proxy = await startProxy(primary.url(pk.key), { noRange: true });
    try {
      const r = await syncThrough(proxy, 20, 'older-primary');
      if (r.code !== 0) throw new Error(`replicating sync failed:\n${r.stderr.slice(-2000)}`);
      expect(r.head).toBe(20n);
      expect(proxy.calls('chainnode_getStateDiff')).toBeGreaterThanOrEqual(20);
    } finally {
      await proxy.close();
    }
  });
});

type Json = Record<string, unknown>;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;

interface Proxy {
  url: string;
  /** Lies told. */
  told: () => number;
  /** Calls of `method` passed on. */
  calls: (method: string) => number;
  close: () => Promise<void>;
}

/**
 * A proxy to `target` that adds 1 wei to the first changed account's balance in block `lieAt`'s
 * state change wherever a chainnode_getBlockRange answer holds that block; with `noRange`, answers
 * chainnode_getBlockRange as a primary that does not know it (-32601).
 */
async function startProxy(target: string, opts: { lieAt?: number; noRange?: boolean }): Promise<Proxy> {
  let told = 0;
  const counts = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const request = JSON.parse(body) as Json;
      const method = request.method as string;
      counts.set(method, (counts.get(method) ?? 0) + 1);
      const reply: Json =
        opts.noRange === true && method === 'chainnode_getBlockRange'
          ? {
              jsonrpc: '2.0',
              id: request.id,
              error: { code: -32601, message: `the method ${method} does not exist/is not available` },
            }
          : ((await (
              await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
            ).json()) as Json);
      if (method === 'chainnode_getBlockRange' && Array.isArray(reply.result)) {
        for (const e of reply.result as { stateDiff: { number: string; accounts: { account: Json | null }[] } }[]) {
          const acct = e.stateDiff.accounts.find((a) => a.account !== null)?.account;
          if (Number(e.stateDiff.number) !== opts.lieAt || acct == null) continue;
          acct.balance = hexN(BigInt(acct.balance as string) + 1n);
          told++;
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    told: () => told,
    calls: (method) => counts.get(method) ?? 0,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
