import { maxOpenTables, openFileLimit } from '../src/db.js';

describe('LevelDB table cache size (maxOpenTables)', () => {
  test('keeps LevelDB default as the floor when the descriptor limit is low or unknown', () => {
    expect(maxOpenTables(undefined)).toBe(1000);
    expect(maxOpenTables(1024)).toBe(1000);
    expect(maxOpenTables(2000)).toBe(1000);
  });

  test('leaves 1024 descriptors to the rest of the process', () => {
    expect(maxOpenTables(20_000)).toBe(18_976);
    expect(maxOpenTables(1_048_576)).toBe(1_000_000);
    expect(maxOpenTables(Number.MAX_SAFE_INTEGER)).toBe(1_000_000);
  });

  test('reads the soft descriptor limit of this process on Linux', () => {
    const limit = openFileLimit();
    if (process.platform !== 'linux') return expect(limit).toBeUndefined();
    expect(Number.isSafeInteger(limit)).toBe(true);
    expect(limit as number).toBeGreaterThan(0);
  });
});
