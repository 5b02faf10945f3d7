// AnswerCache's bounds (call-cache.ts), apart from the service (call-fork-block.test.ts runs it
// through eth_call): an answer is kept on its key's second ask, so calls that never repeat keep
// nothing; under a flood of distinct answers each asked twice it never holds more than its budget
// and never less than half of it once full; a kept answer asked again survives the next
// generation's turn; an answer larger than half the budget is answered and never kept; a revert
// is kept as the error it was.
import { RpcError } from '@chainnode/core';
import { AnswerCache, Doorkeeper, ENTRY_OVERHEAD_BYTES } from '../src/call-cache.js';

const key = (i: number): string => `eth_call 0x${i.toString(16).padStart(64, '0')} {"data":"x70a08231"}`;
const answer = (i: number): string => `0x${i.toString(16).padStart(64, '0')}`;
/** What one entry of key(i) and answer(i) counts (the answer's text is JSON: quoted). */
const entryBytes = key(0).length + answer(0).length + 2 + ENTRY_OVERHEAD_BYTES;

test('calls that never repeat keep nothing; the second ask of a key keeps its answer, the third is a hit', async () => {
  const cache = new AnswerCache(1000 * entryBytes);
  for (let i = 0; i < 20_000; i++) {
    const got = await cache.answer(key(i), async () => answer(i));
    expect(JSON.parse((got as { text: string }).text)).toBe(answer(i));
  }
  expect(cache.stats()).toEqual({ hits: 0, misses: 20_000, entries: 0, bytes: 0 });
  let runs = 0;
  const ask = () => cache.answer(key(100_000), async () => answer(7 + runs++)); // a key the flood never asked
  await ask();
  await ask();
  expect(await ask()).toMatchObject({ text: JSON.stringify(answer(8)) }); // the second run's answer, kept
  expect(runs).toBe(2);
  expect(cache.stats()).toMatchObject({ hits: 1, misses: 20_002, entries: 1, bytes: entryBytes });
});

test('the doorkeeper: a key is seen after it was recorded, another key of its slot replaces it', () => {
  const door = new Doorkeeper(4);
  expect(door.seen('a')).toBe(false);
  expect(door.seen('a')).toBe(true);
  expect(door.seen('a')).toBe(true);
  // Four slots: among many other keys some take a's slot, and then a is no longer seen.
  let replaced = false;
  for (let i = 0; i < 64 && !replaced; i++) {
    door.seen(`k${i}`);
    replaced = !door.seen('a');
  }
  expect(replaced).toBe(true);
  expect(() => new Doorkeeper(3)).toThrow(RangeError);
});

test('a flood of distinct answers each asked twice: within the budget, at least half of it once full, each answer its own', async () => {
  const budget = 200 * entryBytes;
  const cache = new AnswerCache(budget);
  for (let i = 0; i < 5_000; i++) {
    await cache.answer(key(i), async () => answer(i));
    const got = await cache.answer(key(i), async () => answer(i));
    expect(JSON.parse((got as { text: string }).text)).toBe(answer(i));
    const { bytes, entries } = cache.stats();
    expect(bytes).toBeLessThanOrEqual(budget);
    expect(bytes).toBe(entries * entryBytes);
    if (i >= 200) expect(bytes).toBeGreaterThanOrEqual(budget / 2);
  }
  expect(cache.stats()).toMatchObject({ hits: 0, misses: 10_000 });
  // The newest are kept, the oldest are not.
  expect(await cache.answer(key(4_999), async () => 'ran')).toMatchObject({ text: JSON.stringify(answer(4_999)) });
  expect(await cache.answer(key(0), async () => 'ran')).toMatchObject({ text: '"ran"' });
});

test('an answer asked again moves to the younger generation and outlives the older', async () => {
  const budget = 100 * entryBytes; // 50 entries a generation
  const cache = new AnswerCache(budget);
  // Each new key asked twice: the second ask keeps it (a third would be a hit).
  const ask = async (i: number) => {
    await cache.answer(key(i), async () => answer(i));
    await cache.answer(key(i), async () => answer(i));
  };
  for (let i = 0; i < 50; i++) await ask(i); // the first generation, full
  for (let i = 50; i < 60; i++) await ask(i); // the turn: 0..49 are the older generation
  await cache.answer(key(7), async () => answer(7)); // a hit in the older: moved to the younger
  for (let i = 60; i < 100; i++) await ask(i); // the younger fills and turns at 99: 0..49 dropped, 7 with it moved
  const misses = cache.stats().misses;
  expect(await cache.answer(key(7), async () => 'ran')).toMatchObject({ text: JSON.stringify(answer(7)) });
  expect(await cache.answer(key(8), async () => 'ran')).toMatchObject({ text: '"ran"' });
  expect(cache.stats().misses).toBe(misses + 1);
});

test('larger than half the budget: answered, not kept; a revert is kept as the error it was', async () => {
  const cache = new AnswerCache(10 * entryBytes);
  const big = 'f'.repeat(6 * entryBytes);
  expect(await cache.answer('big', async () => big)).toMatchObject({ text: JSON.stringify(big) });
  expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
  await cache.answer('big', async () => big);
  expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
  const revert = () => Promise.reject(new RpcError(3, 'execution reverted', '0x08c379a0'));
  await expect(cache.answer('r', revert)).rejects.toMatchObject({ code: 3, data: '0x08c379a0' });
  await expect(cache.answer('r', revert)).rejects.toMatchObject({ code: 3, data: '0x08c379a0' });
  await expect(cache.answer('r', async () => 'ran')).rejects.toMatchObject({ code: 3, data: '0x08c379a0' });
  expect(cache.stats()).toMatchObject({ hits: 1, entries: 1 });
});
