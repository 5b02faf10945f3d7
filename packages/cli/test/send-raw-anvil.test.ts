// eth_sendRawTransaction under `serve --follow` with anvil (automining) as the upstream, reached
// through a counting HTTP proxy: valid signed transactions of every type anvil mines go through
// the node, are mined by anvil and appear in a block this node followed (receipt read from the
// node, equal to anvil's); invalid ones (bad signature, wrong chain id, not replay-protected,
// nonce too low, balance too small, undecodable) are refused by the node with geth's words and
// never reach anvil: the proxy counts exactly the valid ones. Without an upstream, serve refuses
// every transaction with a clear error.
import { createFeeMarket1559Tx, createAccessList2930Tx, createLegacyTx } from '@ethereumjs/tx';
import type { TypedTransaction } from '@ethereumjs/tx';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { bytesToHex, hexToBytes, privateToAddress } from '@ethereumjs/util';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@chainnode/testkit';
import { DEV, GENESIS, call, minedReceipt, result, startAnvil, waitSynced } from './anvil-upstream.js';
import type { Anvil, Envelope } from './anvil-upstream.js';
import { startJoinProxy } from './join-proxy.js';
import type { JoinProxy } from './join-proxy.js';
import { createKeyCli, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

/** The private keys of anvil's first dev accounts (its default mnemonic; checked against DEV below). */
const KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
].map((k) => hexToBytes(k as Hex));
/** A key whose account holds nothing on this chain. */
const POOR = hexToBytes(`0x${'42'.repeat(32)}`);

const common = createCommonFromGethGenesis(GENESIS as unknown as GethGenesis, { chain: 'custom' });
const otherChain = createCommonFromGethGenesis(
  { ...GENESIS, config: { ...(GENESIS.config as object), chainId: 1 } } as unknown as GethGenesis,
  { chain: 'custom' },
);

type Json = Record<string, unknown>;
type Hex = `0x${string}`;
const [A0, A1, A2, A3] = DEV as [Hex, Hex, Hex, Hex];
const GWEI = 1_000_000_000n;

/** An EIP-1559 transfer of 1 wei to A2 on anvil's chain. */
function oneWei(nonce: bigint) {
  return {
    nonce,
    to: A2,
    value: 1n,
    gasLimit: 21_000n,
    maxFeePerGas: 3n * GWEI,
    maxPriorityFeePerGas: GWEI,
    chainId: 31337n,
  };
}

/** A node following anvil through a counting proxy, as the tests below reach it. */
interface Sender {
  /** The node's URL for the test key. */
  ours: string;
  upstream: string;
  /** eth_sendRawTransaction calls the proxy has forwarded to anvil so far. */
  sent: () => number;
  output: () => string;
}

const raw = (tx: TypedTransaction) => bytesToHex(tx.serialize());

async function nonceAt(upstream: string, i: number): Promise<bigint> {
  return BigInt(await result<string>(upstream, 'eth_getTransactionCount', [DEV[i], 'latest']));
}

/** Sends through the node; once anvil mined it and the node followed, the node's receipt equals anvil's. */
async function sendValidVia(s: Sender, tx: TypedTransaction): Promise<Json> {
  const { ours, upstream, sent } = s;
  const before = sent();
  const hash = await result<string>(ours, 'eth_sendRawTransaction', [raw(tx)]);
  expect(hash).toBe(bytesToHex(tx.hash()));
  expect(sent()).toBe(before + 1);
  // anvil mines after answering: only once its receipt exists is its head the block to follow.
  const theirs = await minedReceipt(upstream, hash);
  await waitSynced(upstream, ours, s.output);
  const mine = await result<Json | null>(ours, 'eth_getTransactionReceipt', [hash]);
  // geth's receipt: anvil adds `blockTimestamp` (a JSON number) and a `blobGasPrice` to receipts of
  // non-blob transactions, which geth (and the execution-apis fixtures) do not have.
  const { blockTimestamp, blobGasPrice, ...want } = theirs as Json;
  expect(typeof blockTimestamp).toBe('number');
  expect(blobGasPrice).toBeDefined();
  expect(mine).toEqual(want);
  const block = await result<Json>(ours, 'eth_getBlockByNumber', [mine?.blockNumber, false]);
  expect(block.transactions).toContain(hash);
  return mine as Json;
}

async function refusedVia(s: Sender, rawHex: string, message: RegExp): Promise<void> {
  const before = s.sent();
  const r = (await call(s.ours, 'eth_sendRawTransaction', [rawHex])) as Envelope;
  expect(r.result).toBeUndefined();
  expect(r.error?.code).toBe(-32000);
  expect(r.error?.message).toMatch(message);
  // Nothing went upstream.
  expect(s.sent()).toBe(before);
}

/** A legacy transfer of 1234 wei from DEV[0] to A2. */
function legacyTx(nonce: bigint): TypedTransaction {
  return createLegacyTx({ nonce, to: A2, value: 1234n, gasLimit: 21_000n, gasPrice: 2n * GWEI }, { common }).sign(
    KEYS[0] as Uint8Array,
  );
}

/** An EIP-2930 transfer of 1 wei from DEV[0] to A3, with an access list. */
function accessListTx(nonce: bigint): TypedTransaction {
  return createAccessList2930Tx(
    {
      nonce,
      to: A3,
      value: 1n,
      gasLimit: 30_000n,
      gasPrice: 2n * GWEI,
      accessList: [[hexToBytes(A1), []]],
      chainId: 31337n,
    },
    { common },
  ).sign(KEYS[0] as Uint8Array);
}

/** An EIP-1559 transfer of 10^15 wei from DEV[1] to A0. */
function dynamicFeeTx(nonce: bigint): TypedTransaction {
  return createFeeMarket1559Tx(
    {
      nonce,
      to: A0,
      value: 10n ** 15n,
      gasLimit: 21_000n,
      maxFeePerGas: 3n * GWEI,
      maxPriorityFeePerGas: GWEI,
      chainId: 31337n,
    },
    { common },
  ).sign(KEYS[1] as Uint8Array);
}

/** Every dev account's balance on the node equals anvil's. */
async function expectSameBalances(ours: string, upstream: string): Promise<void> {
  for (const a of DEV) {
    const [o, t] = await Promise.all([
      result<string>(ours, 'eth_getBalance', [a, 'latest']),
      result<string>(upstream, 'eth_getBalance', [a, 'latest']),
    ]);
    expect([a, o]).toEqual([a, t]);
  }
}

/** Invalid transactions of every kind are refused by the node and none reaches anvil. */
async function checkInvalidRefused(s: Sender): Promise<void> {
  const { ours, sent } = s;
  const refused = (rawHex: string, message: RegExp): Promise<void> => refusedVia(s, rawHex, message);
  const nonceOf = (i: number): Promise<bigint> => nonceAt(s.upstream, i);

  const start = sent();
  const nonce = await nonceOf(0);
  const good = oneWei(nonce);
  // Undecodable bytes.
  await refused('0xdeadbeef', /^invalid transaction/);
  await refused('0x', /too short|invalid transaction/);
  // A signature that recovers no sender (r = 0 is outside secp256k1's range).
  const signed = createFeeMarket1559Tx(good, { common }).sign(KEYS[0] as Uint8Array);
  const sig = { v: signed.v as bigint, r: signed.r as bigint, s: signed.s as bigint };
  const forged = createFeeMarket1559Tx({ ...good, ...sig, r: 0n }, { common });
  await refused(raw(forged), /invalid (sender|transaction)/);
  // A valid signature over other bytes (the value changed after signing): it recovers some
  // other sender, an empty account.
  const altered = createFeeMarket1559Tx({ ...good, ...sig, value: 2n }, { common });
  const stranger = bytesToHex(altered.getSenderAddress().bytes);
  expect(stranger).not.toBe(DEV[0]);
  await refused(
    raw(altered),
    new RegExp(`^insufficient funds for gas \\* price \\+ value: address ${stranger} have 0 want`),
  );
  // Wrong chain id: signed for chain 1.
  const mainnet = createFeeMarket1559Tx({ ...good, chainId: 1n }, { common: otherChain }).sign(KEYS[0] as Uint8Array);
  await refused(raw(mainnet), /invalid chain id/);
  const legacyMainnet = createLegacyTx(
    { nonce, to: A2, value: 1n, gasLimit: 21_000n, gasPrice: 3n * GWEI },
    { common: otherChain },
  ).sign(KEYS[0] as Uint8Array);
  await refused(raw(legacyMainnet), /invalid chain id/);
  // Not replay-protected (pre-EIP-155 legacy): geth refuses these over RPC.
  const noChain = (() => {
    const c = common.copy();
    c.setHardfork('tangerineWhistle'); // before EIP-155: v is 27/28
    return createLegacyTx({ nonce, to: A2, value: 1n, gasLimit: 21_000n, gasPrice: 3n * GWEI }, { common: c }).sign(
      KEYS[0] as Uint8Array,
    );
  })();
  expect([27n, 28n]).toContain(noChain.v);
  await refused(raw(noChain), /replay-protected/);
  // Nonce too low: a nonce already mined.
  expect(nonce).toBeGreaterThan(0n);
  const stale = createFeeMarket1559Tx({ ...good, nonce: nonce - 1n }, { common }).sign(KEYS[0] as Uint8Array);
  await refused(raw(stale), new RegExp(`^nonce too low: address ${DEV[0]}, tx: ${nonce - 1n} state: ${nonce}$`));
  // Balance too small: an empty account, and a funded one sending more than it holds.
  const poor = createFeeMarket1559Tx({ ...good, nonce: 0n }, { common }).sign(POOR);
  await refused(raw(poor), /^insufficient funds for gas \* price \+ value: address 0x[0-9a-f]{40} have 0 want \d+$/);
  const balance = BigInt(await result<string>(ours, 'eth_getBalance', [DEV[0], 'latest']));
  const rich = createFeeMarket1559Tx({ ...good, value: balance }, { common }).sign(KEYS[0] as Uint8Array);
  await refused(
    raw(rich),
    new RegExp(`^insufficient funds for gas \\* price \\+ value: address ${DEV[0]} have ${balance} want`),
  );
  // Not a hex string at all: a parameter error, not sent either.
  const bad = (await call(ours, 'eth_sendRawTransaction', ['not hex'])) as Envelope;
  expect(bad.error?.code).toBe(-32602);
  expect(sent()).toBe(start);
  // And nothing of it reached anvil: the same nonce is still free, and a valid tx with it goes through.
  expect(await nonceOf(0)).toBe(nonce);
  const after = await sendValidVia(s, createFeeMarket1559Tx(good, { common }).sign(KEYS[0] as Uint8Array));
  expect(after.status).toBe('0x1');
  expect(sent()).toBe(start + 1);
}

describe('eth_sendRawTransaction through a node following anvil', () => {
  let anvil: Anvil;
  let proxy: JoinProxy;
  let node: ServeProcess;
  let ours: string;
  let datadir: string;
  let genesisPath: string;
  let key: string;
  let temp: { dir: string; cleanup: () => Promise<void> };

  beforeAll(async () => {
    temp = await tempDir('send-raw-');
    anvil = await startAnvil(temp.dir);
    proxy = await startJoinProxy(anvil.url);
    genesisPath = join(temp.dir, 'genesis.json');
    await writeFile(genesisPath, JSON.stringify(GENESIS));
    datadir = join(temp.dir, 'data');
    key = (await createKeyCli(datadir, 'custom')).key;
    node = await spawnServe(datadir, ['--follow', proxy.url, '--genesis', genesisPath, '--poll-ms', '50']);
    ours = node.url(key);
    // anvil --init reports the empty-trie root as block 0's state root (the node stores that header
    // as anvil serves it), so the alloc's balances are readable from block 1 on: mine one.
    await result(anvil.url, 'evm_mine', []);
    await waitSynced(anvil.url, ours, () => node.output());
  }, 120_000);

  afterAll(async () => {
    await node?.stop('SIGTERM');
    await proxy?.close();
    await anvil?.stop();
    await temp?.cleanup();
  });

  const sent = () => proxy.counts.get('eth_sendRawTransaction') ?? 0;
  const nonceOf = (i: number) => nonceAt(anvil.url, i);
  const sender = (): Sender => ({ ours, upstream: anvil.url, sent, output: () => node.output() });
  const sendValid = (tx: TypedTransaction): Promise<Json> => sendValidVia(sender(), tx);

  test('the keys are those of anvil’s dev accounts', () => {
    expect(KEYS.map((k) => bytesToHex(privateToAddress(k)))).toEqual(DEV.slice(0, 2));
  });

  test('valid transactions of each type are forwarded once, mined by anvil and followed here', async () => {
    const start = sent();
    let nonce = await nonceOf(0);
    const legacy = legacyTx(nonce++);
    const r1 = await sendValid(legacy);
    expect([r1.status, r1.type, r1.from]).toEqual(['0x1', '0x0', DEV[0]]);
    const r2 = await sendValid(accessListTx(nonce++));
    expect([r2.status, r2.type]).toEqual(['0x1', '0x1']);
    const r3 = await sendValid(dynamicFeeTx(await nonceOf(1)));
    expect([r3.status, r3.type, r3.from]).toEqual(['0x1', '0x2', DEV[1]]);
    // Balance moved as anvil says: the node's state follows the mined transactions.
    await expectSameBalances(ours, anvil.url);
    expect(sent()).toBe(start + 3);
  });

  test('invalid transactions are refused before anvil sees them', async () => {
    await checkInvalidRefused(sender());
  });

  test("eth_call and eth_estimateGas of a priced call from an empty account: geth's insufficient-funds error", async () => {
    const poor = bytesToHex(privateToAddress(POOR));
    const req = {
      from: poor,
      to: A2,
      value: '0x1',
      gas: '0x5208',
      maxFeePerGas: '0x77359400',
      maxPriorityFeePerGas: '0x1',
    };
    for (const method of ['eth_call', 'eth_estimateGas']) {
      const r = (await call(ours, method, [req, 'latest'])) as Envelope;
      expect([method, r.error?.code]).toEqual([method, -32000]);
      expect(r.error?.message).toBe(
        `insufficient funds for gas * price + value: address ${poor} have 0 want ${21_000n * 2_000_000_000n + 1n}`,
      );
    }
  });

  test('without an upstream the node refuses transactions with a clear error', async () => {
    await node.stop('SIGTERM');
    const alone = await spawnServe(datadir, []);
    try {
      const before = sent();
      const tx = createFeeMarket1559Tx(oneWei(await nonceOf(0)), { common }).sign(KEYS[0] as Uint8Array);
      const r = (await call(alone.url(key), 'eth_sendRawTransaction', [raw(tx)])) as Envelope;
      expect(r.error).toEqual({
        code: -32000,
        message: 'transactions are not accepted: this node follows no upstream',
      });
      expect(sent()).toBe(before);
    } finally {
      await alone.stop('SIGTERM');
    }
  });
});
