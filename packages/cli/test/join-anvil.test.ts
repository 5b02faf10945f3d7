// `serve --follow <anvil> --start-block head-20` on an empty datadir: the node joins anvil's chain
// 20 blocks below its head (history verified from there, no state of its own), follows new blocks
// and a reorg, and every block, transaction and log from the join on, and storage and proofs at
// the head (proven on demand from anvil), equal anvil's answers (geth's rules where anvil
// deviates, anvil-upstream.ts), served by two app threads. Below the first block: 4444. Joining
// with the state downloaded needs a chainnode primary: from anvil it is refused, saying so.
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { join } from 'node:path';
import { runCli, tempDir } from '@chainnode/testkit';
import {
  GENESIS,
  call,
  compareWithAnvil,
  result,
  startAnvil,
  startFollower,
  txRequest,
  waitSynced as waitSyncedWith,
} from './anvil-upstream.js';
import type { Anvil } from './anvil-upstream.js';
import type { ServeProcess } from './serve-helpers.js';

const common = createCommonFromGethGenesis(GENESIS as unknown as GethGenesis, { chain: 'custom' });
type Json = Record<string, unknown>;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;

describe('joining anvil at its head minus 20', () => {
  let anvil: Anvil;
  let node: ServeProcess;
  let ours: string;
  let temp: { dir: string; cleanup: () => Promise<void> };
  const loggers: string[] = [];
  let txCounter = 0;
  let first = 0;

  afterAll(async () => {
    await node?.stop('SIGTERM');
    await anvil?.stop();
    await temp?.cleanup();
  });

  async function mine(blocks: number): Promise<void> {
    for (let b = 0; b < blocks; b++) {
      const n = b % 7 === 6 ? 0 : 1 + ((b * 3) % 5);
      for (let t = 0; t < n; t++) {
        const i = txCounter++;
        await result(anvil.url, 'eth_sendTransaction', [txRequest(i, i, loggers[i % Math.max(1, loggers.length)])]);
      }
      await result(anvil.url, 'evm_mine', []);
      if (loggers.length < 2) {
        const blk = await result<Json>(anvil.url, 'eth_getBlockByNumber', ['latest', true]);
        for (const tx of blk.transactions as Json[]) {
          if (tx.to !== null) continue;
          const receipt = await result<Json>(anvil.url, 'eth_getTransactionReceipt', [tx.hash]);
          if (receipt.status === '0x1') loggers.push(receipt.contractAddress as string);
        }
      }
    }
  }

  const waitSynced = () => waitSyncedWith(anvil.url, ours, () => node.output(), 90_000);

  const compare = () => compareWithAnvil(anvil.url, ours, { common, loggers, from: first });

  test('joins at head-20, follows new blocks and a reorg; every answer from the join on equals anvil', async () => {
    temp = await tempDir('join-anvil-');
    anvil = await startAnvil(temp.dir, ['--no-mining']);
    await mine(60);
    const head = Number(await result<string>(anvil.url, 'eth_blockNumber', []));
    first = head - 20;
    const args = ['--start-block', 'head-20', '--threads', '2'];
    ({ node, ours } = await startFollower(temp.dir, anvil.url, GENESIS, args));
    await waitSynced();
    expect(node.output()).toContain(`joining the chain at block ${first}`);
    let seen = await compare();
    expect(seen.blocks).toBe(21);
    expect(seen.txs).toBeGreaterThan(30);
    expect((await call(ours, 'eth_getBlockByNumber', [hexN(first - 1), false])).error?.code).toBe(4444);
    // No state trie of its own: eth_simulateV1 (which computes its blocks' state roots over it) is refused.
    expect((await call(ours, 'eth_simulateV1', [{ blockStateCalls: [{}] }, 'latest'])).error).toEqual({
      code: -32000,
      message: 'simulated blocks need the state trie nodes, which this store does not keep',
    });

    await mine(10);
    await waitSynced();
    seen = await compare();
    expect(seen.blocks).toBe(31);

    // A reorg of depth 3 with replacement transactions, then the chain goes on.
    const replacements = Array.from({ length: 4 }, (_, j) => {
      const req = txRequest(j % 2 === 0 ? 3 : 2, 20_000 + j, loggers[0]);
      return [{ ...req, gas: '0x186a0' }, j % 3];
    });
    await result(anvil.url, 'anvil_reorg', [3, replacements]);
    await waitSynced();
    await compare();
    await mine(2);
    await waitSynced();
    seen = await compare();
    expect(seen.blocks).toBe(33);
    const health = (await (await fetch(`${node.base}/health`)).json()) as Json;
    expect(health.follow).toMatchObject({ state: 'following', firstBlock: first, reorgs: 1, lastError: null });
    // Two app threads, each proving what it reads: this thread's counts.
    expect(((health.follow as Json).provenState as Json).rejected).toBe(0);
  }, 600_000);

  test('--join-state download from anvil: refused with what to do (only a chainnode primary serves trie nodes by hash)', async () => {
    const join5 = (mode: string) =>
      runCli([
        'sync',
        '--from',
        anvil.url,
        '--genesis',
        join(temp.dir, 'genesis.json'),
        '--start-block',
        'head-5',
        '--join-state',
        mode,
        '--datadir',
        join(temp.dir, 'download'),
      ]);
    const r = await join5('download');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /--join-state download needs a chainnode primary \(chainnode_getStateNodes\): http:\/\/127\.0\.0\.1:\d+ does not serve it; join with --join-state proofs/,
    );
    // Refused before the datadir held anything: the same datadir joins with proofs.
    const proofs = await join5('proofs');
    if (proofs.code !== 0) throw new Error(`joining with proofs failed:\n${proofs.stderr.slice(-2000)}`);
    expect(proofs.stderr).toContain('state proven on demand');
  }, 120_000);
});
