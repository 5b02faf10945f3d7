// Unmodified ethers v6, viem and web3.js v4 with default options against a node following anvil
// (`serve --follow`, anvil automining): each reads an ERC-20-like token (balanceOf through
// eth_call), estimates the gas of a transfer, signs the transfer locally and sends it through the
// node (eth_sendRawTransaction, forwarded to anvil), and waits for its receipt through the node.
// Every value is checked against anvil's own answers: balances before and after, the receipt,
// the estimate against what the mined transfer used and what anvil estimates.
// foundry's cast prints the same against the node as against anvil (block, tx, receipt, logs,
// state at a block, proof, fees, estimate, access list, a transfer sent through the node), apart
// from the lines where anvil deviates from geth, each checked by geth's rule (see expectSameCast);
// `cast run` and `cast call --trace` print the same traces as against anvil.
// Filters (log and block filters polled over the same blocks) and eth_simulateV1 (state and block
// overrides, traceTransfers, validation, a revert) answer as anvil does where anvil follows geth.
import { AbiCoder, Contract, JsonRpcProvider, Wallet, keccak256 } from 'ethers';
import { createPublicClient, createWalletClient, http } from 'viem';
import type { Abi, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { anvil as anvilChain } from 'viem/chains';
import { Web3 } from 'web3';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compileToken, tempDir } from '@chainnode/testkit';
import { DEV, GENESIS, call, minedReceipt, rebuiltSize, result, startAnvil, waitSynced } from './anvil-upstream.js';
import type { Anvil, Envelope } from './anvil-upstream.js';
import { cast, castBinary, castBoth, splitFields } from './cast-cli.js';
import { createKeyCli, spawnServe } from './serve-helpers.js';
import { expectSimulatedAlike } from './simulate-compare.js';
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

/** The cast commands about the token's first transfer to DEV[1] (block `n`, transaction `hash`). */
function castCommands(token: string, hash: string, n: number): [string, ...string[]][] {
  const [holder, who, other] = DEV as [string, string, string];
  const at = String(n);
  const balanceSlot = keccak256(AbiCoder.defaultAbiCoder().encode(['address', 'uint256'], [who, 0]));
  const transfer = ['--from', holder, token, 'transfer(address,uint256)', who, '5'];
  return [
    ['block', at],
    ['tx', hash],
    ['receipt', hash],
    ['logs', '--from-block', '0', '--to-block', at, '--address', token],
    ['call', '--block', String(n - 1), token, 'balanceOf(address)(uint256)', who],
    ['call', '--block', at, token, 'balanceOf(address)(uint256)', who],
    ['storage', '--block', at, token, balanceSlot],
    ['balance', '--block', at, who],
    ['nonce', holder],
    ['nonce', '--block', at, holder],
    ['code', token],
    ['proof', token, balanceSlot],
    ['age', at],
    ['chain-id'],
    ['base-fee', at],
    ['base-fee'],
    ['estimate', '--from', holder, other, '--value', '1'],
    ['estimate', ...transfer],
    ['access-list', ...transfer],
  ];
}

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const word = (n: bigint | number) => `0x${n.toString(16).padStart(64, '0')}`;
const hexN = (n: number) => `0x${n.toString(16)}`;

/** The same call to the node and to anvil, each with its own params (filter ids differ). */
async function both(c: TokenChain, method: string, mine: unknown[], theirs = mine): Promise<[Envelope, Envelope]> {
  return Promise.all([call(c.ours, method, mine), call(c.upstream, method, theirs)]);
}

/**
 * Requests for eth_simulateV1 on top of the head `n` (timestamp `t`) over the token; `gethError`:
 * the code geth (and this node) answer where anvil answers blocks.
 */
function simulations(c: TokenChain, n: number, t: number): { req: Json; gethError?: number }[] {
  const iface = new Contract(c.token, c.abi as never).interface;
  const [holder, a1, a2, a3] = DEV as [string, string, string, string];
  const balanceOf = (who: string) => ({ to: c.token, data: iface.encodeFunctionData('balanceOf', [who]) });
  const transfer = (from: string, to: string, value: bigint) => ({
    from,
    to: c.token,
    data: iface.encodeFunctionData('transfer', [to, value]),
  });
  const slot = keccak256(AbiCoder.defaultAbiCoder().encode(['address', 'uint256'], [a1, 0]));
  const at = (k: number, extra: Json = {}) => ({
    number: hexN(n + k),
    time: hexN(t + 12 * k),
    baseFeePerGas: '0x0',
    ...extra,
  });
  const eth = { from: holder, to: a3, value: '0x5' };
  return [
    // A balance overridden (stateDiff), spent in part; a transfer beyond it reverts.
    {
      req: {
        blockStateCalls: [
          {
            blockOverrides: at(1),
            stateOverrides: { [c.token]: { stateDiff: { [slot]: word(1234) } } },
            calls: [balanceOf(a1), transfer(a1, a2, 1000n), transfer(a1, a2, 1000n), balanceOf(a2)],
          },
        ],
      },
    },
    // Two blocks, the second seeing the first's writes, a fee recipient and a balance override;
    // traceTransfers.
    {
      req: {
        blockStateCalls: [
          { blockOverrides: at(1), calls: [eth, transfer(holder, a3, 7n)] },
          {
            blockOverrides: at(2, { feeRecipient: a2 }),
            stateOverrides: { [a2]: { balance: '0x1' } },
            calls: [balanceOf(a3), { from: a2, to: a3, value: '0x1' }],
          },
        ],
        traceTransfers: true,
      },
    },
    // anvil ignores `validation` (geth: -38010 nonce too low, -38012 fee cap below the base fee)
    // and accepts block numbers out of order (geth: -38020).
    {
      gethError: -38010,
      req: {
        blockStateCalls: [
          { calls: [{ ...eth, nonce: '0x0', maxFeePerGas: '0x77359400', maxPriorityFeePerGas: '0x1' }] },
        ],
        validation: true,
      },
    },
    {
      gethError: -38012,
      req: {
        blockStateCalls: [{ calls: [{ ...eth, maxFeePerGas: '0x1', maxPriorityFeePerGas: '0x1' }] }],
        validation: true,
      },
    },
    { gethError: -38020, req: { blockStateCalls: [{ blockOverrides: at(2) }, { blockOverrides: at(1) }] } },
  ];
}

const gethCommon = createCommonFromGethGenesis(GENESIS as unknown as GethGenesis, { chain: 'custom' });

/**
 * What cast printed against the node (`mine`) and against anvil (`theirs`) for `command`: the same,
 * except where anvil deviates from geth, where the node's line is checked by geth's rule:
 * - block `size`: anvil leaves the empty withdrawals list out of the block's RLP; geth counts it
 *   (the RLP length of the block rebuilt from anvil's JSON);
 * - receipt: anvil adds `blobGasPrice` to a non-blob transaction's receipt and a `blockTimestamp`
 *   (cast prints it last); geth has neither (cast prints `blobGasPrice` empty);
 * - `estimate` of a contract call: anvil's figure is exact, geth's binary search stops within
 *   1.5% above it (a plain transfer is 21000 on both);
 * - `access-list`: anvil sorts the storage keys, geth's order is not defined (Go map order).
 */
async function expectSameCast(upstream: string, command: string, mine: string, theirs: string): Promise<void> {
  if (command === 'block') {
    const o = splitFields(mine, ['size']);
    expect(o.rest).toEqual(splitFields(theirs, ['size']).rest);
    const hash = splitFields(theirs, ['hash']).fields.hash;
    const block = await result<Json>(upstream, 'eth_getBlockByHash', [hash, true]);
    expect(Number(o.fields.size)).toBe(rebuiltSize(block, gethCommon));
  } else if (command === 'receipt' || command === 'send') {
    const o = splitFields(mine, ['blobGasPrice']);
    const a = splitFields(theirs, ['blobGasPrice', 'blockTimestamp']);
    // cast prints anvil's extra member after an empty line.
    expect(o.rest).toEqual(a.rest.replace(/\n$/, ''));
    expect([o.fields.blobGasPrice, a.fields.blobGasPrice]).toEqual(['', '1']);
    expect(a.fields.blockTimestamp).toMatch(/^\d+$/);
  } else if (command === 'estimate' && Number(theirs) !== 21_000) {
    expect(Number(mine)).toBeGreaterThanOrEqual(Number(theirs));
    expect(Number(mine)).toBeLessThanOrEqual(Math.ceil(Number(theirs) / 0.985));
  } else if (command === 'access-list') {
    expect(mine.split('\n').sort()).toEqual(theirs.split('\n').sort());
  } else {
    expect(mine).toBe(theirs);
  }
}

describe('ethers, viem, web3.js and cast against a node following anvil', () => {
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
    provider.pollingInterval = 250;
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
    // ethers' block poller takes the first block number it sees as its start without emitting it
    // (its bootstrap poll): when the node imports the transaction's block between wait()'s first
    // receipt check and that poll, wait() resolves at the next block. A live chain makes one; anvil's
    // automine makes none unless asked, so one is mined while wait() has not resolved.
    const nudge = setInterval(() => void result(anvil.url, 'evm_mine', []).catch(() => undefined), 1_000);
    const receipt = await tx.wait().finally(() => clearInterval(nudge));
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
  test('cast: block, tx, receipt, logs, call/storage/balance at a block, nonce, code, proof, age, chain-id, base-fee, estimate, access-list, then send through the node and receipt', async () => {
    castBinary();
    // The token's first transfer to DEV[1]: a block with a log and two storage writes.
    const logs = await result<Json[]>(anvil.url, 'eth_getLogs', [{ fromBlock: '0x0', address: token }]);
    const first = logs[1] as Json;
    const commands = castCommands(token, first.transactionHash as string, Number(first.blockNumber));
    const outs = await castBoth(ours, anvil.url, commands);
    for (const [i, [command, ...args]] of commands.entries()) {
      const [mine, theirs] = outs[i] as [string, string];
      expect([command, ...args, mine.length > 0]).toEqual([command, ...args, true]);
      await expectSameCast(anvil.url, command, mine, theirs);
    }
    // A token transfer signed by cast and sent through the node (forwarded to anvil); cast waits
    // for the receipt through the node.
    const sent = await cast(ours, 'send', [
      '--private-key',
      KEYS[2] as string,
      token,
      'transfer(address,uint256)',
      holder,
      '9',
    ]);
    const hash = splitFields(sent, ['transactionHash']).fields.transactionHash as string;
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    await waitSynced(anvil.url, ours, () => node.output());
    const [[mine, theirs]] = (await castBoth(ours, anvil.url, [['receipt', hash]])) as [[string, string]];
    expect(sent).toBe(mine);
    await expectSameCast(anvil.url, 'receipt', mine, theirs);
    expect(splitFields(mine, ['status']).fields.status).toBe('1 (success)');
  });

  // cast replays in its own EVM on the state it reads at the parent block (eth_getCode,
  // eth_getStorageAt, ...). Without a terminal and with --color never it prints no progress bar,
  // timing or colour: the outputs compare as printed.
  test('cast run of the token’s creation and a transfer, cast call --trace at a block and at latest, as against anvil', async () => {
    await waitSynced(anvil.url, ours, () => node.output());
    const logs = await result<Json[]>(anvil.url, 'eth_getLogs', [{ fromBlock: '0x0', address: token }]);
    const [created, first] = logs as [Json, Json];
    const at = String(Number(first.blockNumber));
    const trace = ['--trace', token, 'balanceOf(address)', DEV[1] as string];
    const commands: [string, ...string[]][] = [
      ['run', created.transactionHash as string],
      ['run', first.transactionHash as string],
      ['call', ...trace, '--block', at],
      ['call', ...trace],
    ];
    const outs = await castBoth(
      ours,
      anvil.url,
      commands.map(([c, ...a]) => [c, '--color', 'never', ...a] as [string, ...string[]]),
    );
    for (const [i, [mine, theirs]] of outs.entries()) {
      expect([commands[i], mine.length > 0]).toEqual([commands[i], true]);
      expect([commands[i], mine]).toEqual([commands[i], theirs]);
      expect(mine).toMatch(/^Traces:\n[\s\S]*\[Return\][\s\S]*\nTransaction successfully executed\.\nGas used: \d+$/m);
    }
  });
  test('filters: log and block filters polled over the same blocks answer as anvil’s', async () => {
    const c = chainOf();
    const specs: [string, unknown[]][] = [
      ['eth_newFilter', [{ address: token }]],
      ['eth_newFilter', [{ topics: [TRANSFER_TOPIC, null, word(BigInt(DEV[3] as string))] }]],
      ['eth_newFilter', [{ fromBlock: '0x0', address: token }]],
      ['eth_newBlockFilter', []],
    ];
    const ids = await Promise.all(
      specs.map(async ([method, params]) => {
        const [o, a] = await both(c, method, params);
        expect(o.result).toMatch(/^0x[0-9a-f]{1,32}$/);
        return [o.result, a.result] as [string, string];
      }),
    );
    // A block without logs, then three token transfers (two to DEV[3]), each mined in its block.
    const iface = new Contract(token, abi as never).interface;
    const txs = [{ from: holder, to: DEV[2], value: '0x1' }];
    for (const to of [DEV[3], DEV[2], DEV[3]])
      txs.push({ from: holder, to: token, data: iface.encodeFunctionData('transfer', [to, 3n]) } as never);
    for (const tx of txs) await minedReceipt(anvil.url, await result<string>(anvil.url, 'eth_sendTransaction', [tx]));
    await waitSynced(anvil.url, ours, () => node.output());
    const poll = (method: string) => Promise.all(ids.map(([o, a]) => both(c, method, [o], [a])));
    const changes = await poll('eth_getFilterChanges');
    expect(changes.map(([o]) => (o.result as unknown[]).length)).toEqual([3, 2, 3, 4]);
    for (const i of [0, 1, 3]) expect([i, changes[i]?.[0]]).toEqual([i, changes[i]?.[1]]);
    // anvil's first poll of a filter with a fromBlock also returns the logs mined before the
    // filter was made; geth's (and this node's) only those of blocks after it.
    const [history, theirHistory] = (changes[2] as [Envelope, Envelope]).map((e) => e.result as Json[]);
    expect(history).toEqual(changes[0]?.[0].result);
    expect((theirHistory as Json[]).slice(-3)).toEqual(history);
    expect((theirHistory as Json[]).length).toBeGreaterThan(3);
    // eth_getFilterLogs: the filter's range (latest..latest without a fromBlock); a block filter has none.
    for (const [i, [o, a]] of (await poll('eth_getFilterLogs')).entries()) expect([i, o]).toEqual([i, a]);
    for (const [o, a] of await poll('eth_getFilterChanges')) expect([o.result, a.result]).toEqual([[], []]);
    for (const [o, a] of await poll('eth_uninstallFilter')) expect([o.result, a.result]).toEqual([true, true]);
    for (const [o, a] of await poll('eth_getFilterChanges')) {
      expect(o).toEqual(a);
      expect(o.error).toEqual({ code: -32000, message: 'filter not found' });
    }
  });

  test('eth_simulateV1: overrides, traceTransfers, a revert, validation and order errors, as anvil where it follows geth', async () => {
    await waitSynced(anvil.url, ours, () => node.output());
    const head = await result<Json>(anvil.url, 'eth_getBlockByNumber', ['latest', false]);
    const sims = simulations(chainOf(), Number(head.number), Number(head.timestamp));
    const answers = await Promise.all(sims.map(({ req }) => both(chainOf(), 'eth_simulateV1', [req, 'latest'])));
    for (const [i, { req, gethError }] of sims.entries()) {
      const [o, a] = answers[i] as [Envelope, Envelope];
      expect([i, a.error]).toEqual([i, undefined]);
      if (gethError !== undefined) expect([i, o.error?.code]).toEqual([i, gethError]);
      else
        expectSimulatedAlike(o.result as Json[], a.result as Json[], head.hash as string, req.traceTransfers === true);
    }
  });
});
