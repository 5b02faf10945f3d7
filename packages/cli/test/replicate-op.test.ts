// `serve --follow <anvil --network optimism> --ingest replicate`: an OP-stack chain, which the
// executor refuses, replicated through live blocks with deposit transactions (type 0x7e, sent
// with sourceHash/mint through eth_sendTransaction: transfers, contract calls that log and write
// storage, contract creations), fees paid into the vaults, and anvil_reorg (its replacement
// transactions are signed ones: anvil_reorg cannot build deposits). After each step every
// block, transaction (deposits included), log, storage slot and proof is compared with anvil's.
import { join } from 'node:path';
import { createBlockHeaderFromRPC } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { createTxFromRPC } from '@ethereumjs/tx';
import { bigIntToUnpaddedBytes, hexToBytes } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { ANVIL_DEV_ACCOUNTS, cancunGenesis, runCli, tempDir } from '@chainnode/testkit';
import {
  LOGGER_INIT,
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
const common = createCommonFromGethGenesis(OP_GENESIS as unknown as GethGenesis, { chain: 'custom' });
const VAULTS = [
  '0x4200000000000000000000000000000000000011',
  '0x4200000000000000000000000000000000000015',
  '0x4200000000000000000000000000000000000019',
  '0x420000000000000000000000000000000000001a',
  '0x420000000000000000000000000000000000001b',
];

/**
 * geth's `size` of a block from its JSON, re-derived here: RLP of [header, transactions,
 * uncles, withdrawals], a deposit transaction encoded as op-geth does (0x7e || rlp([sourceHash,
 * from, to, mint, value, gas, isSystemTx, data])).
 */
async function sizeOf(b: Json): Promise<number> {
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
async function opGethDeposit(t: Json): Promise<Json> {
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
let anvilUrl = '';

describe('replicating an OP-stack chain from anvil --network optimism', () => {
  let anvil: Anvil;
  let node: ServeProcess;
  let ours: string;
  let temp: { dir: string; cleanup: () => Promise<void> };
  let genesisPath: string;
  const loggers: string[] = [];
  let counter = 0;

  beforeAll(async () => {
    temp = await tempDir('replicate-op-');
    anvil = await startAnvil(temp.dir, ['--no-mining', '--network', 'optimism'], {
      genesis: OP_GENESIS,
      hardfork: 'ecotone',
    });
    anvilUrl = anvil.url;
    const args = ['--ingest', 'replicate', '--threads', '2'];
    ({ node, ours, genesisPath } = await startFollower(temp.dir, anvil.url, OP_GENESIS, args));
  }, 120_000);

  afterAll(async () => {
    await node?.stop('SIGTERM');
    await anvil?.stop();
    await temp?.cleanup();
  });

  /** A deposit: a transfer, a logger call, or a contract creation, with or without mint. */
  function deposit(i: number): Json {
    const from = DEV[i % 4] as string;
    const base: Json = {
      from,
      type: '0x7e',
      sourceHash: `0x${Buffer.from(keccak256(Buffer.from(`deposit ${i}`))).toString('hex')}`,
      mint: i % 3 === 0 ? '0x0' : hexN(10n ** 15n + BigInt(i)),
      isSystemTx: false,
      gas: '0x30d40',
    };
    if (i % 3 === 2 || loggers.length === 0) return { ...base, data: LOGGER_INIT };
    if (i % 3 === 1)
      return { ...base, to: loggers[i % loggers.length], data: `0x${(i * 31 + 7).toString(16).padStart(64, '0')}` };
    return { ...base, to: DEV[(i + 1) % 4], value: hexN(1000 + i) };
  }

  async function mine(blocks: number): Promise<void> {
    for (let b = 0; b < blocks; b++) {
      const n = b % 7 === 6 ? 0 : 1 + ((b * 3) % 5);
      for (let t = 0; t < n; t++) {
        const i = counter++;
        const req = i % 2 === 0 ? deposit(i) : txRequest(i, i, loggers[i % Math.max(1, loggers.length)]);
        await result(anvil.url, 'eth_sendTransaction', [req]);
      }
      await result(anvil.url, 'evm_mine', []);
      const blk = await result<Json>(anvil.url, 'eth_getBlockByNumber', ['latest', true]);
      for (const tx of blk.transactions as Json[]) {
        if (tx.to !== null || loggers.length >= 4) continue;
        const receipt = await result<Json>(anvil.url, 'eth_getTransactionReceipt', [tx.hash]);
        if (receipt.status === '0x1' && typeof receipt.contractAddress === 'string')
          loggers.push(receipt.contractAddress);
      }
    }
  }

  const waitSynced = () => waitSyncedWith(anvil.url, ours, () => node.output());

  async function compare(): Promise<{ blocks: number; txs: number; logs: number }> {
    const head = Number(await result<string>(anvil.url, 'eth_blockNumber', []));
    const sizes = new Map<string, number>();
    for (let n = 0; n <= head; n++) {
      const b = await result<Json>(anvil.url, 'eth_getBlockByNumber', [hexN(n), true]);
      sizes.set(b.hash as string, await sizeOf(b));
    }
    return compareWithAnvil(anvil.url, ours, {
      common,
      loggers,
      extraAccounts: VAULTS,
      sizeOf: (b) => sizes.get(b.hash as string) as number,
      expectTx: (t) => (t.type === '0x7e' ? opGethDeposit(t) : t),
    });
  }

  test('the executor refuses the chain with one line pointing at --ingest replicate', async () => {
    const r = await runCli([
      'sync',
      '--from',
      anvil.url,
      '--genesis',
      genesisPath,
      '--datadir',
      join(temp.dir, 'refused'),
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/OP-stack chain .*use --ingest replicate/);
  });

  test('live blocks with deposits, transfers, logs and contract creations: every block, transaction, log, slot and proof equals anvil', async () => {
    await mine(40);
    await waitSynced();
    const seen = await compare();
    expect(seen.blocks).toBe(41);
    expect(seen.txs).toBeGreaterThan(60);
    expect(seen.logs).toBeGreaterThan(5);
    const deposits = await result<Json>(ours, 'eth_getBlockByNumber', ['0x1', true]);
    expect((deposits.transactions as Json[]).some((t) => t.type === '0x7e')).toBe(true);
    const health = (await (await fetch(`${node.base}/health`)).json()) as Json;
    expect(health.follow).toMatchObject({ state: 'following', localHead: 40, lastError: null });
  }, 180_000);

  test('anvil_reorg, then more deposits on the new branch: every block equals anvil after each', async () => {
    for (const depth of [1, 3]) {
      // anvil_reorg builds only signed transactions (a deposit's sourceHash is refused there): the
      // blocks mined after the reorg carry deposits again.
      const replacements = Array.from({ length: depth + 1 }, (_, j) => [
        txRequest(j % 2 === 0 ? 3 : 2, 50_000 + depth * 10 + j, loggers[0]),
        j % depth,
      ]);
      await result(anvil.url, 'anvil_reorg', [depth, replacements]);
      await waitSynced();
      await compare();
      await mine(2);
      await waitSynced();
    }
    await compare();
    const health = (await (await fetch(`${node.base}/health`)).json()) as Json;
    expect((health.follow as Json).reorgs).toBe(2);
  }, 180_000);
});
