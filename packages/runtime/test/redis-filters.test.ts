// Polled filters kept in Redis (what replicas on one Redis share): two rpc services, each with its
// own Redis connection and registry (two replicas), over one growing chain of block hashes. A
// filter made on one is polled alternately and concurrently on both: every block once, in order;
// the poll extends the record's life to 5 minutes on Redis; another key sees nothing; the per-key
// limit and uninstall hold across both; the pending journal is shared. A poll whose write's reply
// is lost delivers its changes if the write applied, starts again if it did not, and fails with
// the cursor unmoved if Redis does not say (a late write past its deadline is refused): the next
// poll, on the other replica, carries on without a change delivered twice or skipped.
import { setTimeout as sleep } from 'node:timers/promises';
import { connectRedis } from '@chainnode/accounts';
import type { RedisClient } from '@chainnode/accounts';
import { toData } from '@chainnode/core';
import type { Bytes, ChainStore } from '@chainnode/core';
import { FILTER_TIMEOUT_MS, FilterRegistry, createRpcService } from '@chainnode/rpc';
import type { RpcServiceApi } from '@chainnode/rpc';
import { NO_REDIS, redisServerPath, startRedis } from '@chainnode/testkit';
import type { RedisProcess } from '@chainnode/testkit';
import { RedisFilterStore } from '../src/redis-filters.js';

const HAVE_REDIS = redisServerPath() !== undefined;
if (!HAVE_REDIS) console.log(NO_REDIS);
const maybe = HAVE_REDIS ? describe : describe.skip;

/** Block hashes by number: the reads a block filter makes. */
function chainStore(hashes: Bytes[]): ChainStore {
  const store = {
    info: () => ({ chainId: 1n, networkId: 1n, genesisHash: hashes[0] }),
    head: async () => ({ number: BigInt(hashes.length - 1), hash: hashes.at(-1) }),
    canonicalHash: async (n: bigint) => hashes[Number(n)],
  };
  return store as unknown as ChainStore;
}

const hashOf = (n: number): Bytes => {
  const h = new Uint8Array(32);
  new DataView(h.buffer).setUint32(28, n + 1);
  return h;
};

type Reply = { result?: unknown; error?: { code: number; message: string } };

function caller(service: RpcServiceApi, key: string) {
  return async (method: string, params: unknown[] = []): Promise<Reply> => {
    const reply = await service.handle(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      undefined,
      undefined,
      key,
    );
    return JSON.parse(reply.body as string) as Reply;
  };
}

maybe('filters in Redis, shared by two replicas', () => {
  let redis: RedisProcess;
  const clients: RedisClient[] = [];
  const hashes: Bytes[] = [hashOf(0)];
  const replicas: {
    call: ReturnType<typeof caller>;
    other: ReturnType<typeof caller>;
    as: (key: string) => ReturnType<typeof caller>;
    filters: FilterRegistry;
  }[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    for (let i = 0; i < 2; i++) {
      const client = await connectRedis({ url: redis.url });
      clients.push(client);
      const filters = new FilterRegistry({ state: new RedisFilterStore(client, 'main', { perKey: 3, total: 3 }) });
      const service = createRpcService(chainStore(hashes), {}, { filters });
      replicas.push({
        call: caller(service, 'aa11'),
        other: caller(service, 'bb22'),
        as: (key) => caller(service, key),
        filters,
      });
    }
  });

  /** Replaces the next commands of the third replica's Redis client (undefined: they go through). */
  let hook: ((args: string[], send: () => Promise<unknown>) => Promise<unknown>) | undefined;
  let flaky: ReturnType<typeof caller>;

  beforeAll(() => {
    const base = clients[0] as RedisClient;
    const client = {
      sendCommand: (args: string[]) => (hook ? hook(args, () => base.sendCommand(args)) : base.sendCommand(args)),
    } as unknown as RedisClient;
    // Commands time out after 1 s (a loaded machine answers real ones well within it).
    const store = new RedisFilterStore(client, 'main', { perKey: 3, total: 3 }, 1000);
    flaky = caller(createRpcService(chainStore(hashes), {}, { filters: new FilterRegistry({ state: store }) }), 'cc33');
  });

  afterAll(async () => {
    for (const c of clients) c.destroy();
    await redis?.stop();
    await redis?.cleanup();
  });

  test('a block filter made on one replica, polled on both in turn and at once: every block once, in order', async () => {
    const [one, two] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const id = (await one.call('eth_newBlockFilter')).result as string;
    const seen: string[] = [];
    for (let round = 0; round < 10; round++) {
      hashes.push(hashOf(hashes.length));
      if (round % 3 === 0) hashes.push(hashOf(hashes.length));
      const polls = round % 2 === 0 ? [one.call, two.call] : [round % 4 === 1 ? one.call : two.call];
      for (const r of await Promise.all(polls.map((c) => c('eth_getFilterChanges', [id]))))
        seen.push(...(r.result as string[]));
    }
    expect(seen).toEqual(hashes.slice(1).map((h) => toData(h)));
    // The poll set the record's life to 5 minutes on Redis's clock; the other key sees nothing.
    const ttl = Number(await (clients[0] as RedisClient).sendCommand(['PTTL', `cn:{aa11}:f:main:${id}`]));
    expect(ttl).toBeGreaterThan(FILTER_TIMEOUT_MS - 5000);
    expect(ttl).toBeLessThanOrEqual(FILTER_TIMEOUT_MS);
    expect((await two.other('eth_getFilterChanges', [id])).error).toEqual({
      code: -32000,
      message: 'filter not found',
    });
    expect((await two.other('eth_uninstallFilter', [id])).result).toBe(false);
    expect((await two.call('eth_uninstallFilter', [id])).result).toBe(true);
    expect((await one.call('eth_getFilterChanges', [id])).error?.message).toBe('filter not found');
  });

  test('the per-key limit counts the filters made on every replica; the pending journal is shared', async () => {
    const [one, two] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const pending = (await one.call('eth_newPendingTransactionFilter')).result as string;
    await two.call('eth_newBlockFilter');
    await one.call('eth_newBlockFilter');
    expect((await two.call('eth_newBlockFilter')).error?.message).toBe('too many filters for this API key: at most 3');
    expect((await two.other('eth_newBlockFilter')).result).toBeDefined();
    const tx = toData(hashOf(999));
    await two.filters.scope('anyone').forwarded(tx);
    await one.filters.notePending([tx]); // the upstream's, heard by the other replica: reported once
    expect((await one.call('eth_getFilterChanges', [pending])).result).toEqual([tx]);
    expect((await two.call('eth_getFilterChanges', [pending])).result).toEqual([]);
  });

  test("a poll whose write's reply is lost: its changes if the write applied, else an error and the cursor unmoved", async () => {
    const two = (replicas[1] as (typeof replicas)[0]).as('cc33');
    const isWrite = (args: string[]): boolean => args[0] === 'EVAL' && (args[1] as string).includes('ARGV[5]');
    const id = (await flaky('eth_newBlockFilter')).result as string;
    const from = hashes.length;
    const seen: string[] = [];
    // The write applies but its reply never comes: the re-read finds this poll's id, so its changes are answered.
    hashes.push(hashOf(hashes.length), hashOf(hashes.length + 1));
    let lost = 0;
    hook = (args, send) => {
      const reply = send();
      if (!isWrite(args)) return reply;
      lost++;
      return reply.then(() => new Promise(() => {}));
    };
    seen.push(...((await flaky('eth_getFilterChanges', [id])).result as string[]));
    expect(lost).toBe(1);
    hashes.push(hashOf(hashes.length));
    seen.push(...((await two('eth_getFilterChanges', [id])).result as string[]));
    // The write never reaches Redis: the re-read waits out its deadline, then the poll starts again.
    hashes.push(hashOf(hashes.length));
    hook = (args, send) => {
      if (!isWrite(args)) return send();
      hook = undefined;
      return new Promise(() => {});
    };
    seen.push(...((await flaky('eth_getFilterChanges', [id])).result as string[]));
    expect(hook).toBeUndefined();
    // The write reaches Redis only after its deadline and no re-read is answered: the poll fails,
    // the late write is refused, and the next poll (on the other replica) delivers those blocks.
    hashes.push(hashOf(hashes.length));
    let late: Promise<unknown> | undefined;
    hook = (args, send) => {
      if (isWrite(args))
        late = sleep(2000).then(send); // twice the timeout: past any clock offset
      else if (args[0] !== 'EVAL' || !(args[1] as string).includes('rec.poll')) return send();
      return new Promise(() => {});
    };
    expect((await flaky('eth_getFilterChanges', [id])).error?.message).toMatch(/^filters are unavailable/);
    hook = undefined;
    expect(await late).toBe(-2);
    hashes.push(hashOf(hashes.length));
    seen.push(...((await two('eth_getFilterChanges', [id])).result as string[]));
    expect(seen).toEqual(hashes.slice(from).map((h) => toData(h)));
  });
});
