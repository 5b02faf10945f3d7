// Traces against anvil 1.7.1 on a workload that exercises them (trace-workload.ts: nested calls
// with value, STATICCALL, DELEGATECALL, precompiles, CREATE and CREATE2 from a contract, reverts
// caught by try/catch, top-level reverts with a reason and a custom error, logs in nested frames,
// SELFDESTRUCT in the creating transaction, transient storage, failed creations; out of gas, 0xfe,
// a stack underflow and a bad jump below a call and at the top). A node following
// anvil answers every tracer, trace_* and ots_* call for each transaction as anvil does or, where
// anvil deviates, as the reference does: geth for debug_trace*, reth for trace_*, Erigon for
// ots_*. Each deviation is a function of trace-references.ts, named where it is applied, and
// listed in docs/traces.md ("Where anvil differs"). Calls traced at a mined block and at the head
// (debug_traceCall, with state and block overrides; a revert with a reason, one with a custom
// error, one out of gas; the halting runtimes and a stack overflow, with eth_call's error for
// each) are compared the same way; trace_call, trace_callMany and
// trace_rawTransaction, which anvil does not serve, with reth's answers built from anvil's
// debug_traceCall of the same calls.
import { tempDir } from '@chainnode/testkit';
import { GENESIS, batch, result, startAnvil, startFollower, stopAll, waitSynced } from './anvil-upstream.js';
import type { Anvil, Envelope } from './anvil-upstream.js';
import type { ServeProcess } from './serve-helpers.js';
import {
  erigonOperations,
  erigonSearchPage,
  erigonTrace,
  gethCallFrame,
  gethFourByte,
  gethPrestate,
  gethPrestateWithoutCode,
  gethStructLogs,
  gethUnpricedBaseFee,
  parityFlat,
  parityStateDiff,
  rethFilterPage,
  rethReplay,
  rethTraces,
} from './trace-references.js';
import type { TxFacts } from './trace-references.js';
import { Interface } from 'ethers';
import { DEV } from './anvil-upstream.js';
import { sendTraceWorkload } from './trace-workload.js';
import type { TraceWorkload } from './trace-workload.js';

type Json = Record<string, unknown>;
type Call = [string, unknown[]];
const hexN = (n: number) => `0x${n.toString(16)}`;
const answer = (e: Envelope | undefined): unknown => (e?.error !== undefined ? { error: e.error } : e?.result);
const HUB = new Interface([
  'function nested(address other, uint256 depth) payable returns (uint256)',
  'function boom(uint256 x)',
  'function refuse(uint256 code)',
]);
/** geth's RPCGasCap default (the node's callGasCap): the gas of a call that names none. */
const GAS_CAP = 50_000_000;
/** Runtime: NUMBER, TIMESTAMP, BASEFEE and the caller's BALANCE, returned as four words. */
const ENV_PROBE = '0x436000524260205248604052333160605260806000f3';
const PROBE = '0x00000000000000000000000000000000000c0ffe';

describe('traces of a contract workload against anvil', () => {
  let anvil: Anvil;
  let node: ServeProcess;
  let ours: string;
  let temp: { dir: string; cleanup: () => Promise<void> };
  let work: TraceWorkload;
  const facts = new Map<string, TxFacts>();
  /** anvil's callTracer frame of each transaction (what Erigon's ots_* answers are built from). */
  const frames = new Map<string, Json>();

  beforeAll(async () => {
    temp = await tempDir('traces-anvil-');
    anvil = await startAnvil(temp.dir, ['--no-mining', '--order', 'fifo', '--steps-tracing']);
    ({ node, ours } = await startFollower(temp.dir, anvil.url, GENESIS, []));
    work = await sendTraceWorkload(anvil.url);
    const hashes = work.txs.map((t) => t.hash);
    const [txs, receipts, calls] = await Promise.all([
      batch(
        anvil.url,
        hashes.map((h): Call => ['eth_getTransactionByHash', [h]]),
      ),
      batch(
        anvil.url,
        hashes.map((h): Call => ['eth_getTransactionReceipt', [h]]),
      ),
      batch(
        anvil.url,
        hashes.map((h): Call => ['debug_traceTransaction', [h, { tracer: 'callTracer' }]]),
      ),
    ]);
    hashes.forEach((h, i) => {
      const receipt = receipts[i]?.result as Json;
      facts.set(h, {
        gasLimit: (txs[i]?.result as Json | undefined)?.gas as string,
        gasUsed: receipt.gasUsed as string,
        logIndexes: (receipt.logs as Json[]).map((l) => l.logIndex as string),
      });
      frames.set(h, calls[i]?.result as Json);
    });
    await waitSynced(anvil.url, ours, () => node.output());
  }, 120_000);

  afterAll(() => stopAll(node, anvil, temp));

  /**
   * Each call asked of both; ours must equal `reference(anvil's answer, params)` (anvil's own
   * answer where the reference agrees). Errors are compared as they are.
   */
  async function expectReference(
    calls: Call[],
    reference: (a: Json, params: unknown[], method: string) => unknown,
  ): Promise<void> {
    const [theirs, mine] = await Promise.all([batch(anvil.url, calls), batch(ours, calls)]);
    const want = calls.map(([method, params], i) => {
      const e = theirs[i];
      return { method, params, answer: e?.result == null ? answer(e) : reference(e.result as Json, params, method) };
    });
    expect(calls.map(([method, params], i) => ({ method, params, answer: answer(mine[i]) }))).toEqual(want);
  }

  const perTx = (config: Json): Call[] => work.txs.map((t): Call => ['debug_traceTransaction', [t.hash, config]]);
  const factsOf = (params: unknown[]) => facts.get(params[0] as string) as TxFacts;

  test('the workload mined as sent and the follower verified every block', () => {
    expect(work.txs.length).toBe(31);
    expect(facts.size).toBe(31);
  });

  test('callTracer (withLog) equals geth’s answer built from anvil’s', async () => {
    await expectReference(perTx({ tracer: 'callTracer', tracerConfig: { withLog: true } }), (a, p) =>
      gethCallFrame(a, factsOf(p)),
    );
  });

  test('prestateTracer, with and without diffMode, and 4byteTracer equal geth’s answers', async () => {
    await expectReference(perTx({ tracer: 'prestateTracer' }), (a) => gethPrestate(a, false));
    await expectReference(perTx({ tracer: 'prestateTracer', tracerConfig: { diffMode: true } }), (a) =>
      gethPrestate(a, true),
    );
    await expectReference(perTx({ tracer: '4byteTracer' }), (a, p) =>
      gethFourByte(a, frames.get(p[0] as string) as Json),
    );
  });

  test('onlyTopCall, noopTracer, prestateTracer without code and storage, and muxTracer equal geth’s answers', async () => {
    await expectReference(perTx({ tracer: 'callTracer', tracerConfig: { onlyTopCall: true } }), (a, p) =>
      gethCallFrame(a, factsOf(p)),
    );
    await expectReference(perTx({ tracer: 'noopTracer' }), (a) => a);
    const lean = { tracer: 'prestateTracer', tracerConfig: { disableCode: true, disableStorage: true } };
    const full = await batch(anvil.url, perTx({ tracer: 'prestateTracer' }));
    await expectReference(perTx(lean), (a, p) => {
      const i = work.txs.findIndex((t) => t.hash === p[0]);
      return gethPrestateWithoutCode(a, gethPrestate(full[i]?.result as Json, false));
    });
    // anvil answers muxTracer with {}: geth's answer is each tracer's own, built from anvil's.
    const mux = { callTracer: { withLog: true }, '4byteTracer': {}, prestateTracer: { diffMode: true } };
    const own = await Promise.all(
      Object.entries(mux).map(([tracer, tracerConfig]) => batch(anvil.url, perTx({ tracer, tracerConfig }))),
    );
    const mine = await batch(ours, perTx({ tracer: 'muxTracer', tracerConfig: mux }));
    work.txs.forEach((t, i) => {
      const [call, fourByte, prestate] = own.map((r) => r[i]?.result as Json) as [Json, Json, Json];
      expect([t.what, mine[i]?.result]).toEqual([
        t.what,
        {
          callTracer: gethCallFrame(call, facts.get(t.hash) as TxFacts),
          '4byteTracer': gethFourByte(fourByte, frames.get(t.hash) as Json),
          prestateTracer: gethPrestate(prestate, true),
        },
      ]);
    });
  });

  test('the struct logger (default options) equals geth’s answer built from anvil’s', async () => {
    await expectReference(perTx({}), (a, p) => gethStructLogs(a, factsOf(p)));
  });

  /** The calls traced: each with its own gas, and where it names them, overrides. */
  function tracedCalls(): { what: string; call: Json; block: string; overrides?: Json }[] {
    const [, d1] = DEV as [string, string];
    const { hubA, hubB } = work.contracts;
    const gas = hexN(1_000_000);
    const nested = { from: d1, to: hubA, gas, value: '0x64', data: HUB.encodeFunctionData('nested', [hubB, 2]) };
    const slot0 = `0x${'0'.repeat(64)}`;
    return [
      { what: 'nested calls at a mined block', call: nested, block: '0x2' },
      { what: 'nested calls at the head', call: nested, block: 'latest' },
      {
        what: 'a revert with a reason',
        call: { from: d1, to: hubA, gas, data: HUB.encodeFunctionData('boom', [5]) },
        block: 'latest',
      },
      {
        what: 'a revert with a custom error',
        call: { from: d1, to: hubA, gas, data: HUB.encodeFunctionData('refuse', [9]) },
        block: '0x3',
      },
      { what: 'out of gas in a nested frame', call: { ...nested, gas: hexN(40_000) }, block: 'latest' },
      {
        what: 'code, balance and a slot overridden',
        call: nested,
        block: 'latest',
        overrides: {
          stateOverrides: {
            [hubA]: { stateDiff: { [slot0]: `0x${'63'.padStart(64, '0')}` } },
            [d1]: { balance: '0x1234567890abcdef' },
          },
        },
      },
      {
        what: 'block number and time overridden, the probe’s code and balance given',
        call: { from: d1, to: PROBE, gas },
        block: '0x4',
        overrides: {
          stateOverrides: { [PROBE]: { code: ENV_PROBE, balance: '0x1234' } },
          blockOverrides: { number: '0x99', time: '0x12345678' },
        },
      },
    ];
  }

  test('debug_traceCall (callTracer withLog, prestateTracer with and without diffMode, the struct logger) equals geth’s answers built from anvil’s', async () => {
    const configs: Json[] = [
      { tracer: 'callTracer', tracerConfig: { withLog: true } },
      { tracer: 'prestateTracer' },
      { tracer: 'prestateTracer', tracerConfig: { diffMode: true } },
      {},
    ];
    const calls = tracedCalls().flatMap(({ call, block, overrides }) =>
      configs.map((c): Call => ['debug_traceCall', [call, block, { ...c, ...overrides }]]),
    );
    // The probe reads BASEFEE: geth's unpriced call sees 0 there, anvil the block's base fee.
    const header = await result<Json>(anvil.url, 'eth_getBlockByNumber', ['0x4', false]);
    const baseFee = header.baseFeePerGas as string;
    await expectReference(calls, (anvils, p) => {
      const [call, , config] = p as [Json, string, Json];
      const a = call.to === PROBE ? gethUnpricedBaseFee(anvils, baseFee) : anvils;
      if (config.tracer === 'callTracer')
        return gethCallFrame(a, { gasLimit: call.gas as string, gasUsed: a.gasUsed as string });
      if (config.tracer === 'prestateTracer')
        return gethPrestate(a, (config.tracerConfig as Json | undefined)?.diffMode === true);
      return gethStructLogs(a, { gasUsed: hexN(a.gas as number) });
    });
    // The probe saw the overridden block: its return value holds number and time.
    const [probe] = await batch(ours, calls.slice(-4, -3));
    const output = String((probe?.result as Json | undefined)?.output);
    expect(output.slice(0, 130)).toBe(`0x${'99'.padStart(64, '0')}${'12345678'.padStart(64, '0')}`);
  });

  test('halts other than reverts in geth’s words: debug_traceCall’s callTracer frame, and eth_call’s error (anvil: -32603 “EVM error <name>”)', async () => {
    const [, d1] = DEV as [string, string];
    const gas = hexN(100_000);
    const { prober, ...runtimes } = work.halting;
    // JUMPDEST, PUSH0, PUSH1 0, JUMP: one word more on the stack each turn, until it overflows.
    const overflow = { stateOverrides: { [PROBE]: { code: '0x5b5f600056' } } };
    const targets = [
      ...Object.values(runtimes).map((to) => ({ call: { from: d1, to, gas }, over: {} as Json })),
      { call: { from: d1, to: PROBE, gas }, over: overflow as Json },
    ];
    const calls = targets.map(
      ({ call, over }): Call => ['debug_traceCall', [call, 'latest', { tracer: 'callTracer', ...over }]],
    );
    const [theirs, mine] = await Promise.all([batch(anvil.url, calls), batch(ours, calls)]);
    const frames = theirs.map((e) =>
      gethCallFrame(e.result as Json, { gasLimit: gas, gasUsed: (e.result as Json).gasUsed as string }),
    );
    expect(mine.map(answer)).toEqual(frames);
    // geth's eth_call answers a halt with -32000 and the frame's error.
    const ethCalls = targets.map(({ call, over }): Call => ['eth_call', [call, 'latest', ...Object.values(over)]]);
    const [anvils, eth] = await Promise.all([batch(anvil.url, ethCalls), batch(ours, ethCalls)]);
    expect(eth.map(answer)).toEqual(frames.map((f) => ({ error: { code: -32000, message: f.error } })));
    for (const e of anvils)
      expect(e.error).toMatchObject({ code: -32603, message: expect.stringMatching(/^EVM error \w+$/) });
    expect(frames.map((f) => f.error)).toEqual([
      'out of gas',
      'invalid opcode: INVALID',
      'stack underflow (0 <=> 2)',
      'invalid jump destination',
      'stack limit reached 1024 (1023)',
    ]);
  });

  test('debug_traceCall without gas runs with geth’s gas cap (anvil: the block’s gas limit)', async () => {
    const { call, block } = tracedCalls()[1] as { call: Json; block: string };
    const { gas, ...noGas } = call;
    const mine = await batch(ours, [['debug_traceCall', [noGas, block, { tracer: 'callTracer' }]]]);
    const capped = await batch(anvil.url, [
      ['debug_traceCall', [{ ...noGas, gas: hexN(GAS_CAP) }, block, { tracer: 'callTracer' }]],
    ]);
    const a = capped[0]?.result as Json;
    expect(answer(mine[0])).toEqual(gethCallFrame(a, { gasLimit: hexN(GAS_CAP), gasUsed: a.gasUsed as string }));
  });

  /** A flat entry without the block and transaction it belongs to (as trace_call's are). */
  const unplaced = ({ blockHash, blockNumber, transactionHash, transactionPosition, ...t }: Json): Json => t;
  /** Parity's gasUsed of the top frame: the gas used past the intrinsic gas (anvil's top `gas` leaves it out). */
  const executionGas = (gasLimit: string, gasUsed: string, frame: Json) =>
    hexN(Number(gasUsed) - (Number(gasLimit) - Number(frame.gas)));

  test('the Parity layouts built from anvil’s callTracer and prestateTracer diffMode are anvil’s own trace_transaction and stateDiff', async () => {
    const blocks = Array.from({ length: work.blocks }, (_, i) => hexN(i + 1));
    const [traces, replays, diffs] = await Promise.all([
      batch(
        anvil.url,
        work.txs.map((t): Call => ['trace_transaction', [t.hash]]),
      ),
      batch(
        anvil.url,
        blocks.map((b): Call => ['trace_replayBlockTransactions', [b, ['stateDiff']]]),
      ),
      batch(anvil.url, perTx({ tracer: 'prestateTracer', tracerConfig: { diffMode: true } })),
    ]);
    const stateDiffs = replays.flatMap((r) => (r.result as Json[]).map((x) => x.stateDiff));
    work.txs.forEach((t, i) => {
      const frame = frames.get(t.hash) as Json;
      const f = facts.get(t.hash) as TxFacts;
      const flat = parityFlat(frame, executionGas(f.gasLimit, f.gasUsed, frame), work.failedAt.get(t.hash));
      expect([t.what, flat]).toEqual([t.what, ((traces[i]?.result as Json[] | undefined) ?? []).map(unplaced)]);
      expect([t.what, parityStateDiff(diffs[i]?.result as Json)]).toEqual([t.what, stateDiffs[i]]);
    });
  });

  test('trace_call, trace_callMany and trace_rawTransaction (anvil serves none) equal reth’s answers, built from anvil’s traces of the same calls', async () => {
    const header = await result<Json>(anvil.url, 'eth_getBlockByNumber', ['0x4', false]);
    const baseFee = header.baseFeePerGas as string;
    const traced = tracedCalls();
    /** anvil's callTracer and prestateTracer diffMode of `call`, as reth's TraceResults. */
    const rethOf = async (call: Json, block: string, overrides: Json = {}): Promise<Json> => {
      const [frame, diff] = (
        await batch(anvil.url, [
          ['debug_traceCall', [call, block, { tracer: 'callTracer', ...overrides }]],
          [
            'debug_traceCall',
            [call, block, { tracer: 'prestateTracer', tracerConfig: { diffMode: true }, ...overrides }],
          ],
        ])
      ).map((e) => e.result as Json) as [Json, Json];
      // reth, as geth, lowers the base fee to 0 for a call without a gas price (prepare_call_env).
      const f =
        call.gasPrice === undefined && call.maxFeePerGas === undefined ? gethUnpricedBaseFee(frame, baseFee) : frame;
      return {
        output: f.output ?? '0x',
        stateDiff: parityStateDiff(diff),
        trace: rethTraces(parityFlat(f, executionGas(call.gas as string, f.gasUsed as string, f))),
        vmTrace: null,
      };
    };
    const want = await Promise.all(traced.map(({ call, block, overrides }) => rethOf(call, block, overrides)));
    const mine = await batch(
      ours,
      traced.map(
        ({ call, block, overrides }): Call => [
          'trace_call',
          [call, ['trace', 'stateDiff'], block, overrides?.stateOverrides ?? null, overrides?.blockOverrides ?? null],
        ],
      ),
    );
    expect(traced.map((t, i) => [t.what, answer(mine[i])])).toEqual(traced.map((t, i) => [t.what, want[i]]));

    // trace_callMany: the second call runs on what the first left (balances and the sender's
    // nonce): anvil traces it alone with those as state overrides.
    const { call } = traced[1] as { call: Json };
    const first = want[1] as Json;
    const left: Json = {};
    for (const [address, d] of Object.entries(first.stateDiff as Record<string, Json>)) {
      const now = (x: unknown) => (x === '=' ? undefined : ((x as Json)['*'] as Json).to);
      left[address] = { balance: now(d.balance), nonce: now(d.nonce) };
    }
    const second = await rethOf(call, 'latest', { stateOverrides: left });
    const [many] = await batch(ours, [
      [
        'trace_callMany',
        [
          [
            [call, ['trace', 'stateDiff']],
            [call, ['trace', 'stateDiff']],
          ],
          'latest',
        ],
      ],
    ]);
    expect(answer(many)).toEqual([first, second]);

    // trace_rawTransaction: a signed transaction with its fees, run on the head's state.
    const [, d1] = DEV as [string, string];
    const nonce = await result<string>(anvil.url, 'eth_getTransactionCount', [d1, 'latest']);
    const tx = {
      ...call,
      nonce,
      maxFeePerGas: hexN(2 * Number(baseFee) + 1e9),
      maxPriorityFeePerGas: hexN(1e9),
      chainId: '0x7a69',
    };
    const raw = await result<string>(anvil.url, 'eth_signTransaction', [tx]);
    const { chainId, ...asCall } = tx;
    const [mineRaw] = await batch(ours, [['trace_rawTransaction', [raw, ['trace', 'stateDiff'], 'latest']]]);
    expect(answer(mineRaw)).toEqual(await rethOf(asCall, 'latest'));
  });

  test('trace_transaction, trace_block, trace_replayBlockTransactions and trace_filter equal reth’s answers', async () => {
    await expectReference(
      work.txs.map((t): Call => ['trace_transaction', [t.hash]]),
      (a) => rethTraces(a as unknown as Json[]),
    );
    const blocks = Array.from({ length: work.blocks }, (_, i) => hexN(i + 1));
    await expectReference(
      blocks.map((b): Call => ['trace_block', [b]]),
      (a) => rethTraces(a as unknown as Json[]),
    );
    await expectReference(
      blocks.map((b): Call => ['trace_replayBlockTransactions', [b, ['trace', 'stateDiff']]]),
      (a) => (a as unknown as Json[]).map(rethReplay),
    );
    const all = (
      await batch(
        anvil.url,
        blocks.map((b): Call => ['trace_block', [b]]),
      )
    ).flatMap((r) => r.result as Json[]);
    const range = { fromBlock: '0x1', toBlock: hexN(work.blocks) };
    await expectReference(
      Object.values(work.contracts).flatMap((address): Call[] => [
        ['trace_filter', [{ ...range, toAddress: [address] }]],
        ['trace_filter', [{ ...range, fromAddress: [address] }]],
      ]),
      (a) => rethFilterPage(a as unknown as Json[], all),
    );
  });

  test('trace_replayTransaction (anvil serves none) equals the transaction’s entry of trace_replayBlockTransactions', async () => {
    const blocks = Array.from({ length: work.blocks }, (_, i) => hexN(i + 1));
    const replays = (
      await batch(
        anvil.url,
        blocks.map((b): Call => ['trace_replayBlockTransactions', [b, ['trace', 'stateDiff']]]),
      )
    ).flatMap((r) => r.result as Json[]);
    const mine = await batch(
      ours,
      replays.map((r): Call => ['trace_replayTransaction', [r.transactionHash, ['trace', 'stateDiff']]]),
    );
    expect(mine.map(answer)).toEqual(replays.map(({ transactionHash, ...r }) => rethReplay(r)));
    expect(replays.length).toBe(31);
  });

  test('ots_traceTransaction, ots_getInternalOperations and ots_getTransactionError equal Erigon’s answers', async () => {
    const failed = (p: unknown[]) => work.failedAt.get(p[0] as string) ?? [];
    const frameOf = (p: unknown[]) => frames.get(p[0] as string) as Json;
    await expectReference(
      work.txs.map((t): Call => ['ots_traceTransaction', [t.hash]]),
      (_, p) => erigonTrace(frameOf(p), failed(p)),
    );
    await expectReference(
      work.txs.map((t): Call => ['ots_getInternalOperations', [t.hash]]),
      (_, p) => erigonOperations(frameOf(p), failed(p)),
    );
    await expectReference(
      work.txs.map((t): Call => ['ots_getTransactionError', [t.hash]]),
      (a) => a,
    );
  });

  test('ots_getContractCreator and the searches for the contracts equal Erigon’s answers', async () => {
    await expectReference(
      Object.values(work.contracts).map((a): Call => ['ots_getContractCreator', [a]]),
      (a) => a,
    );
    await expectReference(
      // Internal calls included: hubB is reached by STATICCALL and a reverted call, lib only by DELEGATECALL.
      Object.values(work.contracts).flatMap((a): Call[] => [
        ['ots_searchTransactionsBefore', [a, 0, 25]],
        ['ots_searchTransactionsAfter', [a, 0, 25]],
      ]),
      (a, _, method) => erigonSearchPage(a, method === 'ots_searchTransactionsAfter'),
    );
  });
});
