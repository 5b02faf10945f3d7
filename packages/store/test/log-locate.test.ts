// blockOfSync finds the block holding a log id from the BlockLogs ranges alone (point reads): checked
// against a linear scan of the ranges on chains whose blocks hold very different numbers of logs
// (empty runs, one block of thousands), for every id, with bounds narrowed as a query narrows them,
// and with the number of reads bounded.
import { tables } from '../src/schema/index.js';
import { blockOfSync } from '../src/logs/locate.js';
import type { BlockBounds } from '../src/logs/locate.js';
import { rng } from './random.js';

/** A KvSyncRead over the BlockLogs rows of blocks with `counts[n]` logs each, counting its reads. */
function chainOf(counts: number[]): {
  db: { getSync(k: Uint8Array): Uint8Array | undefined; reads: number };
  firsts: number[];
} {
  const rows = new Map<string, Uint8Array>();
  const firsts: number[] = [];
  let first = 0;
  counts.forEach((count, n) => {
    firsts.push(first);
    const key = tables.blockLogs.key(BigInt(n));
    rows.set(
      Buffer.from(key).toString('hex'),
      tables.blockLogs.valueCodec.encode({ firstLogId: BigInt(first), count }),
    );
    first += count;
  });
  const db = {
    reads: 0,
    getSync(k: Uint8Array): Uint8Array | undefined {
      this.reads++;
      return rows.get(Buffer.from(k).toString('hex'));
    },
  };
  return { db, firsts };
}

/** The block holding each id, by a walk over the blocks' counts. */
function owners(counts: number[]): number[] {
  const out: number[] = [];
  counts.forEach((c, n) => {
    for (let i = 0; i < c; i++) out.push(n);
  });
  return out;
}

describe('blockOfSync: the block of a log id from the BlockLogs ranges', () => {
  const next = rng(42);
  const shapes: [string, number[]][] = [
    ['even', Array.from({ length: 500 }, () => 21)],
    ['random 0-40', Array.from({ length: 2_000 }, () => next(41))],
    [
      'skewed: empty runs, a block of 5,000',
      Array.from({ length: 3_000 }, (_, n) => (n === 1_700 ? 5_000 : n % 300 < 250 ? 0 : next(4))),
    ],
    ['genesis empty, one log per block after', Array.from({ length: 1_000 }, (_, n) => (n === 0 ? 0 : 1))],
  ];

  test.each(shapes)('%s: every id, the whole chain as bounds', (_, counts) => {
    const { db, firsts } = chainOf(counts);
    const total = counts.reduce((a, b) => a + b, 0);
    const head = counts.length - 1;
    const bounds: BlockBounds = { lo: 0n, firstLo: 0, hi: BigInt(head), endHi: total };
    const owner = owners(counts);
    let worst = 0;
    const wrong: string[] = [];
    for (let id = 0; id < total; id++) {
      db.reads = 0;
      const at = blockOfSync(db, id, bounds);
      const want = owner[id] as number;
      if (at?.number !== BigInt(want) || at.first !== firsts[want] || at.end !== firsts[want]! + counts[want]!)
        wrong.push(`${id}: ${at?.number}/${at?.first}, want ${want}/${firsts[want]}`);
      if (db.reads > worst) worst = db.reads;
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    // Every other probe halves the span: at most about twice log2 of the blocks.
    expect(worst).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(counts.length)) + 2);
    expect(blockOfSync(db, total, bounds)).toBeUndefined();
    expect(blockOfSync(db, -1, bounds)).toBeUndefined();
  });

  test('bounds narrowed from a found block on, as a query walks its ids in order', () => {
    const counts = shapes[2]?.[1] as number[];
    const { db } = chainOf(counts);
    const total = counts.reduce((a, b) => a + b, 0);
    const owner = owners(counts);
    let bounds: BlockBounds = { lo: 0n, firstLo: 0, hi: BigInt(counts.length - 1), endHi: total };
    for (let id = 0; id < total; id += 1 + next(50)) {
      const at = blockOfSync(db, id, bounds);
      const want = owner[id] as number;
      expect([id, at?.number]).toEqual([id, BigInt(want)]);
      bounds = { ...bounds, lo: (at as { number: bigint }).number, firstLo: (at as { first: number }).first };
    }
  });
});
