// debug_trace* against independent derivations on the fixture chain (re-executed blocks): the
// callTracer's top frame against the stored receipt (gas used, status, the logs with `withLog`),
// prestateTracer's diffMode against the stored state (each account's `pre` as the parent block
// left it where the block first touches it, its `post` as the block left it where the block last
// touches it), the struct logger's result against the receipt and against eth_call, muxTracer
// against its tracers run alone, debug_traceBlock against debug_traceBlockByHash, and the limits.
import type { ChainStore } from '@chainnode/core';
import { openChainStore } from '@chainnode/store';
import { datadirCopy } from '@chainnode/testkit';
import { createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';

type Json = Record<string, unknown>;

interface Frame {
  type: string;
  gasUsed: string;
  error?: string;
  output?: string;
  calls?: Frame[];
  logs?: { address: string; topics: string[]; data: string; index: string }[];
}

interface Receipt {
  status: string;
  gasUsed: string;
  logs: { address: string; topics: string[]; data: string; logIndex: string }[];
}

interface PrestateAccount {
  balance?: string;
  nonce?: number;
  code?: string;
  storage?: Record<string, string>;
}

/** The system contracts written before or after a block's transactions (EIP-4788, 2935, 7002, 7251). */
const SYSTEM = new Set([
  '0x000f3df6d732807ef1319fb7b8bb8522d0beac02',
  '0x0000f90827f1c53a10cb7a02335b175320002935',
  '0x00000961ef480eb55e80d19ad83579a64c007002',
  '0x0000bbddc7ce488642fb579f8b00f3a590007251',
]);

async function call(
  svc: RpcServiceApi,
  method: string,
  params: unknown[],
): Promise<{ result?: unknown; error?: Json }> {
  return JSON.parse((await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).body ?? '');
}

async function rpc<T>(svc: RpcServiceApi, method: string, params: unknown[]): Promise<T> {
  const r = await call(svc, method, params);
  if (r.error !== undefined) throw new Error(`${method}: ${JSON.stringify(r.error)}`);
  return r.result as T;
}

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

function frameLogs(f: Frame): NonNullable<Frame['logs']> {
  return [...(f.logs ?? []), ...(f.calls ?? []).flatMap(frameLogs)];
}

interface FlatEntry {
  action: Record<string, string>;
  blockHash?: string;
  blockNumber?: number;
  error?: string;
  result: Record<string, string> | null;
  subtraces: number;
  traceAddress: number[];
  transactionHash?: string;
  transactionPosition?: number;
  type: string;
}

interface CallFrame extends Frame {
  from: string;
  to?: string;
  gas: string;
  input: string;
  value?: string;
}

type Delta = '=' | { '+': string } | { '*': { from: string; to: string } };
interface AccountDiff {
  balance: Delta;
  nonce: Delta;
  code: Delta;
  storage: Record<string, Delta>;
}

/** Parity's words for geth's frame errors (revm-inspectors' TraceStyle::Parity). */
const PARITY_ERRORS: Record<string, string> = {
  'execution reverted': 'Reverted',
  'out of gas': 'Out of gas',
  'invalid jump destination': 'Bad jump destination',
  'insufficient balance for transfer': 'Insufficient balance for transfer',
};

/** A precompile of the fixture chain's rules (0x01..0x11). */
const isPrecompile = (a: string | undefined) => a !== undefined && BigInt(a) > 0n && BigInt(a) <= 0x11n;

/**
 * callTracer's tree laid out as Parity's flat trace, independently of the node's flattening:
 * depth first, calls to precompiles without value below the top left out; the top frame's gas
 * fields are left out (Parity's exclude the intrinsic gas, callTracer's include it).
 */
function flattenFrames(f: CallFrame, address: number[] = []): Partial<FlatEntry>[] {
  const calls = (f.calls ?? []).filter(
    (c) => !(isPrecompile((c as CallFrame).to) && BigInt((c as CallFrame).value ?? '0x0') === 0n),
  ) as CallFrame[];
  const create = f.type === 'CREATE' || f.type === 'CREATE2';
  const error = f.error === undefined ? undefined : (PARITY_ERRORS[f.error] ?? f.error);
  const failed = error !== undefined && error !== 'Reverted';
  const top = address.length === 0;
  const action: Record<string, string> = create
    ? { from: f.from, init: f.input, value: f.value ?? '0x0', creationMethod: f.type.toLowerCase() }
    : { from: f.from, callType: f.type.toLowerCase(), input: f.input, to: f.to ?? '', value: f.value ?? '0x0' };
  if (!top) action.gas = f.gas;
  let result: Record<string, string> | null = null;
  if (!failed) {
    result = create ? { address: f.to ?? '', code: f.output ?? '0x' } : { output: f.output ?? '0x' };
    if (!top) result.gasUsed = f.gasUsed;
  }
  const own: Partial<FlatEntry> = {
    action,
    ...(error === undefined ? {} : { error }),
    result,
    subtraces: calls.length,
    traceAddress: address,
    type: create ? 'create' : f.type === 'SELFDESTRUCT' ? 'suicide' : 'call',
  };
  return [own, ...calls.flatMap((c, i) => flattenFrames(c, [...address, i]))];
}

/** A flat entry with the top frame's gas fields left out (as flattenFrames gives them). */
function withoutTopGas(e: FlatEntry): Partial<FlatEntry> {
  const { action, error, result, subtraces, traceAddress, type } = e;
  const out: Partial<FlatEntry> = {
    action: { ...action },
    result: result === null ? null : { ...result },
    subtraces,
    traceAddress,
    type,
  };
  if (error !== undefined) out.error = error;
  if (traceAddress.length === 0) {
    delete out.action?.gas;
    if (out.result) delete out.result.gasUsed;
  }
  return out;
}

/** The value a state diff entry had before and after (undefined: unchanged). */
function delta(d: Delta): { from: string; to: string } | undefined {
  if (d === '=') return undefined;
  return '+' in d ? { from: '0x0', to: d['+'] } : d['*'];
}

describe('debug_trace* against the receipts and the stored state', () => {
  let store: ChainStore;
  let svc: RpcServiceApi;
  let cleanup: () => Promise<void>;
  /** Blocks with transactions, spread over the fixture chain's 1,600. */
  const blocks: number[] = [];

  beforeAll(async () => {
    const copy = await datadirCopy('fixtures');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    svc = createRpcService(store, { callTimeoutMs: 60_000 });
    // Before and after London (block 600), up to the head.
    for (const n of [1, 150, 300, 599, 600, 900, 1200, 1600]) {
      const count = await rpc<string | null>(svc, 'eth_getBlockTransactionCountByNumber', [hex(n)]);
      if (count !== null && Number(count) > 0) blocks.push(n);
    }
  });

  afterAll(async () => {
    await store?.close();
    await cleanup?.();
  });

  test('callTracer: the top frame is the receipt (gas used, status, logs)', async () => {
    expect(blocks.length).toBeGreaterThan(0);
    for (const n of blocks) {
      const traces = await rpc<{ txHash: string; result: Frame }[]>(svc, 'debug_traceBlockByNumber', [
        hex(n),
        { tracer: 'callTracer', tracerConfig: { withLog: true } },
      ]);
      const receipts = await rpc<Receipt[]>(svc, 'eth_getBlockReceipts', [hex(n)]);
      expect(traces.length).toBe(receipts.length);
      traces.forEach((t, i) => {
        const r = receipts[i] as Receipt;
        expect(t.result.gasUsed).toBe(r.gasUsed);
        expect(t.result.error === undefined).toBe(r.status === '0x1');
        const logs = frameLogs(t.result).sort((a, b) => Number(a.index) - Number(b.index));
        expect(logs.map((l) => [l.address, l.topics, l.data, l.index])).toEqual(
          r.logs.map((l) => [l.address, l.topics, l.data, l.logIndex]),
        );
      });
    }
  });

  test('prestateTracer diffMode: pre is the parent state where first touched, post the block state where last touched', async () => {
    let checked = 0;
    for (const n of blocks) {
      const block = await rpc<{ miner: string; difficulty: string; withdrawals?: { address: string }[] }>(
        svc,
        'eth_getBlockByNumber',
        [hex(n), false],
      );
      // Changed after the transactions: the miner's reward before the merge, withdrawals.
      const after = new Set([...(block.withdrawals ?? []).map((w) => w.address), ...SYSTEM]);
      if (BigInt(block.difficulty) > 0n) after.add(block.miner);
      const traces = await rpc<
        { result: { pre: Record<string, PrestateAccount>; post: Record<string, PrestateAccount> } }[]
      >(svc, 'debug_traceBlockByNumber', [hex(n), { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }]);
      // An account a transaction changes is in its `post`; in its `pre` unless it did not exist.
      const firstPre = new Map<string, PrestateAccount>();
      const lastPost = new Map<string, PrestateAccount>();
      for (const t of traces) {
        for (const a of new Set([...Object.keys(t.result.pre), ...Object.keys(t.result.post)]))
          if (!firstPre.has(a) && !lastPost.has(a)) firstPre.set(a, t.result.pre[a] ?? { balance: '0x0' });
        for (const [a, acc] of Object.entries(t.result.post)) lastPost.set(a, { ...lastPost.get(a), ...acc });
      }
      for (const [a, acc] of firstPre) {
        if (SYSTEM.has(a)) continue;
        const at = hex(n - 1);
        expect(acc.balance).toBe(await rpc(svc, 'eth_getBalance', [a, at]));
        expect(hex(acc.nonce ?? 0)).toBe(await rpc(svc, 'eth_getTransactionCount', [a, at]));
        for (const [slot, v] of Object.entries(acc.storage ?? {}))
          expect(v).toBe(await rpc(svc, 'eth_getStorageAt', [a, slot, at]));
        checked++;
      }
      for (const [a, acc] of lastPost) {
        if (after.has(a)) continue;
        if (acc.balance !== undefined) expect(acc.balance).toBe(await rpc(svc, 'eth_getBalance', [a, hex(n)]));
        if (acc.nonce !== undefined)
          expect(hex(acc.nonce)).toBe(await rpc(svc, 'eth_getTransactionCount', [a, hex(n)]));
        if (acc.code !== undefined) expect(acc.code).toBe(await rpc(svc, 'eth_getCode', [a, hex(n)]));
        for (const [slot, v] of Object.entries(acc.storage ?? {}))
          expect(v).toBe(await rpc(svc, 'eth_getStorageAt', [a, slot, hex(n)]));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });

  test('the struct logger: gas and failure as the receipt says; a call returns what eth_call returns', async () => {
    const n = blocks[blocks.length - 1] as number;
    const block = await rpc<{
      hash: string;
      transactions: { hash: string; from: string; to: string | null; input: string }[];
    }>(svc, 'eth_getBlockByNumber', [hex(n), true]);
    const tx = block.transactions[0] as { hash: string; from: string; to: string | null; input: string };
    const receipt = await rpc<Receipt>(svc, 'eth_getTransactionReceipt', [tx.hash]);
    const trace = await rpc<{ gas: number; failed: boolean; structLogs: { depth: number }[] }>(
      svc,
      'debug_traceTransaction',
      [tx.hash, { disableStorage: true, disableStack: true }],
    );
    expect(hex(trace.gas)).toBe(receipt.gasUsed);
    expect(trace.failed).toBe(receipt.status !== '0x1');
    expect(trace.structLogs.every((l) => l.depth >= 1)).toBe(true);
    if (tx.to !== null) {
      const args = { from: tx.from, to: tx.to, input: tx.input };
      const traced = await call(svc, 'debug_traceCall', [args, hex(n), {}]);
      const called = await call(svc, 'eth_call', [args, hex(n)]);
      const r = traced.result as { failed: boolean; returnValue: string };
      if (called.error === undefined) expect(r.returnValue).toBe(called.result);
      else expect(r.failed).toBe(true);
    }
  });

  test('muxTracer is its tracers run alone; debug_traceBlock (RLP) is debug_traceBlockByHash', async () => {
    const n = blocks[0] as number;
    const hash = (await rpc<{ hash: string }>(svc, 'eth_getBlockByNumber', [hex(n), false])).hash;
    const config = { callTracer: { onlyTopCall: true }, '4byteTracer': {}, noopTracer: {} };
    const mux = await rpc<{ result: Json }[]>(svc, 'debug_traceBlockByHash', [
      hash,
      { tracer: 'muxTracer', tracerConfig: config },
    ]);
    for (const [name, cfg] of Object.entries(config)) {
      const alone = await rpc<{ result: unknown }[]>(svc, 'debug_traceBlockByHash', [
        hash,
        { tracer: name, tracerConfig: cfg },
      ]);
      expect(mux.map((t) => t.result[name])).toEqual(alone.map((t) => t.result));
    }
    const raw = await rpc<string>(svc, 'debug_getRawBlock', [hex(n)]);
    expect(await rpc(svc, 'debug_traceBlock', [raw, { tracer: 'callTracer' }])).toEqual(
      await rpc(svc, 'debug_traceBlockByHash', [hash, { tracer: 'callTracer' }]),
    );
  });

  test("debug_traceCall: geth's frames for a log, a call and a SELFDESTRUCT (eth/tracers/native/call.go)", async () => {
    const c = '0x000000000000000000000000000000000000c0de';
    const d = '0x000000000000000000000000000000000000d00d';
    const beneficiary = '0x000000000000000000000000000000000000beef';
    // c: SELFDESTRUCT(beneficiary). d: LOG1(0x42); CALL(0xffff gas, c, no value, no data); STOP.
    const state = {
      [c]: { code: `0x73${beneficiary.slice(2)}ff`, balance: '0x100' },
      [d]: { code: `0x604260006000a16000600060006000600073${c.slice(2)}61fffff100` },
    };
    const trace = await rpc<Json>(svc, 'debug_traceCall', [
      { to: d, gas: '0x30000' },
      'latest',
      { tracer: 'callTracer', tracerConfig: { withLog: true }, stateOverrides: state },
    ]);
    expect(trace).toEqual({
      type: 'CALL',
      from: '0x0000000000000000000000000000000000000000',
      to: d,
      gas: '0x30000',
      gasUsed: trace.gasUsed,
      input: '0x',
      value: '0x0',
      logs: [{ address: d, topics: [`0x${'42'.padStart(64, '0')}`], data: '0x', index: '0x0', position: '0x0' }],
      calls: [
        {
          type: 'CALL',
          from: d,
          to: c,
          gas: '0xffff',
          gasUsed: (trace.calls as Json[])[0]?.gasUsed,
          input: '0x',
          value: '0x0',
          calls: [
            { type: 'SELFDESTRUCT', from: c, to: beneficiary, gas: '0x0', gasUsed: '0x0', input: '0x', value: '0x100' },
          ],
        },
      ],
    });
  });

  test("debug_traceCall: a call failing fast is geth's frame, and CALL's gasCost holds its callee's gas", async () => {
    const c = '0x000000000000000000000000000000000000c0de';
    const d = '0x000000000000000000000000000000000000d00d';
    // d (no balance): CALL(0xffff gas, c, value 1, input mem[0..4]); POP; STOP.
    const state = { [d]: { code: `0x6000600060046000600173${c.slice(2)}61fffff15000` } };
    const args = [{ to: d, gas: '0x30000' }, 'latest'];
    const frames = await rpc<Frame & { calls: Json[] }>(svc, 'debug_traceCall', [
      ...args,
      { tracer: 'callTracer', stateOverrides: state },
    ]);
    // geth: the callee's gas (65,535) and the stipend (2,300), nothing used, the error.
    expect(frames.calls).toEqual([
      {
        type: 'CALL',
        from: d,
        to: c,
        gas: hex(65_535 + 2_300),
        gasUsed: '0x0',
        input: '0x00000000',
        error: 'insufficient balance for transfer',
        value: '0x1',
      },
    ]);
    const logs = await rpc<{ structLogs: { op: string; gasCost: number }[] }>(svc, 'debug_traceCall', [
      ...args,
      { disableStack: true, stateOverrides: state },
    ]);
    // value transfer 9,000 + new account 25,000 + cold account 2,600 + memory 3 + the callee's 65,535.
    expect(logs.structLogs.find((l) => l.op === 'CALL')?.gasCost).toBe(9_000 + 25_000 + 2_600 + 3 + 65_535);
  });

  test("geth's errors: an unknown tracer, a JavaScript tracer, a bad timeout, the size limit", async () => {
    const n = hex(blocks[0] as number);
    const err = async (params: unknown[], s = svc) => (await call(s, 'debug_traceBlockByNumber', params)).error;
    expect(await err([n, { tracer: 'fooTracer' }])).toEqual({
      code: -32000,
      message: 'ReferenceError: fooTracer is not defined at <eval>:1:2(0)',
    });
    expect((await err([n, { tracer: '{step: function() {}, result: function() {}}' }]))?.message).toMatch(
      /^JavaScript tracers are not supported/,
    );
    expect(await err([n, { timeout: '5 seconds' }])).toEqual({
      code: -32000,
      message: 'time: invalid duration "5 seconds"',
    });
    expect((await call(svc, 'debug_traceCall', [{}, 'pending', {}])).error).toEqual({
      code: -32000,
      message: 'tracing on top of pending is not supported',
    });
    // A loop that would run 50M gas (seconds) stops at the trace's timeout.
    const loop = { '0x000000000000000000000000000000000000c0de': { code: '0x5b600056' } };
    const timedOut = await call(svc, 'debug_traceCall', [
      { to: '0x000000000000000000000000000000000000c0de', gas: '0x2faf080' },
      'latest',
      { tracer: 'callTracer', timeout: '50ms', stateOverrides: loop },
    ]);
    expect(timedOut.error).toEqual({ code: -32000, message: 'execution timeout' });
    const small = createRpcService(store, { traceMaxBytes: 200 });
    expect((await err([n], small))?.code).toBe(-32003);
  });

  test('trace_block: each transaction is its callTracer tree flattened; rewards before the merge; trace_transaction and trace_get are its entries', async () => {
    for (const n of blocks.filter((_, i) => i % 3 === 1)) {
      const entries = await rpc<FlatEntry[]>(svc, 'trace_block', [hex(n)]);
      const block = await rpc<{
        hash: string;
        miner: string;
        difficulty: string;
        uncles: string[];
        transactions: string[];
      }>(svc, 'eth_getBlockByNumber', [hex(n), false]);
      const calls = await rpc<{ txHash: string; result: CallFrame }[]>(svc, 'debug_traceBlockByNumber', [
        hex(n),
        { tracer: 'callTracer' },
      ]);
      for (const [i, c] of calls.entries()) {
        const own = entries.filter((e) => e.transactionHash === c.txHash);
        expect(own.every((e) => e.transactionPosition === i && e.blockHash === block.hash && e.blockNumber === n)).toBe(
          true,
        );
        expect(own.map(withoutTopGas)).toEqual(flattenFrames(c.result));
        // Each re-executes the block up to the transaction: the first two only.
        if (i > 1) continue;
        expect(await rpc(svc, 'trace_transaction', [c.txHash])).toEqual(own);
        expect(await rpc(svc, 'trace_get', [c.txHash, [hex(own.length - 1)]])).toEqual(own[own.length - 1]);
      }
      const rewards = entries.filter((e) => e.type === 'reward');
      // The fixture chain is proof of work: the miner's reward, then each uncle's.
      expect(rewards.map((r) => [r.action.author, r.action.rewardType])).toEqual(
        BigInt(block.difficulty) > 0n
          ? [[block.miner, 'block'], ...block.uncles.map(() => [expect.any(String), 'uncle'])]
          : [],
      );
      expect(entries.length).toBe(rewards.length + calls.reduce((k, c) => k + flattenFrames(c.result).length, 0));
    }
    expect(await rpc(svc, 'trace_transaction', [`0x${'11'.repeat(32)}`])).toBeNull();
    expect(await rpc(svc, 'trace_get', [`0x${'11'.repeat(32)}`, ['0x0']])).toBeNull();
  });

  test("trace_replayBlockTransactions: the trace is trace_block's, the stateDiff the stored state before and after the block and prestateTracer's diff", async () => {
    let checked = 0;
    for (const n of blocks.filter((_, i) => i % 3 === 1)) {
      const block = await rpc<{ miner: string; difficulty: string }>(svc, 'eth_getBlockByNumber', [hex(n), false]);
      const replays = await rpc<
        {
          transactionHash: string;
          output: string;
          trace: FlatEntry[];
          stateDiff: Record<string, AccountDiff>;
          vmTrace: null;
        }[]
      >(svc, 'trace_replayBlockTransactions', [hex(n), ['trace', 'stateDiff']]);
      const flat = await rpc<FlatEntry[]>(svc, 'trace_block', [hex(n)]);
      const prestate = await rpc<
        { result: { pre: Record<string, PrestateAccount>; post: Record<string, PrestateAccount> } }[]
      >(svc, 'debug_traceBlockByNumber', [hex(n), { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }]);
      const first = new Map<string, AccountDiff>();
      const last = new Map<string, AccountDiff>();
      for (const [i, r] of replays.entries()) {
        expect(r.vmTrace).toBeNull();
        const own = flat.filter((e) => e.transactionHash === r.transactionHash);
        expect(r.trace).toEqual(
          own.map(({ action, error, result, subtraces, traceAddress, type }) => ({
            action,
            ...(error === undefined ? {} : { error }),
            result,
            subtraces,
            traceAddress,
            type,
          })),
        );
        if (i === 0)
          expect(await rpc(svc, 'trace_replayTransaction', [r.transactionHash, ['trace', 'stateDiff']])).toEqual({
            output: r.output,
            stateDiff: r.stateDiff,
            trace: r.trace,
            vmTrace: null,
          });
        const p = (prestate[i] as (typeof prestate)[number]).result;
        // prestateTracer's diff, regrouped: the same accounts changed, the same balances and nonces.
        expect(Object.keys(r.stateDiff).sort()).toEqual(
          [...new Set([...Object.keys(p.pre), ...Object.keys(p.post)])].sort(),
        );
        for (const [a, d] of Object.entries(r.stateDiff)) {
          const b = delta(d.balance);
          if (b !== undefined)
            expect([b.from, b.to]).toEqual([
              p.pre[a]?.balance ?? '0x0',
              p.post[a]?.balance ?? p.pre[a]?.balance ?? '0x0',
            ]);
          const nonce = delta(d.nonce);
          if (nonce !== undefined)
            expect([Number(nonce.from), Number(nonce.to)]).toEqual([
              p.pre[a]?.nonce ?? 0,
              p.post[a]?.nonce ?? p.pre[a]?.nonce ?? 0,
            ]);
          if (!first.has(a)) first.set(a, d);
          const prev = last.get(a);
          last.set(a, { ...d, storage: { ...prev?.storage, ...d.storage } });
        }
      }
      // Against the store: an account's first `from` is the parent block's state, its last `to` the block's.
      for (const [a, d] of first) {
        const b = delta(d.balance);
        if (b !== undefined) expect(b.from).toBe(await rpc(svc, 'eth_getBalance', [a, hex(n - 1)]));
        const nonce = delta(d.nonce);
        if (nonce !== undefined) expect(nonce.from).toBe(await rpc(svc, 'eth_getTransactionCount', [a, hex(n - 1)]));
        checked++;
      }
      for (const [a, d] of last) {
        const b = delta(d.balance);
        if (b !== undefined && !(BigInt(block.difficulty) > 0n && a === block.miner))
          expect(b.to).toBe(await rpc(svc, 'eth_getBalance', [a, hex(n)]));
        const nonce = delta(d.nonce);
        if (nonce !== undefined) expect(nonce.to).toBe(await rpc(svc, 'eth_getTransactionCount', [a, hex(n)]));
        for (const [slot, v] of Object.entries(d.storage))
          expect(delta(v)?.to).toBe(await rpc(svc, 'eth_getStorageAt', [a, slot, hex(n)]));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });

  test('trace_call, trace_callMany and trace_rawTransaction on the parent block are the replayed transactions', async () => {
    const n = blocks.find((b) => b > 600) ?? (blocks[0] as number);
    const block = await rpc<{
      transactions: {
        hash: string;
        from: string;
        to: string | null;
        input: string;
        gas: string;
        value: string;
        gasPrice: string;
      }[];
    }>(svc, 'eth_getBlockByNumber', [hex(n), true]);
    const txs = block.transactions.slice(0, 2);
    const replays = await rpc<{ output: string; trace: FlatEntry[]; stateDiff: unknown }[]>(
      svc,
      'trace_replayBlockTransactions',
      [hex(n), ['trace', 'stateDiff']],
    );
    const args = (t: (typeof txs)[number]) => ({
      from: t.from,
      to: t.to,
      input: t.input,
      gas: t.gas,
      value: t.value,
      gasPrice: t.gasPrice,
    });
    const one = await rpc<{ trace: FlatEntry[] }>(svc, 'trace_call', [
      args(txs[0] as (typeof txs)[number]),
      ['trace'],
      hex(n - 1),
    ]);
    expect(one.trace).toEqual(replays[0]?.trace);
    const many = await rpc<{ output: string; trace: FlatEntry[]; stateDiff: unknown }[]>(svc, 'trace_callMany', [
      txs.map((t) => [args(t), ['trace']]),
      hex(n - 1),
    ]);
    expect(many.map((m) => [m.output, m.trace, m.stateDiff])).toEqual(
      replays.slice(0, txs.length).map((r) => [r.output, r.trace, null]),
    );
    const raw = await rpc<string>(svc, 'debug_getRawTransaction', [txs[0]?.hash]);
    const { transactionHash: _, ...first } = replays[0] as unknown as Record<string, unknown>;
    expect(await rpc(svc, 'trace_rawTransaction', [raw, ['trace', 'stateDiff'], hex(n - 1)])).toEqual(first);
  });

  test("trace_call: a precompile call left out, a SELFDESTRUCT as a suicide entry and its state diff (reth's ParityTraceBuilder)", async () => {
    const c = '0x000000000000000000000000000000000000c0de';
    const d = '0x000000000000000000000000000000000000d00d';
    const beneficiary = '0x000000000000000000000000000000000000beef';
    // c: SELFDESTRUCT(beneficiary). d: CALL(identity precompile); POP; CALL(c); STOP.
    const state = {
      [c]: { code: `0x73${beneficiary.slice(2)}ff`, balance: '0x100' },
      [d]: { code: `0x6000600060006000600060046000f1506000600060006000600073${c.slice(2)}61fffff100` },
    };
    const r = await rpc<{ trace: FlatEntry[]; stateDiff: Record<string, AccountDiff> }>(svc, 'trace_call', [
      { to: d, gas: '0x30000' },
      ['trace', 'stateDiff'],
      'latest',
      state,
    ]);
    expect(r.trace.map((e) => [e.type, e.traceAddress, e.subtraces])).toEqual([
      ['call', [], 1],
      ['call', [0], 1],
      ['suicide', [0, 0], 0],
    ]);
    expect(r.trace[2]).toEqual({
      action: { address: c, balance: '0x100', refundAddress: beneficiary },
      result: null,
      subtraces: 0,
      traceAddress: [0, 0],
      type: 'suicide',
    });
    // Before Cancun the account is destroyed: its balance goes to the beneficiary.
    expect(r.stateDiff[c]).toEqual({
      balance: { '*': { from: '0x100', to: '0x0' } },
      code: '=',
      nonce: '=',
      storage: {},
    });
    expect(r.stateDiff[beneficiary]?.balance).toEqual({ '*': { from: '0x0', to: '0x100' } });
    expect(r.stateDiff[d]).toBeUndefined();
  });

  test("trace_filter: trace_block's entries matched by address, paged by after and count; reth's errors", async () => {
    const n = blocks[1] as number;
    const all = await rpc<FlatEntry[]>(svc, 'trace_block', [hex(n)]);
    const from = all[0]?.action.from as string;
    const range = { fromBlock: hex(n), toBlock: hex(n) };
    expect(await rpc(svc, 'trace_filter', [range])).toEqual(all);
    const mine = all.filter((e) => e.action.from === from);
    expect(await rpc(svc, 'trace_filter', [{ ...range, fromAddress: [from] }])).toEqual(mine);
    expect(await rpc(svc, 'trace_filter', [{ ...range, after: 1, count: 2 }])).toEqual(all.slice(1, 3));
    // Rewards: the miner of a proof-of-work block matched as the reward's author over a range (the
    // index lists no transaction of it in the blocks it only mined), as trace_block's entries say.
    const rewarded = all.find((e) => e.type === 'reward')?.action.author;
    expect(rewarded).toBeDefined();
    const wide = { fromBlock: hex(Math.max(1, n - 20)), toBlock: hex(n + 20) };
    const want: FlatEntry[] = [];
    for (let k = Math.max(1, n - 20); k <= n + 20; k++)
      for (const e of await rpc<FlatEntry[]>(svc, 'trace_block', [hex(k)]))
        if ((e.type === 'reward' ? e.action.author : e.action.to) === rewarded) want.push(e);
    expect(want.some((e) => e.type === 'reward')).toBe(true);
    expect(await rpc(svc, 'trace_filter', [{ ...wide, toAddress: [rewarded] }])).toEqual(want);
    const err = async (params: unknown[]) => (await call(svc, 'trace_filter', params)).error;
    expect(await err([{ fromBlock: hex(n), toBlock: hex(n - 1) }])).toEqual({
      code: -32602,
      message: 'invalid parameters: fromBlock cannot be greater than toBlock',
    });
    expect((await err([{ fromBlock: '0x0', toBlock: hex(1600) }]))?.message).toMatch(
      /Block range too large; currently limited to 1000 blocks/,
    );
    expect((await err([{ fromBlock: hex(99_999) }]))?.code).toBe(-32001);
    expect((await call(svc, 'trace_replayTransaction', [`0x${'11'.repeat(32)}`, ['trace']])).error).toEqual({
      code: -32001,
      message: 'transaction not found',
    });
    expect((await call(svc, 'trace_block', [hex(99_999)])).error?.code).toBeDefined();
    expect((await call(svc, 'trace_replayBlockTransactions', [hex(n), ['vmTrace']])).error?.code).toBe(-32602);
  });
});
