// The settings: documented defaults, overrides, the values that are refused, the fields handed
// to the rpc service (safe/finalized depths among them) and to the server, and the networks.
import { DEFAULT_RPC_CONFIG, resolveConfig } from '@chainnode/rpc';
import { DEFAULT_TRANSPORT_CONFIG } from '@chainnode/server';
import {
  ConfigError,
  DEFAULT_CONFIG,
  parseConfig,
  rpcConfigOf,
  runtimeConfigOf,
  SERVER_FIELDS,
  transportConfigOf,
} from '../src/index.js';
import type { ConfigField } from '../src/index.js';

test('offloadWorkers (default 1, 0 = inline) and offloadQueueLimit (default 64) are read and checked', () => {
  expect(DEFAULT_CONFIG.offloadWorkers).toBe(1);
  expect(DEFAULT_CONFIG.offloadQueueLimit).toBe(64);
  expect(parseConfig({}).offloadWorkers).toBe(1);
  const c = parseConfig({ offloadWorkers: 0, offloadQueueLimit: 8 });
  expect([c.offloadWorkers, c.offloadQueueLimit]).toEqual([0, 8]);
  expect(parseConfig({ offloadWorkers: 3 }).offloadWorkers).toBe(3);
  expect(() => parseConfig({ offloadQueueLimit: 0 }, 'server.json')).toThrow(
    new ConfigError('server.json: offloadQueueLimit must be at least 1'),
  );
  expect(() => parseConfig({ offloadWorkers: -1 }, 'server.json')).toThrow(
    new ConfigError('server.json: offloadWorkers: expected a non-negative integer, got -1'),
  );
  expect(() => parseConfig({ offloadWorkers: 1.5 }, 'server.json')).toThrow(ConfigError);
  expect(() => parseConfig({ offloadWorkers: 65 }, 'server.json')).toThrow(
    new ConfigError('server.json: offloadWorkers must be at most 64'),
  );
});

test('the former names logWorkers and logQueueLimit are still read, as the fields they were renamed to', () => {
  const c = parseConfig({ logWorkers: 0, logQueueLimit: 8 });
  expect([c.offloadWorkers, c.offloadQueueLimit]).toEqual([0, 8]);
  expect(c).not.toHaveProperty('logWorkers');
  expect(() => parseConfig({ logWorkers: 65 }, 'server.json')).toThrow(
    new ConfigError('server.json: logWorkers must be at most 64'),
  );
  expect(() => parseConfig({ logWorkers: 1, offloadWorkers: 2 }, 'server.json')).toThrow(
    new ConfigError('server.json: logWorkers: the former name of offloadWorkers, which is set too'),
  );
});

test("plans: Infura's daily credits and credits per second by default, every figure overridable", () => {
  const p = DEFAULT_CONFIG.plans;
  expect([p.core.dailyCredits, p.core.creditsPerSecond]).toEqual([3_000_000, 500]);
  expect([p.developer.dailyCredits, p.developer.creditsPerSecond]).toEqual([15_000_000, 4_000]);
  expect([p.team.dailyCredits, p.team.creditsPerSecond]).toEqual([75_000_000, 40_000]);
  const c = parseConfig({ plans: { growth: { dailyCredits: 5, creditsPerSecond: 7 }, core: { creditsPerSecond: 0 } } });
  expect([
    c.plans.growth.dailyCredits,
    c.plans.growth.creditsPerSecond,
    c.plans.core.creditsPerSecond,
    c.plans.core.dailyCredits,
  ]).toEqual([5, 7, 0, 3_000_000]);
  expect(() => parseConfig({ plans: { team: { creditsPerSecond: -1 } } }, 'server.json')).toThrow(
    new ConfigError('server.json: plans.team.creditsPerSecond: expected a non-negative integer, got -1'),
  );
  expect(parseConfig({ ledgerCommandTimeoutMs: 250, ledgerJournalMax: 10 })).toMatchObject({
    ledgerCommandTimeoutMs: 250,
    ledgerJournalMax: 10,
  });
});

test('reply budgets and batch limits: documented defaults, overrides, refusals', () => {
  expect([
    DEFAULT_CONFIG.maxReplyBytesInFlight,
    DEFAULT_CONFIG.wsMaxBackpressureBytes,
    DEFAULT_CONFIG.wsMaxQueuedBytes,
    DEFAULT_CONFIG.wsSlowReaderTimeoutSeconds,
    DEFAULT_CONFIG.maxBatchResponseBytes,
    DEFAULT_CONFIG.maxConcurrentBatches,
  ]).toEqual([128 * 1024 * 1024, 4 * 1024 * 1024, 1024 * 1024, 30, 25_000_000, 2]);
  const c = parseConfig({
    maxReplyBytesInFlight: 1000,
    wsMaxQueuedBytes: 10,
    wsSlowReaderTimeoutSeconds: 5,
    maxBatchResponseBytes: 99,
    maxConcurrentBatches: 8,
  });
  expect([
    c.maxReplyBytesInFlight,
    c.wsMaxQueuedBytes,
    c.wsSlowReaderTimeoutSeconds,
    c.maxBatchResponseBytes,
    c.maxConcurrentBatches,
  ]).toEqual([1000, 10, 5, 99, 8]);
  expect(() => parseConfig({ maxConcurrentBatches: 0 }, 'server.json')).toThrow(
    new ConfigError('server.json: maxConcurrentBatches must be at least 1'),
  );
  expect(() => parseConfig({ maxBatchResponseBytes: 0 }, 'server.json')).toThrow(
    new ConfigError('server.json: maxBatchResponseBytes must be at least 1'),
  );
  expect(() => parseConfig({ maxReplyBytesInFlight: 'lots' }, 'server.json')).toThrow(ConfigError);
});

test('safeDepth and finalizedDepth: the rpc defaults, read from the file, refused with the field named', () => {
  expect([DEFAULT_CONFIG.safeDepth, DEFAULT_CONFIG.finalizedDepth]).toEqual([
    DEFAULT_RPC_CONFIG.safeDepth,
    DEFAULT_RPC_CONFIG.finalizedDepth,
  ]);
  const c = parseConfig({ safeDepth: 2, finalizedDepth: 7 }, 'server.json');
  expect([c.safeDepth, c.finalizedDepth]).toEqual([2, 7]);
  expect(rpcConfigOf(c)).toMatchObject({ safeDepth: 2, finalizedDepth: 7 });
  for (const [raw, message] of [
    [{ safeDepth: -1 }, 'server.json: safeDepth: expected a non-negative integer, got -1'],
    [{ safeDepth: 1.5 }, 'server.json: safeDepth: expected a non-negative integer, got 1.5'],
    [{ finalizedDepth: '64' }, 'server.json: finalizedDepth: expected a non-negative integer, got "64"'],
    [{ finalizedDepth: null }, 'server.json: finalizedDepth: expected a non-negative integer, got null'],
  ] as const) {
    expect(() => parseConfig(raw, 'server.json')).toThrow(new ConfigError(message));
  }
});

test('rpcConfigOf: every field the schema hands to the rpc service, and nothing else', () => {
  const c = parseConfig({ maxBatchSize: 3, maxBatchResponseBytes: 4, maxConcurrentBatches: 5, safeDepth: 6 });
  expect(rpcConfigOf(c)).toEqual({
    maxBatchSize: 3,
    maxBatchResponseBytes: 4,
    maxConcurrentBatches: 5,
    callGasCap: 50_000_000,
    callTimeoutMs: 5_000,
    callCacheBytes: 32 * 2 ** 20,
    simulateMaxBlocks: 256,
    simulateMaxCalls: 10_000,
    traceMaxBytes: 25_000_000,
    traceFilterMaxBlocks: 1_000,
    safeDepth: 6,
    finalizedDepth: 0,
  });
  const mapped = Object.entries(SERVER_FIELDS).filter(([, f]) => 'rpc' in f);
  expect(Object.keys(rpcConfigOf(DEFAULT_CONFIG))).toEqual(mapped.map(([, f]) => (f as { rpc: string }).rpc));
  // Every mapped field's default is the rpc service's own.
  expect(resolveConfig(rpcConfigOf(DEFAULT_CONFIG))).toEqual(DEFAULT_RPC_CONFIG);
});

test('every field of the schema has a default (or says why not), a doc line and a type', () => {
  for (const [name, f] of Object.entries(SERVER_FIELDS) as [string, ConfigField<unknown>][]) {
    expect({ name, doc: f.doc.length > 0, type: f.type.length > 0 }).toEqual({ name, doc: true, type: true });
    if (f.default === undefined)
      expect({ name, defaultText: f.defaultText !== undefined }).toEqual({ name, defaultText: true });
  }
  expect(() => parseConfig({ safeDepht: 1 }, 'server.json')).toThrow(
    new ConfigError('server.json: safeDepht: unknown field'),
  );
});

test('config: networks and defaultNetwork validated', () => {
  const c = parseConfig({
    networks: { mainnet: { datadir: '/d/m' }, sepolia: { datadir: '/d/s', follow: 'ws://127.0.0.1:8546' } },
    defaultNetwork: 'mainnet',
  });
  expect(c.networks).toEqual([
    { name: 'mainnet', datadir: '/d/m' },
    { name: 'sepolia', datadir: '/d/s', follow: 'ws://127.0.0.1:8546' },
  ]);
  expect(c.defaultNetwork).toBe('mainnet');
  expect(() => parseConfig({ networks: { mainnet: { datadir: '/d/m' } }, defaultNetwork: 'x' })).toThrow(
    'defaultNetwork "x" is not among networks',
  );
  expect(() => parseConfig({ networks: { a: { datadir: '/d' }, b: { datadir: '/d' } } })).toThrow('share the datadir');
  expect(() => parseConfig({ networks: { a: { datadir: '/d', extra: 1 } } })).toThrow('a.extra: unknown field');
  expect(() => parseConfig({ networks: { a: { datadir: '/d', follow: 'file:///x' } } })).toThrow('follow');
  expect(() => parseConfig({ networks: { A: { datadir: '/d' } } })).toThrow('network name "A"');
  expect(() => parseConfig({ networks: { a: {} } })).toThrow('a datadir is required');
});

test("a followed upstream's WebSocket for its subscriptions: --follow-ws, a network's ws, checked", () => {
  const single = runtimeConfigOf({
    datadir: '/d/one',
    host: '127.0.0.1',
    port: '0',
    follow: 'http://127.0.0.1:8545/',
    followWs: 'ws://127.0.0.1:8546/',
    logFormat: 'json',
  });
  expect(single.follows.map((f) => f.follow.wsUrl)).toEqual(['ws://127.0.0.1:8546/']);
  const networks = runtimeConfigOf({
    datadir: '/d/keys',
    host: '127.0.0.1',
    port: '0',
    network: [
      'a=/d/a,follow=http://127.0.0.1:1/,ws=wss://h.example/ws,ingest=replicate',
      'b=/d/b,follow=http://127.0.0.1:2/,history=http://127.0.0.1:3/',
    ],
    logFormat: 'json',
  });
  expect(networks.follows.map((f) => [f.network, f.follow.url, f.follow.wsUrl, f.follow.ingest])).toEqual([
    ['a', 'http://127.0.0.1:1/', 'wss://h.example/ws', 'replicate'],
    ['b', 'http://127.0.0.1:2/', undefined, 'execute'],
  ]);
  const c = parseConfig({
    networks: { a: { datadir: '/d/a', follow: 'https://h.example/', ws: 'wss://h.example/ws' } },
  });
  expect(c.networks).toEqual([{ name: 'a', datadir: '/d/a', follow: 'https://h.example/', ws: 'wss://h.example/ws' }]);
  expect(() => parseConfig({ networks: { a: { datadir: '/d', ws: 'ws://h/' } } })).toThrow('a: ws: only with follow');
  expect(() => parseConfig({ networks: { a: { datadir: '/d', follow: 'ws://h/', ws: 'ws://h/' } } })).toThrow(
    'it subscribes on itself',
  );
  expect(() => parseConfig({ networks: { a: { datadir: '/d', follow: 'http://h/', ws: 'http://h/' } } })).toThrow(
    'ws: expected a ws(s):// URL',
  );
});

test("transportConfigOf: what the server takes, with the server's own defaults", () => {
  expect(transportConfigOf(DEFAULT_CONFIG)).toEqual(DEFAULT_TRANSPORT_CONFIG);
  const t = transportConfigOf(parseConfig({ maxBodyBytes: 4096, corsOrigins: ['https://a.example'], safeDepth: 3 }));
  expect([t.maxBodyBytes, t.corsOrigins]).toEqual([4096, ['https://a.example']]);
  expect(Object.keys(t).sort()).toEqual(Object.keys(DEFAULT_TRANSPORT_CONFIG).sort());
});
