// The log worker settings of the server config: documented defaults, overrides, and the
// values that are refused.
import { ConfigError, DEFAULT_CONFIG, parseConfig } from '../src/index.js';

test('logWorkers (default 1, 0 = inline) and logQueueLimit (default 64) are read and checked', () => {
  expect(DEFAULT_CONFIG.logWorkers).toBe(1);
  expect(DEFAULT_CONFIG.logQueueLimit).toBe(64);
  expect(parseConfig({}).logWorkers).toBe(1);
  const c = parseConfig({ logWorkers: 0, logQueueLimit: 8 });
  expect([c.logWorkers, c.logQueueLimit]).toEqual([0, 8]);
  expect(parseConfig({ logWorkers: 3 }).logWorkers).toBe(3);
  expect(() => parseConfig({ logQueueLimit: 0 }, 'server.json')).toThrow(
    new ConfigError('server.json: logQueueLimit must be at least 1'),
  );
  expect(() => parseConfig({ logWorkers: -1 }, 'server.json')).toThrow(
    new ConfigError('server.json: logWorkers: expected a non-negative integer, got -1'),
  );
  expect(() => parseConfig({ logWorkers: 1.5 }, 'server.json')).toThrow(ConfigError);
  expect(() => parseConfig({ logWorkers: 65 }, 'server.json')).toThrow(
    new ConfigError('server.json: logWorkers must be at most 64'),
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
