// geth's debug_getRaw* over REAL imported stores (the execution-apis conformance exchanges are
// replayed by rpc-compat.test.ts; here their error texts are checked word for word). For every
// block of both chains the encodings are re-derived: the header's keccak is the block hash, the
// block's RLP holds that header, its transactions rebuild the header's transactionsRoot and its
// uncles its uncle hash, its length is the block's size; the receipts (core's encodeReceipt over
// the stored receipts and logs) rebuild receiptsRoot and their blooms logsBloom; every
// transaction's encoding hashes to its hash.
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, hexToBytes } from '@ethereumjs/util';
import type { PrefixedHexString } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import { Mismatches, availableChains } from '@chainnode/testkit';
import type { JsonBlock, RpcServiceApi } from '../src/index.js';
import { callRpc, serviceOnCopy } from './rpc-call.js';

type Nested = Uint8Array | Nested[];
const b = (h: string): Uint8Array => hexToBytes(h as PrefixedHexString);
const hx = (u: Uint8Array): string => bytesToHex(u);

const chains = availableChains();

const raw = callRpc;

async function call<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const r = await raw(svc, method, params);
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

async function trieRoot(values: Uint8Array[]): Promise<string> {
  const trie = new MerklePatriciaTrie();
  for (const [i, v] of values.entries()) await trie.put(RLP.encode(i), v);
  return hx(trie.root());
}

test.each(chains)(
  '%s: every block and transaction encoding re-derived',
  async (chain) => {
    const { store, svc, close } = await serviceOnCopy(chain);
    try {
      const head = (await store.head()).number;
      let txs = 0;
      let typed = 0;
      let withdrawals = 0;
      let uncles = 0;
      let receiptCount = 0;
      // What does not re-derive, collected and asserted once: a matcher per block, receipt and
      // transaction (some 25,000) took a seventh of this suite's CPU.
      const m = new Mismatches();
      const want = m.want;
      for (let n = 0n; n <= head; n++) {
        const json = await call<JsonBlock>(svc, 'eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
        m.at = `block ${n}`;
        // By number for most blocks, by hash and by EIP-1898 object for some.
        const sel = n % 3n === 0n ? json.hash : n % 5n === 0n ? { blockHash: json.hash } : json.number;
        const header = await call<string>(svc, 'debug_getRawHeader', [sel]);
        want('header hash', hx(keccak256(b(header))), json.hash);
        const block = await call<string>(svc, 'debug_getRawBlock', [sel]);
        want('size', BigInt(b(block).length), BigInt(json.size));
        const [h, list, ommers, wds] = RLP.decode(b(block)) as [Nested, Nested[], Nested[], Nested[]?];
        want('header in the block', hx(RLP.encode(h)), header);
        // A legacy transaction is a list in the block; a typed one a byte string of its encoding.
        const encodings = list.map((t) => (t instanceof Uint8Array ? t : RLP.encode(t)));
        want('transactionsRoot', await trieRoot(encodings), json.transactionsRoot);
        const hashes = json.transactions as string[];
        want('transaction hashes', encodings.map((e) => hx(keccak256(e))).join(), hashes.join());
        want('sha3Uncles', hx(keccak256(RLP.encode(ommers))), json.sha3Uncles);
        want('uncle hashes', ommers.map((u) => hx(keccak256(RLP.encode(u)))).join(), json.uncles.join());
        if (json.withdrawalsRoot !== undefined) {
          want('withdrawalsRoot', await trieRoot((wds ?? []).map((w) => RLP.encode(w))), json.withdrawalsRoot);
          want('withdrawals list held', wds !== undefined, true);
          withdrawals += wds?.length ?? 0;
        } else want('withdrawals', wds, undefined);
        uncles += ommers.length;
        // The receipts rebuild receiptsRoot, and their blooms OR'd together the block's logsBloom.
        const receipts = await call<string[]>(svc, 'debug_getRawReceipts', [sel]);
        want('receipts', receipts.length, encodings.length);
        want('receiptsRoot', await trieRoot(receipts.map(b)), json.receiptsRoot);
        const bloom = new Uint8Array(256);
        for (const [i, r] of receipts.entries()) {
          const enc = b(r);
          const typeOf = (e: Uint8Array | undefined): number | undefined =>
            e === undefined ? undefined : e[0]! >= 0xc0 ? 0 : e[0]!;
          want(`receipt ${i} type`, typeOf(enc), typeOf(encodings[i])); // a receipt has its transaction's type
          const f = RLP.decode(typeOf(enc) === 0 ? enc : enc.subarray(1)) as Uint8Array[];
          f[2]!.forEach((x, j) => {
            bloom[j]! |= x;
          });
        }
        want('logsBloom', hx(bloom), json.logsBloom);
        receiptCount += receipts.length;
        for (const [i, e] of encodings.entries()) {
          const tx = await call<string>(svc, 'debug_getRawTransaction', [hashes[i]]);
          want(`transaction ${i}`, tx, hx(e));
          txs++;
          if (e[0]! < 0xc0) typed++;
        }
      }
      expect(m.first()).toEqual([]);
      console.log(
        `${chain}: ${head + 1n} blocks, ${txs} transactions (${typed} typed), ${uncles} uncles, ${withdrawals} withdrawals`,
      );
      expect(txs).toBeGreaterThan(0);
      expect(typed).toBeGreaterThan(0);
      expect(receiptCount).toBe(txs);
      // Past the head and unknown hashes: geth's answers.
      const past = `0x${(head + 1n).toString(16)}`;
      expect(await raw(svc, 'debug_getRawHeader', [past])).toEqual({ jsonrpc: '2.0', id: 1, result: '0x' });
      expect(await raw(svc, 'debug_getRawBlock', [past])).toEqual({ jsonrpc: '2.0', id: 1, result: '0x' });
      expect(await raw(svc, 'debug_getRawReceipts', [past])).toEqual({ jsonrpc: '2.0', id: 1, result: null });
      const unknown = `0x${'01'.repeat(32)}`;
      expect((await raw(svc, 'debug_getRawHeader', [unknown])).error).toEqual({
        code: -32000,
        message: `header #[${new Array(32).fill(1).join(' ')}] not found`,
      });
      expect((await raw(svc, 'debug_getRawBlock', [unknown])).error).toEqual({
        code: -32000,
        message: `block #[${new Array(32).fill(1).join(' ')}] not found`,
      });
      expect(await raw(svc, 'debug_getRawTransaction', [unknown])).toEqual({ jsonrpc: '2.0', id: 1, result: '0x' });
      expect(await raw(svc, 'debug_getRawReceipts', [unknown])).toEqual({ jsonrpc: '2.0', id: 1, result: null });
      expect((await raw(svc, 'debug_getRawTransaction', ['0x12'])).error).toEqual({
        code: -32602,
        message: 'invalid argument 0: hex string has length 2, want 64 for common.Hash',
      });
      // The recorded exchanges' messages, which rpc-compat does not compare.
      for (const m of ['debug_getRawHeader', 'debug_getRawBlock', 'debug_getRawReceipts'])
        expect((await raw(svc, m, ['2'])).error).toEqual({
          code: -32602,
          message: 'invalid argument 0: hex string without 0x prefix',
        });
      expect((await raw(svc, 'debug_getRawTransaction', [`${'10'.repeat(31)}01`])).error).toEqual({
        code: -32602,
        message:
          'invalid argument 0: json: cannot unmarshal hex string without 0x prefix into Go value of type common.Hash',
      });
      expect((await raw(svc, 'debug_getRawTransaction', [12])).error).toEqual({
        code: -32602,
        message: 'invalid argument 0: json: cannot unmarshal non-string into Go value of type common.Hash',
      });
    } finally {
      await close();
    }
  },
  600_000,
);
