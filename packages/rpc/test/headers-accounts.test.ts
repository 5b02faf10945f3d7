// eth_getHeaderByNumber/ByHash (geth), eth_getAccountInfo and eth_getAccount (reth), eth_baseFee
// and eth_capabilities (execution-apis) over the REAL imported execution-apis chain (every fork
// field, uncles, withdrawals, requests). Each answer is checked against data derived apart from
// it: every header field against the header's own RLP (debug_getRawHeader, whose keccak is the
// block hash), the accounts against eth_getProof and eth_getCode (the code hashing to codeHash),
// the next base fee against the next block's own header.
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt, bytesToHex, hexToBytes } from '@ethereumjs/util';
import type { PrefixedHexString } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { chainDir } from '@chainnode/testkit';
import type { ChainInfo } from '@chainnode/core';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';
import { FakeStore, blocks } from './fake-store.js';
import { callRpc, serviceOnCopy } from './rpc-call.js';

type Json = Record<string, unknown>;
const hexN = (n: number | bigint): string => `0x${n.toString(16)}`;
const hx = (u: Uint8Array): string => bytesToHex(u);
const qty = (u: Uint8Array): string => hexN(bytesToBigInt(u));

/** RLP header list positions (yellow paper order, then the fork fields in their order). */
const DATA = ['parentHash', 'sha3Uncles', 'miner', 'stateRoot', 'transactionsRoot', 'receiptsRoot', 'logsBloom'];
const QTY = ['difficulty', 'number', 'gasLimit', 'gasUsed', 'timestamp'];
const FORK: [string, 'data' | 'qty'][] = [
  ['baseFeePerGas', 'qty'],
  ['withdrawalsRoot', 'data'],
  ['blobGasUsed', 'qty'],
  ['excessBlobGas', 'qty'],
  ['parentBeaconBlockRoot', 'data'],
  ['requestsHash', 'data'],
];

/** geth's RPCMarshalHeader of a header's RLP, rebuilt field by field. */
function headerFromRlp(raw: Uint8Array): Json {
  const f = RLP.decode(raw) as Uint8Array[];
  const out: Json = { hash: hx(keccak256(raw)) };
  DATA.forEach((k, i) => {
    out[k] = hx(f[i] as Uint8Array);
  });
  QTY.forEach((k, i) => {
    out[k] = qty(f[7 + i] as Uint8Array);
  });
  out.extraData = hx(f[12] as Uint8Array);
  out.mixHash = hx(f[13] as Uint8Array);
  out.nonce = hx(f[14] as Uint8Array);
  FORK.forEach(([k, kind], i) => {
    const v = f[15 + i];
    if (v !== undefined) out[k] = kind === 'qty' ? qty(v) : hx(v);
  });
  return out;
}

const available = chainDir('execution-apis') !== undefined;

/** A store that joined its chain at block 1: it holds nothing below. */
class JoinedStore extends FakeStore {
  override info(): ChainInfo {
    return { ...super.info(), firstBlock: 1n };
  }
}

test('a joined node: eth_capabilities reaches back to its first block; a header below it is 4444', async () => {
  const svc = createRpcService(new JoinedStore());
  const caps = (await callRpc<{ result: Json }>(svc, 'eth_capabilities', [])).result;
  const head = blocks[blocks.length - 1]?.header;
  expect(caps.head).toEqual({ number: hexN(head?.number ?? -1), hash: hx(head?.hash ?? new Uint8Array()) });
  for (const r of ['state', 'tx', 'logs', 'receipts', 'blocks', 'stateproofs'])
    expect([r, caps[r]]).toEqual([r, { disabled: false, oldestBlock: '0x1' }]);
  const below = await callRpc<{ error?: { code: number } }>(svc, 'eth_getHeaderByNumber', ['0x0']);
  expect(below.error?.code).toBe(4444);
  expect((await callRpc<{ result: Json }>(svc, 'eth_getHeaderByNumber', ['0x1'])).result.number).toBe('0x1');
});

describe('header and account probes on the execution-apis chain', () => {
  if (!available) {
    test.skip('execution-apis chain not available, skipped', () => undefined);
    return;
  }
  let svc: RpcServiceApi;
  let close: () => Promise<void>;
  let head: number;

  const call = async <T = unknown>(method: string, params: unknown[]): Promise<T> => {
    const r = await callRpc(svc, method, params);
    if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
    return r.result as T;
  };

  beforeAll(async () => {
    ({ svc, close } = await serviceOnCopy('execution-apis'));
    head = Number(await call<string>('eth_blockNumber', []));
  });
  afterAll(async () => close?.());

  test('every header, by number and by hash, is its RLP re-derived and the block without its body', async () => {
    let forkFields = 0;
    for (let n = 0; n <= head; n++) {
      const byNumber = await call<Json>('eth_getHeaderByNumber', [hexN(n)]);
      const raw = hexToBytes((await call<string>('debug_getRawHeader', [hexN(n)])) as PrefixedHexString);
      expect([n, byNumber]).toEqual([n, headerFromRlp(raw)]);
      expect(await call('eth_getHeaderByHash', [byNumber.hash])).toEqual(byNumber);
      // geth's block JSON is the header's plus the body's members.
      const { size, totalDifficulty, transactions, uncles, withdrawals, ...rest } = await call<Json>(
        'eth_getBlockByNumber',
        [hexN(n), false],
      );
      expect([n, Object.keys(byNumber)]).toEqual([n, Object.keys(rest)]); // same members, same (sorted) order
      expect(rest).toEqual(byNumber);
      forkFields += Object.keys(byNumber).filter((k) => FORK.some(([f]) => f === k)).length;
    }
    expect(forkFields).toBeGreaterThan(0);
    const latest = await call<Json>('eth_getHeaderByNumber', ['latest']);
    expect(latest.number).toBe(hexN(head));
  });

  test('unknown blocks are null; bad params are -32602', async () => {
    expect(await call('eth_getHeaderByNumber', [hexN(head + 1)])).toBeNull();
    expect(await call('eth_getHeaderByHash', [`0x${'ab'.repeat(32)}`])).toBeNull();
    for (const [method, params] of [
      ['eth_getHeaderByNumber', []],
      ['eth_getHeaderByHash', ['0x12']],
      ['eth_getAccountInfo', []],
      ['eth_getAccountInfo', [`0x${'00'.repeat(20)}`]], // the block is required (reth, anvil)
      ['eth_getAccount', [`0x${'00'.repeat(20)}`]],
      ['eth_getAccount', ['0x12', 'latest']],
    ] as const) {
      const r = await callRpc<{ error?: { code: number } }>(svc, method, [...params]);
      expect([method, r.error?.code]).toEqual([method, -32602]);
    }
    for (const method of ['eth_getAccountInfo', 'eth_getAccount']) {
      const r = await callRpc<{ error?: { code: number; message: string } }>(svc, method, [
        `0x${'00'.repeat(20)}`,
        { blockHash: `0x${'ab'.repeat(32)}` },
      ]);
      expect(r.error).toEqual({ code: -32000, message: 'header for hash not found' });
      const past = await callRpc<{ error?: { code: number; message: string } }>(svc, method, [
        `0x${'00'.repeat(20)}`,
        hexN(head + 1),
      ]);
      expect(past.error).toEqual({ code: -32000, message: 'header not found' });
    }
  });

  test('account info and trie account equal the proof and the code of every account the chain touches', async () => {
    const addresses = new Set<string>([`0x${'00'.repeat(19)}99`]); // never touched: no account
    for (let n = 1; n <= head; n += 3) {
      const block = await call<{ transactions: Json[] }>('eth_getBlockByNumber', [hexN(n), true]);
      for (const tx of block.transactions) {
        addresses.add(tx.from as string);
        if (typeof tx.to === 'string') addresses.add(tx.to);
      }
    }
    let absent = 0;
    let withCode = 0;
    for (const block of [hexN(0), hexN(Math.floor(head / 2)), 'latest']) {
      for (const address of addresses) {
        const info = await call<Json>('eth_getAccountInfo', [address, block]);
        const account = await call<Json | null>('eth_getAccount', [address, block]);
        const proof = await call<Json>('eth_getProof', [address, [], block]);
        const code = await call<string>('eth_getCode', [address, block]);
        expect(Object.keys(info)).toEqual(['balance', 'nonce', 'code']);
        expect(info).toEqual({ balance: proof.balance, nonce: proof.nonce, code });
        if (account === null) {
          absent++;
          expect([address, block, info]).toEqual([address, block, { balance: '0x0', nonce: '0x0', code: '0x' }]);
          continue;
        }
        expect(Object.keys(account)).toEqual(['nonce', 'balance', 'storageRoot', 'codeHash']);
        expect(account).toEqual({
          nonce: proof.nonce,
          balance: proof.balance,
          storageRoot: proof.storageHash,
          codeHash: proof.codeHash,
        });
        expect(hx(keccak256(hexToBytes(code as PrefixedHexString)))).toBe(account.codeHash);
        if (code !== '0x') withCode++;
      }
    }
    expect(absent).toBeGreaterThan(0);
    expect(withCode).toBeGreaterThan(0);
  });

  test("eth_baseFee is the next block's base fee; eth_capabilities the held range and head", async () => {
    // The base fee the head's parent announces for the head is the head's own.
    const parentOfHead = await call<Json>('eth_feeHistory', ['0x1', hexN(head - 1), []]);
    const headHeader = await call<Json>('eth_getHeaderByNumber', ['latest']);
    expect((parentOfHead.baseFeePerGas as string[])[1]).toBe(headHeader.baseFeePerGas);
    const next = await call<Json>('eth_feeHistory', ['0x1', 'latest', []]);
    expect(await call('eth_baseFee', [])).toBe((next.baseFeePerGas as string[])[1]);
    const caps = await call<Json>('eth_capabilities', []);
    const held = { disabled: false, oldestBlock: '0x0' };
    expect(caps).toEqual({
      head: { number: hexN(head), hash: headHeader.hash },
      state: held,
      tx: held,
      logs: held,
      receipts: held,
      blocks: held,
      stateproofs: held,
    });
    expect(await call('eth_accounts', [])).toEqual([]); // no keys held
  });
});
