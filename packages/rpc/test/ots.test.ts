// Otterscan's ots_* methods on the fixture chain, each against an independent derivation: the
// searches against a scan of every block's receipts (sender, recipient, created contract, log
// emitters), ots_getTransactionBySenderAndNonce against the same scan, ots_getContractCreator
// against the receipts, ots_traceTransaction and ots_getInternalOperations against callTracer's
// frames (mapped here as Erigon maps its hooks), the block methods against the block and its
// receipts; and Otterscan's tracers fed frames by hand (the fixture chain has no nested calls).
import { OtsOperationsTracer, OtsTransactionTracer, TraceBudget } from '@chainnode/exec';
import type { FrameEnter, Tracer, TxStart } from '@chainnode/exec';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';
import { callRpc, serviceOnCopy } from './rpc-call.js';

type Json = Record<string, unknown>;

interface Receipt {
  transactionHash: string;
  blockNumber: string;
  from: string;
  to: string | null;
  contractAddress: string | null;
  status: string;
  gasUsed: string;
  effectiveGasPrice: string;
  logs: { address: string }[];
}

interface Frame {
  type: string;
  from: string;
  to?: string;
  value?: string;
  input: string;
  output?: string;
  error?: string;
  calls?: Frame[];
}

interface SearchPage {
  txs: { hash: string; blockNumber: string }[];
  receipts: { transactionHash: string; timestamp: number }[];
  firstPage: boolean;
  lastPage: boolean;
}

const call = (svc: RpcServiceApi, method: string, params: unknown[]) =>
  callRpc<{ result?: unknown; error?: Json }>(svc, method, params);

async function rpc<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const r = await call(svc, method, params);
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

describe('ots_* on the fixture chain', () => {
  let svc: RpcServiceApi;
  let close: () => Promise<void>;
  /** Every receipt of the chain, oldest first. */
  const receipts: Receipt[] = [];
  /** address -> the hashes of the transactions it appears in, oldest first (the brute-force scan). */
  const appearances = new Map<string, string[]>();
  const timestamps = new Map<number, number>();
  let head = 0;

  beforeAll(async () => {
    const on = await serviceOnCopy('fixtures');
    close = on.close;
    svc = createRpcService(on.store, { callTimeoutMs: 60_000 });
    head = Number(await rpc<string>(svc, 'eth_blockNumber', []));
    for (let n = 1; n <= head; n++) {
      const rs = await rpc<Receipt[]>(svc, 'eth_getBlockReceipts', [hex(n)]);
      for (const r of rs) {
        receipts.push(r);
        const touched = new Set([r.from, r.to ?? r.contractAddress, ...r.logs.map((l) => l.address)]);
        for (const a of touched) if (a !== null) appearances.set(a, [...(appearances.get(a) ?? []), r.transactionHash]);
      }
    }
  });

  afterAll(async () => {
    await close?.();
  });

  /** Addresses to search: the busiest, a contract, a rare one, one never seen. */
  function sample(): string[] {
    const byCount = [...appearances.entries()].sort((a, b) => b[1].length - a[1].length);
    // A contract whose history takes a few pages.
    const contracts = receipts.map((r) => r.contractAddress).filter((a) => a !== null) as string[];
    const sized = contracts.map((a) => [a, appearances.get(a)?.length ?? 0] as const).filter(([, n]) => n > 25);
    const contract = (sized.sort((x, y) => x[1] - y[1])[0]?.[0] ?? contracts[0]) as string;
    const rare = byCount.find(([, hs]) => hs.length === 2)?.[0] as string;
    return [byCount[0]?.[0] as string, contract, rare, '0x000000000000000000000000000000000000dead'];
  }

  async function timestamp(n: number): Promise<number> {
    if (!timestamps.has(n))
      timestamps.set(
        n,
        Number((await rpc<{ timestamp: string }>(svc, 'eth_getBlockByNumber', [hex(n), false])).timestamp),
      );
    return timestamps.get(n) as number;
  }

  /** The pages of a search from its start, at most `most` of them. */
  async function pages(method: string, address: string, most: number): Promise<SearchPage[]> {
    const out: SearchPage[] = [];
    let block = 0;
    for (;;) {
      const p = await rpc<SearchPage>(svc, method, [address, block, 25]);
      out.push(p);
      expect(p.receipts.map((r) => r.transactionHash)).toEqual(p.txs.map((t) => t.hash));
      for (const [i, r] of p.receipts.entries()) {
        expect(r.timestamp).toBe(await timestamp(Number((p.txs[i] as { blockNumber: string }).blockNumber)));
        // Each receipt read alone is the one of its block's receipts, read whole.
        const { timestamp: _, ...receipt } = r;
        expect(receipt).toEqual(receipts.find((x) => x.transactionHash === r.transactionHash));
      }
      const done = method === 'ots_searchTransactionsBefore' ? p.lastPage : p.firstPage;
      if (done || p.txs.length === 0 || out.length === most) return out;
      // Newest first: the next page starts past the block it stopped in.
      const edge = method === 'ots_searchTransactionsBefore' ? p.txs[p.txs.length - 1] : p.txs[0];
      block = Number((edge as { blockNumber: string }).blockNumber);
    }
  }

  test('ots_searchTransactionsBefore and After page through what the scan finds', async () => {
    // The busiest address's history is long: its newest and oldest pages are compared.
    for (const [k, address] of sample().entries()) {
      const most = k === 0 ? 3 : 1000;
      const want = [...(appearances.get(address) ?? [])].reverse();
      const before = (await pages('ots_searchTransactionsBefore', address, most)).flatMap((p) => p.txs);
      expect(before.map((t) => t.hash)).toEqual(want.slice(0, before.length));
      const after = (await pages('ots_searchTransactionsAfter', address, most)).reverse().flatMap((p) => p.txs);
      expect(after.map((t) => t.hash)).toEqual(want.slice(want.length - after.length));
      if (k > 0) expect([before.length, after.length]).toEqual([want.length, want.length]);
      else expect(before.length).toBeGreaterThanOrEqual(75);
    }
    // Flags; a page is full unless last, and ends where its last block does.
    const first = await rpc<SearchPage>(svc, 'ots_searchTransactionsBefore', [sample()[0], 0, 25]);
    expect([first.firstPage, first.lastPage]).toEqual([true, false]);
    const last = first.txs[first.txs.length - 1] as { blockNumber: string };
    expect(first.txs.length).toBeGreaterThanOrEqual(25);
    const next = await rpc<SearchPage>(svc, 'ots_searchTransactionsBefore', [sample()[0], Number(last.blockNumber), 1]);
    expect(next.txs.every((t) => Number(t.blockNumber) < Number(last.blockNumber))).toBe(true);
    const oldest = await rpc<SearchPage>(svc, 'ots_searchTransactionsAfter', [sample()[0], 0, 25]);
    expect([oldest.firstPage, oldest.lastPage]).toEqual([false, true]);
    expect((await call(svc, 'ots_searchTransactionsBefore', [sample()[0], 0, 26])).error?.message).toBe(
      'max allowed page size: 25',
    );
  });

  test('ots_getTransactionBySenderAndNonce finds what the scan finds', async () => {
    const picks = [receipts[0], receipts[Math.floor(receipts.length / 2)], receipts[receipts.length - 1]];
    for (const r of picks as Receipt[]) {
      const tx = await rpc<{ nonce: string }>(svc, 'eth_getTransactionByHash', [r.transactionHash]);
      expect(await rpc(svc, 'ots_getTransactionBySenderAndNonce', [r.from, Number(tx.nonce)])).toBe(r.transactionHash);
      const sent = receipts.filter((x) => x.from === r.from).length;
      expect(await rpc(svc, 'ots_getTransactionBySenderAndNonce', [r.from, sent + 1000])).toBeNull();
    }
  });

  test('ots_getContractCreator is the creating receipt; ots_hasCode', async () => {
    const created = receipts.filter((r) => r.contractAddress !== null && r.status === '0x1');
    expect(created.length).toBeGreaterThan(0);
    for (const r of [created[0], created[created.length - 1]] as Receipt[]) {
      const address = r.contractAddress as string;
      expect(await rpc(svc, 'ots_getContractCreator', [address])).toEqual({ hash: r.transactionHash, creator: r.from });
      expect(await rpc(svc, 'ots_hasCode', [address, 'latest'])).toBe(true);
      expect(await rpc(svc, 'ots_hasCode', [address, hex(Number(r.blockNumber) - 1)])).toBe(false);
    }
    expect(await rpc(svc, 'ots_getContractCreator', [created[0]?.from])).toBeNull();
  });

  test('ots_traceTransaction and ots_getInternalOperations are callTracer frames mapped; ots_getTransactionError', async () => {
    const failed = receipts.find((r) => r.status === '0x0');
    const picks = [receipts[1], receipts[receipts.length - 2], failed].filter((r) => r !== undefined) as Receipt[];
    for (const r of picks) {
      const frame = await rpc<Frame>(svc, 'debug_traceTransaction', [r.transactionHash, { tracer: 'callTracer' }]);
      const entries: Json[] = [];
      const ops: Json[] = [];
      const walk = (f: Frame, depth: number) => {
        const plain = f.type === 'STATICCALL' || f.type === 'DELEGATECALL';
        entries.push({
          type: f.type,
          depth,
          from: f.from,
          to: f.to ?? r.contractAddress,
          value: plain ? null : (f.value ?? '0x0'),
          input: f.input,
          output: f.error === undefined || f.error === 'execution reverted' ? (f.output ?? '0x') : '0x',
        });
        if (depth > 0 && f.type === 'CALL' && BigInt(f.value ?? 0) > 0n)
          ops.push({ type: 0, from: f.from, to: f.to, value: f.value });
        for (const c of f.calls ?? []) walk(c, depth + 1);
      };
      walk(frame, 0);
      expect(await rpc(svc, 'ots_traceTransaction', [r.transactionHash])).toEqual(entries);
      expect(await rpc(svc, 'ots_getInternalOperations', [r.transactionHash])).toEqual(ops);
      const revert = frame.error === 'execution reverted' ? (frame.output ?? '0x') : '0x';
      expect(await rpc(svc, 'ots_getTransactionError', [r.transactionHash])).toBe(revert);
    }
  });

  test('ots_getBlockDetails and ots_getBlockTransactions against the block and its receipts', async () => {
    const n = Number(receipts[receipts.length - 1]?.blockNumber);
    const block = await rpc<Json & { hash: string; transactions: string[]; difficulty: string }>(
      svc,
      'eth_getBlockByNumber',
      [hex(n), false],
    );
    const rs = receipts.filter((r) => Number(r.blockNumber) === n);
    const details = await rpc<{ block: Json; issuance: Json; totalFees: string }>(svc, 'ots_getBlockDetails', [n]);
    const { transactions, ...rest } = block;
    expect(details.block).toEqual({ ...rest, logsBloom: null, transactionCount: transactions.length });
    const fees = rs.reduce((s, r) => s + BigInt(r.gasUsed) * BigInt(r.effectiveGasPrice), 0n);
    expect(details.totalFees).toBe(hex(fees));
    const { blockReward, uncleReward, issuance } = details.issuance as Record<string, string>;
    expect(BigInt(issuance as string)).toBe(BigInt(blockReward as string) + BigInt(uncleReward as string));
    expect(BigInt(blockReward as string) > 0n).toBe(BigInt(block.difficulty) > 0n);
    expect(await rpc(svc, 'ots_getBlockDetailsByHash', [block.hash])).toEqual(details);
    // Page 0 is the block's last transactions (Erigon pages from the end).
    const page = await rpc<{ fullblock: { transactions: { hash: string; input: string }[] }; receipts: Json[] }>(
      svc,
      'ots_getBlockTransactions',
      [n, 0, 2],
    );
    expect(page.fullblock.transactions.map((t) => t.hash)).toEqual(transactions.slice(-2));
    expect(page.fullblock.transactions.every((t) => t.input.length <= 10)).toBe(true);
    expect(page.receipts.map((r) => [r.transactionHash, r.logs, r.logsBloom])).toEqual(
      transactions.slice(-2).map((h) => [h, null, null]),
    );
    expect(await rpc(svc, 'ots_getApiLevel', [])).toBe(8);
    expect(await rpc(svc, 'erigon_getHeaderByNumber', [n])).toEqual(await rpc(svc, 'eth_getHeaderByNumber', [hex(n)]));
    expect((await call(svc, 'erigon_getHeaderByNumber', [head + 10])).error?.message).toBe(
      `block header not found: ${head + 10}`,
    );
  });
});

describe("Otterscan's tracers (Erigon's mapping of geth's frame hooks)", () => {
  const a = (n: number) => Uint8Array.from({ length: 20 }, (_, i) => (i === 19 ? n : 0));
  const tx = { isPrecompile: (x: Uint8Array) => x[19] === 1 } as unknown as TxStart;
  const frame = (depth: number, type: FrameEnter['type'], to: number, value: bigint | undefined): FrameEnter => ({
    depth,
    type,
    from: a(depth === 0 ? 0xee : 0xc0),
    to: a(to),
    input: Uint8Array.of(to),
    gas: 1000n,
    value,
  });
  // CALL(value 5) -> [CALL c1 value 2, STATICCALL precompile 1, DELEGATECALL d1, CREATE2 e1 (reverts), SELFDESTRUCT]
  const events: [FrameEnter, Uint8Array, string | undefined][] = [
    [frame(1, 'CALL', 0xc1, 2n), Uint8Array.of(7), undefined],
    [frame(1, 'STATICCALL', 1, undefined), Uint8Array.of(8), undefined],
    [frame(1, 'DELEGATECALL', 0xd1, undefined), new Uint8Array(0), 'out of gas'],
    [frame(1, 'CREATE2', 0xe1, 0n), Uint8Array.of(9), 'execution reverted'],
    [frame(1, 'SELFDESTRUCT', 0xbe, 3n), new Uint8Array(0), undefined],
  ];
  function run<T extends Tracer>(t: T): T {
    t.onTxStart?.(tx, undefined as never);
    t.onEnter?.(frame(0, 'CALL', 0xc0, 5n));
    for (const [f, output, error] of events) {
      t.onEnter?.(f);
      t.onExit?.({ depth: 1, output, gasUsed: 1n, error, reverted: error !== undefined });
    }
    t.onExit?.({ depth: 0, output: Uint8Array.of(1), gasUsed: 10n, error: undefined, reverted: false });
    return t;
  }

  test('ots_traceTransaction entries', () => {
    const e = (
      type: string,
      depth: number,
      from: number,
      to: number,
      value: string | null,
      input: string,
      output: string,
    ) => ({
      type,
      depth,
      from: `0x${from.toString(16).padStart(40, '0')}`,
      to: `0x${to.toString(16).padStart(40, '0')}`,
      value,
      input,
      output,
    });
    expect(run(new OtsTransactionTracer(new TraceBudget(1e6))).result()).toEqual([
      e('CALL', 0, 0xee, 0xc0, '0x5', '0xc0', '0x01'),
      e('CALL', 1, 0xc0, 0xc1, '0x2', '0xc1', '0x07'),
      e('DELEGATECALL', 1, 0xc0, 0xd1, null, '0xd1', '0x'),
      e('CREATE2', 1, 0xc0, 0xe1, '0x0', '0xe1', '0x09'),
      e('SELFDESTRUCT', 2, 0xc0, 0xbe, '0x3', '0x', '0x'),
    ]);
  });

  test('ots_getInternalOperations', () => {
    const op = (type: number, to: number, value: string) => ({
      type,
      from: `0x${(0xc0).toString(16).padStart(40, '0')}`,
      to: `0x${to.toString(16).padStart(40, '0')}`,
      value,
    });
    expect(run(new OtsOperationsTracer(new TraceBudget(1e6))).result()).toEqual([
      op(0, 0xc1, '0x2'),
      op(3, 0xe1, '0x0'),
      op(1, 0xbe, '0x3'),
    ]);
  });
});
