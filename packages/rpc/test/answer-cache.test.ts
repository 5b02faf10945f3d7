// AnswerCache's bounds (call-cache.ts), apart from the service (call-fork-block.test.ts runs it
// through eth_call): under a flood of distinct answers it never holds more than its budget and
// never less than half of it once full; a kept answer asked again survives the next generation's
// turn; an answer larger than half the budget is answered and never kept; a revert is kept as the
// error it was.
import { RpcError } from '@chainnode/core';
import { AnswerCache, ENTRY_OVERHEAD_BYTES } from '../src/call-cache.js';

const key = (i: number): string => `eth_call 0x${i.toString(16).padStart(64, '0')} {"data":"x70a08231"}`;
const answer = (i: number): string => `0x${i.toString(16).padStart(64, '0')}`;
/** What one entry of key(i) and answer(i) counts (the answer's text is JSON: quoted). */
const entryBytes = key(0).length + answer(0).length + 2 + ENTRY_OVERHEAD_BYTES;

test('a flood of distinct answers: within the budget, at least half of it once full, each answer its own', async () => {
  const budget = 200 * entryBytes;
  const cache = new AnswerCache(budget);
  for (let i = 0; i < 5_000; i++) {
    const got = await cache.answer(key(i), async () => answer(i));
    expect(JSON.parse((got as { text: string }).text)).toBe(answer(i));
    const { bytes, entries } = cache.stats();
    expect(bytes).toBeLessThanOrEqual(budget);
    expect(bytes).toBe(entries * entryBytes);
    if (i >= 200) expect(bytes).toBeGreaterThanOrEqual(budget / 2);
  }
  expect(cache.stats()).toMatchObject({ hits: 0, misses: 5_000 });
  // The newest are kept, the oldest are not.
  expect(await cache.answer(key(4_999), async () => 'ran')).toMatchObject({ text: JSON.stringify(answer(4_999)) });
  expect(await cache.answer(key(0), async () => 'ran')).toMatchObject({ text: '"ran"' });
});

test('an answer asked again moves to the younger generation and outlives the older', async () => {
  const budget = 100 * entryBytes; // 50 entries a generation
  const cache = new AnswerCache(budget);
  const ask = (i: number) => cache.answer(key(i), async () => answer(i));
  for (let i = 0; i < 50; i++) await ask(i); // the first generation, full
  for (let i = 50; i < 60; i++) await ask(i); // the turn: 0..49 are the older generation
  await ask(7); // a hit in the older: moved to the younger
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
  const revert = () => Promise.reject(new RpcError(3, 'execution reverted', '0x08c379a0'));
  await expect(cache.answer('r', revert)).rejects.toMatchObject({ code: 3, data: '0x08c379a0' });
  await expect(cache.answer('r', async () => 'ran')).rejects.toMatchObject({ code: 3, data: '0x08c379a0' });
  expect(cache.stats()).toMatchObject({ hits: 1, entries: 1 });
});
