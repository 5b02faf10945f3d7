// Fetching ahead by ranges (replicate/ahead.ts) against a fake upstream: blocks come in order with
// at most `depth` requests in flight; an answer cut short is completed before the requests queued
// behind it are taken; with ramp the spans grow from one block; an empty answer ends the
// iteration with undefined; a failed request fails it at its place.
import { rangesAhead } from '../src/replicate/ahead.js';
import type { ReplicaBlock } from '../src/replicate/block.js';

const block = (n: bigint): ReplicaBlock => ({ number: n }) as ReplicaBlock;

/** An upstream of blocks 1..`head` answering at most `cap` blocks a request, recording what was asked. */
function upstream(head: bigint, cap: number, fail?: bigint) {
  const asked: [bigint, bigint][] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const fetchRange = async (from: bigint, to: bigint): Promise<ReplicaBlock[]> => {
    asked.push([from, to]);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((r) => setTimeout(r, 1));
    inFlight--;
    if (fail !== undefined && from <= fail && fail <= to) throw new Error(`block ${fail} failed`);
    const out: ReplicaBlock[] = [];
    for (let n = from; n <= to && n <= head && out.length < cap; n++) out.push(block(n));
    return out;
  };
  return { fetchRange, asked, maxInFlight: () => maxInFlight };
}

async function collect(it: AsyncGenerator<ReplicaBlock | undefined>): Promise<(bigint | undefined)[]> {
  const out: (bigint | undefined)[] = [];
  for await (const b of it) out.push(b?.number);
  return out;
}

const range = (a: number, b: number): bigint[] => Array.from({ length: b - a + 1 }, (_, i) => BigInt(a + i));

test('every block in order, at most depth requests in flight, short answers completed first', async () => {
  const u = upstream(100n, 5);
  const got = await collect(rangesAhead(u.fetchRange, 1n, 40n, { span: 8, depth: 3 }));
  expect(got).toEqual(range(1, 40));
  expect(u.maxInFlight()).toBe(3);
  // The rest of [1, 8] (6..8) is asked as soon as its answer is in, before anything further.
  expect(u.asked.slice(0, 5)).toEqual([
    [1n, 8n],
    [9n, 16n],
    [17n, 24n],
    [6n, 8n],
    [25n, 32n],
  ]);
});

test('with ramp, the first request asks for one block and each next for twice as many, up to span', async () => {
  const u = upstream(100n, 64);
  const got = await collect(rangesAhead(u.fetchRange, 1n, 60n, { span: 8, depth: 3, ramp: true }));
  expect(got).toEqual(range(1, 60));
  expect(u.maxInFlight()).toBe(3);
  expect(u.asked.slice(0, 6)).toEqual([
    [1n, 1n],
    [2n, 3n],
    [4n, 7n],
    [8n, 15n],
    [16n, 23n],
    [24n, 31n],
  ]);
});

test('an upstream that has none of a range ends the blocks with undefined', async () => {
  const u = upstream(10n, 64);
  expect(await collect(rangesAhead(u.fetchRange, 1n, 20n, { span: 8, depth: 2 }))).toEqual([
    ...range(1, 10),
    undefined,
  ]);
});

test('a failed request fails the iteration at its place', async () => {
  const u = upstream(100n, 64, 12n);
  const got: bigint[] = [];
  await expect(
    (async () => {
      for await (const b of rangesAhead(u.fetchRange, 1n, 40n, { span: 8, depth: 3 }))
        got.push((b as ReplicaBlock).number);
    })(),
  ).rejects.toThrow('block 12 failed');
  expect(got).toEqual(range(1, 8));
});
