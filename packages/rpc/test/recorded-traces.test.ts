// Traces answered from the call frames recorded at import equal the traces of a re-execution, for
// every transaction of the execution-apis chain and of blocks across the fixture chain: the
// recorded side is fed from the TxFrames rows the executing import wrote (the import's VM, its
// opcode hooks, the row's codec); the re-executed side runs each block again on its parent's
// state with the struct logger's `step` events (a muxTracer with prestateTracer wants opcodes),
// so the two share no path but the tracers themselves. trace_filter by addresses the frames name,
// narrowed by the blocks' frame blooms and rows, equals it over every block re-executed. A store
// without a block's row (a replica's) records it by re-executing the block, and answers the same.
import type { ChainStore } from '@chainnode/core';
import { openChainStore } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';

type Json = Record<string, unknown>;

async function rpc<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const r = JSON.parse((await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '');
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

/**
 * The same store with no recorded frames: every trace re-executes (`rows: 'none'`: a store that
 * cannot hold them), or the frame traces record the block by re-executing it first (`'missing'`:
 * a replica's store, which has none of its blocks' rows).
 */
function unrecorded(store: ChainStore, rows: 'none' | 'missing' = 'none'): ChainStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'frameBlooms') return undefined;
      if (prop === 'txFrames') return rows === 'none' ? undefined : async () => undefined;
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

const CALLS = { tracer: 'callTracer', tracerConfig: { withLog: true } };
/** callTracer beside a tracer that wants every opcode: the re-execution takes the `step` path. */
const STEPPED = { tracer: 'muxTracer', tracerConfig: { callTracer: { withLog: true }, prestateTracer: {} } };

async function compareBlocks(
  chain: ChainName,
  pick: (n: number) => boolean,
  filters = false,
): Promise<{ txs: number; blocks: number; recorded: number }> {
  const copy = await datadirCopy(chain);
  const store = await openChainStore(copy.dir);
  try {
    const recorded = createRpcService(store, { callTimeoutMs: 60_000 });
    const replayed = createRpcService(unrecorded(store), { callTimeoutMs: 60_000 });
    const computed = createRpcService(unrecorded(store, 'missing'), { callTimeoutMs: 60_000 });
    const head = Number(await rpc<string>(recorded, 'eth_blockNumber', []));
    let txs = 0;
    let rows = 0;
    let blocks = 0;
    const seen = new Set<string>();
    for (let n = 1; n <= head; n++) {
      if (!pick(n)) continue;
      const block = await rpc<{ hash: string; transactions: string[] }>(recorded, 'eth_getBlockByNumber', [
        hex(n),
        false,
      ]);
      if (block.transactions.length === 0) continue;
      blocks++;
      const row = await store.txFrames?.(Buffer.from(block.hash.slice(2), 'hex'));
      if (row !== undefined) rows++;
      const fromRecord = await rpc<{ result: Json }[]>(recorded, 'debug_traceBlockByNumber', [hex(n), CALLS]);
      const fromSteps = await rpc<{ result: { callTracer: Json } }[]>(replayed, 'debug_traceBlockByNumber', [
        hex(n),
        STEPPED,
      ]);
      expect(fromRecord.map((t) => t.result)).toEqual(fromSteps.map((t) => t.result.callTracer));
      const flat = await rpc<{ action: Record<string, string> }[]>(recorded, 'trace_block', [hex(n)]);
      expect(flat).toEqual(await rpc(replayed, 'trace_block', [hex(n)]));
      // Without a row: the block re-executed once with the import's recorder, then read.
      expect(await rpc(computed, 'trace_block', [hex(n)])).toEqual(flat);
      expect(await rpc(computed, 'debug_traceBlockByNumber', [hex(n), CALLS])).toEqual(fromRecord);
      for (const e of flat) for (const a of [e.action.from, e.action.to]) if (a !== undefined) seen.add(a);
      // One at a time: re-executed, each runs under geth's default 5 s trace timeout.
      for (const h of block.transactions)
        expect(await rpc(recorded, 'ots_traceTransaction', [h])).toEqual(
          await rpc(replayed, 'ots_traceTransaction', [h]),
        );
      txs += block.transactions.length;
    }
    // trace_filter over the whole chain by addresses its frames name, from blooms and rows against
    // every block re-executed.
    if (filters) {
      const all = [...seen];
      const picks = [0, 1, 2, 3].map((k) => all[Math.floor((k * all.length) / 4)] as string);
      for (const a of picks)
        for (const f of [{ fromAddress: [a] }, { toAddress: [a] }]) {
          const q = [{ fromBlock: '0x1', toBlock: hex(head), ...f }];
          expect(await rpc(recorded, 'trace_filter', q)).toEqual(await rpc(replayed, 'trace_filter', q));
        }
      expect(new Set(picks).size).toBe(4);
    }
    return { txs, blocks, recorded: rows };
  } finally {
    await store.close();
    await copy.cleanup();
  }
}

describe('traces from recorded frames equal re-executed ones', () => {
  test('every transaction of the execution-apis chain', async () => {
    const r = await compareBlocks('execution-apis', () => true, true);
    expect(r.txs).toBeGreaterThan(20);
    // Every block with transactions was recorded at import.
    expect(r.recorded).toBe(r.blocks);
  });

  test('blocks across the fixture chain, before and after London', async () => {
    const r = await compareBlocks('fixtures', (n) => n % 100 === 1 || n === 599 || n === 600);
    expect(r.txs).toBeGreaterThan(50);
    expect(r.recorded).toBe(r.blocks);
  });
});
