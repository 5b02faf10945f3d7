// Traces answered from the call frames and state changes recorded at import equal the traces of a
// re-execution, for every transaction of the execution-apis chain and of blocks across the
// fixture chain, as JSON text: the recorded side is fed from the TxFrames and TxStateDiffs rows
// the executing import wrote (the import's VM, its opcode hooks, the rows' codecs); the
// re-executed side runs each block again on its parent's state with the struct logger's `step`
// events, so the two share no path but the tracers themselves. trace_filter by addresses the frames name,
// narrowed by the blocks' frame blooms and the address-appearance index, equals it over every
// block re-executed; the Otterscan search by the same addresses and by those only internal frames
// name lists what a scan of the traces and receipts finds. A store without a block's row (a
// replica's) records it by re-executing the block, and answers the same.
import { openChainStore } from '@chainnode/store';
import { datadirCopy, withoutRecordedRows } from '@chainnode/testkit';
import type { ChainName } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';

type Json = Record<string, unknown>;
type Store = Awaited<ReturnType<typeof openChainStore>>;

async function rpc<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const r = JSON.parse((await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '');
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

const CALLS = { tracer: 'callTracer', tracerConfig: { withLog: true } };
/**
 * callTracer beside prestateTracer's diffMode: from the rows, both recorded; re-executed, the
 * prestate tracer wants every opcode (the `step` path).
 */
const STEPPED = {
  tracer: 'muxTracer',
  tracerConfig: { callTracer: { withLog: true }, prestateTracer: { diffMode: true } },
};
const DIFF_BARE = {
  tracer: 'prestateTracer',
  tracerConfig: { diffMode: true, disableCode: true, disableStorage: true },
};
const text = (v: unknown): string => JSON.stringify(v);

async function compareBlocks(
  chain: ChainName,
  pick: (n: number) => boolean,
  filters = false,
  diffOptions = false,
): Promise<{ txs: number; blocks: number; recorded: number }> {
  const copy = await datadirCopy(chain);
  const store = await openChainStore(copy.dir);
  try {
    const recorded = createRpcService(store, { callTimeoutMs: 60_000 });
    const replayed = createRpcService(withoutRecordedRows(store), { callTimeoutMs: 60_000 });
    const computed = createRpcService(withoutRecordedRows(store, 'missing'), { callTimeoutMs: 60_000 });
    const head = Number(await rpc<string>(recorded, 'eth_blockNumber', []));
    let txs = 0;
    let rows = 0;
    let blocks = 0;
    const seen = new Set<string>();
    /** address -> the transactions whose frames or receipt name it, oldest first (the scan). */
    const named = new Map<string, Set<string>>();
    /** Addresses only internal frames name, in some transaction. */
    const internalOnly = new Set<string>();
    for (let n = 1; n <= head; n++) {
      if (!pick(n)) continue;
      const block = await rpc<{ hash: string; transactions: string[] }>(recorded, 'eth_getBlockByNumber', [
        hex(n),
        false,
      ]);
      if (block.transactions.length === 0) continue;
      blocks++;
      const hash = Buffer.from(block.hash.slice(2), 'hex');
      if ((await store.txFrames?.(hash)) !== undefined && (await store.txStateDiffs?.(hash)) !== undefined) rows++;
      const fromRecord = await rpc<{ result: Json }[]>(recorded, 'debug_traceBlockByNumber', [hex(n), CALLS]);
      const fromSteps = await rpc<{ result: { callTracer: Json } }[]>(replayed, 'debug_traceBlockByNumber', [
        hex(n),
        STEPPED,
      ]);
      expect(fromRecord.map((t) => t.result)).toEqual(fromSteps.map((t) => t.result.callTracer));
      const both = await rpc<{ result: Json }[]>(recorded, 'debug_traceBlockByNumber', [hex(n), STEPPED]);
      expect(text(both)).toBe(text(fromSteps));
      if (diffOptions)
        expect(text(await rpc(recorded, 'debug_traceBlockByNumber', [hex(n), DIFF_BARE]))).toBe(
          text(await rpc(replayed, 'debug_traceBlockByNumber', [hex(n), DIFF_BARE])),
        );
      const flat = await rpc<FlatEntry[]>(recorded, 'trace_block', [hex(n)]);
      expect(flat).toEqual(await rpc(replayed, 'trace_block', [hex(n)]));
      const replay = [hex(n), ['trace', 'stateDiff']];
      const parity = await rpc<{ stateDiff: Json }[]>(recorded, 'trace_replayBlockTransactions', replay);
      expect(text(parity)).toBe(text(await rpc(replayed, 'trace_replayBlockTransactions', replay)));
      const diffs = await rpc<{ stateDiff: Json }[]>(recorded, 'trace_replayBlockTransactions', [
        hex(n),
        ['stateDiff'],
      ]);
      expect(text(diffs.map((t) => t.stateDiff))).toBe(text(parity.map((t) => t.stateDiff)));
      // Without a row: the block re-executed once with the import's recorder, then read.
      expect(await rpc(computed, 'trace_block', [hex(n)])).toEqual(flat);
      expect(await rpc(computed, 'debug_traceBlockByNumber', [hex(n), CALLS])).toEqual(fromRecord);
      expect(text(await rpc(computed, 'trace_replayBlockTransactions', replay))).toBe(text(parity));
      for (const e of flat) for (const a of [e.action.from, e.action.to]) if (a !== undefined) seen.add(a);
      if (filters) await scanNames(recorded, n, flat, named, internalOnly);
      // One at a time: re-executed, each runs under geth's default 5 s trace timeout.
      for (const h of block.transactions)
        expect(await rpc(recorded, 'ots_traceTransaction', [h])).toEqual(
          await rpc(replayed, 'ots_traceTransaction', [h]),
        );
      // The block's last transaction alone, from the rows, is its entry of the block's.
      const last = block.transactions.length - 1;
      const h = block.transactions[last];
      expect(text(await rpc(recorded, 'debug_traceTransaction', [h, STEPPED]))).toBe(text(both[last]?.result));
      const one = await rpc<Json>(recorded, 'trace_replayTransaction', [h, ['stateDiff']]);
      expect(text(one.stateDiff)).toBe(text(parity[last]?.stateDiff));
      txs += block.transactions.length;
    }
    // trace_filter over the whole chain by addresses its frames name, from blooms and rows against
    // every block re-executed.
    if (filters) {
      const all = [...seen];
      const picks = [0, 1, 2, 3].map((k) => all[Math.floor((k * all.length) / 4)] as string);
      // And with blocks past the merge imported with recording off between recorded ones (their
      // rows and frame-index rows absent): those are traced whole, the rest read from the index.
      const gaps = new Set<string>();
      for (let n = Math.floor(head / 2); n <= head; n += 3)
        gaps.add((await rpc<{ hash: string }>(recorded, 'eth_getBlockByNumber', [hex(n), false])).hash);
      const gapped = createRpcService(withGaps(store, gaps), { callTimeoutMs: 60_000 });
      for (const a of picks)
        for (const f of [{ fromAddress: [a] }, { toAddress: [a] }]) {
          const want = await rpc(replayed, 'trace_filter', [{ fromBlock: '0x1', toBlock: hex(head), ...f }]);
          for (const svc of [recorded, gapped])
            expect(await rpc(svc, 'trace_filter', [{ fromBlock: '0x1', toBlock: hex(head), ...f }])).toEqual(want);
          const late = [{ fromBlock: hex(Math.floor(head / 2) - 1), toBlock: hex(head), ...f }];
          const lateWant = await rpc(replayed, 'trace_filter', late);
          for (const svc of [recorded, gapped]) expect(await rpc(svc, 'trace_filter', late)).toEqual(lateWant);
        }
      expect(new Set(picks).size).toBe(4);
      // (This chain's nested frames call contracts that also log; the store's rewind test and the
      // suite against anvil have callees only frames name.)
      const internal = [...internalOnly].slice(0, 4);
      for (const a of [...picks, ...internal]) {
        const want = [...(named.get(a) ?? [])].reverse();
        expect(await searchBefore(recorded, a)).toEqual(want);
      }
    }
    return { txs, blocks, recorded: rows };
  } finally {
    await store.close();
    await copy.cleanup();
  }
}

type FlatEntry = {
  action: Record<string, string>;
  result: Record<string, string> | null;
  transactionHash?: string | null;
  traceAddress: number[];
};

/** Notes, for block `n`, every address each transaction's frames or receipt name. */
async function scanNames(
  svc: RpcServiceApi,
  n: number,
  flat: FlatEntry[],
  named: Map<string, Set<string>>,
  internalOnly: Set<string>,
): Promise<void> {
  const note = (a: string | null | undefined, tx: string) => {
    if (a === undefined || a === null) return;
    if (!named.has(a)) named.set(a, new Set());
    named.get(a)?.add(tx);
  };
  const own = new Map<string, Set<string>>();
  for (const r of await rpc<Json[]>(svc, 'eth_getBlockReceipts', [hex(n)])) {
    const tx = r.transactionHash as string;
    const logs = r.logs as { address: string }[];
    const mine = new Set([r.from, r.to, r.contractAddress, ...logs.map((l) => l.address)] as (string | null)[]);
    own.set(tx, new Set([...mine].filter((a) => a !== null) as string[]));
    for (const a of mine) note(a, tx);
  }
  for (const e of flat) {
    const tx = e.transactionHash;
    if (tx === undefined || tx === null) continue;
    const names = [e.action.from, e.action.to, e.action.address, e.action.refundAddress, e.result?.address];
    for (const a of names) {
      note(a, tx);
      if (a !== undefined && e.traceAddress.length > 0 && own.get(tx)?.has(a) !== true) internalOnly.add(a);
    }
  }
}

/** `store` as if the blocks `hidden` (hashes) had been imported with recording off. */
function withGaps(store: Store, hidden: Set<string>): Store {
  const shown = (hash: Uint8Array) => !hidden.has(`0x${Buffer.from(hash).toString('hex')}`);
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'txFrames' || prop === 'txStateDiffs')
        return async (hash: Uint8Array) => (shown(hash) ? target[prop]?.(hash) : undefined);
      if (prop === 'frameBlooms' || prop === 'frameIndexedBlocks')
        return async (from: bigint, to: bigint) => {
          const kept: bigint[] = [];
          for (let n = from; n <= to; n++) {
            const hash = await target.canonicalHash(n);
            if (hash !== undefined && shown(hash)) kept.push(n);
          }
          if (prop === 'frameIndexedBlocks')
            return (await target.frameIndexedBlocks?.(from, to))?.filter((n) => kept.includes(n));
          const blooms = (await target.frameBlooms?.(from, to)) ?? [];
          return blooms.map((b, i) => (kept.includes(from + BigInt(i)) ? b : undefined));
        };
      // Their transactions left out of the index (at worst: it would still list their senders,
      // recipients and log emitters), so only tracing them whole finds their entries.
      if (prop === 'appearanceRange')
        return async (address: Uint8Array, from: bigint, to: bigint) => {
          const r = await target.appearanceRange?.(address, from, to);
          if (r === undefined) return undefined;
          const positions = [];
          for (const p of r.positions) {
            const hash = await target.canonicalHash(p.number);
            if (hash !== undefined && shown(hash)) positions.push(p);
          }
          return { ...r, positions };
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** Every transaction ots_searchTransactionsBefore lists for `address`, page by page, newest first. */
async function searchBefore(svc: RpcServiceApi, address: string): Promise<string[]> {
  const out: string[] = [];
  let block = 0;
  for (;;) {
    const p = await rpc<{ txs: { hash: string; blockNumber: string }[]; lastPage: boolean }>(
      svc,
      'ots_searchTransactionsBefore',
      [address, block, 25],
    );
    out.push(...p.txs.map((t) => t.hash));
    if (p.lastPage || p.txs.length === 0) return out;
    block = Number(p.txs[p.txs.length - 1]?.blockNumber);
  }
}

describe('traces from recorded frames and state changes equal re-executed ones', () => {
  test('every transaction of the execution-apis chain', async () => {
    const r = await compareBlocks('execution-apis', () => true, true, true);
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
