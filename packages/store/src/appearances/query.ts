// Reads of the address-appearance index (schema.ts, Appearances and FrameAppearances, read as
// one): the transactions an address touched, newest first below a block or oldest first above
// one, a page at a time. A page holds at least `count` transactions when there are that many, and
// always every match of its last block (Erigon's searches drain the block they stop in).
import {
  APPEARANCE_KIND,
  APPEARANCE_TX_BITS,
  MetaKey,
  decodePostings,
  logIndexKeyLength,
  Prefix,
  tables,
  u64Codec,
  writeLogIndexKey,
} from '../schema/index.js';
import type { AppearancePage, AppearanceQuery } from '@chainnode/core';
import type { KvRead } from '../schema/index.js';

const TX_SPAN = 2 ** APPEARANCE_TX_BITS;

/** The two tables of the index: the rows' appearances, and the recorded frames' others. */
const PREFIXES = [Prefix.Appearances, Prefix.FrameAppearances] as const;

function key(address: Uint8Array, id: number | undefined, prefix: number): Uint8Array {
  const out = new Uint8Array(logIndexKeyLength(address.length));
  return writeLogIndexKey(out, APPEARANCE_KIND, address, id, prefix);
}

type Position = AppearancePage['positions'][number];

/** The first block the index holds complete (Meta.appearancesFrom; undefined: no block written with it yet). */
export async function appearancesFrom(db: KvRead): Promise<bigint | undefined> {
  const v = await tables.meta.get(db, MetaKey.AppearancesFrom);
  return v === undefined ? undefined : u64Codec.decode(v);
}

/**
 * One page of `q`'s appearances in both tables. Each table's own page holds the first `count`
 * of the union's positions that it has, and every one of its positions in their blocks; so the
 * merged pages, cut after the `count`th position's block, are the union's page.
 */
export async function queryAppearances(db: KvRead, q: AppearanceQuery): Promise<AppearancePage> {
  const pages = await Promise.all(PREFIXES.map((prefix) => queryTable(db, q, prefix)));
  const ids = new Set<number>();
  for (const p of pages) for (const pos of p.positions) ids.add(Number(pos.number) * TX_SPAN + pos.index);
  const sorted = [...ids].sort((a, b) => (q.direction === 'before' ? b - a : a - b));
  const positions: Position[] = [];
  let stopBlock: number | undefined;
  for (const id of sorted) {
    const number = Math.floor(id / TX_SPAN);
    if (stopBlock !== undefined && number !== stopBlock) return { positions, more: true };
    positions.push({ number: BigInt(number), index: id % TX_SPAN });
    if (positions.length >= q.count) stopBlock = number;
  }
  return { positions, more: pages.some((p) => p.more) };
}

/** The positions of `address` in blocks `from`..`to`, oldest first (both tables). */
export async function appearancesIn(db: KvRead, address: Uint8Array, from: bigint, to: bigint): Promise<Position[]> {
  const ids = new Set<number>();
  const end = (Number(to) + 1) * TX_SPAN;
  for (const prefix of PREFIXES) {
    const it = db.iterator({ gte: key(address, Number(from) * TX_SPAN, prefix), lte: key(address, undefined, prefix) });
    try {
      chunks: for await (const [, v] of it) {
        for (const id of decodePostings(v)) {
          if (id >= end) break chunks;
          if (id >= Number(from) * TX_SPAN) ids.add(id);
        }
      }
    } finally {
      await it.close();
    }
  }
  return [...ids]
    .sort((a, b) => a - b)
    .map((id) => ({ number: BigInt(Math.floor(id / TX_SPAN)), index: id % TX_SPAN }));
}

/** One page of `q`'s appearances in the table `prefix`. */
async function queryTable(db: KvRead, q: AppearanceQuery, prefix: number): Promise<AppearancePage> {
  const before = q.direction === 'before';
  // Ids below `below` (before), or from `from` on (after).
  const below = before && q.block !== undefined ? Number(q.block) * TX_SPAN : Number.POSITIVE_INFINITY;
  const from = !before && q.block !== undefined ? (Number(q.block) + 1) * TX_SPAN : 0;
  const last = key(q.address, undefined, prefix);
  let range: { gte: Uint8Array; lte: Uint8Array; reverse: boolean };
  if (before) {
    // The chunk holding the greatest id below `below` is the first whose last id is >= below - 1.
    let top = last;
    if (Number.isFinite(below)) {
      const seek = db.iterator({ gte: key(q.address, below - 1, prefix), lte: last, limit: 1 });
      try {
        for await (const [k] of seek) top = k.slice();
      } finally {
        await seek.close();
      }
    }
    range = { gte: key(q.address, 0, prefix), lte: top, reverse: true };
  } else range = { gte: key(q.address, from, prefix), lte: last, reverse: false };
  const positions: AppearancePage['positions'] = [];
  let stopBlock: number | undefined;
  const it = db.iterator(range);
  try {
    for await (const [, v] of it) {
      const ids = decodePostings(v);
      if (before) ids.reverse();
      for (const id of ids) {
        if (before ? id >= below : id < from) continue;
        const number = Math.floor(id / TX_SPAN);
        if (stopBlock !== undefined && number !== stopBlock) return { positions, more: true };
        positions.push({ number: BigInt(number), index: id % TX_SPAN });
        if (positions.length >= q.count) stopBlock = number;
      }
    }
  } finally {
    await it.close();
  }
  return { positions, more: false };
}
