// `serve --follow <anvil --network optimism> --ingest replicate`: an OP-stack chain, which the
// executor refuses, replicated through live blocks with deposit transactions (type 0x7e, sent
// with sourceHash/mint through eth_sendTransaction: transfers, contract calls that log and write
// storage, now and then clearing it, which anvil keeps as a zero-valued leaf, contract creations),
// fees paid into the vaults, and anvil_reorg (its replacement transactions are signed ones:
// anvil_reorg cannot build deposits). After each step every block, transaction (deposits
// included), log, storage slot and proof is compared with anvil's.
// The same workload runs on a second anvil at its default hardfork (Jovian: every OP fork and
// Prague from genesis, with the EIP-2935 history contract anvil deploys at genesis).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createBlockHeaderFromRPC } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { Common, GethGenesis } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { createTxFromRPC } from '@ethereumjs/tx';
import { bigIntToUnpaddedBytes, hexToBytes } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { ANVIL_DEV_ACCOUNTS, cancunGenesis, opDevnetConfig, runCli, tempDir } from '@chainnode/testkit';
import {
  LOGGER_INIT,
  batch,
  compareWithAnvil,
  result,
  startAnvil,
  startFollower,
  txRequest,
  waitSynced as waitSyncedWith,
} from './anvil-upstream.js';
import type { Anvil } from './anvil-upstream.js';
import type { ServeProcess } from './serve-helpers.js';

type Json = Record<string, unknown>;
const hexN = (n: number | bigint) => `0x${n.toString(16)}`;
const DEV = ANVIL_DEV_ACCOUNTS;

/** op-geth's genesis.json shape: the Cancun genesis with a `config.optimism` block and OP forks. */
const OP_GENESIS = (() => {
  const g = cancunGenesis({ accounts: DEV, balance: '0x21e19e0c9bab2400000' }) as {
    config: Record<string, unknown>;
  } & Record<string, unknown>;
  g.config = {
    ...g.config,
    bedrockBlock: 0,
    regolithTime: 0,
    canyonTime: 0,
    ecotoneTime: 0,
    optimism: { eip1559Elasticity: 6, eip1559Denominator: 50, eip1559DenominatorCanyon: 250 },
  };
  return g;
})();
/**
 * anvil's default hardfork: every OP fork through Jovian and Prague at genesis, the alloc without
 * the EIP-2935 history contract (anvil deploys it there itself).
 */
const JOVIAN_GENESIS = { ...OP_GENESIS, config: { ...opDevnetConfig(31337), jovianTime: 0 } };
const EMPTY_TRIE = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';
/** sha256 of nothing: an OP-stack block's requestsHash from Isthmus (no requests). */
const EMPTY_REQUESTS_HASH = '0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const commonOf = (g: unknown): Common => createCommonFromGethGenesis(g as GethGenesis, { chain: 'custom' });
/** The fee vaults, the L1Block and L2ToL1MessagePasser predeploys, the history and beacon roots contracts. */
const EXTRA_ACCOUNTS = [
  '0x4200000000000000000000000000000000000011',
  '0x4200000000000000000000000000000000000015',
  '0x4200000000000000000000000000000000000016',
  '0x4200000000000000000000000000000000000019',
  '0x420000000000000000000000000000000000001a',
  '0x420000000000000000000000000000000000001b',
  '0x0000f90827f1c53a10cb7a02335b175320002935',
  '0x000f3df6d732807ef1319fb7b8bb8522d0beac02',
];

/**
 * geth's `size` of a block from its JSON, re-derived here: RLP of [header, transactions,
 * uncles, withdrawals], a deposit transaction encoded as op-geth does (0x7e || rlp([sourceHash,
 * from, to, mint, value, gas, isSystemTx, data])).
 */
async function sizeOf(b: Json, common: Common): Promise<number> {
  const header = createBlockHeaderFromRPC(b as never, {
    common,
    setHardfork: true,
    skipConsensusFormatValidation: true,
  });
  const txs: (Uint8Array | Uint8Array[])[] = [];
  for (const t of b.transactions as Json[]) {
    if (t.type === '0x7e') {
      const q = (k: string) => bigIntToUnpaddedBytes(BigInt((t[k] as string | undefined) ?? '0x0'));
      const body = RLP.encode([
        hexToBytes(t.sourceHash as `0x${string}`),
        hexToBytes(t.from as `0x${string}`),
        t.to === null || t.to === undefined ? new Uint8Array(0) : hexToBytes(t.to as `0x${string}`),
        q('mint'),
        q('value'),
        q('gas'),
        t.isSystemTx === true ? Uint8Array.of(1) : new Uint8Array(0),
        hexToBytes(t.input as `0x${string}`),
      ]);
      const enc = new Uint8Array(body.length + 1);
      enc[0] = 0x7e;
      enc.set(body, 1);
      expect(`0x${Buffer.from(keccak256(enc)).toString('hex')}`).toBe(t.hash);
      txs.push(enc);
    } else {
      const tx = await createTxFromRPC(t as never, { common });
      txs.push(tx.type === 0 ? (RLP.decode(tx.serialize()) as Uint8Array[]) : tx.serialize());
    }
  }
  return RLP.encode([header.raw(), txs, [], []] as never).length;
}

/**
 * anvil's JSON of a deposit turned into op-geth's (docs/decisions/op-deposits.md): gasPrice, v, r,
 * s "0x0"; the nonce and depositReceiptVersion from the receipt; mint only when not zero;
 * isSystemTx only when true; `to` null for a creation.
 */
async function opGethDeposit(anvilUrl: string, t: Json): Promise<Json> {
  const receipt = await result<Json>(anvilUrl, 'eth_getTransactionReceipt', [t.hash]);
  const out: Json = {
    ...t,
    gasPrice: '0x0',
    v: '0x0',
    r: '0x0',
    s: '0x0',
    nonce: receipt.depositNonce,
    to: t.to ?? null,
  };
  if (t.mint === '0x0') delete out.mint;
  if (t.isSystemTx === '0x1' || t.isSystemTx === true) out.isSystemTx = true;
  else delete out.isSystemTx;
  if (receipt.depositReceiptVersion !== undefined) out.depositReceiptVersion = receipt.depositReceiptVersion;
  return out;
}

/** One anvil --network optimism, the node following it, and the workload's state on it. */
interface OpChain {
  anvil: Anvil;
  node: ServeProcess;
  ours: string;
  genesisPath: string;
  common: Common;
  loggers: string[];
  counter: number;
  /** The storer's address once deployed, and how many writes it has had. */
  storer?: string;
  stores: number;
}

/**
 * A storer: SSTORE(calldata[0..32], calldata[32..64]). The workload sets one of the slots
 * compareWithAnvil reads, then clears it in the next block: anvil keeps a cleared slot as a
 * zero-valued leaf (geth deletes it), which a replica of anvil must reproduce.
 */
const STORER_INIT = '0x6008600c60003960086000f36020356000355500';
const COMPARED_SLOTS = [0, 1, 2, 3].map((k) => k * 7919 + 3);

/** anvil (at `hardfork`, null: its default) and a replicating follower of it (`threads` app threads), in `dir`. */
async function startChain(
  dir: string,
  genesis: Record<string, unknown>,
  hardfork: string | null,
  threads: string,
): Promise<OpChain> {
  await mkdir(dir);
  const anvil = await startAnvil(dir, ['--no-mining', '--network', 'optimism'], { genesis, hardfork });
  const args = ['--ingest', 'replicate', '--threads', threads];
  const { node, ours, genesisPath } = await startFollower(dir, anvil.url, genesis, args);
  return { anvil, node, ours, genesisPath, common: commonOf(genesis), loggers: [], counter: 0, stores: 0 };
}

/** A deposit: a transfer, a logger call, or a contract creation, with or without mint. */
function deposit(c: OpChain, i: number): Json {
  const from = DEV[i % 4] as string;
  const base: Json = {
    from,
    type: '0x7e',
    sourceHash: `0x${Buffer.from(keccak256(Buffer.from(`deposit ${i}`))).toString('hex')}`,
    mint: i % 3 === 0 ? '0x0' : hexN(10n ** 15n + BigInt(i)),
    isSystemTx: false,
    gas: '0x30d40',
  };
  const loggers = c.loggers;
  if (i % 3 === 2 || loggers.length === 0) return { ...base, data: LOGGER_INIT };
  if (i % 3 === 1)
    return { ...base, to: loggers[i % loggers.length], data: `0x${(i * 31 + 7).toString(16).padStart(64, '0')}` };
  return { ...base, to: DEV[(i + 1) % 4], value: hexN(1000 + i) };
}

async function mine(c: OpChain, blocks: number): Promise<void> {
  const url = c.anvil.url;
  const first = Number(await result<string>(url, 'eth_blockNumber', []));
  for (let b = 0; b < blocks; b++) {
    const n = b % 7 === 6 ? 0 : 1 + ((b * 3) % 5);
    for (let t = 0; t < n; t++) {
      const i = c.counter++;
      const req = i % 2 === 0 ? deposit(c, i) : txRequest(i, i, c.loggers[i % Math.max(1, c.loggers.length)]);
      await result(url, 'eth_sendTransaction', [req]);
    }
    // From DEV[3], which sends no deposits (they move its nonce besides anvil's pool); from block 2
    // on (block 1 carries a deposit first).
    const legacy = { from: DEV[3], gasPrice: '0x77359400', type: '0x0', gas: '0x186a0' };
    if (c.storer === undefined) {
      if (b > 0 || first > 0) await result(url, 'eth_sendTransaction', [{ ...legacy, data: STORER_INIT }]);
    } else {
      const s = c.stores++;
      const word = (v: number) => v.toString(16).padStart(64, '0');
      const slot = COMPARED_SLOTS[Math.floor(s / 2) % 4] as number;
      await result(url, 'eth_sendTransaction', [
        { ...legacy, to: c.storer, data: `0x${word(slot)}${word(s % 2 === 0 ? s + 1 : 0)}` },
      ]);
    }
    await result(url, 'evm_mine', []);
    const blk = await result<Json>(url, 'eth_getBlockByNumber', ['latest', true]);
    for (const tx of blk.transactions as Json[]) {
      if (tx.to === null && tx.input === STORER_INIT) {
        const receipt = await result<Json>(url, 'eth_getTransactionReceipt', [tx.hash]);
        c.storer = receipt.contractAddress as string;
        continue;
      }
      if (tx.to !== null || c.loggers.length >= 4) continue;
      const receipt = await result<Json>(url, 'eth_getTransactionReceipt', [tx.hash]);
      if (receipt.status === '0x1' && typeof receipt.contractAddress === 'string')
        c.loggers.push(receipt.contractAddress);
    }
  }
}

const waitSynced = (c: OpChain) => waitSyncedWith(c.anvil.url, c.ours, () => c.node.output());

async function compare(c: OpChain): Promise<{ blocks: number; txs: number; logs: number }> {
  const url = c.anvil.url;
  const head = Number(await result<string>(url, 'eth_blockNumber', []));
  const sizes = new Map<string, number>();
  for (let n = 0; n <= head; n++) {
    const b = await result<Json>(url, 'eth_getBlockByNumber', [hexN(n), true]);
    sizes.set(b.hash as string, await sizeOf(b, c.common));
  }
  return compareWithAnvil(url, c.ours, {
    common: c.common,
    loggers: c.loggers,
    extraAccounts: [...EXTRA_ACCOUNTS, ...(c.storer !== undefined ? [c.storer] : [])],
    sizeOf: (b) => sizes.get(b.hash as string) as number,
    expectTx: (t) => (t.type === '0x7e' ? opGethDeposit(url, t) : t),
  });
}

/** `blocks` blocks of the workload, then every block compared; block 1 carries a deposit. */
async function mineAndCompare(c: OpChain, blocks: number): Promise<{ txs: number; logs: number }> {
  await mine(c, blocks);
  await waitSynced(c);
  const seen = await compare(c);
  expect(seen.blocks).toBe(blocks + 1);
  const first = await result<Json>(c.ours, 'eth_getBlockByNumber', ['0x1', true]);
  expect((first.transactions as Json[]).some((t) => t.type === '0x7e')).toBe(true);
  return seen;
}

describe('replicating an OP-stack chain from anvil --network optimism', () => {
  /** anvil pinned to Ecotone, and anvil at its default hardfork (Jovian). */
  let ecotone: OpChain;
  let jovian: OpChain;
  let temp: { dir: string; cleanup: () => Promise<void> };

  beforeAll(async () => {
    temp = await tempDir('replicate-op-');
    [ecotone, jovian] = await Promise.all([
      startChain(join(temp.dir, 'ecotone'), OP_GENESIS, 'ecotone', '2'),
      startChain(join(temp.dir, 'jovian'), JOVIAN_GENESIS, null, '1'),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([ecotone?.node.stop('SIGTERM'), jovian?.node.stop('SIGTERM')]);
    await Promise.all([ecotone?.anvil.stop(), jovian?.anvil.stop()]);
    await temp?.cleanup();
  });

  test('the executor refuses the chain with one line pointing at --ingest replicate', async () => {
    const r = await runCli([
      'sync',
      '--from',
      ecotone.anvil.url,
      '--genesis',
      ecotone.genesisPath,
      '--datadir',
      join(temp.dir, 'refused'),
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/OP-stack chain .*use --ingest replicate/);
  });

  test('live blocks with deposits, transfers, logs and contract creations: every block, transaction, log, slot and proof equals anvil', async () => {
    const seen = await mineAndCompare(ecotone, 40);
    expect(seen.txs).toBeGreaterThan(60);
    expect(seen.logs).toBeGreaterThan(5);
    const health = (await (await fetch(`${ecotone.node.base}/health`)).json()) as Json;
    expect(health.follow).toMatchObject({ state: 'following', localHead: 40, lastError: null });
  }, 180_000);

  test('a block with deposits: its traces are refused in one line (deposits and fee vaults are not executed here), where anvil answers them', async () => {
    const block = await result<Json>(ecotone.anvil.url, 'eth_getBlockByNumber', ['0x1', false]);
    const deposit = await result<Json>(ecotone.anvil.url, 'eth_getTransactionByBlockHashAndIndex', [block.hash, '0x0']);
    expect(deposit.type).toBe('0x7e');
    const calls: [string, unknown[]][] = [
      ['debug_traceBlockByNumber', ['0x1', { tracer: 'callTracer' }]],
      ['trace_block', ['0x1']],
      ['debug_traceTransaction', [deposit.hash, { tracer: 'callTracer' }]],
      ['ots_traceTransaction', [deposit.hash]],
    ];
    const [theirs, mine] = await Promise.all([batch(ecotone.anvil.url, calls), batch(ecotone.ours, calls)]);
    // anvil traces the block (one callTracer answer per transaction, the deposit's own frame).
    expect(((theirs[0]?.result as Json[] | undefined) ?? []).length).toBe((block.transactions as string[]).length);
    expect(theirs[2]?.result).toMatchObject({
      from: deposit.from,
      type: (deposit.to ?? null) === null ? 'CREATE' : 'CALL',
    });
    for (const e of mine)
      expect(e).toMatchObject({
        error: {
          code: -32000,
          message: expect.stringMatching(
            /^transactions of an OP-stack chain cannot be traced here: .*deposit transactions \(type 0x7e\)/,
          ),
        },
      });
  });

  test("at anvil's default hardfork (every OP fork through Jovian, Prague from genesis): every block, transaction, log, slot and proof equals anvil", async () => {
    const seen = await mineAndCompare(jovian, 14);
    expect(seen.txs).toBeGreaterThan(20);
    expect(seen.logs).toBeGreaterThan(2);
    // The history contract anvil deploys at genesis holds block n-1's hash at slot (n-1) % 8191.
    const history = '0x0000f90827f1c53a10cb7a02335b175320002935';
    const b13 = await result<Json>(jovian.anvil.url, 'eth_getBlockByNumber', ['0xd', false]);
    const slot = `0x${'0d'.padStart(64, '0')}`;
    expect(await result(jovian.ours, 'eth_getStorageAt', [history, slot, 'latest'])).toBe(b13.hash);
    const head = await result<Json>(jovian.ours, 'eth_getBlockByNumber', ['latest', false]);
    expect(head).toMatchObject({ requestsHash: EMPTY_REQUESTS_HASH, withdrawalsRoot: EMPTY_TRIE });
    expect(jovian.node.output()).toMatch(/deploys that contract at genesis/);
    expect(jovian.node.output()).toContain('state changes from trace_replayBlockTransactions stateDiff');
    // The same blocks through geth's prestate tracer (from anvil the node asks Parity's stateDiff
    // first): every state root reproduced, the cleared slots' zero-valued leaves included.
    const viaPrestate = await runCli([
      ...['sync', '--from', jovian.anvil.url, '--genesis', jovian.genesisPath, '--ingest', 'replicate'],
      ...['--state-source', 'prestate', '--datadir', join(temp.dir, 'jovian-prestate')],
    ]);
    expect(viaPrestate.stderr).toContain('prestateTracer in diffMode');
    expect(viaPrestate.code).toBe(0);
  }, 180_000);

  test('anvil_reorg, then more deposits on the new branch: every block equals anvil after each', async () => {
    for (const depth of [1, 3]) {
      // anvil_reorg builds only signed transactions (a deposit's sourceHash is refused there): the
      // blocks mined after the reorg carry deposits again.
      const replacements = Array.from({ length: depth + 1 }, (_, j) => [
        txRequest(j % 2 === 0 ? 3 : 2, 50_000 + depth * 10 + j, ecotone.loggers[0]),
        j % depth,
      ]);
      await result(ecotone.anvil.url, 'anvil_reorg', [depth, replacements]);
      await waitSynced(ecotone);
      await compare(ecotone);
      await mine(ecotone, 2);
      await waitSynced(ecotone);
    }
    await compare(ecotone);
    const health = (await (await fetch(`${ecotone.node.base}/health`)).json()) as Json;
    expect((health.follow as Json).reorgs).toBe(2);
  }, 180_000);
});
