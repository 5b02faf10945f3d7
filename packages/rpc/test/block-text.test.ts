// The store's hashes-only block answers (readyBlockJson: written from the block's rows) against
// the text the formatter writes from the block's decoded rows, and against the BlockJson rows
// earlier releases wrote at import (their answers' sha256, recorded below), for EVERY block of a
// real import: the fixture chain (uncles, pre- and post-London, every tx type it
// has) and the execution-apis chain (withdrawals, blob gas, beacon root, requests hash), by number
// and by hash. Also: an orphaned or unknown hash is not answered from the ready rows. And the
// full-transaction answers, written from the stored encodings (transaction-text.ts), against
// JSON.stringify of the object formatter over the store's decoded transactions.
import { createHash } from 'node:crypto';
import { availableChains } from '@chainnode/testkit';
import { blockText } from '../src/formatters/block.js';
import { expectedBlockText } from './block-oracle.js';
import { serviceOnCopy } from './rpc-call.js';

const chains = availableChains();

/**
 * sha256 of every block's answer (block order, each followed by a newline) as the BlockJson rows
 * of the release that wrote them held it (0x01 ++ the answer), for the chains' imports.
 */
const ROWS_SHA256: Record<string, string> = {
  fixtures: '0d35d6a2806a612a3e505497f91c8661b9fc2dd926ddb51f3a6afbfdabc9c1ba',
  'execution-apis': 'f9b0e42915d8b7b7a938c66fb2328a6ea50aa4da505cf07e84713d4eb107c32b',
};

test.each(chains)(
  '%s: the ready hashes-only answer equals the formatted block, and the full answer the formatted objects, for every block',
  async (chain) => {
    const { store, svc, close } = await serviceOnCopy(chain);
    const call = async (method: string, params: unknown[]): Promise<string> => {
      const r = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
      const text = typeof r === 'string' ? r : (r as { body: string }).body;
      return text;
    };
    try {
      const readyOf = store.readyBlockJson?.bind(store);
      if (readyOf === undefined) throw new Error('the LevelDB store keeps ready block JSON');
      const head = (await store.head()).number;
      const seen = { ready: 0, withdrawals: 0, blob: 0, uncles: 0, txs: 0 };
      const rows = createHash('sha256');
      for (let n = 0n; n <= head; n++) {
        const hash = await store.canonicalHash(n);
        if (hash === undefined) throw new Error(`block ${n} missing`);
        const ready = await readyOf(hash);
        const block = await store.block(hash);
        if (ready === undefined || block === undefined) throw new Error(`block ${n}: no ready JSON or no block`);
        const formatted = blockText(block, false);
        // Each matcher only for a difference: six per block cost more than the answers.
        const same = (got: unknown, want: unknown): void => {
          if (got !== want) expect(got).toBe(want);
        };
        same(Buffer.from(ready.ascii).toString('latin1'), formatted);
        rows.update(ready.ascii).update('\n');
        const hex = `0x${n.toString(16)}`;
        const hashHex = `0x${Buffer.from(hash).toString('hex')}`;
        same(await call('eth_getBlockByNumber', [hex, false]), `{"jsonrpc":"2.0","id":1,"result":${formatted}}`);
        same(await call('eth_getBlockByHash', [hashHex, false]), `{"jsonrpc":"2.0","id":1,"result":${formatted}}`);
        // Full transactions: the objects, stringified, around the same head.
        const full = expectedBlockText(block);
        same(block.transactionEncodings?.raw.length, block.transactions.length);
        same(await call('eth_getBlockByNumber', [hex, true]), `{"jsonrpc":"2.0","id":1,"result":${full}}`);
        same(await call('eth_getBlockByHash', [hashHex, true]), `{"jsonrpc":"2.0","id":1,"result":${full}}`);
        seen.ready++;
        if (block.withdrawals !== undefined) seen.withdrawals++;
        if (block.header.blobGasUsed !== undefined) seen.blob++;
        if (block.uncleHashes.length > 0) seen.uncles++;
        seen.txs += block.transactions.length;
      }
      expect(rows.digest('hex')).toBe(ROWS_SHA256[chain]);
      // The chains cover what the writer branches on.
      expect(seen.ready).toBe(Number(head) + 1);
      expect(seen.txs).toBeGreaterThan(0);
      if (chain === 'fixtures') expect(seen.uncles).toBeGreaterThan(0);
      else expect(Math.min(seen.withdrawals, seen.blob)).toBeGreaterThan(0);
      // Unknown hash: no ready answer, and the method answers null.
      const unknown = new Uint8Array(32).fill(0xab);
      expect(await readyOf(unknown)).toBeUndefined();
      expect(await call('eth_getBlockByHash', [`0x${'ab'.repeat(32)}`, false])).toBe(
        '{"jsonrpc":"2.0","id":1,"result":null}',
      );
    } finally {
      await close();
    }
  },
  180_000,
);
