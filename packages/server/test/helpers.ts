// Test doubles for the transport tests: a small RpcServiceApi that follows the contract in
// packages/rpc/src/service.ts (single/batch, parse and envelope errors, middleware around every
// known call, errors mapped in one place), and a ChainStore with a handful of blocks. The real
// rpc service is exercised by the black-box CLI tests in packages/cli/test.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RpcError, StoreUnavailableError, InvalidParamsError, toData, fromHex } from '@chainnode/core';
import type { ChainStore, HeaderRecord } from '@chainnode/core';
import type { CallInfo, CallMiddleware, JsonRpcId, RpcReply, RpcServiceApi } from '@chainnode/rpc';
import { methodCosts, toErrorObject } from '@chainnode/rpc';
import { openLedger } from '@chainnode/accounts';
import { startServer } from '../src/index.js';
import type { RunningServer, ServerOptions } from '../src/index.js';

/** The fake service's methods, at their costs in the rpc method table. */
export const FAKE_COSTS: Record<string, number> = (() => {
  const costs = methodCosts();
  return {
    eth_getBlockByHash: costs.eth_getBlockByHash,
    eth_getBlockByNumber: costs.eth_getBlockByNumber,
    eth_getProof: costs.eth_getProof,
    eth_chainId: costs.eth_chainId,
  };
})();

export function fakeHash(n: number): Uint8Array {
  const b = new Uint8Array(32);
  b[31] = n & 0xff;
  b[30] = (n >> 8) & 0xff;
  b[0] = 0xab;
  return b;
}

function header(n: number): HeaderRecord {
  const z = new Uint8Array(32);
  return {
    hash: fakeHash(n),
    parentHash: n === 0 ? z : fakeHash(n - 1),
    uncleHash: z,
    coinbase: new Uint8Array(20),
    stateRoot: z,
    transactionsRoot: z,
    receiptsRoot: z,
    logsBloom: new Uint8Array(256),
    difficulty: 1n,
    number: BigInt(n),
    gasLimit: 30_000_000n,
    gasUsed: 0n,
    timestamp: BigInt(1_700_000_000 + n),
    extraData: new Uint8Array(),
    mixHash: z,
    nonce: new Uint8Array(8),
  };
}

/** A chain of `count` empty blocks; only the methods the fake service uses do anything. */
export function fakeStore(count = 10, delayMs = 0): ChainStore & { closed: boolean } {
  const byHash = new Map<string, number>();
  for (let i = 0; i < count; i++) byHash.set(toData(fakeHash(i)), i);
  const wait = (): Promise<void> => (delayMs > 0 ? new Promise((r) => setTimeout(r, delayMs)) : Promise.resolve());
  const s = {
    closed: false,
    info: () => ({ chainId: 1337n, networkId: 1337n, genesisHash: fakeHash(0) }),
    head: async () => ({ number: BigInt(count - 1), hash: fakeHash(count - 1) }),
    canonicalHash: async (n: bigint) => (n < BigInt(count) ? fakeHash(Number(n)) : undefined),
    blockNumber: async (h: Uint8Array) => {
      const n = byHash.get(toData(h));
      return n === undefined ? undefined : BigInt(n);
    },
    header: async (h: Uint8Array) => {
      const n = byHash.get(toData(h));
      return n === undefined ? undefined : header(n);
    },
    block: async (h: Uint8Array) => {
      await wait();
      const n = byHash.get(toData(h));
      return n === undefined
        ? undefined
        : { header: header(n), size: 500, totalDifficulty: BigInt(n + 1), transactions: [], uncleHashes: [] };
    },
    uncle: async () => undefined,
    transaction: async () => undefined,
    logs: async () => ({ kind: 'ok' as const, logs: [] }),
    storageAt: async () => new Uint8Array(32),
    proof: async () => {
      throw new Error('not in the fake');
    },
    receipts: async () => undefined,
    account: async () => null,
    code: async () => new Uint8Array(),
    stateReader: () => ({ account: () => null, storage: () => new Uint8Array(32), code: () => new Uint8Array() }),
    rawHeader: async () => undefined,
    rawBlock: async () => undefined,
    rawTransaction: async () => undefined,
    stateDiff: async () => {
      throw new Error('not in the fake');
    },
    close: async () => {
      s.closed = true;
    },
  };
  return s;
}

function toWireError(err: unknown): unknown {
  if (err instanceof StoreUnavailableError) return { code: -32603, message: 'store unavailable' };
  return toErrorObject(err); // the one mapping function, so Infura's event/details go out as in production
}

function blockJson(b: NonNullable<Awaited<ReturnType<ChainStore['block']>>>): unknown {
  return {
    number: `0x${b.header.number.toString(16)}`,
    hash: toData(b.header.hash),
    parentHash: toData(b.header.parentHash),
    transactions: [],
  };
}

/** The fake rpc service: the store is read through `store` at call time (so outages show). */
export function fakeService(store: ChainStore, maxBatchSize = 100): RpcServiceApi {
  const handlers: Record<string, (params: unknown[]) => Promise<unknown>> = {
    eth_chainId: async () => '0x539',
    eth_getBlockByHash: async (p) => {
      if (typeof p[0] !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(p[0]))
        throw new InvalidParamsError('invalid argument 0: expected a 32-byte hex hash');
      const b = await store.block(fromHex(p[0]));
      return b ? blockJson(b) : null;
    },
    eth_getBlockByNumber: async (p) => {
      if (typeof p[0] !== 'string' || !/^0x[0-9a-f]+$/.test(p[0]))
        throw new InvalidParamsError('invalid argument 0: expected a hex block number');
      const h = await store.canonicalHash(BigInt(p[0]));
      const b = h ? await store.block(h) : undefined;
      return b ? blockJson(b) : null;
    },
    eth_getProof: async () => ({ fake: true }),
  };
  const one = async (
    req: unknown,
    mw: CallMiddleware | undefined,
    inBatch: boolean,
    onRequestError: () => void,
  ): Promise<unknown> => {
    let id: JsonRpcId = null;
    let reached = false;
    try {
      if (typeof req !== 'object' || req === null || Array.isArray(req)) throw new RpcError(-32600, 'invalid request');
      const r = req as Record<string, unknown>;
      if (typeof r['id'] === 'number' || typeof r['id'] === 'string') id = r['id'];
      if (r['jsonrpc'] !== '2.0' || typeof r['method'] !== 'string') throw new RpcError(-32600, 'invalid request');
      const method = r['method'];
      const handler = handlers[method];
      if (!handler) throw new RpcError(-32601, `the method ${method} does not exist/is not available`);
      const params = r['params'] === undefined ? [] : r['params'];
      if (!Array.isArray(params)) throw new InvalidParamsError('params: expected an array');
      const call: CallInfo = { method, cost: FAKE_COSTS[method] ?? 0, id, params, inBatch };
      reached = true;
      const result = mw ? await mw(call, () => handler(params)) : await handler(params);
      return { jsonrpc: '2.0', id, result };
    } catch (err) {
      if (!reached) onRequestError();
      return { jsonrpc: '2.0', id, error: toWireError(err) };
    }
  };
  return {
    async handle(body: string, mw?: CallMiddleware, onRequestError: () => void = () => {}): Promise<RpcReply> {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        onRequestError();
        return {
          body: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }),
          batch: false,
        };
      }
      if (Array.isArray(parsed)) {
        if (parsed.length === 0 || parsed.length > maxBatchSize) {
          onRequestError();
          return {
            body: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'bad batch size' } }),
            batch: false,
          };
        }
        const out = await Promise.all(parsed.map((r) => one(r, mw, true, onRequestError)));
        return { body: JSON.stringify(out), batch: true };
      }
      return { body: JSON.stringify(await one(parsed, mw, false, onRequestError)), batch: false };
    },
  };
}

export function tempDir(prefix = 'chainnode-server-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface RpcResponse {
  status: number;
  headers: Headers;
  json: unknown;
  text: string;
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RpcResponse> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

export function call(method: string, params: unknown[], id = 1): unknown {
  return { jsonrpc: '2.0', id, method, params };
}

// `ws` is installed (a dependency of uWebSockets.js, ethers and viem) but ships no types.
interface WsClient {
  on(ev: 'open', cb: () => void): void;
  on(ev: 'message', cb: (data: Buffer) => void): void;
  on(ev: 'close', cb: (code: number) => void): void;
  on(ev: 'error', cb: (err: Error) => void): void;
  on(ev: 'unexpected-response', cb: (req: unknown, res: { statusCode: number }) => void): void;
  send(data: string): void;
  close(): void;
}
const WsCtor = createRequire(import.meta.url)('ws') as new (url: string) => WsClient;

/** Opens a WebSocket; resolves with a request/response helper, or rejects with the HTTP status. */
export function wsOpen(
  url: string,
): Promise<{ ws: WsClient; request: (msg: unknown) => Promise<unknown>; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const ws = new WsCtor(url);
    const waiting: ((v: unknown) => void)[] = [];
    let closedResolve: (code: number) => void = () => {};
    const closed = new Promise<number>((r) => (closedResolve = r));
    ws.on('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.on('error', (err) => reject(err));
    ws.on('close', (code) => closedResolve(code));
    ws.on('message', (data) => {
      const w = waiting.shift();
      if (w) w(JSON.parse(data.toString('utf8')));
    });
    ws.on('open', () =>
      resolve({
        ws,
        closed,
        request: (msg) =>
          new Promise((r) => {
            waiting.push(r);
            ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
          }),
      }),
    );
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * startServer on the embedded engines of @chainnode/accounts in `datadir` (keys.json, the usage
 * journal, the usage record), as `serve --datadir` wires them; the server's close() closes them too.
 */
export async function startOnDatadir(
  opts: Omit<ServerOptions, 'ledger' | 'usage'> & { datadir: string },
): Promise<RunningServer> {
  const { datadir, ...rest } = opts;
  const l = await openLedger({ datadir });
  const srv = await startServer({ ...rest, ledger: { keys: l.keys, credits: l.ledger() }, usage: l.usageRecord() });
  const close = srv.close;
  return Object.assign(srv, {
    close: async () => {
      await close();
      await l.close();
    },
  });
}
