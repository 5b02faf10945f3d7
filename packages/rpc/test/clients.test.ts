// Unmodified clients (ethers v6, viem, web3.js v4, default options, network detection
// on) against this method table over plain HTTP (a node:http wrapper on 127.0.0.1:0; the real
// uWebSockets transport and WebSocket are the server package's tests). Each client fetches a
// block by number, a transaction, logs of a range, a storage slot and a proof, and the
// answers are compared with what the service itself returns.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { JsonRpcProvider } from 'ethers';
import { createPublicClient, http } from 'viem';
import { Web3 } from 'web3';
import { openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import type { ChainStore } from '@chainnode/core';
import { createRpcService } from '../src/index.js';
import type { JsonBlock, JsonLog, JsonTransaction, RpcServiceApi } from '../src/index.js';

const available = chainDir('execution-apis') !== undefined;
const suite = available ? describe : describe.skip;
if (!available) console.log('[rpc clients] execution-apis chain not found, skipping');

/** The service behind a node:http server on 127.0.0.1 (a free port); the methods asked for are added to `seen`. */
async function serveOverHttp(svc: RpcServiceApi, seen: Set<string>): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const parsed = JSON.parse(body) as { method?: string } | { method?: string }[];
        for (const m of [parsed].flat()) if (typeof m?.method === 'string') seen.add(m.method);
      } catch {
        // the service answers the parse error
      }
      void svc.handle(body).then((reply) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(reply.body ?? '');
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * The first transaction of each kind on the chain into `samples`; the first type-2 transaction
 * and its block.
 */
async function sampleTransactions(
  call: <T>(method: string, ...params: unknown[]) => Promise<T>,
  samples: Map<string, JsonTransaction>,
): Promise<{ block: JsonBlock; tx: JsonTransaction }> {
  let block: JsonBlock | undefined;
  let tx: JsonTransaction | undefined;
  const head = Number(BigInt(await call<string>('eth_blockNumber')));
  for (let n = 1; n <= head; n++) {
    const b = await call<JsonBlock>('eth_getBlockByNumber', `0x${n.toString(16)}`, true);
    for (const t of b.transactions as JsonTransaction[]) {
      const kind = t.type === '0x0' ? (t.chainId === undefined ? 'legacy' : 'legacy-155') : t.type;
      if (!samples.has(kind)) samples.set(kind, t);
      if (t.type === '0x2' && tx === undefined) {
        block = b;
        tx = t;
      }
    }
  }
  if (block === undefined || tx === undefined) throw new Error('no type-2 transaction on the chain');
  return { block, tx };
}

/** The methods of the table the clients need. */
const NEEDED_METHODS = [
  'eth_chainId',
  'net_version',
  'eth_blockNumber',
  'web3_clientVersion',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getTransactionByHash',
  'eth_getLogs',
  'eth_getStorageAt',
  'eth_getProof',
];

suite('unmodified clients over HTTP (execution-apis chain)', () => {
  let store: ChainStore;
  let cleanup: () => Promise<void>;
  let server: Server;
  let url: string;
  let svc: RpcServiceApi;
  const methodsSeen = new Set<string>();

  // The block with the most transactions, a typed transaction in it, a log-bearing range.
  let block: JsonBlock;
  let tx: JsonTransaction;
  let logs: JsonLog[];
  let contract: string;
  /** One transaction of each kind on the chain: legacy (with and without EIP-155), 1, 2, 3, 4. */
  const samples = new Map<string, JsonTransaction>();

  async function call<T>(method: string, ...params: unknown[]): Promise<T> {
    const reply = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
    return (JSON.parse(reply.body!) as { result: T }).result;
  }

  beforeAll(async () => {
    const copy = await datadirCopy('execution-apis');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    svc = createRpcService(store);
    ({ server, url } = await serveOverHttp(svc, methodsSeen));

    ({ block, tx } = await sampleTransactions(call, samples));
    expect([...samples.keys()].sort()).toEqual(['0x1', '0x2', '0x3', '0x4', 'legacy', 'legacy-155']);
    const from = Number(BigInt(block.number));
    logs = await call<JsonLog[]>('eth_getLogs', { fromBlock: `0x${(from - 3).toString(16)}`, toBlock: block.number });
    contract = logs[0]!.address;
  });

  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await store?.close();
    await cleanup?.();
  });

  test('ethers v6 JsonRpcProvider', async () => {
    const provider = new JsonRpcProvider(url);
    try {
      const network = await provider.getNetwork();
      expect(network.chainId).toBe(BigInt(await call<string>('eth_chainId')));
      const b = await provider.getBlock(Number(BigInt(block.number)));
      expect(b?.hash).toBe(block.hash);
      expect(b?.transactions).toEqual((block.transactions as JsonTransaction[]).map((t) => t.hash));
      const t = await provider.getTransaction(tx.hash);
      expect(t?.hash).toBe(tx.hash);
      expect(t?.from.toLowerCase()).toBe(tx.from);
      expect(t?.gasPrice).toBe(BigInt(tx.gasPrice));
      const ls = await provider.getLogs({
        fromBlock: Number(BigInt(logs[0]!.blockNumber)),
        toBlock: Number(BigInt(block.number)),
      });
      expect(ls.map((l) => `${l.blockNumber}/${l.index}`)).toEqual(
        logs.map((l) => `${Number(BigInt(l.blockNumber))}/${Number(BigInt(l.logIndex))}`),
      );
      const slot = await provider.getStorage(contract, 0, Number(BigInt(block.number)));
      expect(slot).toBe(await call('eth_getStorageAt', contract, '0x0', block.number));
      const proof = (await provider.send('eth_getProof', [contract, ['0x0'], block.number])) as { address: string };
      expect(proof.address).toBe(contract);
      for (const [kind, s] of samples) {
        const got = await provider.getTransaction(s.hash);
        expect([kind, got?.hash, got?.from.toLowerCase(), got?.type]).toEqual([
          kind,
          s.hash,
          s.from,
          Number(BigInt(s.type)),
        ]);
      }
    } finally {
      provider.destroy();
    }
  });

  test('viem public client without a chain', async () => {
    const client = createPublicClient({ transport: http(url) });
    expect(BigInt(await client.getChainId())).toBe(BigInt(await call<string>('eth_chainId')));
    const b = await client.getBlock({ blockNumber: BigInt(block.number) });
    expect(b.hash).toBe(block.hash);
    const t = await client.getTransaction({ hash: tx.hash as `0x${string}` });
    expect(t.hash).toBe(tx.hash);
    expect(t.gasPrice).toBe(BigInt(tx.gasPrice));
    const ls = await client.getLogs({ fromBlock: BigInt(logs[0]!.blockNumber), toBlock: BigInt(block.number) });
    expect(ls.length).toBe(logs.length);
    const slot = await client.getStorageAt({
      address: contract as `0x${string}`,
      slot: '0x0',
      blockNumber: BigInt(block.number),
    });
    expect(slot).toBe(await call('eth_getStorageAt', contract, '0x0', block.number));
    const proof = await client.getProof({
      address: contract as `0x${string}`,
      storageKeys: [`0x${'00'.repeat(32)}`],
      blockNumber: BigInt(block.number),
    });
    for (const [kind, s] of samples) {
      const got = await client.getTransaction({ hash: s.hash as `0x${string}` });
      expect([kind, got.hash, got.from]).toEqual([kind, s.hash, s.from]);
    }
    expect(proof.storageProof[0]!.value).toBe(
      BigInt(await call<string>('eth_getStorageAt', contract, '0x0', block.number)),
    );
  });

  test('web3.js v4', async () => {
    const web3 = new Web3(url);
    const n = BigInt(block.number);
    const b = await web3.eth.getBlock(n);
    expect(b.hash).toBe(block.hash);
    const t = await web3.eth.getTransaction(tx.hash);
    expect(t.hash).toBe(tx.hash);
    const ls = await web3.eth.getPastLogs({ fromBlock: BigInt(logs[0]!.blockNumber), toBlock: n });
    expect(ls.length).toBe(logs.length);
    const slot = await web3.eth.getStorageAt(contract, 0, n);
    expect(slot).toBe(await call('eth_getStorageAt', contract, '0x0', block.number));
    for (const [kind, s] of samples) {
      const got = await web3.eth.getTransaction(s.hash);
      expect([kind, got.hash, got.from]).toEqual([kind, s.hash, s.from]);
    }
    const proof = await web3.eth.getProof(contract, [`0x${'00'.repeat(32)}`], n);
    expect(proof.storageHash).toBe(
      (await call<{ storageHash: string }>('eth_getProof', contract, ['0x0'], block.number)).storageHash,
    );
  });

  test('clients only needed methods of the table', () => {
    // Anything else a client asked for would have been answered -32601; list it if so.
    expect([...methodsSeen].filter((m) => !NEEDED_METHODS.includes(m))).toEqual([]);
  });
});
