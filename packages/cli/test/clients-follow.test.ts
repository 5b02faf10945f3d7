// Unmodified ethers v6, viem and web3.js v4 with default options against a node following anvil
// (`serve --follow`, anvil automining): each reads an ERC-20-like token (balanceOf through
// eth_call), estimates the gas of a transfer, signs the transfer locally and sends it through the
// node (eth_sendRawTransaction, forwarded to anvil), and waits for its receipt through the node.
// Every value is checked against anvil's own answers: balances before and after, the receipt,
// the estimate against what the mined transfer used and what anvil estimates.
import { Contract, JsonRpcProvider, Wallet } from 'ethers';
import { createPublicClient, createWalletClient, http } from 'viem';
import type { Abi, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { anvil as anvilChain } from 'viem/chains';
import { Web3 } from 'web3';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compileToken, tempDir } from '@chainnode/testkit';
import { DEV, GENESIS, minedReceipt, result, startAnvil, waitSynced } from './anvil-upstream.js';
import type { Anvil } from './anvil-upstream.js';
import { createKeyCli, spawnServe } from './serve-helpers.js';
import type { ServeProcess } from './serve-helpers.js';

/** Private keys of anvil's dev accounts 1..3 (its default mnemonic; checked against DEV below). */
const KEYS: Hex[] = [
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
];
const SUPPLY = 10n ** 24n;

type Json = Record<string, unknown>;

/** A token deployed on anvil, as read through anvil and through the node following it. */
interface TokenChain {
  upstream: string;
  /** The node's URL for the test key. */
  ours: string;
  token: Hex;
  abi: Abi;
  output: () => string;
}

/**
 * The token, deployed by anvil's first dev account `holder`; then it sends every client's
 * account some.
 */
async function deployToken(upstream: string, holder: Hex): Promise<{ token: Hex; abi: Abi }> {
  const compiled = compileToken();
  const abi = compiled.abi as Abi;
  const iface = new Contract(holder, abi as never).interface;
  const deploy = await result<string>(upstream, 'eth_sendTransaction', [
    { from: holder, data: `${compiled.bytecode}${iface.encodeDeploy([SUPPLY]).slice(2)}` },
  ]);
  const receipt = await minedReceipt(upstream, deploy);
  expect(receipt.status).toBe('0x1');
  const token = receipt.contractAddress as Hex;
  for (const to of DEV.slice(1)) {
    const transfer = await result<string>(upstream, 'eth_sendTransaction', [
      { from: holder, to: token, data: iface.encodeFunctionData('transfer', [to, 1000n * 10n ** 18n]) },
    ]);
    expect((await minedReceipt(upstream, transfer)).status).toBe('0x1');
  }
  return { token, abi };
}

/** anvil's balanceOf `who` at `block`, by a raw eth_call to anvil. */
async function anvilBalanceOn(c: TokenChain, who: string, block = 'latest'): Promise<bigint> {
  const iface = new Contract(c.token, c.abi as never).interface;
  const data = iface.encodeFunctionData('balanceOf', [who]);
  return BigInt(await result<string>(c.upstream, 'eth_call', [{ to: c.token, data }, block]));
}

async function anvilEstimate(c: TokenChain, from: string, to: string, value: bigint): Promise<bigint> {
  const data = new Contract(c.token, c.abi as never).interface.encodeFunctionData('transfer', [to, value]);
  return BigInt(await result<string>(c.upstream, 'eth_estimateGas', [{ from, to: c.token, data }]));
}

/**
 * The node's receipt of `hash` (as the client got it) checked against anvil's: same block, gas,
 * logs; the transfer's effect on both balances as anvil reads them; the estimate enough for it.
 */
async function checkTransferOn(
  c: TokenChain,
  transfer: { hash: string; from: string; to: string; value: bigint },
  before: { from: bigint; to: bigint },
  estimate: bigint,
): Promise<void> {
  const { hash, from, to, value } = transfer;
  const theirs = await result<Json>(c.upstream, 'eth_getTransactionReceipt', [hash]);
  const mine = await result<Json>(c.ours, 'eth_getTransactionReceipt', [hash]);
  // anvil adds `blockTimestamp` and a non-blob `blobGasPrice` that geth's receipt has not.
  const { blockTimestamp: _t, blobGasPrice: _b, ...want } = theirs;
  expect(mine).toEqual(want);
  expect([mine.status, mine.from, mine.to]).toEqual(['0x1', from.toLowerCase(), c.token.toLowerCase()]);
  expect((mine.logs as unknown[]).length).toBe(1);
  expect(await anvilBalanceOn(c, from)).toBe(before.from - value);
  expect(await anvilBalanceOn(c, to)).toBe(before.to + value);
  // The estimate covers what the transfer used; within geth's 1.5% search tolerance (and the
  // 64/63 gas retained by calls) of anvil's own estimate.
  const used = BigInt(mine.gasUsed as string);
  expect(estimate).toBeGreaterThanOrEqual(used);
  const theirEstimate = await anvilEstimate(c, from, to, value);
  const ratio = Number(estimate) / Number(theirEstimate);
  expect(ratio).toBeGreaterThan(0.985);
  expect(ratio).toBeLessThan(1.05);
  await waitSynced(c.upstream, c.ours, c.output);
}

describe('ethers, viem and web3.js against a node following anvil', () => {
  let anvil: Anvil;
  let node: ServeProcess;
  let ours: string;
  let temp: { dir: string; cleanup: () => Promise<void> };
  let token: Hex;
  let abi: Abi;
  const holder = DEV[0] as Hex;

  beforeAll(async () => {
    temp = await tempDir('clients-follow-');
    anvil = await startAnvil(temp.dir);
    const genesisPath = join(temp.dir, 'genesis.json');
    await writeFile(genesisPath, JSON.stringify(GENESIS));
    const datadir = join(temp.dir, 'data');
    const { key } = await createKeyCli(datadir, 'custom');
    node = await spawnServe(datadir, ['--follow', anvil.url, '--genesis', genesisPath, '--poll-ms', '50']);
    ours = node.url(key);
    ({ token, abi } = await deployToken(anvil.url, holder));
    await waitSynced(anvil.url, ours, () => node.output());
  }, 120_000);

  afterAll(async () => {
    await node?.stop('SIGTERM');
    await anvil?.stop();
    await temp?.cleanup();
  });

  const chainOf = (): TokenChain => ({ upstream: anvil.url, ours, token, abi, output: () => node.output() });
  const anvilBalance = (who: string, block = 'latest'): Promise<bigint> => anvilBalanceOn(chainOf(), who, block);
  /** See checkTransferOn. */
  const checkTransfer = (
    hash: string,
    from: string,
    to: string,
    value: bigint,
    before: { from: bigint; to: bigint },
    estimate: bigint,
  ): Promise<void> => checkTransferOn(chainOf(), { hash, from, to, value }, before, estimate);

  test('the keys are those of anvil’s dev accounts', () => {
    expect(KEYS.map((k) => privateKeyToAccount(k).address.toLowerCase())).toEqual(DEV.slice(1));
  });

  test('ethers v6: contract read, estimateGas, a signed transfer sent through the node, wait()', async () => {
    const provider = new JsonRpcProvider(ours);
    const wallet = new Wallet(KEYS[0] as string, provider);
    const erc20 = new Contract(token, abi as never, wallet);
    const to = DEV[3] as string;
    const value = 12_345n;
    // Reads at latest and at an older block, as anvil answers them.
    const balanceOf = erc20.getFunction('balanceOf');
    expect(await balanceOf(holder)).toBe(await anvilBalance(holder));
    const deployBlock = Number(await result<string>(anvil.url, 'eth_blockNumber', [])) - 3;
    expect(await balanceOf(holder, { blockTag: deployBlock })).toBe(
      await anvilBalance(holder, `0x${deployBlock.toString(16)}`),
    );
    expect(await erc20.getFunction('totalSupply')()).toBe(SUPPLY);
    const before = { from: await anvilBalance(wallet.address), to: await anvilBalance(to) };
    const transfer = erc20.getFunction('transfer');
    const estimate = await transfer.estimateGas(to, value);
    const tx = await transfer(to, value);
    const receipt = await tx.wait();
    expect(receipt?.status).toBe(1);
    expect(receipt?.hash).toBe(tx.hash);
    await checkTransfer(tx.hash, wallet.address, to, value, before, estimate);
    expect(await balanceOf(wallet.address)).toBe(before.from - value);
    provider.destroy();
  });

  test('viem: readContract, estimateContractGas, writeContract through the node, waitForTransactionReceipt', async () => {
    const account = privateKeyToAccount(KEYS[1] as Hex);
    const publicClient = createPublicClient({ chain: anvilChain, transport: http(ours) });
    const walletClient = createWalletClient({ account, chain: anvilChain, transport: http(ours) });
    const to = DEV[1] as Hex;
    const value = 777n;
    expect(await publicClient.readContract({ address: token, abi, functionName: 'balanceOf', args: [holder] })).toBe(
      await anvilBalance(holder),
    );
    const before = { from: await anvilBalance(account.address), to: await anvilBalance(to) };
    const estimate = await publicClient.estimateContractGas({
      address: token,
      abi,
      functionName: 'transfer',
      args: [to, value],
      account,
    });
    const hash = await walletClient.writeContract({ address: token, abi, functionName: 'transfer', args: [to, value] });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
    expect(receipt.transactionHash).toBe(hash);
    await checkTransfer(hash, account.address, to, value, before, estimate);
    expect(
      await publicClient.readContract({ address: token, abi, functionName: 'balanceOf', args: [account.address] }),
    ).toBe(before.from - value);
  });

  test('web3.js v4: methods.call, estimateGas, send with a local wallet through the node (receipt awaited)', async () => {
    const web3 = new Web3(ours);
    const account = web3.eth.accounts.wallet.add(KEYS[2] as string).get(0);
    if (account === undefined) throw new Error('no wallet account');
    const erc20 = new web3.eth.Contract(abi as never, token);
    const to = DEV[2] as string;
    const value = 4242n;
    const methods = erc20.methods as unknown as Record<
      string,
      (...args: unknown[]) => {
        call(): Promise<unknown>;
        estimateGas(o: { from: string }): Promise<bigint>;
        send(o: { from: string }): Promise<{ transactionHash: string; status: bigint }>;
      }
    >;
    expect(await (methods.balanceOf as NonNullable<(typeof methods)['balanceOf']>)(holder).call()).toBe(
      await anvilBalance(holder),
    );
    const before = { from: await anvilBalance(account.address), to: await anvilBalance(to) };
    const transfer = methods.transfer as NonNullable<(typeof methods)['transfer']>;
    const estimate = await transfer(to, value).estimateGas({ from: account.address });
    const receipt = await transfer(to, value).send({ from: account.address });
    expect(receipt.status).toBe(1n);
    await checkTransfer(receipt.transactionHash, account.address, to, value, before, BigInt(estimate));
    expect(await web3.eth.getTransactionCount(account.address)).toBe(
      BigInt(await result<string>(anvil.url, 'eth_getTransactionCount', [account.address, 'latest'])),
    );
    expect(await web3.eth.getBalance(account.address)).toBe(
      BigInt(await result<string>(anvil.url, 'eth_getBalance', [account.address, 'latest'])),
    );
  });
});
