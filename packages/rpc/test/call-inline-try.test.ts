// eth_call estimated heavy (no gas named: the 50M cap) with an offload executor: a call that
// finishes within the inline try (INLINE_TRY_WORK: opcodes and state reads, not time, so a loaded
// machine does not change which way a call goes) is answered inline, the executor never asked;
// one that computes
// longer stops on the serving thread and is answered by the executor, with the answer inline
// execution gives (here the executor is a second service without one, so its answer is the
// reference); eth_estimateGas the same. Without an executor, a call that computes without
// reading state stops at callTimeoutMs (the interpreter's loop asks the state view), geth's
// "execution aborted".
import { JsonText } from '../src/json-text.js';
import type { OffloadExecutor, RpcServiceApi } from '../src/index.js';
import { createRpcService } from '../src/index.js';
import { RpcError } from '@chainnode/core';
import { chainDir } from '@chainnode/testkit';
import { serviceOnCopy } from './rpc-call.js';

const TARGET = `0x${'c0'.repeat(20)}`;
// PUSH1 42, PUSH1 0, MSTORE, PUSH1 32, PUSH1 0, RETURN: 42 as a word (the fixture chain has no PUSH0).
const ANSWER_42 = '0x602a60005260206000f3';
// JUMPDEST, PUSH1 0, JUMP: loops until its gas is gone.
const LOOP = '0x5b600056';

const callBody = (code: string, gas?: string, method = 'eth_call'): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: [{ to: TARGET, ...(gas === undefined ? {} : { gas }) }, 'latest', { [TARGET]: { code } }],
  });

const result = async (svc: RpcServiceApi, body: string): Promise<unknown> =>
  JSON.parse((await svc.handle(body)).body ?? '');

const available = chainDir('fixtures') !== undefined;
(available ? describe : describe.skip)('calls estimated heavy run inline first', () => {
  let close: () => Promise<void>;
  let closeOther: () => Promise<void>;
  let reference: RpcServiceApi;
  let offloading: RpcServiceApi;
  let bounded: RpcServiceApi;
  const sent: string[] = [];

  beforeAll(async () => {
    const copy = await serviceOnCopy('fixtures');
    close = copy.close;
    reference = copy.svc;
    // An executor that answers as inline execution does (the reference service, no executor).
    const executor: OffloadExecutor = {
      run: async (method, params) => {
        sent.push(method);
        const reply = await reference.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
        const parsed = JSON.parse(reply.body ?? '') as {
          result?: unknown;
          error?: { code: number; message: string; data?: unknown };
        };
        if (parsed.error !== undefined) throw new RpcError(parsed.error.code, parsed.error.message, parsed.error.data);
        return new JsonText(JSON.stringify(parsed.result));
      },
    };
    offloading = createRpcService(copy.store, { callCacheBytes: 0 }, { offload: executor });
    // A store of its own: a store's executor keeps the timeout of the service that made it.
    const other = await serviceOnCopy('fixtures');
    closeOther = other.close;
    bounded = createRpcService(other.store, { callCacheBytes: 0, callTimeoutMs: 200 });
    // The store's executor made and its code compiled (a process's first call takes longer than the try).
    await reference.handle(callBody(ANSWER_42));
  });

  afterAll(async () => {
    await close?.();
    await closeOther?.();
  });

  test('a light call without gas is answered inline', async () => {
    sent.length = 0;
    const r = (await result(offloading, callBody(ANSWER_42))) as { result: string };
    expect(r.result).toBe(`0x${'2a'.padStart(64, '0')}`);
    expect(sent).toEqual([]);
  });

  test('a call computing past the try is answered by the executor, as inline execution answers it', async () => {
    sent.length = 0;
    // 12M gas of a loop: hundreds of milliseconds here, estimated above the inline limit.
    const body = callBody(LOOP, '0xb71b00');
    const t0 = Date.now();
    const want = await result(reference, body);
    const inlineMs = Date.now() - t0;
    expect(inlineMs).toBeGreaterThan(20); // millions of opcodes, far past the inline try's 20,000
    expect(want).toMatchObject({ error: { code: -32000, message: 'out of gas' } });
    expect(await result(offloading, body)).toEqual(want);
    expect(sent).toEqual(['eth_call']);
    // A loop that ends (its gas runs out inline within the try) is never sent.
    sent.length = 0;
    const short = callBody(LOOP, '0xc3500'); // 800k gas: within the inline limit, never tried
    expect(await result(offloading, short)).toEqual(await result(reference, short));
    expect(sent).toEqual([]);
  });

  test('eth_estimateGas of a heavy call goes to the executor too; of a light one, not', async () => {
    sent.length = 0;
    const light = callBody(ANSWER_42, undefined, 'eth_estimateGas');
    expect(await result(offloading, light)).toEqual(await result(reference, light));
    expect(sent).toEqual([]);
    const heavy = callBody(LOOP, '0xb71b00', 'eth_estimateGas');
    await result(offloading, heavy);
    expect(sent).toEqual(['eth_estimateGas']);
  });

  test('without an executor, a call computing past callTimeoutMs is aborted as geth aborts it', async () => {
    const cpu0 = process.cpuUsage();
    const r = await result(bounded, callBody(LOOP, '0x2faf080')); // 50M gas of a loop
    expect(r).toMatchObject({ error: { code: -32000, message: 'execution aborted (timeout = 0.2s)' } });
    // The CPU it took (the call runs on this thread), which a stalled machine does not inflate as
    // it inflates the wall time.
    const cpu = process.cpuUsage(cpu0);
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(2_000);
  });
});

(chainDir('execution-apis') !== undefined ? describe : describe.skip)('a call stopped on the way', () => {
  test('leaves no transient storage to the next call on the same VM', async () => {
    const { store, close } = await serviceOnCopy('execution-apis');
    try {
      const svc = createRpcService(store, { callCacheBytes: 0, callTimeoutMs: 200 });
      // PUSH1 7, PUSH1 1, TSTORE, then JUMPDEST PUSH1 5 JUMP forever: stopped at the timeout.
      const store7 = '0x60076001' + '5d' + '5b600556';
      // PUSH1 1, TLOAD, PUSH1 0, MSTORE, PUSH1 32, PUSH1 0, RETURN: transient slot 1.
      const load = '0x60015c60005260206000f3';
      for (let round = 0; round < 3; round++) {
        const stopped = await result(svc, callBody(store7, '0xf00000')); // under Osaka's cap (EIP-7825)
        expect(stopped).toMatchObject({ error: { message: 'execution aborted (timeout = 0.2s)' } });
        expect(await result(svc, callBody(load))).toMatchObject({ result: `0x${'0'.repeat(64)}` });
      }
    } finally {
      await close();
    }
  });
});
