// A followed network's offload workers, without an upstream: openNetwork over a copy of the
// fixture chain, following with its events fed through a port this test holds (as an app thread of
// --threads gets them), so no ingest runs. A heavy eth_call (an endless loop given 12M gas) goes to
// the pool (chainnode_offloaded_calls_total counts it) while cheap calls keep being answered on the
// serving thread; and a commit reaches the workers before the calls sent after it: an offloaded
// call at `latest` runs on the commit's head (the worker resolving the tag itself: no kept answers).
import { MessageChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { packCommit } from '@chainnode/core';
import { resolveConfig } from '@chainnode/rpc';
import type { NetworkRuntime } from '@chainnode/server';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import { openNetwork } from '../src/network.js';
import { DEFAULT_CONFIG } from '../src/index.js';

const available = chainDir('fixtures') !== undefined;
const TOKEN = '0x0621cd3e85b6e0d7189aacc3af8c1bfcc769a359';
/** JUMPDEST PUSH1 0 JUMP: loops until its gas is gone. */
const LOOP = '0x5b600056';
/**
 * NUMBER PUSH1 0 MSTORE, a countdown from 300,000 (7.8M gas: far past the inline try, so it runs
 * in the pool), PUSH1 32 PUSH1 0 RETURN: the block number it runs in.
 */
const NUMBER = '0x43600052620493e05b600190038060085760206000f3';
/** Above the inline limit: 12M gas is cost 120 (INLINE_COST_LIMIT 100). */
const HEAVY_GAS = '0xb71b00';

interface Reply {
  result?: string;
  error?: { code: number; message: string };
}

(available ? describe : describe.skip)('a followed network offloads heavy calls', () => {
  let net: NetworkRuntime;
  let feed: MessagePort;
  let cleanup: () => Promise<void>;
  const call = async (method: string, params: unknown[]): Promise<Reply> =>
    JSON.parse((await net.service.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '');

  beforeAll(async () => {
    const copy = await datadirCopy('fixtures');
    cleanup = copy.cleanup;
    const { port1, port2 } = new MessageChannel();
    feed = port1;
    net = await openNetwork({
      name: 'fixture',
      datadir: copy.dir,
      implicit: true,
      config: { ...structuredClone(DEFAULT_CONFIG), offloadWorkers: 1 },
      // Time enough for the heavy call on a busy machine (the defaults: 5 s of EVM, 10 s in the pool).
      rpcConfig: resolveConfig({
        callCacheBytes: 0,
        callTimeoutMs: 60_000,
        logs: { maxResults: 10_000, timeoutMs: 60_000, maxFilterParams: 5_000 },
      }),
      log: () => () => undefined,
      follow: { url: 'ws://127.0.0.1:9', reorgDepth: 64n, pollMs: 1000, ingest: 'execute' },
      followFeed: port2,
    });
  }, 600_000);

  afterAll(async () => {
    await net?.close();
    feed?.close();
    await cleanup?.();
  });

  test('a heavy call runs in the pool while cheap calls are answered; a commit reaches the workers first', async () => {
    const done: string[] = [];
    const heavy = call('eth_call', [{ to: TOKEN, gas: HEAVY_GAS }, 'latest', { [TOKEN]: { code: LOOP } }]).then((r) => {
      done.push('heavy');
      return r;
    });
    for (let i = 0; i < 5; i++) {
      const [n, supply] = await Promise.all([
        call('eth_blockNumber', []),
        call('eth_call', [{ to: TOKEN, data: '0x18160ddd', gas: '0x30000' }]),
      ]);
      expect([n.error, supply.error]).toEqual([undefined, undefined]);
      done.push('cheap');
    }
    expect((await heavy).error).toEqual({ code: -32000, message: 'out of gas' });
    expect(done.indexOf('heavy')).toBeGreaterThan(0); // cheap calls answered while it ran
    expect([net.metrics.offloaded, net.metrics.offloadShed]).toEqual([1, 0]);

    // A commit moving the head 5 blocks back (a rewind): the serving store applies it, then the worker.
    const head = BigInt((await call('eth_blockNumber', [])).result as string);
    const back = head - 5n;
    const at = (await call('eth_getBlockByNumber', [`0x${back.toString(16)}`, false])).result as unknown as {
      hash: string;
    };
    const hash = Uint8Array.from(Buffer.from(at.hash.slice(2), 'hex'));
    const removed = [];
    for (let n = back + 1n; n <= head; n++) {
      const b = (await call('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).result as unknown as {
        hash: string;
      };
      removed.push({ number: n, hash: Uint8Array.from(Buffer.from(b.hash.slice(2), 'hex')), logs: [] });
    }
    const applied = new Promise<void>((resolve) => {
      const stop = net.chainEvents?.subscribe(() => {
        stop?.();
        resolve();
      });
    });
    // As the ingest thread posts it (packed).
    feed.postMessage({ type: 'commit', packed: packCommit({ removed, added: [], head: { number: back, hash } }) });
    await applied;
    const number = await call('eth_call', [{ to: TOKEN, gas: HEAVY_GAS }, 'latest', { [TOKEN]: { code: NUMBER } }]);
    expect(BigInt(number.result as string)).toBe(back);
    expect(net.metrics.offloaded).toBe(2);
  });
});
