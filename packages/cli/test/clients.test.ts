// Unmodified clients with default options against a running `node-cli serve`
// (child process): ethers v6 JsonRpcProvider + WebSocketProvider (network detection on), viem
// http + webSocket transports without a chain, web3.js v4 over HTTP and WebSocket. Each fetches a block by
// number, a transaction, the logs of a range, a storage slot and a proof; every answer is
// compared with the raw JSON-RPC reply of the same server.
import { JsonRpcProvider, WebSocketProvider } from 'ethers';
import { createPublicClient, http, webSocket } from 'viem';
import type { Hex } from 'viem';
import { Web3 } from 'web3';
import { chainDir, datadirCopy } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { createKeyCli, rpc, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

const chain: ChainName = chainDir('fixtures') !== undefined ? 'fixtures' : 'execution-apis';

interface Facts {
  blockNumber: number;
  block: { hash: string; number: string; transactions: string[] };
  tx: { hash: string; from: string; nonce: string; blockNumber: string };
  logsRange: { from: number; to: number; count: number; firstTxHash: string };
  storage: { address: string; slot: string; value: string };
  proof: { address: string; storageHash: string; accountProof: string[]; storageValue: string };
}

interface Answers {
  blockHash: string;
  txHash: string;
  txFrom: string;
  logCount: number;
  firstLogTx: string;
  storage: string;
  proofStorageHash: string;
  proofAccountNodes: string[];
  proofStorageValue: bigint;
}

let dir: string;
let cleanup: () => Promise<void>;
let server: ServeProcess;
let key: string;
let facts: Facts;

beforeAll(async () => {
  ({ dir, cleanup } = await datadirCopy(chain));
  key = (await createKeyCli(dir, 'custom')).key;
  server = await spawnServe(dir);
  const url = server.url(key);
  const get = async (method: string, params: unknown[]): Promise<unknown> => {
    const r = await rpc(url, method, params);
    if (r.body.error) throw new Error(`${method}: ${r.body.error.message}`);
    return r.body.result;
  };
  const head = Number(await get('eth_blockNumber', []));
  // The first block with transactions, and a range with logs (found by the raw API).
  let blockNumber = -1;
  let block: Facts['block'] | undefined;
  for (let n = 1; n <= head && block === undefined; n++) {
    const b = (await get('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])) as Facts['block'];
    if (b.transactions.length > 0) {
      block = b;
      blockNumber = n;
    }
  }
  if (!block) throw new Error('no block with transactions in the chain');
  const tx = (await get('eth_getTransactionByHash', [block.transactions[0]])) as Facts['tx'];
  const to = Math.min(head, blockNumber + 9);
  const logs = (await get('eth_getLogs', [
    { fromBlock: `0x${blockNumber.toString(16)}`, toBlock: `0x${to.toString(16)}` },
  ])) as { address: string; transactionHash: string }[];
  if (logs.length === 0) throw new Error('no logs in the range');
  const address = (logs[0] as { address: string }).address;
  const slot = '0x0';
  const value = (await get('eth_getStorageAt', [address, slot, 'latest'])) as string;
  const proofKey = `0x${'00'.repeat(32)}`;
  const p = (await get('eth_getProof', [address, [proofKey], 'latest'])) as {
    storageHash: string;
    accountProof: string[];
    storageProof: { value: string }[];
  };
  facts = {
    blockNumber,
    block,
    tx,
    logsRange: {
      from: blockNumber,
      to,
      count: logs.length,
      firstTxHash: (logs[0] as { transactionHash: string }).transactionHash,
    },
    storage: { address, slot, value },
    proof: {
      address,
      storageHash: p.storageHash,
      accountProof: p.accountProof,
      storageValue: (p.storageProof[0] as { value: string }).value,
    },
  };
});

afterAll(async () => {
  await server?.stop('SIGTERM');
  await cleanup?.();
});

function check(a: Answers): void {
  expect(a.blockHash).toBe(facts.block.hash);
  expect(a.txHash).toBe(facts.tx.hash);
  expect(a.txFrom.toLowerCase()).toBe(facts.tx.from);
  expect(a.logCount).toBe(facts.logsRange.count);
  expect(a.firstLogTx).toBe(facts.logsRange.firstTxHash);
  expect(BigInt(a.storage)).toBe(BigInt(facts.storage.value));
  expect(a.proofStorageHash).toBe(facts.proof.storageHash);
  expect(a.proofAccountNodes).toEqual(facts.proof.accountProof);
  expect(a.proofStorageValue).toBe(BigInt(facts.proof.storageValue));
}

type EthersProvider = JsonRpcProvider | WebSocketProvider;

async function viaEthers(p: EthersProvider): Promise<Answers> {
  const block = await p.getBlock(facts.blockNumber);
  const tx = await p.getTransaction(facts.tx.hash);
  const logs = await p.getLogs({ fromBlock: facts.logsRange.from, toBlock: facts.logsRange.to });
  const storage = await p.getStorage(facts.storage.address, BigInt(facts.storage.slot), 'latest');
  // ethers has no getProof helper: the documented way is send().
  const proof = (await p.send('eth_getProof', [facts.proof.address, [`0x${'00'.repeat(32)}`], 'latest'])) as {
    storageHash: string;
    accountProof: string[];
    storageProof: { value: string }[];
  };
  return {
    blockHash: block?.hash ?? '',
    txHash: tx?.hash ?? '',
    txFrom: tx?.from ?? '',
    logCount: logs.length,
    firstLogTx: logs[0]?.transactionHash ?? '',
    storage,
    proofStorageHash: proof.storageHash,
    proofAccountNodes: proof.accountProof,
    proofStorageValue: BigInt(proof.storageProof[0]?.value ?? '0x0'),
  };
}

test('ethers v6 JsonRpcProvider (default options)', async () => {
  const p = new JsonRpcProvider(server.url(key));
  try {
    check(await viaEthers(p));
  } finally {
    p.destroy();
  }
});

test('ethers v6 WebSocketProvider (default options)', async () => {
  const p = new WebSocketProvider(server.ws(key));
  try {
    check(await viaEthers(p));
  } finally {
    await p.destroy();
  }
});

type ViemClient = ReturnType<typeof createPublicClient>;

async function viaViem(c: ViemClient): Promise<Answers> {
  const block = await c.getBlock({ blockNumber: BigInt(facts.blockNumber) });
  const tx = await c.getTransaction({ hash: facts.tx.hash as Hex });
  const logs = await c.getLogs({ fromBlock: BigInt(facts.logsRange.from), toBlock: BigInt(facts.logsRange.to) });
  const storage = await c.getStorageAt({ address: facts.storage.address as Hex, slot: facts.storage.slot as Hex });
  const proof = await c.getProof({
    address: facts.proof.address as Hex,
    storageKeys: [`0x${'00'.repeat(32)}`],
    blockTag: 'latest',
  });
  return {
    blockHash: block.hash ?? '',
    txHash: tx.hash,
    txFrom: tx.from,
    logCount: logs.length,
    firstLogTx: logs[0]?.transactionHash ?? '',
    storage: storage ?? '0x0',
    proofStorageHash: proof.storageHash,
    proofAccountNodes: proof.accountProof,
    proofStorageValue: proof.storageProof[0]?.value ?? -1n,
  };
}

test('viem http transport, no chain', async () => {
  const c = createPublicClient({ transport: http(server.url(key)) });
  check(await viaViem(c));
});

test('viem webSocket transport, no chain', async () => {
  const c = createPublicClient({ transport: webSocket(server.ws(key)) });
  try {
    check(await viaViem(c));
  } finally {
    const rpcClient = await (
      c.transport as unknown as { getRpcClient: () => Promise<{ close: () => void }> }
    ).getRpcClient();
    rpcClient.close();
  }
});

async function viaWeb3(w: Web3): Promise<Answers> {
  const block = await w.eth.getBlock(facts.blockNumber);
  const tx = await w.eth.getTransaction(facts.tx.hash);
  const logs = (await w.eth.getPastLogs({ fromBlock: facts.logsRange.from, toBlock: facts.logsRange.to })) as {
    transactionHash?: string;
  }[];
  const storage = await w.eth.getStorageAt(facts.storage.address, facts.storage.slot, 'latest');
  const proof = await w.eth.getProof(facts.proof.address, [`0x${'00'.repeat(32)}`], 'latest');
  return {
    blockHash: String(block.hash),
    txHash: String(tx.hash),
    txFrom: String(tx.from),
    logCount: logs.length,
    firstLogTx: String(logs[0]?.transactionHash),
    storage: String(storage),
    proofStorageHash: String(proof.storageHash),
    proofAccountNodes: proof.accountProof.map(String),
    proofStorageValue: BigInt(proof.storageProof[0]?.value ?? -1),
  };
}

test('web3.js v4 new Web3(url)', async () => {
  check(await viaWeb3(new Web3(server.url(key))));
});

test('web3.js v4 new Web3(ws url)', async () => {
  const w = new Web3(server.ws(key));
  try {
    check(await viaWeb3(w));
  } finally {
    (w.currentProvider as unknown as { disconnect: () => void }).disconnect();
  }
});
