// Handlers over the hand-built store: not-found answers, block parameters, param errors with
// geth's wording, and every getLogs rule and error of the spec (4.2, 8.2).
import { bytesToBigInt, toData } from '@chainnode/core';
import type { LogQuery } from '@chainnode/core';
import { createRpcService } from '../src/index.js';
import type { RpcConfig } from '../src/index.js';
import { addresses, blocks, FakeStore, logs, matches, topics } from './fake-store.js';

type Reply = { result?: unknown; error?: { code: number; message: string; data?: unknown } };

function rpc(config?: Partial<RpcConfig>, store = new FakeStore()) {
  const svc = createRpcService(store, config);
  return async (method: string, ...params: unknown[]): Promise<Reply> => {
    const out = await svc.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
    return JSON.parse(out.body!) as Reply;
  };
}
const call = rpc();
const x = (byte: number, len: number): string => `0x${byte.toString(16).padStart(2, '0').repeat(len)}`;
const err = (code: number, message: string) => ({ error: { code, message } });

describe('bootstrap methods', () => {
  test('chainId, net_version, blockNumber, clientVersion', async () => {
    expect(await call('eth_chainId')).toMatchObject({ result: '0x539' });
    expect(await call('net_version')).toMatchObject({ result: '1337' });
    expect(await call('eth_blockNumber')).toMatchObject({ result: '0x2' });
    expect((await call('web3_clientVersion')).result).toMatch(/^chainnode\/v0\.1\.0\/[a-z0-9]+-[a-z0-9]+\/nodejs\d+$/);
    expect(await rpc({ clientVersion: 'x/y' })('web3_clientVersion')).toMatchObject({ result: 'x/y' });
    expect(await call('eth_chainId', 1)).toMatchObject(err(-32602, 'too many arguments, want at most 0'));
  });
});

describe('blocks and uncles', () => {
  test('by number and tag; not found is null', async () => {
    expect(((await call('eth_getBlockByNumber', '0x1', false)).result as { hash: string }).hash).toBe(x(0xa1, 32));
    for (const tag of ['latest', 'pending', 'safe', 'finalized']) {
      expect(((await call('eth_getBlockByNumber', tag, false)).result as { number: string }).number).toBe('0x2');
    }
    expect(((await call('eth_getBlockByNumber', 'earliest', false)).result as { number: string }).number).toBe('0x0');
    expect(await call('eth_getBlockByNumber', '0x3', false)).toMatchObject({ result: null });
    expect(await call('eth_getBlockByHash', x(0x12, 32), true)).toMatchObject({ result: null });
  });

  test('safe/finalized depths are configurable and clamp at genesis', async () => {
    const deep = rpc({ safeDepth: 1, finalizedDepth: 5 });
    expect(((await deep('eth_getBlockByNumber', 'safe', false)).result as { number: string }).number).toBe('0x1');
    expect(((await deep('eth_getBlockByNumber', 'finalized', false)).result as { number: string }).number).toBe('0x0');
  });

  test('uncles by hash and by number; past the end and unknown block are null', async () => {
    const byNumber = await call('eth_getUncleByBlockNumberAndIndex', '0x2', '0x0');
    expect((byNumber.result as { hash: string }).hash).toBe(x(0xee, 32));
    expect((await call('eth_getUncleByBlockHashAndIndex', x(0xa2, 32), '0x0')).result).toEqual(byNumber.result);
    expect(await call('eth_getUncleByBlockHashAndIndex', x(0xa2, 32), '0x1')).toMatchObject({ result: null });
    expect(await call('eth_getUncleByBlockHashAndIndex', x(0xa2, 32), '0xffffffffffffffff')).toMatchObject({
      result: null,
    });
    expect(await call('eth_getUncleByBlockNumberAndIndex', '0x9', '0x0')).toMatchObject({ result: null });
    expect(await call('eth_getUncleByBlockNumberAndIndex', '0x2', '0')).toMatchObject(
      err(-32602, 'invalid argument 1: hex string without 0x prefix'),
    );
  });

  test('param errors name the argument', async () => {
    const cases: [unknown[], string][] = [
      [['eth_getBlockByNumber', '0x1'], 'missing value for required argument 1'],
      [['eth_getBlockByNumber', '0x1', false, 1], 'too many arguments, want at most 2'],
      [['eth_getBlockByNumber', '0x01', false], 'invalid argument 0: hex number with leading zero digits'],
      [['eth_getBlockByNumber', '0x', false], 'invalid argument 0: hex string "0x"'],
      [['eth_getBlockByNumber', '0xzz', false], 'invalid argument 0: invalid hex string'],
      [['eth_getBlockByNumber', 'newest', false], 'invalid argument 0: hex string without 0x prefix'],
      [['eth_getBlockByNumber', '0x8000000000000000', false], 'invalid argument 0: block number larger than int64'],
      [['eth_getBlockByNumber', '0x10000000000000000', false], 'invalid argument 0: hex number > 64 bits'],
      [
        ['eth_getBlockByNumber', 1, false],
        'invalid argument 0: block number: expected a hex string or tag, got number',
      ],
      [['eth_getBlockByNumber', '0x1', 'yes'], 'invalid argument 1: expected a boolean, got string'],
      [['eth_getBlockByHash', '0x123', false], 'invalid argument 0: hex string has odd length'],
      [
        ['eth_getBlockByHash', x(1, 20), false],
        'invalid argument 0: hex string has length 40, want 64 for common.Hash',
      ],
    ];
    for (const [[method, ...params], message] of cases) {
      expect(await call(method as string, ...params)).toMatchObject(err(-32602, message));
    }
    // A non-digit anywhere (either half of a byte, a letter past f, a character past ASCII) is
    // invalid hex, and it is reported before a wrong length.
    for (const bad of [
      `0x${'ab'.repeat(31)}ag`,
      `0xg${'a'.repeat(63)}`,
      `0x${'ab'.repeat(31)}\u00e9a`,
      '0x1:',
      '0x/0',
    ]) {
      expect(await call('eth_getBlockByHash', bad, false)).toMatchObject(
        err(-32602, 'invalid argument 0: invalid hex string'),
      );
    }
    expect(await call('eth_getTransactionByHash', 'ab'.repeat(32))).toMatchObject(
      err(-32602, 'invalid argument 0: hex string without 0x prefix'),
    );
  });
});

describe('transactions', () => {
  test('found with location, unknown is null', async () => {
    const t = (await call('eth_getTransactionByHash', x(0x03, 32))).result as Record<string, string>;
    expect([t.blockHash, t.blockNumber, t.transactionIndex, t.gasPrice]).toEqual([x(0xa2, 32), '0x2', '0x0', '0x7']);
    expect(await call('eth_getTransactionByHash', x(0x09, 32))).toMatchObject({ result: null });
  });
});

describe('eth_getStorageAt', () => {
  const A = x(0xaa, 20);
  test('32-byte padded value; any hex quantity up to 32 bytes as position', async () => {
    const want = `0x${'00'.repeat(31)}0a`;
    for (const pos of ['0xa', '0x0a', '0xA', `0x${'00'.repeat(31)}0a`, 'a']) {
      expect(await call('eth_getStorageAt', A, pos, 'latest')).toMatchObject({ result: want });
    }
    // Historical state: block 1 has nothing at that slot.
    expect(await call('eth_getStorageAt', A, '0xa', '0x1')).toMatchObject({ result: `0x${'00'.repeat(32)}` });
  });

  test('EIP-1898 block parameter: bare hash, {blockHash}, {blockNumber}', async () => {
    const want = `0x${'00'.repeat(31)}05`;
    expect(await call('eth_getStorageAt', A, '0x5', x(0xa2, 32))).toMatchObject({ result: want });
    expect(await call('eth_getStorageAt', A, '0x5', { blockHash: x(0xa2, 32), requireCanonical: true })).toMatchObject({
      result: want,
    });
    expect(await call('eth_getStorageAt', A, '0x5', { blockNumber: '0x2' })).toMatchObject({ result: want });
    expect(await call('eth_getStorageAt', A, '0x5', { blockHash: x(0xa2, 32), blockNumber: '0x2' })).toMatchObject(
      err(-32602, 'invalid argument 2: cannot specify both BlockHash and BlockNumber, choose one or the other'),
    );
    expect(await call('eth_getStorageAt', A, '0x5', {})).toMatchObject(
      err(-32602, 'invalid argument 2: invalid arguments; neither block nor hash specified'),
    );
  });

  test('errors', async () => {
    expect(await call('eth_getStorageAt', A, `0x${'11'.repeat(33)}`, 'latest')).toMatchObject(
      err(-32602, 'storage key too long'),
    );
    expect(await call('eth_getStorageAt', A, '0xzz', 'latest')).toMatchObject(
      err(-32602, 'invalid argument 1: storage key: invalid hex string'),
    );
    expect(await call('eth_getStorageAt', A, '0x5g5', 'latest')).toMatchObject(
      err(-32602, 'invalid argument 1: storage key: invalid hex string'),
    );
    expect(await call('eth_getStorageAt', A, '0x1', '0x9')).toMatchObject(err(-32000, 'header not found'));
    expect(await call('eth_getStorageAt', A, '0x1', x(0x12, 32))).toMatchObject(
      err(-32000, 'header for hash not found'),
    );
    expect(await call('eth_getStorageAt', '0xaa', '0x1', 'latest')).toMatchObject(
      err(-32602, 'invalid argument 0: hex string has length 2, want 40 for common.Address'),
    );
  });
  test('block parameter optional: omitted or null answers as "latest"; other arity rules unchanged', async () => {
    // Slot 0xa differs between block 1 (empty) and the head (0x0a), so "latest" is told apart.
    const latest = await call('eth_getStorageAt', A, '0xa', 'latest');
    expect(latest).toMatchObject({ result: `0x${'00'.repeat(31)}0a` });
    expect(await call('eth_getStorageAt', A, '0xa')).toEqual(latest);
    expect(await call('eth_getStorageAt', A, '0xa', null)).toEqual(latest);
    expect(await call('eth_getStorageAt', A, '0xa', '0x1')).not.toEqual(latest);
    // A wrong-typed third argument is still refused, naming it.
    expect(await call('eth_getStorageAt', A, '0xa', true)).toMatchObject(
      err(-32602, 'invalid argument 2: expected a block number, tag, block hash or EIP-1898 object, got boolean'),
    );
    expect(await call('eth_getStorageAt', A, '0xa', 2)).toMatchObject(
      err(-32602, 'invalid argument 2: expected a block number, tag, block hash or EIP-1898 object, got number'),
    );
    expect(await call('eth_getStorageAt', A, '0xa', 'newest')).toMatchObject(
      err(-32602, 'invalid argument 2: hex string without 0x prefix'),
    );
    expect(await call('eth_getStorageAt', A)).toMatchObject(err(-32602, 'missing value for required argument 1'));
    expect(await call('eth_getStorageAt', A, null)).toMatchObject(err(-32602, 'missing value for required argument 1'));
    expect(await call('eth_getStorageAt', A, '0xa', 'latest', 1)).toMatchObject(
      err(-32602, 'too many arguments, want at most 3'),
    );
  });
});

describe('eth_getProof', () => {
  test('keys echoed like geth, proof from the state of the block asked for', async () => {
    const r = (await call('eth_getProof', x(0xaa, 20), ['0x1', `0x${'00'.repeat(31)}02`], '0x1')).result as {
      storageHash: string;
      storageProof: { key: string; value: string }[];
    };
    expect(r.storageHash).toBe(x(0x51, 32)); // the fake echoes the state root it was asked for
    expect(r.storageProof).toEqual([
      { key: '0x1', value: '0x1', proof: [] },
      { key: `0x${'00'.repeat(31)}02`, value: '0x2', proof: [] },
    ]);
  });

  test('errors', async () => {
    expect(await call('eth_getProof', x(0xaa, 20), '0x1', 'latest')).toMatchObject(
      err(-32602, 'invalid argument 1: storageKeys: expected an array, got string'),
    );
    expect(await call('eth_getProof', x(0xaa, 20), ['0x1', `0x${'11'.repeat(33)}`], 'latest')).toMatchObject(
      err(-32602, 'storage key too long'),
    );
    expect(await call('eth_getProof', x(0xaa, 20), [], '0x7')).toMatchObject(err(-32000, 'header not found'));
  });
  test('block parameter optional: omitted or null answers as "latest"; other arity rules unchanged', async () => {
    const A = x(0xaa, 20);
    const keys = ['0x1', `0x${'00'.repeat(31)}02`];
    const latest = await call('eth_getProof', A, keys, 'latest');
    // The fake echoes the state root it was asked for: the head's (0x52..), not block 1's.
    expect((latest.result as { storageHash: string }).storageHash).toBe(x(0x52, 32));
    expect(await call('eth_getProof', A, keys)).toEqual(latest);
    expect(await call('eth_getProof', A, keys, null)).toEqual(latest);
    expect(await call('eth_getProof', A, keys, '0x1')).not.toEqual(latest);
    expect(await call('eth_getProof', A, keys, false)).toMatchObject(
      err(-32602, 'invalid argument 2: expected a block number, tag, block hash or EIP-1898 object, got boolean'),
    );
    expect(await call('eth_getProof', A, keys, [])).toMatchObject(
      err(-32602, 'invalid argument 2: expected a block number, tag, block hash or EIP-1898 object, got array'),
    );
    expect(await call('eth_getProof', A)).toMatchObject(err(-32602, 'missing value for required argument 1'));
    expect(await call('eth_getProof', A, keys, 'latest', 1)).toMatchObject(
      err(-32602, 'too many arguments, want at most 3'),
    );
  });
});

/** The filter parts the getLogs combination test draws from: addresses, topic lists, block ranges. */
function filterChoices(A: string, B: string, T0: string, T1: string) {
  const addrChoices = [undefined, A, [A], [A, B], [B]];
  const topicChoices = [
    undefined,
    [],
    [null],
    [T0],
    [[T0, T1]],
    [null, T0],
    [T1, null],
    [[T0, null]],
    [[]],
    [T0, T1, null],
  ];
  const ranges = [
    {},
    { fromBlock: '0x0' },
    { fromBlock: '0x2' },
    { fromBlock: 'earliest', toBlock: '0x1' },
    { blockHash: x(0xa1, 32) },
  ];
  return { addrChoices, topicChoices, ranges };
}

/** The store query a getLogs filter stands for, worked out apart from the method (heads at 2). */
function logQueryOf(
  range: { fromBlock?: string; toBlock?: string; blockHash?: string },
  address: string | string[] | undefined,
  t: (string | null | (string | null)[])[] | undefined,
): LogQuery {
  const from =
    'blockHash' in range
      ? 1n
      : range.fromBlock === undefined
        ? 2n
        : BigInt(range.fromBlock === 'earliest' ? 0 : range.fromBlock);
  const to = 'blockHash' in range ? 1n : range.toBlock === undefined ? 2n : BigInt(range.toBlock);
  return {
    fromBlock: from,
    toBlock: to,
    addresses:
      address === undefined ? [] : [address].flat().map((a) => Uint8Array.from(Buffer.from(a.slice(2), 'hex'))),
    topics: (t ?? []).map((p) =>
      p === null
        ? null
        : Array.isArray(p)
          ? p.length === 0 || p.includes(null)
            ? null
            : p.map((h) => Uint8Array.from(Buffer.from((h as string).slice(2), 'hex')))
          : [Uint8Array.from(Buffer.from(p.slice(2), 'hex'))],
    ),
  };
}

describe('eth_getLogs', () => {
  const A = toData(addresses.A);
  const B = toData(addresses.B);
  const T0 = toData(topics.T0);
  const T1 = toData(topics.T1);
  const key = (l: { blockNumber: string; logIndex: string }) => `${l.blockNumber}/${l.logIndex}`;

  async function keys(filter: unknown): Promise<string[]> {
    const r = await call('eth_getLogs', filter);
    if (r.error) throw new Error(JSON.stringify(r.error));
    return (r.result as { blockNumber: string; logIndex: string }[]).map(key);
  }

  test('filters agree with the brute-force reference on every combination', async () => {
    const { addrChoices, topicChoices, ranges } = filterChoices(A, B, T0, T1);
    let nonEmpty = 0;
    for (const address of addrChoices) {
      for (const t of topicChoices) {
        for (const range of ranges) {
          const filter = {
            ...range,
            ...(address === undefined ? {} : { address }),
            ...(t === undefined ? {} : { topics: t }),
          };
          const q = logQueryOf(range, address, t);
          const want = logs
            .filter((l) => matches(q, l))
            .map((l) => `0x${l.blockNumber.toString(16)}/0x${l.logIndex.toString(16)}`);
          expect(await keys(filter)).toEqual(want);
          if (want.length > 0) nonEmpty++;
        }
      }
    }
    expect(nonEmpty).toBeGreaterThan(20);
  });

  test('a log with fewer topics than filter positions does not match', async () => {
    expect(await keys({ fromBlock: '0x0', topics: [T0] })).toEqual(['0x1/0x0', '0x1/0x1']);
    expect(await keys({ fromBlock: '0x0', topics: [T0, null] })).toEqual(['0x1/0x1']);
    expect(await keys({ fromBlock: '0x0', topics: [null, T0] })).toEqual(['0x2/0x1']);
    expect(await keys({ fromBlock: '0x0', topics: [null, null, null] })).toEqual([]);
  });

  test('getLogs and storage-key errors, exact texts', async () => {
    expect(await call('eth_getLogs', { blockHash: x(0xa1, 32), fromBlock: '0x1' })).toMatchObject(
      err(-32602, 'cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other'),
    );
    expect(await call('eth_getLogs', { fromBlock: '0x2', toBlock: '0x1' })).toMatchObject(
      err(-32602, 'invalid block range params'),
    );
    expect(await call('eth_getLogs', { fromBlock: '0x1', toBlock: '0x3' })).toMatchObject(
      err(-32602, 'block range extends beyond current head block'),
    );
    expect(await call('eth_getLogs', { blockHash: x(0x12, 32) })).toMatchObject(err(-32000, 'unknown block'));
    expect(await call('eth_getLogs', { topics: [null, null, null, null, null] })).toMatchObject(
      err(-32602, 'exceed max topics'),
    );
    expect(await call('eth_getLogs', { address: '0xaa' })).toMatchObject(
      err(-32602, 'invalid argument 0: address: hex has invalid length 1 after decoding; expected 20'),
    );
    expect(await call('eth_getLogs', { topics: [5] })).toMatchObject(
      err(-32602, 'invalid argument 0: topics[0]: invalid topic(s)'),
    );
    expect(await call('eth_getLogs', { fromBlock: 'soon' })).toMatchObject(
      err(-32602, 'invalid argument 0: fromBlock: hex string without 0x prefix'),
    );
    expect(await call('eth_getLogs')).toMatchObject(err(-32602, 'missing value for required argument 0'));
  });

  test('more than 5,000 filter parameters is refused', async () => {
    const many = Array.from({ length: 4999 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`);
    expect((await call('eth_getLogs', { address: many, topics: [T0] })).error).toBeUndefined();
    const r = await call('eth_getLogs', { address: many, topics: [[T0, T1]] });
    expect(r).toMatchObject(
      err(-32602, 'too many filter parameters: 5001 addresses and topics given, at most 5000 allowed'),
    );
  });

  test('result cap: -32005 with the longest fitting prefix of the range', async () => {
    const capped = rpc({ logs: { maxResults: 2, timeoutMs: 10_000, maxFilterParams: 5000 } });
    const r = await capped('eth_getLogs', { fromBlock: '0x0', toBlock: '0x2' });
    expect(r.error).toEqual({
      code: -32005,
      message: 'query returned more than 2 results. Try with this block range [0x0, 0x1].',
      data: { from: '0x0', to: '0x1', limit: 2 },
    });
    // Check the suggestion independently: it fits, one more block does not.
    expect(await keys({ fromBlock: '0x0', toBlock: '0x1' })).toHaveLength(2);
    expect(await keys({ fromBlock: '0x0', toBlock: '0x2' })).toHaveLength(4);
    const one = rpc({ logs: { maxResults: 1, timeoutMs: 10_000, maxFilterParams: 5000 } });
    expect((await one('eth_getLogs', { fromBlock: '0x1', toBlock: '0x2' })).error).toEqual({
      code: -32005,
      message: 'query returned more than 1 results',
      data: { limit: 1 },
    });
  });

  test('deadline is passed to the store; a slow store gives "query timeout exceeded"', async () => {
    const store = new FakeStore();
    const before = Date.now();
    await rpc({}, store)('eth_getLogs', {});
    const after = Date.now();
    // 10 s from when the call was handled, somewhere between the two clock readings.
    expect(store.lastLogOptions!.deadline).toBeGreaterThanOrEqual(before + 10_000);
    expect(store.lastLogOptions!.deadline).toBeLessThanOrEqual(after + 10_000);
    expect(store.lastLogOptions!.limit).toBe(10_000);

    const limits = { maxResults: 10_000, timeoutMs: 50, maxFilterParams: 5000 };
    const slow = rpc({ logs: limits }, new FakeStore({ logsDelayMs: 120 }));
    expect(await slow('eth_getLogs', {})).toMatchObject(err(-32005, 'query timeout exceeded'));
    // A store that ignores the deadline still cannot hold the answer back.
    const stubborn = rpc({ logs: limits }, new FakeStore({ logsDelayMs: 20_000, ignoreDeadline: true }));
    const started = Date.now();
    expect(await stubborn('eth_getLogs', {})).toMatchObject(err(-32005, 'query timeout exceeded'));
    expect(Date.now() - started).toBeLessThan(15_000); // the store's answer, 20 s later, was not waited for
  });

  test('storage values come back padded from any store value', async () => {
    const r = await call('eth_getStorageAt', A, '0xff', 'latest');
    expect(bytesToBigInt(Uint8Array.from(Buffer.from((r.result as string).slice(2), 'hex')))).toBe(255n);
    expect(blocks).toHaveLength(3);
  });
});
