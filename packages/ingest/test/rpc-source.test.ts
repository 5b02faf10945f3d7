// The JSON-RPC source against a real HTTP server on loopback that answers what each test wants:
// a block whose fields do not hash to its stated hash is a verification failure (the ingest
// stops), garbage / wrong ids / errors / silence are upstream faults (retried), and no message
// carries the URL's path (it may hold an API key).
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { createBlockHeaderFromRPC } from '@ethereumjs/block';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import { bytesToHex } from '@ethereumjs/util';
import { cancunConfig } from '@chainnode/testkit';
import { createUpstreamClient } from '@chainnode/core';
import { BlockVerificationError, RpcBlockSource, UpstreamError } from '../src/index.js';

// A chain with every fork through Cancun at genesis.
const common = createCommonFromGethGenesis(
  {
    config: cancunConfig(),
    gasLimit: '0x1c9c380',
    difficulty: '0x0',
    nonce: '0x0',
    extraData: '0x',
    timestamp: '0x0',
    alloc: {},
  } as never,
  { chain: 'custom' },
);
const Z32 = `0x${'00'.repeat(32)}`;
const EMPTY = '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421';

function blockJson(number: number): Record<string, unknown> {
  const j: Record<string, unknown> = {
    parentHash: `0x${'11'.repeat(32)}`,
    sha3Uncles: '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347',
    miner: `0x${'22'.repeat(20)}`,
    stateRoot: `0x${'33'.repeat(32)}`,
    transactionsRoot: EMPTY,
    receiptsRoot: EMPTY,
    logsBloom: `0x${'00'.repeat(256)}`,
    difficulty: '0x0',
    number: `0x${number.toString(16)}`,
    gasLimit: '0x1c9c380',
    gasUsed: '0x0',
    timestamp: '0x6553f100',
    extraData: '0x',
    mixHash: Z32,
    nonce: '0x0000000000000000',
    baseFeePerGas: '0x7',
    withdrawalsRoot: EMPTY,
    blobGasUsed: '0x0',
    excessBlobGas: '0x0',
    parentBeaconBlockRoot: Z32,
    transactions: [],
    uncles: [],
    withdrawals: [],
  };
  j.hash = bytesToHex(createBlockHeaderFromRPC(j as never, { common, setHardfork: true }).hash());
  return j;
}

describe('RpcBlockSource over HTTP', () => {
  let server: Server;
  let url: string;
  let answer: (body: { id: number; method: string; params: unknown[] }) => string | undefined;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const text = answer(JSON.parse(body) as { id: number; method: string; params: unknown[] });
        if (text === undefined) return; // silence
        res.writeHead(200, { 'content-type': 'application/json' }).end(text);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const a = server.address();
    url = `http://127.0.0.1:${typeof a === 'object' && a !== null ? a.port : 0}/v3/SECRETKEY123`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const source = (timeoutMs = 2000) => new RpcBlockSource(createUpstreamClient(url, { timeoutMs }), common);
  const ok = (id: number, result: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result });

  test('a consistent block is rebuilt and hashes to its stated hash', async () => {
    const j = blockJson(5);
    answer = (b) => ok(b.id, j);
    const blk = await source().byNumber(5n);
    expect(blk?.number).toBe(5n);
    expect(bytesToHex(blk?.hash ?? new Uint8Array())).toBe(j.hash);
    expect(blk?.raw.length).toBeGreaterThan(500);
  });

  test('a field that does not match the stated hash is a verification failure naming the block', async () => {
    const j = { ...blockJson(7), gasLimit: '0x1c9c381' };
    answer = (b) => ok(b.id, j);
    const err = await source()
      .byNumber(7n)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlockVerificationError);
    expect((err as Error).message).toMatch(
      /^block 7: hash mismatch: block says 0x[0-9a-f]{64}, computed 0x[0-9a-f]{64}/,
    );
  });

  test('garbage, wrong ids, error objects, silence and a missing field are upstream faults; the key in the path is never shown', async () => {
    const cases: [string, (b: { id: number }) => string | undefined, RegExp][] = [
      ['garbage', () => 'not json at all', /reply is not JSON/],
      ['wrong id', (b) => ok(b.id + 1, blockJson(1)), /reply id does not match/],
      [
        'error',
        (b) => JSON.stringify({ jsonrpc: '2.0', id: b.id, error: { code: -32000, message: 'header not found' } }),
        /-32000 header not found/,
      ],
      ['missing field', (b) => ok(b.id, { ...blockJson(1), hash: undefined }), /no valid "hash"/],
      ['not an object', (b) => ok(b.id, 42), /block reply is not an object/],
      ['silence', () => undefined, /no reply within 300 ms/],
    ];
    for (const [what, reply, msg] of cases) {
      answer = reply;
      const err = await source(300)
        .byNumber(1n)
        .catch((e: unknown) => e);
      expect([what, err instanceof UpstreamError]).toEqual([what, true]);
      expect([what, (err as Error).message]).toEqual([what, expect.stringMatching(msg)]);
      expect((err as Error).message).not.toContain('SECRETKEY123');
      expect((err as Error).message).toContain('http://127.0.0.1:');
    }
  });

  test('a block the upstream does not have is undefined; asking for N and getting M is a fault', async () => {
    answer = (b) => ok(b.id, null);
    expect(await source().byNumber(9n)).toBeUndefined();
    answer = (b) => ok(b.id, blockJson(3));
    await expect(source().byNumber(4n)).rejects.toThrow(/asked for block 4, got block 3/);
  });
});
