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
  expect(() => parseConfig({ logQueueLimit: 0 }, 'server.json')).toThrow(new ConfigError('server.json: logQueueLimit must be at least 1'));
  expect(() => parseConfig({ logWorkers: -1 }, 'server.json')).toThrow(new ConfigError('server.json: logWorkers: expected a non-negative integer, got -1'));
  expect(() => parseConfig({ logWorkers: 1.5 }, 'server.json')).toThrow(ConfigError);
  expect(() => parseConfig({ logWorkers: 65 }, 'server.json')).toThrow(new ConfigError('server.json: logWorkers must be at most 64'));
});
