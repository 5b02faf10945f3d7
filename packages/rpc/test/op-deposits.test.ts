// OP-stack deposit transactions against a live anvil 1.7.1 `--network optimism`, started here:
// deposits sent with eth_sendTransaction (sourceHash, mint, isSystemTx; a system call, a creating
// deposit that mints, a value transfer) beside ordinary transactions, read back as anvil answers
// them. Each deposit is rebuilt from its JSON with core's codec and must hash to anvil's hash; the
// blocks' transactionsRoot is recomputed from the rebuilt encodings (ordinary transactions: anvil's
// raw bytes) and each header is rebuilt and hashed. The blocks are then written through the store
// writer (deposit receipt fields included) and served by the rpc service: every answer must equal
// anvil's, except where anvil differs from op-geth (docs/decisions/op-deposits.md), where the
// answer must be op-geth's and the difference is asserted as measured.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { createMPT } from '@ethereumjs/mpt';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { chainFamilyOf, depositTxFromJson, encodeDepositTx, fromHex, toData } from '@chainnode/core';
import { StoreWriter, openChainStore } from '@chainnode/store';
import type { BlockInput, StoredReceipt } from '@chainnode/store';
import { ANVIL_DEV_ACCOUNTS, freePort, opDevnetConfig, repoRoot } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';

type Json = Record<string, unknown>;

const [DEV0, DEV1, DEV2] = ANVIL_DEV_ACCOUNTS;
const SYSTEM = '0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001';
const L1_BLOCK = '0x4200000000000000000000000000000000000015';
const MINTER = '0x1111111111111111111111111111111111111111';
/** Init code of a contract that logs its calldata (LOG2) and stores the caller. */
const LOGGER_INIT = '0x601f600c600039601f6000f3361560195736600060003733600035366000a23360003555005b60006000fd';
const h32 = (byte: string): string => `0x${byte.repeat(32)}`;

async function rpc<T = unknown>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

interface Anvil {
  url: string;
  stop(): Promise<void>;
}

async function startAnvil(): Promise<Anvil> {
  const port = await freePort();
  // The launcher spawns the platform binary: its own process group, stopped whole.
  const proc = spawn(
    join(repoRoot(), 'node_modules', '.bin', 'anvil'),
    ['--network', 'optimism', '--accounts', '4', '--port', String(port), '--host', '127.0.0.1'],
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  const kill = (): void => {
    try {
      if (proc.pid !== undefined) process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  for (;;) {
    try {
      await rpc(url, 'eth_chainId', []);
      break;
    } catch {
      if (proc.exitCode !== null || Date.now() - t0 > 30_000) {
        kill();
        throw new Error(`anvil did not start:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    stop: async () => {
      kill();
      await exited;
      proc.stdout?.destroy();
      proc.stderr?.destroy();
    },
  };
}

const q = (v: unknown): bigint => {
  if (typeof v !== 'string') throw new Error(`not a quantity: ${String(v)}`);
  return BigInt(v);
};
const d = (v: unknown): Uint8Array => {
  if (typeof v !== 'string') throw new Error(`not data: ${String(v)}`);
  return fromHex(v);
};

/** The header's RLP from anvil's block JSON (every field through Prague). */
function headerRlp(b: Json): Uint8Array {
  const fields: (Uint8Array | bigint)[] = [
    d(b.parentHash),
    d(b.sha3Uncles),
    d(b.miner),
    d(b.stateRoot),
    d(b.transactionsRoot),
    d(b.receiptsRoot),
    d(b.logsBloom),
    q(b.difficulty),
    q(b.number),
    q(b.gasLimit),
    q(b.gasUsed),
    q(b.timestamp),
    d(b.extraData),
    d(b.mixHash),
    d(b.nonce),
  ];
  const optional: [string, 'q' | 'd'][] = [
    ['baseFeePerGas', 'q'],
    ['withdrawalsRoot', 'd'],
    ['blobGasUsed', 'q'],
    ['excessBlobGas', 'q'],
    ['parentBeaconBlockRoot', 'd'],
    ['requestsHash', 'd'],
  ];
  for (const [k, kind] of optional) {
    if (b[k] === undefined) break;
    fields.push(kind === 'q' ? q(b[k]) : d(b[k]));
  }
  return RLP.encode(fields);
}

/** A block of anvil rebuilt for the store: header, canonical transaction encodings, receipts. */
async function rebuild(url: string, number: bigint, seen: { deposits: number }): Promise<BlockInput> {
  const b = await rpc<Json>(url, 'eth_getBlockByNumber', [toData(bigintBytes(number)), true]);
  const rlp = headerRlp(b);
  expect(toData(keccak256(rlp))).toBe(b.hash);
  const txs = b.transactions as Json[];
  const raws: Uint8Array[] = [];
  for (const t of txs) {
    if (t.type === '0x7e') {
      const raw = encodeDepositTx(depositTxFromJson(t));
      expect(toData(keccak256(raw))).toBe(t.hash);
      raws.push(raw);
      seen.deposits++;
    } else {
      // anvil's raw bytes of ordinary transactions (for a deposit this call aborts anvil).
      const raw = d(await rpc(url, 'eth_getRawTransactionByHash', [t.hash]));
      expect(toData(keccak256(raw))).toBe(t.hash);
      raws.push(raw);
    }
  }
  const trie = await createMPT();
  for (let i = 0; i < raws.length; i++) await trie.put(RLP.encode(i), raws[i] as Uint8Array);
  expect(toData(trie.root())).toBe(b.transactionsRoot);
  const receipts =
    txs.length === 0 ? [] : await rpc<Json[]>(url, 'eth_getBlockReceipts', [toData(bigintBytes(number))]);
  const stored: StoredReceipt[] = receipts.map((r) => {
    const s: StoredReceipt = {
      type: Number(q((r.type as string).toLowerCase())),
      statusOrState: Uint8Array.of(Number(q(r.status))),
      cumulativeGasUsed: q(r.cumulativeGasUsed),
    };
    if (r.depositNonce !== undefined) s.depositNonce = q(r.depositNonce);
    if (r.depositReceiptVersion !== undefined) s.depositReceiptVersion = q(r.depositReceiptVersion);
    return s;
  });
  return {
    number,
    hash: d(b.hash),
    headerRlp: rlp,
    body: { size: Number(q(b.size)), transactions: raws, uncles: [], withdrawals: [] },
    totalDifficulty: 0n,
    senders: txs.map((t) => d(t.from)),
    txHashes: txs.map((t) => d(t.hash)),
    receipts: stored,
    logs: receipts.map((r) =>
      (r.logs as Json[]).map((l) => ({
        address: d(l.address),
        topics: (l.topics as string[]).map(d),
        data: d(l.data),
      })),
    ),
    logsBloom: d(b.logsBloom),
  };
}

function bigintBytes(n: bigint): Uint8Array {
  const hex = n.toString(16);
  return fromHex(hex.length % 2 === 0 ? hex : `0${hex}`);
}

/** The keys of op-geth's RPCTransaction for a deposit, in its order (plus geth v1.16's blockTimestamp). */
const OP_GETH_DEPOSIT_KEYS = [
  'blockHash',
  'blockNumber',
  'blockTimestamp',
  'from',
  'gas',
  'gasPrice',
  'hash',
  'input',
  'nonce',
  'to',
  'transactionIndex',
  'value',
  'type',
  'v',
  'r',
  's',
  'sourceHash',
];

/** A genesis of anvil's OP-stack chain: every fork from the start, the optimism section. */
function opGenesis(chainId: number) {
  return { config: opDevnetConfig(chainId) };
}

/**
 * A deposit as the node answers it (`mine`, `ourReceipt`) against anvil's answer (`theirs`,
 * `receipt`) and the request that sent it (`req`): op-geth's shape and order, what anvil answers
 * alike, and each measured difference from op-geth, added to `measured`.
 */
async function checkDeposit(
  url: string,
  answers: { mine: Json; theirs: Json; receipt: Json; ourReceipt: Json },
  req: Json,
  measured: Set<string>,
): Promise<void> {
  const { mine, theirs, receipt, ourReceipt } = answers;
  // A deposit: op-geth's shape, in op-geth's order.
  expect(Object.keys(mine).slice(0, OP_GETH_DEPOSIT_KEYS.length)).toEqual(OP_GETH_DEPOSIT_KEYS);
  const rest = Object.keys(mine).slice(OP_GETH_DEPOSIT_KEYS.length);
  expect(rest).toEqual(['mint', 'isSystemTx', 'depositReceiptVersion'].filter((k) => k in mine));
  expect(ourReceipt.type).toBe('0x7e');
  // What anvil answers the same as op-geth does.
  for (const k of ['blockHash', 'blockNumber', 'blockTimestamp', 'from', 'gas', 'hash', 'input', 'value', 'v'])
    expect([k, mine[k]]).toEqual([k, theirs[k]]);
  expect(mine.type).toBe('0x7e');
  expect(mine.transactionIndex).toBe(theirs.transactionIndex);
  expect(mine.sourceHash).toBe(theirs.sourceHash);
  // Where anvil differs from op-geth, as measured (docs/decisions/op-deposits.md).
  expect(mine.nonce).toBe(receipt.depositNonce); // op-geth: the receipt's depositNonce
  expect(theirs.nonce).toBe('0x0');
  if (theirs.nonce !== mine.nonce) measured.add('nonce 0x0');
  expect(mine.gasPrice).toBe('0x0');
  expect(theirs.gasPrice).toBeUndefined();
  measured.add('no gasPrice');
  expect([mine.r, mine.s]).toEqual(['0x0', '0x0']);
  expect([theirs.r, theirs.s]).toEqual([h32('00'), h32('00')]);
  measured.add('r, s as 32 zero bytes');
  expect(mine.depositReceiptVersion).toBe(receipt.depositReceiptVersion);
  expect(theirs.depositReceiptVersion).toBeUndefined();
  measured.add('no depositReceiptVersion');
  expect(receipt.type).toBe('0x7E');
  measured.add('receipt type 0x7E');
  if (req.to === undefined) {
    expect(mine.to).toBeNull();
    expect('to' in theirs).toBe(false);
    measured.add('creation without to');
    // The created address: op-geth derives it from the receipt's depositNonce (the nonce the
    // deposit used); anvil's depositNonce is one past the nonce its creation used.
    const created = (nonce: bigint): string => toData(keccak256(RLP.encode([d(theirs.from), nonce])).subarray(12));
    expect(ourReceipt.contractAddress).toBe(created(q(receipt.depositNonce)));
    expect(receipt.contractAddress).toBe(created(q(receipt.depositNonce) - 1n));
    measured.add('contractAddress from the nonce before');
  } else expect(mine.to).toBe(theirs.to);
  if (q(req.mint) === 0n) {
    expect(mine.mint).toBeUndefined();
    expect(theirs.mint).toBe('0x0');
    measured.add('zero mint shown');
  } else expect(mine.mint).toBe(theirs.mint);
  if (req.isSystemTx === true) {
    expect(mine.isSystemTx).toBe(true);
    expect(theirs.isSystemTx).toBe('0x1');
    measured.add('isSystemTx as "0x1"');
  } else {
    expect(mine.isSystemTx).toBeUndefined();
    expect(theirs.isSystemTx).toBeUndefined();
  }
  // anvil's depositNonce is the sender's nonce after the deposit; op-geth records the one
  // it used (before). DEV0 had sent one transaction, so used nonce 1.
  const sender = (theirs.from as string).toLowerCase();
  const after = q(await rpc(url, 'eth_getTransactionCount', [sender, '0x2']));
  const before = q(await rpc(url, 'eth_getTransactionCount', [sender, '0x1']));
  expect(q(receipt.depositNonce)).toBe(after);
  expect(after).toBe(before + 1n);
  measured.add('depositNonce after the deposit');
}

test('deposits from anvil --network optimism: encodings, roots, and the answers after a store round trip', async () => {
  const anvil = await startAnvil();
  const dir = await mkdtemp(join(tmpdir(), 'op-deposits-'));
  try {
    const { url } = anvil;
    // Block 1: an ordinary transfer (DEV0's nonce becomes 1). Block 2: a deposit from DEV0 that
    // mints and sends value, an ordinary transfer, a failing system call from the system account,
    // and a creating deposit from an address that never signed anything.
    await rpc(url, 'eth_sendTransaction', [{ from: DEV0, to: DEV2, value: '0x1' }]);
    await rpc(url, 'evm_setAutomine', [false]);
    const sent: Json[] = [
      { from: DEV0, to: DEV1, value: '0x7', sourceHash: h32('11'), mint: '0x100', isSystemTx: false, gas: '0x30000' },
      { from: DEV1, to: DEV2, value: '0x3' },
      {
        from: SYSTEM,
        to: L1_BLOCK,
        value: '0x0',
        sourceHash: h32('22'),
        mint: '0x0',
        isSystemTx: true,
        gas: '0xf4240',
        input: '0x440a5e20',
      },
      {
        from: MINTER,
        value: '0x5',
        sourceHash: h32('33'),
        mint: '0xde0b6b3a7640000',
        isSystemTx: false,
        gas: '0x30000',
        input: LOGGER_INIT,
      },
    ];
    const hashes: string[] = [];
    for (const tx of sent) hashes.push(await rpc<string>(url, 'eth_sendTransaction', [tx]));
    await rpc(url, 'evm_mine', []);
    await rpc(url, 'evm_mine', []); // an empty head: block 2 is not the block a store keeps at hand
    const head = q(await rpc(url, 'eth_blockNumber', []));
    expect(head).toBe(3n);

    // Rebuild every block (deposits from their JSON) and write it through the store writer.
    const seen = { deposits: 0 };
    const blocks: BlockInput[] = [];
    for (let n = 0n; n <= head; n++) blocks.push(await rebuild(url, n, seen));
    expect(seen.deposits).toBe(3);
    const genesisJson = opGenesis(Number(q(await rpc(url, 'eth_chainId', []))));
    expect(chainFamilyOf(genesisJson)).toBe('optimism');
    const w = await StoreWriter.open(dir);
    await w.writeGenesis({ block: blocks[0] as BlockInput, chainConfig: genesisJson.config, genesisJson });
    for (const b of blocks.slice(1)) w.addBlock(b);
    await w.flush();
    await w.close();

    const store = await openChainStore(dir);
    const svc = createRpcService(store);
    const ours = async <T = unknown>(method: string, params: unknown[]): Promise<T> => {
      const r = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
      const text = typeof r === 'string' ? r : (r as { body: string }).body;
      const body = JSON.parse(text) as { result?: T; error?: { message: string } };
      if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`);
      return body.result as T;
    };
    try {
      // By hash first, on a cold store: each transaction read alone from its body row (the
      // lookup path that decodes one transaction), not from a cached block.
      const alone = new Map<string, Json>();
      for (const hash of hashes) alone.set(hash, await ours<Json>('eth_getTransactionByHash', [hash]));
      const theirBlock = await rpc<Json>(url, 'eth_getBlockByNumber', ['0x2', true]);
      const ourBlock = await ours<Json>('eth_getBlockByNumber', ['0x2', true]);
      const ourHashes = await ours<Json>('eth_getBlockByNumber', ['0x2', false]);
      expect(ourHashes.transactions).toEqual((theirBlock.transactions as Json[]).map((t) => t.hash));
      expect(ourBlock.hash).toBe(theirBlock.hash);
      const measured = new Set<string>();
      for (const hash of hashes) {
        const theirs = await rpc<Json>(url, 'eth_getTransactionByHash', [hash]);
        const receipt = await rpc<Json>(url, 'eth_getTransactionReceipt', [hash]);
        const mine = await ours<Json>('eth_getTransactionByHash', [hash]);
        expect(alone.get(hash)).toEqual(mine);
        const inBlock = (ourBlock.transactions as Json[]).find((t) => t.hash === hash);
        expect(inBlock).toEqual(mine);
        const byIndex = await ours<Json>('eth_getTransactionByBlockNumberAndIndex', ['0x2', theirs.transactionIndex]);
        expect(byIndex).toEqual(mine);
        const ourReceipt = await ours<Json>('eth_getTransactionReceipt', [hash]);
        expect(ourReceipt.depositNonce).toBe(receipt.depositNonce);
        expect(ourReceipt.depositReceiptVersion).toBe(receipt.depositReceiptVersion);
        for (const k of ['status', 'cumulativeGasUsed', 'gasUsed', 'from', 'transactionIndex', 'effectiveGasPrice'])
          expect([k, ourReceipt[k]]).toEqual([k, receipt[k]]);
        if (theirs.type !== '0x7e') {
          // An ordinary transaction answers exactly as anvil.
          expect(mine).toEqual(theirs);
          expect(ourReceipt.type).toBe(receipt.type);
          continue;
        }
        await checkDeposit(url, { mine, theirs, receipt, ourReceipt }, sent[hashes.indexOf(hash)] as Json, measured);
      }
      expect([...measured].sort()).toEqual(
        [
          'nonce 0x0',
          'no gasPrice',
          'r, s as 32 zero bytes',
          'no depositReceiptVersion',
          'receipt type 0x7E',
          'creation without to',
          'zero mint shown',
          'isSystemTx as "0x1"',
          'depositNonce after the deposit',
          'contractAddress from the nonce before',
        ].sort(),
      );
    } finally {
      await store.close();
    }
  } finally {
    await anvil.stop();
    await rm(dir, { recursive: true, force: true });
  }
}, 120_000);
