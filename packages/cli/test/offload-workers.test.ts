// The real offload worker of `node-cli serve` (@chainnode/runtime's offload-worker.ts) on the imported
// fixture chain: eth_getLogs answered through it is byte-identical to inline answers for
// filters drawn from the chain's own logs (results, the 10,000-result cap, parameter errors),
// NODE_FAULT_INJECT=store-outage reaches the worker's store, and after the pool closes every
// handle on the datadir is gone (it opens again without `shared`).
import { outageStore } from '@chainnode/server';
import { OffloadPool, createRpcService, resolveConfig } from '@chainnode/rpc';
import type { RpcServiceApi } from '@chainnode/rpc';
import { openChainStore } from '@chainnode/store';
import type { ChainStore } from '@chainnode/core';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';

const chain: ChainName = chainDir('fixtures') !== undefined ? 'fixtures' : 'execution-apis';
const script = new URL('./offload-worker.js', import.meta.resolve('@chainnode/runtime'));
const rpcConfig = resolveConfig({});

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function setup(env?: NodeJS.ProcessEnv): Promise<{ dir: string; store: ChainStore; pool: OffloadPool }> {
  const c = await datadirCopy(chain);
  cleanups.push(c.cleanup);
  const store = await openChainStore(c.dir, { shared: true });
  cleanups.push(() => store.close());
  const pool = await OffloadPool.start({
    script,
    workerData: { datadir: c.dir, rpcConfig },
    size: 2,
    queueLimit: 64,
    timeoutMs: rpcConfig.logs.timeoutMs,
    ...(env ? { env } : {}),
  });
  cleanups.push(() => pool.close());
  return { dir: c.dir, store, pool };
}

/** Seeded choices, so a failure names a reproducible filter. */
class Rng {
  constructor(private s: number) {}
  int(n: number): number {
    this.s = (Math.imul(this.s, 1103515245) + 12345) >>> 0;
    return this.s % n;
  }
  pick<T>(xs: T[]): T {
    return xs[this.int(xs.length)] as T;
  }
}

interface WireLog {
  address: string;
  topics: string[];
  blockNumber: string;
  blockHash: string;
}

const q = (n: number): string => `0x${n.toString(16)}`;
const body = (params: unknown[], id = 1): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'eth_getLogs', params });

async function reply(svc: RpcServiceApi, b: string): Promise<string> {
  return (await svc.handle(b)).body ?? '';
}

test('answers through the offload worker are byte-identical to inline answers on the fixture chain', async () => {
  const { store, pool } = await setup();
  const inline = createRpcService(store, rpcConfig);
  const offloaded = createRpcService(store, rpcConfig, { offload: pool, inlineCostLimit: -1 });
  const head = Number((await store.head()).number);

  // Material for filters: the logs of a few spans of the chain, read inline.
  const sample: WireLog[] = [];
  for (const from of [1, 300, 650, 1200, head - 40]) {
    const r = JSON.parse(
      await reply(inline, body([{ fromBlock: q(from), toBlock: q(Math.min(head, from + 40)) }])),
    ) as { result: WireLog[] };
    sample.push(...r.result);
  }
  expect(sample.length).toBeGreaterThan(100);
  const rng = new Rng(6);
  const addresses = [...new Set(sample.map((l) => l.address))];
  const topicAt = (i: number): string[] => [
    ...new Set(sample.flatMap((l) => (l.topics[i] !== undefined ? [l.topics[i] as string] : []))),
  ];
  const range = (): { fromBlock: string; toBlock: string } => {
    const span = rng.pick([1, 10, 100, 1_000, head]);
    const from = rng.int(Math.max(1, head - span + 1));
    return { fromBlock: q(from), toBlock: q(Math.min(head, from + span)) };
  };
  const bodies: string[] = [
    body([{ fromBlock: '0x0', toBlock: 'latest' }]), // over the cap: the error with a suggested range
    body([{ fromBlock: '0x0', toBlock: 'latest', address: addresses }]),
    body([{ fromBlock: 'earliest', toBlock: 'latest', topics: [topicAt(0)[0]] }]),
    body([{ blockHash: sample[0]!.blockHash }]),
    body([{ blockHash: sample[sample.length - 1]!.blockHash, address: sample[sample.length - 1]!.address }]),
    body([{ blockHash: `0x${'00'.repeat(32)}` }]),
    body([{ fromBlock: q(head), toBlock: q(head + 1) }]),
    body([{ fromBlock: '0x10', toBlock: '0x1' }]),
    body([{ fromBlock: '0x1', blockHash: sample[0]!.blockHash }]),
    body([{ topics: [null, null, null, null, null] }]),
    body([{ address: '0x1234' }]),
    body([{ fromBlock: 'soon' }]),
    body([]),
    body([{}, {}]),
    body([{ address: Array.from({ length: 5_001 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`) }]),
    JSON.stringify([
      { jsonrpc: '2.0', id: 'a', method: 'eth_getLogs', params: [{ fromBlock: '0x1', toBlock: '0x20' }] },
      { jsonrpc: '2.0', id: 'b', method: 'eth_blockNumber', params: [] },
      {
        jsonrpc: '2.0',
        id: 'c',
        method: 'eth_getLogs',
        params: [{ fromBlock: '0x0', toBlock: 'latest', topics: [topicAt(0)] }],
      },
    ]),
  ];
  for (let i = 0; i < 60; i++) {
    const topics: (string | string[] | null)[] = [];
    const positions = rng.int(4);
    for (let t = 0; t < positions; t++) {
      const values = topicAt(t);
      const kind = rng.int(3);
      topics.push(
        kind === 0 || values.length === 0 ? null : kind === 1 ? rng.pick(values) : [rng.pick(values), rng.pick(values)],
      );
    }
    const address =
      rng.int(3) === 0
        ? undefined
        : rng.int(2) === 0
          ? rng.pick(addresses)
          : [rng.pick(addresses), rng.pick(addresses)];
    bodies.push(body([{ ...range(), ...(address !== undefined ? { address } : {}), topics }], i));
  }

  const outcomes = { results: 0, nonEmpty: 0, cap: 0, errors: 0 };
  for (const b of bodies) {
    const want = await reply(inline, b);
    const got = await reply(offloaded, b);
    expect({ request: b, reply: got }).toEqual({ request: b, reply: want });
    if (want.includes('"result":[{')) outcomes.nonEmpty++;
    if (want.includes('"result":')) outcomes.results++;
    if (want.includes('"code":-32005,"message":"query returned more than 10000 results')) outcomes.cap++;
    if (want.includes('"error":')) outcomes.errors++;
  }
  expect(outcomes.nonEmpty).toBeGreaterThan(20);
  expect(outcomes.cap).toBeGreaterThan(0);
  expect(outcomes.errors).toBeGreaterThan(10);
});

test('NODE_FAULT_INJECT=store-outage reaches the worker: eth_getLogs fails as inline reads do', async () => {
  const { store, pool } = await setup({ ...process.env, NODE_FAULT_INJECT: 'store-outage' });
  const inline = createRpcService(outageStore(store), rpcConfig);
  // The main store is healthy; inlineCostLimit -1 sends even cheap filters to the worker.
  const offloaded = createRpcService(store, rpcConfig, { offload: pool, inlineCostLimit: -1 });
  for (const b of [
    body([{ fromBlock: '0x0', toBlock: '0x10' }]),
    body([{ blockHash: `0x${'11'.repeat(32)}` }]),
    body([{ fromBlock: 'soon' }]),
  ]) {
    expect(await reply(offloaded, b)).toBe(await reply(inline, b));
  }
  expect(await reply(offloaded, body([{}]))).toBe(
    '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}',
  );
});

test('after the pool closes, the workers hold no handle on the datadir', async () => {
  const { dir, store, pool } = await setup();
  const svc = createRpcService(store, rpcConfig, { offload: pool, inlineCostLimit: -1 });
  expect(await reply(svc, body([{ fromBlock: '0x1', toBlock: '0x2' }]))).toMatch(
    /^\{"jsonrpc":"2.0","id":1,"result":\[\{"address"/,
  );
  await pool.close();
  await store.close();
  const again = await openChainStore(dir); // not shared: fails while any handle is open
  expect((await again.head()).number).toBeGreaterThan(0n);
  await again.close();
});
