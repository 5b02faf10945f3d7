// The execution-apis rpc-compat fixtures (../shared/chains/execution-apis/tests/<method>/*.io,
// copied from ethereum/execution-apis) replayed against the execution-apis chain, compared as
// hive's rpc-compat simulator compares them: the whole reply as JSON (object key order ignored,
// array order kept) with `message` removed from error objects on both sides; a test marked
// `speconly:` is checked against the method's result shape only (a result where the fixture has
// one, of the same JSON type and, for objects, with the same members; an error where it has one).
//
// Documented deviations (docs/json-rpc.md#deviations): blocks keep `totalDifficulty`, which geth
// dropped; it is removed from our block answers before comparing. eth_sendRawTransaction runs
// against a recording upstream (the test's own HTTP listener answering with the keccak of what it
// received), since this chain has no live node to forward to.
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, concatBytes, hexToBytes } from '@ethereumjs/util';
import { keccak256 } from 'ethereum-cryptography/keccak.js';
import type { ChainStore } from '@chainnode/core';
import { openChainStore } from '@chainnode/store';
import { chainDir, datadirCopy, sharedChainsDir } from '@chainnode/testkit';
import { METHODS, UNSERVED_METHODS, createRpcService } from '../src/index.js';
import type { RpcServiceApi } from '../src/index.js';

/** The methods whose fixtures this node must pass (the spec's eight, the read API, the raw encodings). */
export const COMPAT_METHODS = [
  // the service spec's methods
  'eth_blockNumber',
  'eth_chainId',
  'net_version',
  'eth_getBlockByHash',
  'eth_getBlockByNumber',
  'eth_getLogs',
  'eth_getProof',
  'eth_getStorageAt',
  'eth_getTransactionByHash',
  // the read API
  'eth_getTransactionReceipt',
  'eth_getBlockReceipts',
  'eth_getBlockTransactionCountByHash',
  'eth_getBlockTransactionCountByNumber',
  'eth_getTransactionByBlockHashAndIndex',
  'eth_getTransactionByBlockNumberAndIndex',
  'eth_getBalance',
  'eth_getCode',
  'eth_getTransactionCount',
  'eth_getStorageValues',
  'eth_call',
  'eth_estimateGas',
  'eth_createAccessList',
  'eth_simulateV1',
  'eth_feeHistory',
  'eth_blobBaseFee',
  'eth_baseFee',
  'eth_syncing',
  'eth_config',
  'eth_capabilities',
  // geth's raw encodings (replication)
  'debug_getRawHeader',
  'debug_getRawBlock',
  'debug_getRawTransaction',
  'debug_getRawReceipts',
  'eth_sendRawTransaction',
  // geth's tracing API (re-execution)
  'debug_traceBlockByHash',
  'debug_traceBlockByNumber',
  'debug_traceTransaction',
];

interface Exchange {
  request: string;
  reply: string;
}
interface Fixture {
  method: string;
  name: string;
  speconly: boolean;
  exchanges: Exchange[];
}

function readFixtures(dir: string): Fixture[] {
  const out: Fixture[] = [];
  for (const method of COMPAT_METHODS) {
    const mdir = join(dir, method);
    let files: string[];
    try {
      files = readdirSync(mdir).filter((f) => f.endsWith('.io'));
    } catch {
      continue; // a method without fixtures at this commit
    }
    for (const f of files.sort()) {
      const lines = readFileSync(join(mdir, f), 'utf8').split('\n');
      const fx: Fixture = { method, name: f, speconly: false, exchanges: [] };
      let pending: string | undefined;
      for (const line of lines) {
        if (line.startsWith('//')) {
          if (/^\/\/\s*speconly:/.test(line)) fx.speconly = true;
        } else if (line.startsWith('>> ')) pending = line.slice(3);
        else if (line.startsWith('<< ') && pending !== undefined) {
          fx.exchanges.push({ request: pending, reply: line.slice(3) });
          pending = undefined;
        }
      }
      out.push(fx);
    }
  }
  return out;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** hive: error messages are not compared. */
function normalise(reply: Json): Json {
  if (reply !== null && typeof reply === 'object' && !Array.isArray(reply) && reply.error !== undefined) {
    const err = { ...(reply.error as Record<string, Json>) };
    delete err.message;
    return { ...reply, error: err };
  }
  return reply;
}

/** The documented deviation: our blocks keep totalDifficulty. */
function dropTotalDifficulty(v: Json): Json {
  if (Array.isArray(v)) return v.map(dropTotalDifficulty);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, Json> = {};
    for (const [k, x] of Object.entries(v)) if (k !== 'totalDifficulty') out[k] = dropTotalDifficulty(x);
    return out;
  }
  return v;
}

function jsonType(v: Json | undefined): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/**
 * Members the spec's schemas make optional that this node leaves out when it has nothing to say:
 * eth_capabilities' `deleteStrategy` (EthCapabilitiesEffectiveResource requires only `disabled`;
 * the store deletes nothing, so no resource has one).
 */
const SCHEMA_OPTIONAL = new Set(['deleteStrategy']);

/** speconly: the result's shape (type, object members; array members by the first one). */
function sameShape(got: Json | undefined, want: Json | undefined, path: string): string[] {
  if (jsonType(got) !== jsonType(want)) return [`${path}: ${jsonType(got)} where the fixture has ${jsonType(want)}`];
  if (Array.isArray(want) && Array.isArray(got) && want.length > 0 && got.length > 0)
    return sameShape(got[0], want[0], `${path}[0]`);
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    const g = got as Record<string, Json>;
    const errs: string[] = [];
    const keys = new Set([...Object.keys(want), ...Object.keys(g)]);
    for (const k of keys) {
      if (!(k in g)) errs.push(...(SCHEMA_OPTIONAL.has(k) ? [] : [`${path}.${k}: missing`]));
      else if (!(k in want)) errs.push(`${path}.${k}: not in the fixture`);
      else errs.push(...sameShape(g[k], want[k], `${path}.${k}`));
    }
    return errs;
  }
  return [];
}

/** Canonical JSON text: object keys sorted, so that key order never counts. */
function canonical(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k] as Json)}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/**
 * The hash of a signed transaction as the upstream computes it: keccak of its bytes, except a
 * blob transaction in its network form (type 3, [tx, (version,) blobs, commitments, proofs]),
 * whose hash is keccak of 0x03 ++ rlp(tx).
 */
function txHash(raw: Uint8Array): string {
  if (raw[0] === 3) {
    const outer = RLP.decode(raw.subarray(1)) as unknown[];
    if (Array.isArray(outer[0]))
      return bytesToHex(keccak256(concatBytes(Uint8Array.of(3), RLP.encode(outer[0] as Uint8Array[]))));
  }
  return bytesToHex(keccak256(raw));
}

const fixturesDir = (): string | undefined => {
  const shared = sharedChainsDir();
  return shared === undefined ? undefined : join(shared, 'execution-apis', 'tests');
};

const available = chainDir('execution-apis') !== undefined && fixturesDir() !== undefined;

describe('execution-apis rpc-compat fixtures', () => {
  if (!available) {
    test.skip('execution-apis chain or its tests/ not available, skipped', () => undefined);
    return;
  }
  const fixtures = readFixtures(fixturesDir() as string);
  let store: ChainStore;
  let svc: RpcServiceApi;
  let cleanup: () => Promise<void>;
  let upstream: Server;
  const forwarded: string[] = [];

  beforeAll(async () => {
    // The recording upstream for eth_sendRawTransaction: answers with the keccak of the bytes.
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        const call = JSON.parse(body) as { id: number; method: string; params: string[] };
        forwarded.push(call.params[0] as string);
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: call.id,
            result: txHash(hexToBytes(call.params[0] as `0x${string}`)),
          }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const port = (upstream.address() as AddressInfo).port;
    const copy = await datadirCopy('execution-apis');
    cleanup = copy.cleanup;
    store = await openChainStore(copy.dir);
    svc = createRpcService(
      store,
      // The fixtures compare answers, not speed: a long simulation on a loaded machine (the suite
      // runs beside others) must not hit the 5 s call timeout.
      { callTimeoutMs: 60_000 },
      {
        forward: async (raw) => {
          const res = await fetch(`http://127.0.0.1:${port}`, {
            method: 'POST',
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] }),
          });
          return ((await res.json()) as { result: unknown }).result;
        },
      },
    );
  });

  afterAll(async () => {
    await store?.close();
    await cleanup?.();
    await new Promise((r) => upstream?.close(r));
  });

  test('every listed method has fixtures', () => {
    const seen = new Set(fixtures.map((f) => f.method));
    expect(COMPAT_METHODS.filter((m) => !seen.has(m))).toEqual([]);
  });

  test('every eth_ method with fixtures is served and listed here, or recorded as not served (never both)', () => {
    const served = new Set(Object.keys(METHODS));
    const unserved = Object.keys(UNSERVED_METHODS);
    expect(unserved.filter((m) => served.has(m))).toEqual([]);
    // The list records the spec's src/eth methods; the debug_ ones with fixtures are other specs'.
    const withFixtures = readdirSync(fixturesDir() as string).filter((m) => m.startsWith('eth_'));
    expect(withFixtures.filter((m) => !(served.has(m) && COMPAT_METHODS.includes(m)) && !unserved.includes(m))).toEqual(
      [],
    );
  });

  test.each(fixtures.map((f) => [`${f.method}/${f.name}${f.speconly ? ' (speconly)' : ''}`, f] as const))(
    '%s',
    async (_label, fx) => {
      for (const ex of fx.exchanges) {
        const reply = await svc.handle(ex.request);
        const got = dropTotalDifficulty(normalise(JSON.parse(reply.body ?? 'null') as Json));
        const want = normalise(JSON.parse(ex.reply) as Json);
        if (fx.speconly) {
          const g = got as Record<string, Json>;
          const w = want as Record<string, Json>;
          if (w.error !== undefined) expect(g.error).toBeDefined();
          else {
            expect(g.error).toBeUndefined();
            expect(sameShape(g.result, w.result, 'result')).toEqual([]);
          }
        } else {
          expect(canonical(got)).toBe(canonical(want));
        }
      }
    },
  );

  test('eth_sendRawTransaction forwarded each fixture transaction once, byte for byte', () => {
    const sent = fixtures
      .filter((f) => f.method === 'eth_sendRawTransaction')
      .flatMap((f) => f.exchanges.map((e) => (JSON.parse(e.request) as { params: string[] }).params[0]));
    expect(sent.length).toBeGreaterThan(0);
    expect([...forwarded].sort()).toEqual([...sent].sort());
  });
});
