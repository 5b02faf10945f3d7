// The read caches (the store's head/tx/account/slot/trie-node/proof/receipt caches and the rpc's
// per-record JSON text memo, receipts' included) must not change a single byte of any answer. Reference: every
// request answered by a brand-new store and service (all caches empty; its trie-node slab 1 MiB,
// far above the ~35 KB one request's trie walks insert, so nothing is evicted within a request,
// instead of a fresh 32 MiB slab per request to allocate and collect). Then one long-lived
// store and service answers the same requests cold, warm, in reverse and interleaved, and
// every answer must equal the reference byte for byte. The reference itself must be what
// JSON.stringify gives for the parsed answer (spliced pre-serialised text is canonical JSON).
import { datadirCopy, chainDir } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { openChainStore } from '@chainnode/store';
import { createRpcService } from '../src/index.js';
import type { RpcReply } from '../src/index.js';

type Json = Record<string, unknown>;

/** The trie-node slab of each one-request store (the long-lived stores keep the default). */
const COLD_NODE_CACHE_BYTES = 1 << 20;

let withBytes = 0;
/** The reply text, after checking that the reply's bytes (when it has them) are that text. */
function textOf(reply: RpcReply): string | undefined {
  if (reply.encode !== undefined) {
    withBytes++;
    // Into fresh memory, and into a reused buffer that held other bytes before.
    expect(Buffer.from(reply.encode((n) => Buffer.alloc(n))).toString('utf8')).toBe(reply.body);
    const reused = Buffer.alloc(1 << 16, 0x7b);
    expect(Buffer.from(reply.encode((n) => reused.subarray(0, n))).toString('utf8')).toBe(reply.body);
  }
  return reply.body;
}

/**
 * Storage and proof requests for each address at three blocks: slots spelled short and as 32
 * bytes (the proof echoes them as asked), and a proof without slots.
 */
function stateRequests(addrs: string[], head: number): string[] {
  const requests: string[] = [];
  const blocksForState = ['latest', `0x${Math.floor(head / 2).toString(16)}`, '0x0'];
  for (const a of addrs) {
    for (const b of blocksForState) {
      for (const slot of ['0x0', '0x1', '0x2', '0x3']) {
        requests.push(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'eth_getStorageAt', params: [a, slot, b] }));
      }
      // The same slots spelled short and as 32 bytes: the proof echoes them differently.
      requests.push(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'eth_getProof', params: [a, ['0x0', '0x2'], b] }));
      requests.push(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 5,
          method: 'eth_getProof',
          params: [a, [`0x${'00'.repeat(31)}00`, `0x${'00'.repeat(31)}02`], b],
        }),
      );
      requests.push(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'eth_getProof', params: [a, [], b] }));
    }
  }
  return requests;
}

/** The requests, derived from the chain itself with one throw-away service: blocks, transactions, state, odd ids, a batch. */
async function requestsFrom(dir: string): Promise<string[]> {
  const requests: string[] = [];
  const store = await openChainStore(dir);
  const svc = createRpcService(store);
  const call = async (method: string, ...params: unknown[]): Promise<unknown> =>
    (
      JSON.parse((await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body as string) as {
        result: unknown;
      }
    ).result;
  const head = Number(await call('eth_blockNumber'));
  const numbers = [...new Set([0, 1, Math.floor(head / 3), Math.floor(head / 2), head - 1, head])].filter(
    (n) => n >= 0,
  );
  const txs: string[] = [];
  const contracts = new Set<string>();
  for (const n of numbers) {
    const block = (await call('eth_getBlockByNumber', `0x${n.toString(16)}`, true)) as {
      hash: string;
      transactions: { hash: string; to: string | null; from: string }[];
    };
    for (const tx of block.transactions.slice(0, 4)) {
      txs.push(tx.hash);
      if (tx.to !== null) contracts.add(tx.to);
      contracts.add(tx.from);
    }
    requests.push(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByHash', params: [block.hash, false] }),
      JSON.stringify({ jsonrpc: '2.0', id: 'h', method: 'eth_getBlockByHash', params: [block.hash, true] }),
      JSON.stringify({ jsonrpc: '2.0', id: 'r', method: 'eth_getBlockReceipts', params: [block.hash] }),
      JSON.stringify({ jsonrpc: '2.0', id: 'r', method: 'eth_getBlockReceipts', params: [`0x${n.toString(16)}`] }),
    );
    for (const full of [false, true]) {
      requests.push(
        JSON.stringify({
          jsonrpc: '2.0',
          id: n,
          method: 'eth_getBlockByNumber',
          params: [`0x${n.toString(16)}`, full],
        }),
      );
    }
  }
  await store.close();
  for (const tag of ['latest', 'pending', 'earliest', 'safe', 'finalized']) {
    requests.push(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'eth_getBlockByNumber', params: [tag, false] }));
  }
  requests.push(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 8,
      method: 'eth_getBlockByNumber',
      params: [`0x${(head + 1).toString(16)}`, false],
    }),
  );
  for (const h of txs) {
    requests.push(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_getTransactionByHash', params: [h] }));
    // A receipt alone, before and after its block's receipts (reversed and interleaved passes).
    requests.push(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_getTransactionReceipt', params: [h] }));
  }
  requests.push(
    JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'eth_getTransactionByHash', params: [`0x${'ab'.repeat(32)}`] }),
  );
  const addrs = [...contracts].slice(0, 6);
  addrs.push(`0x${'00'.repeat(19)}01`); // an account that does not exist
  requests.push(...stateRequests(addrs, head));
  // Numeric ids written unusually are echoed as written; a batch mixes cached and uncached answers.
  requests.push(
    `{"jsonrpc":"2.0","id":1.0,"method":"eth_getTransactionByHash","params":["${txs[0] ?? `0x${'ab'.repeat(32)}`}"]}`,
  );
  requests.push(`{"jsonrpc":"2.0","id":12345678901234567890,"method":"eth_getBlockByNumber","params":["latest",true]}`);
  requests.push(`[${requests.slice(0, 3).join(',')},{"jsonrpc":"2.0","id":9,"method":"eth_blockNumber"}]`);
  return requests;
}

const chains = (['fixtures', 'execution-apis'] as ChainName[]).filter((c) => chainDir(c) !== undefined);
if (chains.length === 0) console.log('skipped: no chain to read (neither fixtures/ nor ../shared/chains)');
const d = chains.length === 0 ? describe.skip : describe;

d.each(chains)('caches cold vs warm over the %s chain', (chain) => {
  let dir: string;
  let cleanup: () => Promise<void>;
  const requests: string[] = [];

  /** Answers `body` with a fresh store and service: nothing cached anywhere. */
  async function coldAnswer(body: string): Promise<string | undefined> {
    const store = await openChainStore(dir, { nodeCacheBytes: COLD_NODE_CACHE_BYTES });
    try {
      return (await createRpcService(store).handle(body)).body;
    } finally {
      await store.close();
    }
  }

  beforeAll(async () => {
    const copy = await datadirCopy(chain);
    dir = copy.dir;
    cleanup = copy.cleanup;
    requests.push(...(await requestsFrom(dir)));
  });

  afterAll(async () => {
    await cleanup?.();
  });

  test('every answer is byte-identical cold and warm, in any order', async () => {
    expect(requests.length).toBeGreaterThan(50);
    const reference: (string | undefined)[] = [];
    for (const r of requests) reference.push(await coldAnswer(r));
    // The reference answers are real answers (not errors), and canonical JSON text.
    let nonNull = 0;
    for (const [i, text] of reference.entries()) {
      expect(text).toBeDefined();
      const parsed = JSON.parse(text as string) as Json | Json[];
      for (const m of [parsed].flat()) {
        expect(m).not.toHaveProperty('error');
        if (m['result'] !== null) nonNull++;
      }
      if (!/"id":(1\.0|12345678901234567890)/.test(requests[i] as string)) expect(JSON.stringify(parsed)).toBe(text);
    }
    expect(nonNull).toBeGreaterThan(requests.length / 2);

    const store = await openChainStore(dir);
    try {
      const svc = createRpcService(store);
      const order = [...requests.keys()];
      const passes = [
        order,
        order,
        [...order].reverse(),
        order.filter((i) => i % 2 === 0).concat(order.filter((i) => i % 2 === 1)),
      ];
      for (const pass of passes) {
        for (const i of pass) expect(textOf(await svc.handle(requests[i] as string))).toBe(reference[i]);
      }
      const again = await Promise.all(order.map(async (i) => textOf(await svc.handle(requests[i] as string))));
      expect(again).toEqual(reference);
    } finally {
      await store.close();
    }
    // Cold and concurrent, every request twice: cache fills racing each other.
    const racing = await openChainStore(dir);
    try {
      const svc = createRpcService(racing);
      const both = [...requests.keys(), ...requests.keys()];
      const answers = await Promise.all(both.map(async (i) => textOf(await svc.handle(requests[i] as string))));
      expect(answers).toEqual([...reference, ...reference]);
      // Memoised answers (blocks, transactions, proofs) came with bytes, and those were checked.
      expect(withBytes).toBeGreaterThan(requests.length);
    } finally {
      await racing.close();
    }
  });
});
